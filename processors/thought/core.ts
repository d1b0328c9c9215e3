/**
 * Thought's decisions, as pure functions of (input record, configuration). No I/O, no clock, no
 * randomness: replaying the same input with the same configuration gives the same records.
 */
import type { ErrorType, ObservationResult, Outcome, OutcomeStatus, RunSnapshot, RunState, StepCall, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
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

export type ThoughtOutput = { topic: 'thoughtRequests'; value: ThoughtRequest } | { topic: 'outcomes'; value: Outcome } | { topic: 'thoughtRuns'; value: RunSnapshot };

/** What Thought decided for one input: the records to write, and why nothing was written when so. */
export interface ThoughtDecision {
  outputs: ThoughtOutput[];
  /** Set when the input was deliberately ignored (a redelivered task, a stale observation). */
  ignored?: string;
}

/** Error types worth another wave: the tool may answer differently next time. */
const RETRYABLE: ReadonlySet<ErrorType> = new Set(['timeout', 'rate_limited', 'server_error', 'network_issue', 'malformed', 'circuit_open']);

/** The text a planner sees for a task: the run's text so far plus the task's, or null if the task will be ignored. */
export function planningText(task: Task, snapshot?: RunSnapshot): string | null {
  if (snapshot && (task.kind === 'NEW' || snapshot.status !== 'awaiting_input')) return null;
  return snapshot ? `${snapshot.task_text}\n${task.text}` : task.text;
}

/**
 * Starts a run from a task, or resumes one: a NEW task for a run that already exists is a
 * redelivery and is ignored; a REPLY to a run awaiting input resumes it with the reply's text added;
 * a REPLY to an unknown run starts it.
 * @param snapshot Thought's stored state of the task's run, if any.
 * @param plannerRecord What the planner's `gather` returned for this task (read from the log on replay).
 */
export function onTask(task: Task, config: ThoughtConfig, snapshot?: RunSnapshot, plannerRecord: string | null = null): ThoughtDecision {
  if (snapshot && task.kind === 'NEW') return { outputs: [], ignored: `run ${task.thought_id} already exists (${snapshot.status}); task ${task.task_id} is a redelivery` };
  if (snapshot && snapshot.status !== 'awaiting_input') return { outputs: [], ignored: `reply ${task.task_id} arrived while run ${task.thought_id} is ${snapshot.status}, not awaiting input` };
  const text = planningText(task, snapshot)!;
  const iteration = snapshot?.iteration ?? 0;
  const result = config.planner.plan({ thought_id: task.thought_id, text, metadata: task.metadata }, plannerRecord);
  const base = { task_id: task.task_id, task_text: text, planner: result.planner, max_iterations: config.maxIterations, planner_record: plannerRecord };
  if (result.kind === 'needs_input') {
    const run: RunState = { ...base, flow_id: result.flow.id, flow_version: result.flow.version, plan_json: 'null', outputs_json: '{}', step_attempts: {} };
    return end(task.thought_id, run, iteration, 'awaiting_input', result.reason, null, result.missing);
  }
  const candidate = result.plan as Partial<Plan> | null;
  const flow = candidate?.flow ?? { id: 'unknown', version: 0 };
  const run: RunState = { ...base, flow_id: String(flow.id), flow_version: Number(flow.version) || 0, plan_json: JSON.stringify(result.plan), outputs_json: '{}', step_attempts: {} };
  const problems = config.validator.validate(result.plan, config.tools);
  if (problems.length) return end(task.thought_id, run, iteration, 'failed', `invalid plan: ${problems.join('; ')}`, null);
  const decision = nextWave(task.thought_id, iteration, run, result.plan as Plan, {}, []);
  if (decision.outputs.some((o) => o.topic === 'thoughtRequests')) decision.outputs.push({ topic: 'thoughtRuns', value: snapshotOf(task.thought_id, 'running', iteration + 1, run, [], null) });
  return decision;
}

/** Folds a wave's verdicts into the run and decides: next wave, retry, or the end of the run. */
export function onObservation(obs: ObservationResult, config: ThoughtConfig, snapshot?: RunSnapshot): ThoughtDecision {
  if (snapshot && snapshot.status !== 'running') return { outputs: [], ignored: `observation of wave ${obs.iteration} arrived for run ${obs.thought_id}, which is ${snapshot.status}` };
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
    if (!RETRYABLE.has(verdict.error_type)) return end(obs.thought_id, obs.run, obs.iteration, 'failed', `${why}; ${verdict.error_type} is not retryable`, null);
    if (attempts >= config.maxStepAttempts) return end(obs.thought_id, obs.run, obs.iteration, 'failed', `${why}; attempt limit ${config.maxStepAttempts} reached`, null);
    retries.push(verdict.step_id);
  }
  const run: RunState = { ...obs.run, outputs_json: JSON.stringify(outputs) };
  return nextWave(obs.thought_id, obs.iteration, run, plan, outputs, retries);
}

function nextWave(thoughtId: string, iteration: number, run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>, retries: string[]): ThoughtDecision {
  const done = new Set(Object.keys(outputs));
  if (done.size === plan.steps.length) {
    const resolved = resolveReferences(plan.output, outputs);
    if ('missing' in resolved) return end(thoughtId, run, iteration, 'failed', `output field ${resolved.missing} has no value`, null);
    return end(thoughtId, run, iteration, 'completed', `all ${plan.steps.length} steps verified`, JSON.stringify(resolved.value));
  }
  if (iteration >= run.max_iterations) return end(thoughtId, run, iteration, 'budget_exhausted', `iteration limit ${run.max_iterations} reached with ${plan.steps.length - done.size} step(s) unfinished`, null);
  const ready = plan.steps.filter((s) => !done.has(s.id) && (retries.includes(s.id) || ((run.step_attempts[s.id] ?? 0) === 0 && s.depends_on.every((d) => done.has(d)))));
  if (ready.length === 0) return end(thoughtId, run, iteration, 'failed', 'no step is ready and the plan is not finished', null);
  const wave = iteration + 1;
  const steps: StepCall[] = [];
  const attempts = { ...run.step_attempts };
  for (const step of ready) {
    const input = resolveReferences(step.input, outputs);
    if ('missing' in input) return end(thoughtId, run, iteration, 'failed', `step ${step.id}: input reference ${input.missing} has no value`, null);
    attempts[step.id] = (attempts[step.id] ?? 0) + 1;
    steps.push({ step_id: step.id, tool: step.tool, input_json: JSON.stringify(input.value), idempotency_key: `${thoughtId}:${wave}:${step.id}`, attempt: attempts[step.id]! });
  }
  return { outputs: [{ topic: 'thoughtRequests', value: { thought_id: thoughtId, iteration: wave, run: { ...run, step_attempts: attempts }, steps } }] };
}

/** Ends the run (or parks it, awaiting input): the outcome, and the snapshot that remembers it. */
function end(thoughtId: string, run: RunState, iterations: number, status: OutcomeStatus, reason: string, output: string | null, missing: string[] = []): ThoughtDecision {
  const stepsExecuted = Object.values(run.step_attempts).reduce((a, b) => a + b, 0);
  const outcome: Outcome = { thought_id: thoughtId, task_id: run.task_id, status, reason, iterations, steps_executed: stepsExecuted, output_json: output, missing_fields: missing, planner: run.planner, flow_id: run.flow_id, flow_version: run.flow_version };
  const parked = status === 'awaiting_input';
  return {
    outputs: [
      { topic: 'outcomes', value: outcome },
      { topic: 'thoughtRuns', value: snapshotOf(thoughtId, parked ? 'awaiting_input' : 'ended', iterations, run, missing, parked ? null : status) },
    ],
  };
}

function snapshotOf(thoughtId: string, status: RunSnapshot['status'], iteration: number, run: RunState, missing: string[], outcome: string | null): RunSnapshot {
  // The parked run state is kept only while a human is asked; a running run carries its state in its records.
  return { thought_id: thoughtId, status, iteration, task_id: run.task_id, task_text: run.task_text, missing_fields: missing, run: status === 'awaiting_input' ? run : null, outcome_status: outcome };
}
