import type { StepResult } from '../../schemas/types.gen.ts';
import type { Tool, ToolCatalog } from '../../tools/catalog.ts';
import { modelUnavailable } from '../../tools/model.ts';
import { CircuitBreaker, type BreakerState } from './breaker.ts';
import { invokeTool, type HttpDeps, type InvokeContext } from './invoke.ts';

/** Hooks for metrics and logs; the executor itself does no I/O besides tool calls. */
export interface ExecutorEvents {
  onCall?(tool: string, result: StepResult): void;
  onFallback?(primary: string, fallback: string, reason: string): void;
  onBreaker?(tool: string, state: BreakerState): void;
}

/**
 * Runs one step against the catalog with the tool's breaker and fallback:
 * - breaker closed (or the half-open probe): call the tool (with its retries);
 * - breaker open: no request; a `circuit_open` result;
 * - primary failed or open and a `fallbackTool` is declared: the fallback is called with the same
 *   input, and its result (naming the primary in `fallback_from`) is the step's result.
 */
export class ToolExecutor {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly catalog: ToolCatalog,
    private readonly http: HttpDeps,
    private readonly events: ExecutorEvents = {},
  ) {}

  async execute(tool: Tool, stepId: string, input: unknown, ctx: InvokeContext): Promise<StepResult> {
    const primary = await this.callGuarded(tool, stepId, input, ctx);
    const fallbackName = tool.spec.fallbackTool;
    if (!isUpstreamFailure(primary, tool) || !fallbackName) return primary;
    const fallback = this.catalog.get(fallbackName)!;
    const reason = `${tool.spec.name}: ${primary.error!.type}: ${primary.error!.message}`;
    this.events.onFallback?.(tool.spec.name, fallbackName, reason);
    const result = await this.callGuarded(fallback, stepId, input, ctx);
    return { ...result, fallback_from: tool.spec.name, fallback_reason: reason };
  }

  /** Breaker state of every tool called so far (for /health and metrics). */
  states(): Record<string, BreakerState> {
    return Object.fromEntries([...this.breakers].map(([name, b]) => [name, b.current]));
  }

  private async callGuarded(tool: Tool, stepId: string, input: unknown, ctx: InvokeContext): Promise<StepResult> {
    const breaker = this.breakerFor(tool);
    if (breaker && !breaker.tryAcquire()) {
      const until = breaker.reopensAt();
      return {
        step_id: stepId,
        tool: tool.spec.name,
        input_json: JSON.stringify(input),
        idempotency_key: ctx.idempotencyKey,
        attempts: 0,
        status_code: null,
        response_time_ms: 0,
        response_raw: null,
        data_json: null,
        error: {
          type: 'circuit_open',
          message: `circuit breaker of ${tool.spec.name} is open${until ? ` until ${new Date(until).toISOString()}` : ' (half-open probe in flight)'}; no request sent`,
          retryable: true,
        },
        fallback_from: null,
        fallback_reason: null,
        attempt_time_ms: null,
      };
    }
    const result = await invokeTool(tool, stepId, input, ctx, this.http);
    // Input the caller got wrong says nothing about the tool's health, nor does an MCP tool refused
    // because its definition changed on the server (nothing was called).
    if (breaker && result.error?.type !== 'invalid_input' && result.error?.type !== 'schema_changed') breaker.record(!isUpstreamFailure(result, tool));
    this.events.onCall?.(tool.spec.name, result);
    return result;
  }

  private breakerFor(tool: Tool): CircuitBreaker | null {
    if (!tool.spec.breaker) return null;
    let breaker = this.breakers.get(tool.spec.name);
    if (!breaker) {
      breaker = new CircuitBreaker(tool.spec.breaker, this.http.now, (state) => this.events.onBreaker?.(tool.spec.name, state));
      this.breakers.set(tool.spec.name, breaker);
    }
    return breaker;
  }
}

/**
 * The tool (not the caller) failed: no usable answer after retries. Client errors other than 429
 * (bad request, auth, not found) are answers about the request, not upstream failures, and so is an
 * MCP tool's own error result (`tool_error`: the server answered). An MCP tool refused because its
 * definition changed (`schema_changed`) cannot be used: its fallback is. For a model endpoint
 * (`kind: model`), a 4xx that says the model or its capacity is unavailable (404 model_not_found,
 * tools/model.ts `modelUnavailable`) is an upstream failure too: another model may answer.
 */
export function isUpstreamFailure(result: StepResult, tool?: Tool): boolean {
  const error = result.error;
  if (!error || error.type === 'invalid_input' || error.type === 'tool_error') return false;
  if (error.type === 'http_status' && result.status_code !== null && result.status_code >= 400 && result.status_code < 500 && result.status_code !== 429) {
    return tool?.spec.kind === 'model' && modelUnavailable(result.status_code, result.response_raw);
  }
  return true;
}
