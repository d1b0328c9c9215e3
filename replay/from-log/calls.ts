/**
 * Where a re-run's tool calls get their answers (`tao eval --from-log`). A call that matches one the
 * run recorded (the same tool, the same arguments) reads the recorded result, and so does a model
 * turn whose request is unchanged. Anything else:
 * - a model turn whose request changed asks the candidate's model, through the model tool's own
 *   wire code (processors/action/invoke.ts, tools/wires/), as Action would;
 * - a tool the candidate's catalog declares free of side effects (`side_effects: false`) is called
 *   live when the user allows live reads (`--live-reads`);
 * - any other call that was never recorded is NOT made: the run diverges at that step.
 * As Action, a call whose input the candidate's contract refuses is answered `invalid_input` with no
 * request sent, and a call of a tool the candidate's catalog lacks ends the re-run there (Action
 * would dead-letter the wave).
 */
import type { ToolExecutor } from '../../processors/action/executor.ts';
import { invokeTool, type HttpDeps } from '../../processors/action/invoke.ts';
import { canonicalJson } from '../../runtime/json-field.ts';
import { traceparentFor } from '../../runtime/tracing/ids.ts';
import type { ActionResult, StepCall, StepResult } from '../../schemas/types.gen.ts';
import type { ToolCatalog } from '../../tools/catalog.ts';
import type { SecretResolver } from '../../tools/secrets.ts';
import type { RunLog } from '../log.ts';

/** How a call of the re-run was answered. */
export type CallSource = 'recorded' | 'refused' | 'model' | 'live';

/** A call's answer, or why the re-run stops at it. */
export type Resolved = { source: CallSource; result: StepResult } | { source: 'diverged'; reason: string };

/** What the candidate answers calls with. */
export interface CallSources {
  /** The candidate's catalog, with its model tool at the candidate's endpoint when it has one. */
  catalog: ToolCatalog;
  /** Runs the calls that are made: the candidate's model, and live reads. */
  executor: ToolExecutor;
  http: HttpDeps;
  secrets: SecretResolver;
  /** Whether tools declared free of side effects may be called live. */
  liveReads: boolean;
  /** Whether the candidate has a model endpoint to ask. */
  hasModel: boolean;
  /** The model the candidate names explicitly: a recorded model answer of another model is not reused (a skill's own `model` wins, as when sent). */
  namedModel: string | null;
}

/** Calls made while re-running, for the report's totals. */
export interface CallCounts {
  model: number;
  live: Record<string, number>;
}

const keyOf = (tool: string, input: unknown) => `${tool}\u0000${canonicalJson(input)}`;

/**
 * The results a run recorded, by tool (the primary's name when a fallback served) and canonical
 * arguments, each taken in the order it was recorded: a retried call gets its recorded attempts in
 * turn, and the last one again when the re-run calls it more often than the run did.
 */
export class RecordedCalls {
  private readonly byKey = new Map<string, { results: StepResult[]; next: number }>();

  constructor(log: RunLog) {
    for (const r of log.records) {
      if (r.topic !== 'actionResults' || r.value === null) continue;
      for (const result of (r.value as unknown as ActionResult).results) {
        let input: unknown;
        try {
          input = JSON.parse(result.input_json);
        } catch {
          continue; // Action dead-letters such a wave: there is no result to reuse
        }
        const key = keyOf(result.fallback_from ?? result.tool, input);
        const entry = this.byKey.get(key);
        if (entry) entry.results.push(result);
        else this.byKey.set(key, { results: [result], next: 0 });
      }
    }
  }

  /** The next recorded result of `tool` with `input` (the last one once all were taken), or undefined when the run never made that call. */
  take(tool: string, input: unknown): StepResult | undefined {
    const entry = this.byKey.get(keyOf(tool, input));
    if (!entry) return undefined;
    const result = entry.results[Math.min(entry.next, entry.results.length - 1)]!;
    entry.next++;
    return result;
  }
}

/** The model a recorded answer names (a chat completion's `model`), or null when it names none. */
function answeredBy(result: StepResult): string | null {
  try {
    const model = (JSON.parse(result.response_raw ?? '') as { model?: unknown }).model;
    return typeof model === 'string' ? model : null;
  } catch {
    return null; // an answer that is not JSON names no model
  }
}

/** Answers one call of a re-run (see the module comment). */
export async function resolveCall(step: StepCall, thoughtId: string, recorded: RecordedCalls, sources: CallSources, counts: CallCounts): Promise<Resolved> {
  const tool = sources.catalog.get(step.tool);
  if (!tool) return { source: 'diverged', reason: `the candidate's catalog has no tool ${step.tool} (Action would dead-letter the wave)` };
  let input: unknown;
  try {
    input = JSON.parse(step.input_json);
  } catch {
    return { source: 'diverged', reason: `the input of ${step.tool} is not JSON (Action would dead-letter the wave)` };
  }
  const ctx = { idempotencyKey: step.idempotency_key, traceparent: traceparentFor(thoughtId, `eval:${step.step_id}`), secrets: sources.secrets, thoughtId };
  // As Action: input the tool's contract refuses is answered invalid_input, and nothing is sent.
  if (!tool.validateInput(input)) return { source: 'refused', result: await invokeTool(tool, step.step_id, input, ctx, sources.http) };
  const isModel = tool.spec.kind === 'model';
  const found = recorded.take(step.tool, input);
  // The model a turn is sent to: the one its request names (a skill's `model`), else the candidate's.
  const asked = isModel ? (((input as { model?: unknown }).model as string | undefined) ?? sources.namedModel) : null;
  if (found && !(asked !== null && answeredBy(found) !== null && answeredBy(found) !== asked))
    return { source: 'recorded', result: { ...found, step_id: step.step_id, idempotency_key: step.idempotency_key, input_json: step.input_json } };
  if (isModel) {
    if (!sources.hasModel)
      return { source: 'diverged', reason: `the model request of ${step.step_id} changed, and the candidate has no model to ask (--base-url, --model)` };
    counts.model++;
    return { source: 'model', result: await sources.executor.execute(tool, step.step_id, input, ctx) };
  }
  if (tool.spec.side_effects === false && sources.liveReads) {
    counts.live[step.tool] = (counts.live[step.tool] ?? 0) + 1;
    return { source: 'live', result: await sources.executor.execute(tool, step.step_id, input, ctx) };
  }
  const why =
    tool.spec.side_effects === false
      ? 'it is free of side effects, but live reads are off (--live-reads)'
      : tool.spec.side_effects === true
        ? 'it has side effects'
        : 'the catalog does not declare it free of side effects';
  return { source: 'diverged', reason: `${step.tool} ${step.input_json} was never recorded, and was not called: ${why}` };
}
