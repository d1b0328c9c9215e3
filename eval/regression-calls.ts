/**
 * A regression ticket's calls made through the tool catalog and Action's executor against a demo
 * tool server (what the loop's Action would send): the check that the set's expected facts are what
 * the server really returns (test/bench/regression-set.test.ts).
 */
import { ToolExecutor } from '../processors/action/executor.ts';
import { realHttpDeps } from '../processors/action/invoke.ts';
import { loadCatalog } from '../processors/wiring/index.ts';
import { createContractAjv } from '../tools/catalog.ts';
import { envSecrets } from '../tools/secrets.ts';
import type { RegressionTicket } from './regression-set.ts';

/** One call's answer: the HTTP status and the parsed body (null when none). */
export interface CallAnswer {
  tool: string;
  args: Record<string, unknown>;
  status: number | null;
  data: Record<string, unknown> | null;
  error: string | null;
}

/** Makes `ticket`'s calls, in order, against the tool server at `toolOrigin` (the catalog and secrets of `baseEnv`). */
export async function makeCalls(ticket: RegressionTicket, toolOrigin: string, baseEnv: NodeJS.ProcessEnv): Promise<CallAnswer[]> {
  const env = { ...baseEnv, TAO_DEMO_TOOL_ORIGIN: toolOrigin };
  const catalog = loadCatalog(env, createContractAjv(), 'call');
  const executor = new ToolExecutor(catalog, realHttpDeps());
  const out: CallAnswer[] = [];
  for (const [i, call] of ticket.calls.entries()) {
    const tool = catalog.get(call.tool);
    if (!tool) throw new Error(`${ticket.id}: the catalog has no tool ${call.tool}`);
    const result = await executor.execute(tool, `s${i + 1}`, call.args, {
      idempotencyKey: `${ticket.id}-${i + 1}`,
      traceparent: '00-00000000000000000000000000000001-0000000000000001-01',
      secrets: envSecrets(env),
      thoughtId: `regression-${ticket.id}`,
    });
    out.push({
      tool: call.tool,
      args: call.args,
      status: result.status_code,
      data: result.data_json ? (JSON.parse(result.data_json) as Record<string, unknown>) : null,
      error: result.error ? `${result.error.type}: ${result.error.message}` : null,
    });
  }
  return out;
}

/** Identity parameters of a tool, per its catalog entry (`identity_parameters`). */
export function identityParameters(env: NodeJS.ProcessEnv): (tool: string) => readonly string[] {
  const catalog = loadCatalog(env, createContractAjv(), 'contracts');
  return (tool) => catalog.get(tool)?.spec.identity_parameters ?? [];
}

/** Per tool, per field: the values an enumerated field of its response may take (from the catalog's response schemas). */
export function responseEnums(env: NodeJS.ProcessEnv): Record<string, Record<string, string[]>> {
  const catalog = loadCatalog(env, createContractAjv(), 'contracts');
  const out: Record<string, Record<string, string[]>> = {};
  for (const name of catalog.names()) {
    const props = (catalog.get(name)?.spec.response as { properties?: Record<string, { enum?: unknown[] }> } | undefined)?.properties ?? {};
    for (const [field, schema] of Object.entries(props))
      if (Array.isArray(schema.enum)) (out[name] ??= {})[field] = schema.enum.filter((v): v is string => typeof v === 'string');
  }
  return out;
}
