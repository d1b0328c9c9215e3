/**
 * The demo catalog tools as MCP tools, for the demo MCP server (tool-server/mcp-server.ts): read
 * from the catalog's HTTP tool files (name, description, parameter schema as `inputSchema`, response
 * schema as `outputSchema`), and a call answered as the demo HTTP tool server's route would answer
 * it (tool-server/routes.ts, tool-server/post-routes.ts).
 *
 * @module
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { processPost, type ToolLedger } from './post-routes.ts';
import { matchRoute, normalResponse, type JsonResponse } from './routes.ts';

/** A demo tool served over MCP (`description` and `inputSchema` can be changed while it is served). */
export interface DemoTool {
  name: string;
  description: string;
  method: string;
  path: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  validate: ValidateFunction;
}

/** The demo catalog tools (HTTP tool files of `dir`), as MCP tools. */
export function demoTools(dir: string, only?: string[]): DemoTool[] {
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  const tools: DemoTool[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json') && !f.endsWith('.openapi.json'))
    .sort()) {
    const spec = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
      name: string;
      description: string;
      method?: string;
      path?: string;
      parameters: Record<string, unknown>;
      response: Record<string, unknown>;
      transport?: string;
    };
    if (spec.transport === 'mcp' || !spec.path || !spec.method) continue;
    if (only && !only.includes(spec.name)) continue;
    tools.push({
      name: spec.name,
      description: spec.description,
      method: spec.method,
      path: spec.path,
      inputSchema: spec.parameters,
      outputSchema: spec.response,
      validate: ajv.compile(spec.parameters),
    });
  }
  const unknown = (only ?? []).filter((n) => !tools.some((t) => t.name === n));
  if (unknown.length)
    throw new RangeError(
      `no demo tool named ${unknown.join(', ')} (have ${demoTools(dir)
        .map((t) => t.name)
        .join(', ')})`,
    );
  return tools;
}

/** A tool as `tools/list` lists it. */
export type ListedTool = Pick<DemoTool, 'name' | 'description' | 'inputSchema' | 'outputSchema'>;

/** The tools as `tools/list` lists them. */
export function listedTools(tools: DemoTool[]): ListedTool[] {
  return tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, outputSchema: t.outputSchema }));
}

/**
 * The HTTP answer to a call of `tool` with `args` (path parameters filled from them, the rest the
 * JSON body of a POST, de-duplicated in `ledger` by `key`), and whether a side effect was performed
 * or the answer replayed from the one stored under `key`.
 */
export function answerCall(
  tool: DemoTool,
  args: Record<string, unknown>,
  key: string | null,
  ledger: ToolLedger,
): { response: JsonResponse; effect: boolean; replayed: boolean } {
  const rest = { ...args };
  const path = tool.path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const v = rest[name];
    delete rest[name];
    return encodeURIComponent(String(v));
  });
  const match = matchRoute(path);
  if (!match) return { response: { status: 404, body: { error: 'no_such_route' } }, effect: false, replayed: false };
  if (tool.method === 'GET') return { response: normalResponse(match), effect: false, replayed: false };
  const done = processPost(match, { body: JSON.stringify(rest), contentType: 'application/json', idempotencyKey: key }, ledger);
  return { response: done.response, effect: done.effect, replayed: done.replayed };
}
