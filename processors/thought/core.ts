/**
 * Thought's decisions, as pure functions of (input record, configuration). No I/O, no clock, no
 * randomness: replaying the same input with the same configuration gives the same records.
 */
import type { ErrorType, ObservationResult, Outcome, OutcomeStatus, RunState, StepCall, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { resolveReferences, type Plan, type PlanValidator, type ToolContracts } from './plan.ts';
import type { Planner } from './planner.ts';

export interface ThoughtConfig {
  planner: Planner;
  validator: PlanValidator;
  tools: ToolContracts;
  /** Waves a run may take before it ends as budget_exhausted. */
  maxIterations: number;
  /** Waves that may execute the same step (first try included) before the run fails. */
  maxStepAttempts: number;
}

export type ThoughtOutput = { topic: 'thoughtRequests'; value: ThoughtRequest } | { topic: 'outcomes'; value: Outcome };

/** Error types worth another wave: the tool may answer differently next time. */
const RETRYABLE: ReadonlySet<ErrorType> = new Set(['timeout', 'rate_limited', 'server_error', 'network_issue', 'malformed', 'circuit_open']);

/** Starts a run from a task: plan, validate, dispatch the first wave (or end the run with a reason). */
export function onTask(task: Task, config: ThoughtConfig): ThoughtOutput[] {
  const result = config.planner.plan(task);
  const base = { task_id: task.task_id, task_text: task.text, planner: result.planner, max_iterations: config.maxIterations };
  if (result.kind === 'needs_input') {
    const run: RunState = { ...base, flow_id: result.flow.id, flow_version: result.flow.version, plan_json: 'null', outputs_json: '{}', step_attempts: {} };
    return [outcome(task.thought_id, run, 0, 'awaiting_input', result.reason, null, result.missing)];
  }
  const candidate = result.plan as Partial<Plan> | null;
  const flow = candidate?.flow ?? { id: 'unknown', version: 0 };
  const run: RunState = { ...base, flow_id: String(flow.id), flow_version: Number(flow.version) || 0, plan_json: JSON.stringify(result.plan), outputs_json: '{}', step_attempts: {} };
  const problems = config.validator.validate(result.plan, config.tools);
  if (problems.length) return [outcome(task.thought_id, run, 0, 'failed', `invalid plan: ${problems.join('; ')}`, null)];
  return nextWave(task.thought_id, 0, run, result.plan as Plan, {}, []);
}

/** Folds a wave's verdicts into the run and decides: next wave, retry, or the end of the run. */
export function onObservation(obs: ObservationResult, config: ThoughtConfig): ThoughtOutput[] {
  const plan = JSON.parse(obs.run.plan_json) as Plan;
  const outputs = JSON.parse(obs.run.outputs_json) as Record<string, Record<string, unknown>>;
  const retries: string[] = [];
  for (const verdict of obs.verdicts) {
    if (verdict.valid) {
      outputs[verdict.step_id] = JSON.parse(verdict.extracted_data_json ?? '{}') as Record<string, unknown>;
      continue;
    }
    const attempts = obs.run.step_attempts[verdict.step_id] ?? 0;
    const why = `step ${verdict.step_id} (${verdict.tool}) failed: ${verdict.error_type} after ${attempts} attempt(s)`;
    if (!RETRYABLE.has(verdict.error_type)) return [outcome(obs.thought_id, obs.run, obs.iteration, 'failed', `${why}; ${verdict.error_type} is not retryable`, null)];
    if (attempts >= config.maxStepAttempts) return [outcome(obs.thought_id, obs.run, obs.iteration, 'failed', `${why}; attempt limit ${config.maxStepAttempts} reached`, null)];
    retries.push(verdict.step_id);
  }
  const run: RunState = { ...obs.run, outputs_json: JSON.stringify(outputs) };
  return nextWave(obs.thought_id, obs.iteration, run, plan, outputs, retries);
}

function nextWave(thoughtId: string, iteration: number, run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>, retries: string[]): ThoughtOutput[] {
  const done = new Set(Object.keys(outputs));
  if (done.size === plan.steps.length) {
    const resolved = resolveReferences(plan.output, outputs);
    if ('missing' in resolved) return [outcome(thoughtId, run, iteration, 'failed', `output field ${resolved.missing} has no value`, null)];
    return [outcome(thoughtId, run, iteration, 'completed', `all ${plan.steps.length} steps verified`, JSON.stringify(resolved.value))];
  }
  if (iteration >= run.max_iterations) return [outcome(thoughtId, run, iteration, 'budget_exhausted', `iteration limit ${run.max_iterations} reached with ${plan.steps.length - done.size} step(s) unfinished`, null)];
  const ready = plan.steps.filter((s) => !done.has(s.id) && (retries.includes(s.id) || ((run.step_attempts[s.id] ?? 0) === 0 && s.depends_on.every((d) => done.has(d)))));
  if (ready.length === 0) return [outcome(thoughtId, run, iteration, 'failed', 'no step is ready and the plan is not finished', null)];
  const wave = iteration + 1;
  const steps: StepCall[] = [];
  const attempts = { ...run.step_attempts };
  for (const step of ready) {
    const input = resolveReferences(step.input, outputs);
    if ('missing' in input) return [outcome(thoughtId, run, iteration, 'failed', `step ${step.id}: input reference ${input.missing} has no value`, null)];
    attempts[step.id] = (attempts[step.id] ?? 0) + 1;
    steps.push({ step_id: step.id, tool: step.tool, input_json: JSON.stringify(input.value), idempotency_key: `${thoughtId}:${wave}:${step.id}`, attempt: attempts[step.id]! });
  }
  return [{ topic: 'thoughtRequests', value: { thought_id: thoughtId, iteration: wave, run: { ...run, step_attempts: attempts }, steps } }];
}

function outcome(thoughtId: string, run: RunState, iterations: number, status: OutcomeStatus, reason: string, output: string | null, missing: string[] = []): ThoughtOutput {
  const stepsExecuted = Object.values(run.step_attempts).reduce((a, b) => a + b, 0);
  return {
    topic: 'outcomes',
    value: { thought_id: thoughtId, task_id: run.task_id, status, reason, iterations, steps_executed: stepsExecuted, output_json: output, missing_fields: missing, planner: run.planner, flow_id: run.flow_id, flow_version: run.flow_version },
  };
}
