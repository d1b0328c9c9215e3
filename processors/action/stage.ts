import { ContractViolation } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import type { InputRecord, OutputRecord, OversizedOutput, StageDefinition } from '../../runtime/processor.ts';
import { traceparentFor } from '../../runtime/tracing/ids.ts';
import { startExecuteTool } from '../../runtime/tracing/gen-ai.ts';
import { traceStage } from '../../runtime/tracing/spans.ts';
import type { ActionResult, ThoughtRequest } from '../../schemas/types.gen.ts';
import type { ToolCatalog } from '../../tools/catalog.ts';
import { callId } from '../model-wire.ts';
import type { SecretResolver } from '../../tools/secrets.ts';
import { ToolExecutor, type ExecutorEvents } from './executor.ts';
import type { HttpDeps } from './invoke.ts';

export interface ActionOptions {
  catalog: ToolCatalog;
  /**
   * The catalog of the release a run started on (its RunState.manifest; null: recorded before runs
   * named one): a wave's tools are looked up in it, among those `catalog` has (the deployment's
   * catalog is the list of tools this Action may call at all). Unset: `catalog` for every run.
   * Breakers and fallbacks stay the deployment's (`catalog`).
   */
  catalogFor?: (digest: string | null) => Promise<ToolCatalog>;
  http: HttpDeps;
  /** Resolves the catalog's `${NAME}` header references when a call needs them. */
  secrets: SecretResolver;
  /**
   * Waves handled at once by this instance, across all its partitions (each wave's steps run
   * concurrently too): its I/O capacity, about `concurrency / tool latency` waves per second.
   */
  concurrency: number;
  /**
   * How long a finished wave waits, at most, for waves of its partition still being handled, to
   * commit in one transaction with them (TAO_ACTION_COMMIT_LINGER_MS; 0: at once).
   */
  commitLingerMs?: number;
  events?: ExecutorEvents;
  /** One line per executed step. Tool inputs, headers and bodies are never logged: they may hold secrets. */
  logger?: Logger;
}

/**
 * Action: reads `thought.requests`, runs each wave's tool calls concurrently and writes one
 * `action.results` record per wave. A wave naming an unknown tool, or whose input is not JSON, is a
 * hard failure (dead letter); anything a tool does is a result.
 */
export function actionStage(options: ActionOptions): StageDefinition & { executor: ToolExecutor } {
  const executor = new ToolExecutor(options.catalog, options.http, options.events);
  return traceStage(
    {
      executor,
      describe: () => ({ breakers: executor.states() }),
      stage: 'action',
      inputs: ['thoughtRequests'],
      outputs: ['actionResults'],
      concurrency: options.concurrency,
      // The cap is per instance, not per partition, and every owned partition is consumed at once: so
      // one instance keeps `concurrency` calls in flight, and each added instance (up to the topic's
      // partitions) adds that many more.
      maxInFlight: options.concurrency,
      partitionsConcurrently: 12,
      // A partition's next records are fetched and started while earlier ones still wait on their
      // tools (commits stay in offset order): an instance's slots do not idle behind the slowest call of a fetch.
      pipelined: { lingerMs: options.commitLingerMs ?? 0 },
      maxRecordsPerTransaction: 100,
      maxInputBytes: 1024 * 1024,
      // A wave whose responses make its result record too large for the topic: the largest responses
      // become `too_large` errors (Observation then fails those steps, and Thought decides), instead
      // of the wave being dead-lettered and its run left without an outcome.
      fitOutputs(_input, outputs, over) {
        const result = outputs[0]?.value as ActionResult | undefined;
        const fitted = result && over.topic === 'actionResults' ? withoutLargestResponses(result, over) : null;
        return fitted ? [{ ...outputs[0]!, value: fitted }] : null;
      },
      // A wave that can never run (an unknown tool, an input that is not JSON) is dead-lettered, and
      // its run told so in the same transaction: a result with no step and the dead letter's
      // reference, which Observation carries on and on which Thought ends the run failed.
      deadLettered({ input, ref }): OutputRecord[] {
        const request = input.value as ThoughtRequest;
        const value: ActionResult = { thought_id: request.thought_id, iteration: request.iteration, run: request.run, results: [], dead_letter: ref };
        return [{ topic: 'actionResults', key: request.thought_id, value, span: `action:${request.iteration}` }];
      },
      async handle(record: InputRecord): Promise<OutputRecord[]> {
        const request = record.value as ThoughtRequest;
        const catalog = options.catalogFor ? await options.catalogFor(request.run.manifest) : options.catalog;
        const calls = request.steps.map((step) => {
          // A release chooses among the tools this deployment offers (options.catalog): it never
          // makes Action call a tool the operator did not deploy here.
          const tool = options.catalog.get(step.tool) ? catalog.get(step.tool) : undefined;
          if (!tool)
            throw new ContractViolation(
              `step ${step.step_id} names unknown tool "${step.tool}" (catalog has ${catalog
                .names()
                .filter((n) => options.catalog.get(n))
                .join(', ')})`,
              {
                code: 'UNKNOWN_TOOL',
              },
            );
          let input: unknown;
          try {
            input = JSON.parse(step.input_json);
          } catch (err) {
            throw new ContractViolation(`step ${step.step_id}: input_json is not JSON: ${(err as Error).message}`);
          }
          return { step, tool, input };
        });
        // The writer of this wave's result, and so the span of this handling: tool calls are its children.
        const writer = `action:${request.iteration}`;
        const traceparent = traceparentFor(request.thought_id, writer);
        const results = await Promise.all(
          calls.map(async ({ step, tool, input }) => {
            // A call a model asked for: an execute_tool span around it when GenAI spans are on (runtime/tracing/gen-ai.ts).
            const asked = modelCallId(step.step_id);
            const span = asked
              ? startExecuteTool(traceparent, {
                  tool: step.tool,
                  callId: asked,
                  description: tool.spec.description || null,
                  step: step.step_id,
                  thoughtId: request.thought_id,
                })
              : null;
            const result = await executor.execute(tool, step.step_id, input, {
              idempotencyKey: step.idempotency_key,
              traceparent: span?.traceparent ?? traceparent,
              secrets: options.secrets,
              thoughtId: request.thought_id,
            });
            span?.end(result.error?.type ?? null);
            return result;
          }),
        );
        for (const r of results) {
          options.logger?.info('step executed', {
            thought_id: request.thought_id,
            iteration: request.iteration,
            step: r.step_id,
            tool: r.tool,
            status: r.error ? 'error' : 'ok',
            duration_ms: r.response_time_ms,
            error_code: r.error?.type ?? null,
            http_status: r.status_code,
            attempts: r.attempts,
            fallback_from: r.fallback_from,
          });
        }
        const value: ActionResult = { thought_id: request.thought_id, iteration: request.iteration, run: request.run, results, dead_letter: null };
        return [{ topic: 'actionResults', key: request.thought_id, value, span: writer }];
      },
    },
    describeWave,
  );
}

/**
 * The conversation's id of the call a step performs when a model asked for it: step `M<n>_<i>` is the
 * i-th call of model turn n (processors/run-driver.ts `callStep`), whose id in the answer, and in the
 * `tool_call_id` the model is shown with its result, is `callId(n, i)`. Null for any other step (a
 * flow's, a model turn's, a step of a plan the model wrote: `M<n>_<id>`, ids starting with a letter).
 */
export function modelCallId(stepId: string): string | null {
  const m = /^M(\d+)_(\d+)$/.exec(stepId);
  return m ? callId(Number(m[1]), Number(m[2])) : null;
}

/** Room left for the error messages that replace the responses, and the record's own framing. */
const FIT_MARGIN_BYTES = 16 * 1024;

/**
 * `result` with its largest responses (body and parsed data) replaced by `too_large` errors, as
 * few as bring the record `over.bytes - over.limit` bytes down and some margin (all of them when
 * that is not enough: the runner measures again and dead-letters what still does not fit); null
 * when it has no response to drop.
 */
export function withoutLargestResponses(result: ActionResult, over: Pick<OversizedOutput, 'bytes' | 'limit'>): ActionResult | null {
  const sizes = result.results.map((r) => Buffer.byteLength(r.response_raw ?? '') + Buffer.byteLength(r.data_json ?? ''));
  const order = sizes
    .map((_, i) => i)
    .filter((i) => sizes[i]! > 0)
    .sort((a, b) => sizes[b]! - sizes[a]!);
  const needed = over.bytes - over.limit + FIT_MARGIN_BYTES;
  const dropped = new Set<number>();
  let freed = 0;
  for (const i of order) {
    if (freed >= needed) break;
    dropped.add(i);
    freed += sizes[i]!;
  }
  if (dropped.size === 0) return null;
  return {
    ...result,
    results: result.results.map((r, i) =>
      dropped.has(i)
        ? {
            ...r,
            response_raw: null,
            data_json: null,
            error: {
              type: 'too_large',
              message: `the response (${sizes[i]} bytes with its parsed data) would make the wave's result record ${over.bytes} bytes, over the ${over.limit}-byte limit of loop records`,
              retryable: false,
            },
          }
        : r,
    ),
  };
}

/** Span attributes of an Action handling: the wave and how its steps ended (never their inputs). */
function describeWave(record: InputRecord, [written]: readonly OutputRecord[]): Record<string, string | number | string[]> {
  const { iteration, steps } = record.value as ThoughtRequest;
  const failed = ((written?.value as ActionResult | undefined)?.results ?? []).flatMap((r) => (r.error ? [`${r.step_id}:${r.error.type}`] : []));
  return { 'tao.iteration': iteration, 'tao.steps': steps.map((s) => s.step_id), 'tao.tools': steps.map((s) => s.tool), 'tao.step_errors': failed };
}
