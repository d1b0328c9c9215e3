/**
 * Thought's decisions, as pure functions of (input record, stored snapshot, configuration). No I/O,
 * no clock, no randomness: replaying the same input with the same configuration gives the same
 * records. Every run ends with an outcome whose `reason_code` names what ended it.
 *
 * Loop bounds, each ending the run with its own reason:
 * - `max_iterations`: waves per run;
 * - `cost_budget`: cost units (tool calls, planner tokens) per run;
 * - `no_novelty`: `noveltyWaves` consecutive waves that brought no data not seen before;
 * - `repeat_cap`: the same tool with the same input more than `repeatCap` times (a step's
 *   `max_calls` overrides it);
 * - `reflection`: after `reflectAfter` consecutive failures of a step (at once for errors that
 *   retrying can't fix) Thought writes a Reflexion record and acts on it: a fallback tool or a
 *   changed plan, asking a human (awaiting_input), escalating, or failing.
 *
 * This module starts runs from tasks and folds each wave's verdicts; beside it: plan-wave.ts (a plan
 * run's next wave and its bounds), step-reflection.ts (the rule-based Reflexion of a failing step),
 * model/ (runs a model drives: model/turn.ts, model/answer.ts) and approval.ts (approval before side effects).
 */
import type { ErrorType, ObservationResult, RunSnapshot, RunState, Task } from '../../schemas/types.gen.ts';
import { holds, planOfRun, type Plan } from '../plan.ts';
import { jsonField, jsonObjectField } from '../../runtime/json-field.ts';
import { waveFailures } from '../rates.ts';
import { isModelStep, runDriver } from '../run-driver.ts';
import { digest, end, type Outputs, type RunAt, type RunContext, type ThoughtDecision } from './run-end.ts';
import { askedCustomer, replanTurn, resumeReact, startReact } from './model/turn.ts';
import { startRouting } from './route-turn.ts';
import { onReactObservation } from './model/answer.ts';
import type { PlanRunner } from './model/state.ts';
import { nextWave } from './plan-wave.ts';
import { reflect } from './step-reflection.ts';
import { gateWave, onDecision } from './approval.ts';
import { endDeadLettered, onCancel, onTimer, resumesDeadLettered, withParkedTtl } from './forced-end.ts';
import type { ThoughtConfig } from './config.ts';

export type { ThoughtDecision, ThoughtOutput } from './run-end.ts';

export type { ThoughtConfig } from './config.ts';

/** Error types worth another try of the same call: the tool may answer differently next time. */
const RETRYABLE: ReadonlySet<ErrorType> = new Set(['timeout', 'rate_limited', 'server_error', 'network_issue', 'malformed', 'circuit_open']);

/** The text a planner sees for a task: the run's text so far plus the task's, or null if the task will be ignored. */
export function planningText(task: Task, snapshot?: RunSnapshot): string | null {
  if (task.kind === 'DECISION' || task.kind === 'TIMER') return null;
  if (snapshot && (task.kind === 'NEW' || snapshot.status !== 'awaiting_input')) return null;
  return snapshot ? `${snapshot.task_text}\n${task.text}` : task.text;
}

/**
 * Starts a run from a task, or resumes one: a NEW task for a run that already exists is a
 * redelivery and is ignored; a REPLY to a run whose model asked the customer continues that
 * conversation (model/turn.ts `resumeReact`); a REPLY to another run awaiting input resumes it: re-planned with the reply's
 * text added, step attempts counting afresh for the new plan, while the run's bounds (identical-call
 * counts, cost) and reflections carry over; a REPLY to an unknown run starts it. A DECISION task
 * decides a run awaiting approval (approval.ts); a first wave with calls that need approval parks
 * the run instead of dispatching it.
 * @param snapshot Thought's stored state of the task's run, if any.
 * @param plannerRecord What the planner's `gather` returned for this task (read from the log on replay).
 */
export function onTask(task: Task, config: ThoughtConfig, snapshot?: RunSnapshot, plannerRecord: string | null = null): ThoughtDecision {
  // A deadline the scheduler found passed: the run ends if it still stands where the timer was set.
  if (task.kind === 'TIMER') return onTimer(task, snapshot);
  // A cancel ends the run where it stands.
  if (task.kind === 'CANCEL') return onCancel(task, snapshot);
  // A decision on a parked run dispatches the wave it approved as it stands: it is not gated again.
  if (task.kind === 'DECISION') return withParkedTtl(onDecision(task, config, snapshot), config.parking);
  return withParkedTtl(gateWave(decideTask(task, config, snapshot, plannerRecord), config), config.parking);
}

function decideTask(task: Task, config: ThoughtConfig, snapshot: RunSnapshot | undefined, plannerRecord: string | null): ThoughtDecision {
  if (snapshot && task.kind === 'NEW')
    return { outputs: [], ignored: `run ${task.thought_id} already exists (${snapshot.status}); task ${task.task_id} is a redelivery` };
  if (snapshot && snapshot.status !== 'awaiting_input')
    return { outputs: [], ignored: `reply ${task.task_id} arrived while run ${task.thought_id} is ${snapshot.status}, not awaiting input` };
  const text = planningText(task, snapshot)!;
  const iteration = snapshot?.iteration ?? 0;
  const result = config.planner.plan({ thought_id: task.thought_id, text, metadata: task.metadata }, plannerRecord);
  const parked = snapshot?.run;
  // The model asked the customer: the reply continues the same conversation (history, outputs, tokens kept).
  if (parked && config.model && askedCustomer(parked)) {
    const changes: Partial<RunState> = {
      task_id: task.task_id,
      task_text: text,
      planner_record: plannerRecord,
      cost_spent: parked.cost_spent + plannerCost(plannerRecord),
      human_involved: true,
    };
    const reply = { text: task.text, facts: result.kind === 'react' ? result.facts : {}, changes };
    return resumeReact({ thoughtId: task.thought_id, iteration, run: parked }, reply, config.model);
  }
  const run: RunState = {
    task_id: task.task_id,
    task_text: text,
    planner: result.planner,
    flow_id:
      result.kind === 'plan' ? String((result.plan as Partial<Plan> | null)?.flow?.id ?? 'unknown') : result.kind === 'needs_input' ? result.flow.id : 'none',
    flow_version:
      result.kind === 'plan' ? Number((result.plan as Partial<Plan> | null)?.flow?.version) || 0 : result.kind === 'needs_input' ? result.flow.version : 0,
    plan_json: result.kind === 'plan' ? JSON.stringify(result.plan) : 'null',
    outputs_json: '{}',
    // A resumed run starts its new plan afresh; the bounds (calls, cost, reflections) carry over.
    step_attempts: {},
    max_iterations: config.maxIterations,
    planner_record: plannerRecord,
    cost_spent: (parked?.cost_spent ?? 0) + plannerCost(plannerRecord),
    cost_budget: config.costBudget,
    call_counts: parked?.call_counts ?? {},
    seen_data: parked?.seen_data ?? [],
    stale_waves: 0,
    failure_streaks: {},
    error_history: {},
    skipped: [],
    reflections: parked?.reflections ?? [],
    failures_seen: parked?.failures_seen ?? 0,
    // Only a run parked for a person reaches here with a snapshot: this task is that person's reply.
    human_involved: snapshot !== undefined || (parked?.human_involved ?? false),
    planner_kind: config.planner.name,
    planner_config: config.planner.config,
    model_state_json: null,
    driver: 'flow',
    // The keys carry the run and the call: an approved call the new plan makes again is still approved.
    approved_calls: parked?.approved_calls ?? [],
    // A run keeps the release it started on; a new one starts on the configuration's.
    manifest: parked ? parked.manifest : (config.manifest ?? null),
  };
  const at: RunAt = { thoughtId: task.thought_id, iteration, run };
  if (result.kind === 'needs_input') return end(at, 'awaiting_input', 'needs_input', result.reason, { missing: result.missing });
  if (result.kind === 'escalate') return end(at, 'escalated', 'unroutable', result.reason);
  if (result.kind === 'react') {
    if (!config.model) return end(at, 'escalated', 'unroutable', `the planner chose skill ${result.skill} for a model, but no model loop is configured`);
    return startReact(at, result, config.model, config);
  }
  if (result.kind === 'choose_skill') {
    if (!config.model) return end(at, 'escalated', 'unroutable', `${result.reason}; no model loop is configured to choose a skill`);
    return startRouting(at, result, config.model, config);
  }
  const problems = config.validator.validate(result.plan, config.tools);
  if (problems.length) return end(at, 'failed', 'invalid_plan', `invalid plan: ${problems.join('; ')}`);
  return nextWave({ ...at, plan: result.plan as Plan, outputs: {} }, new Set(), config);
}

/**
 * Folds a wave's verdicts into the run and decides: next wave, retry, reflection, or the end. A next
 * wave with calls that need approval parks the run instead (approval.ts).
 */
export function onObservation(obs: ObservationResult, config: ThoughtConfig, snapshot?: RunSnapshot): ThoughtDecision {
  return withParkedTtl(gateWave(decideObservation(obs, config, snapshot), config), config.parking);
}

function decideObservation(obs: ObservationResult, config: ThoughtConfig, snapshot?: RunSnapshot): ThoughtDecision {
  if (snapshot && snapshot.status !== 'running' && !resumesDeadLettered(obs, snapshot))
    return { outputs: [], ignored: `observation of wave ${obs.iteration} arrived for run ${obs.thought_id}, which is ${snapshot.status}` };
  // A wave is decided on once: a second observation of it (a stage that processed a record twice)
  // would dispatch every later wave twice.
  if (snapshot && obs.iteration < snapshot.iteration)
    return { outputs: [], ignored: `observation of wave ${obs.iteration} arrived for run ${obs.thought_id}, which has dispatched wave ${snapshot.iteration}` };
  // A wave that was dead-lettered brought no verdict, and never will: the run ends failed.
  const deadLettered = endDeadLettered(obs);
  if (deadLettered) return deadLettered;
  // A plan-replan run's plan waves are folded below like any plan's; its model turns, like react's.
  const driver = runDriver(obs.run);
  const replanning = driver === 'plan-replan';
  if (driver === 'react' || (replanning && obs.verdicts.some((v) => isModelStep(v.step_id)))) {
    if (!config.model)
      return end(
        { thoughtId: obs.thought_id, iteration: obs.iteration, run: obs.run },
        'failed',
        'model_unavailable',
        'a model drives this run, but this Thought has no model loop configured',
      );
    const runner: PlanRunner = {
      validate: (plan) => config.validator.validate(plan, config.tools),
      run: (run, plan, outputs) => nextWave({ thoughtId: obs.thought_id, iteration: obs.iteration, run, plan, outputs }, new Set(), config),
    };
    return onReactObservation(obs, config.model, config, runner);
  }
  const carried = planOfRun(obs.run.plan_json);
  let plan = carried;
  const outputs = jsonObjectField(obs.run.outputs_json, 'run.outputs_json') as Outputs;
  const streaks = { ...obs.run.failure_streaks };
  const history: Record<string, string[]> = { ...obs.run.error_history };
  const seen = new Set(obs.run.seen_data);
  const reflections = [...obs.run.reflections];
  const again = new Set<string>();
  let replan: string | null = null;
  let newInformation = false;
  let allValid = true;
  const failures = obs.run.failures_seen + waveFailures(obs.verdicts);

  for (const verdict of obs.verdicts) {
    const step = plan.steps.find((s) => s.id === verdict.step_id);
    if (!step) continue;
    if (verdict.valid) {
      streaks[step.id] = 0;
      history[step.id] = [];
      const data = jsonField(verdict.extracted_data_json ?? '{}', `verdicts[${verdict.step_id}].extracted_data_json`) as Record<string, unknown>;
      const hash = digest(`${verdict.tool}\u0000${verdict.extracted_data_json}`);
      if (!seen.has(hash)) {
        seen.add(hash);
        newInformation = true;
      }
      if (step.until && !holds(step.until, data)) again.add(step.id);
      else outputs[step.id] = data;
      continue;
    }
    allValid = false;
    streaks[step.id] = (streaks[step.id] ?? 0) + 1;
    history[step.id] = [...(history[step.id] ?? []), verdict.error_type];
    if (RETRYABLE.has(verdict.error_type) && streaks[step.id]! < config.reflectAfter) {
      again.add(step.id);
      continue;
    }
    const reflection = reflect(step, verdict, history[step.id]!, obs.iteration, replanning);
    reflections.push(reflection);
    const at: RunAt = {
      thoughtId: obs.thought_id,
      iteration: obs.iteration,
      run: { ...obs.run, failure_streaks: streaks, error_history: history, seen_data: [...seen], reflections, failures_seen: failures },
    };
    switch (reflection.action) {
      case 'change_plan':
        // No other tool declared: the model writes a new plan once the whole wave is folded.
        if (replanning && step.fallback === undefined) {
          replan ??= `step ${step.id} (${verdict.tool}) failed: ${verdict.error_type} after ${obs.run.step_attempts[step.id] ?? 0} attempt(s)`;
          break;
        }
      // falls through
      case 'fallback':
        plan = { ...plan, steps: plan.steps.map((s) => (s.id === step.id ? { ...s, tool: s.fallback!, fallback: undefined } : s)) };
        streaks[step.id] = 0;
        history[step.id] = [];
        again.add(step.id);
        break;
      case 'ask_human':
        return end(
          at,
          'awaiting_input',
          'reflection',
          `step ${step.id} (${verdict.tool}) found nothing for its input; a person must check: ${Object.keys(step.input).join(', ')}`,
          { missing: Object.keys(step.input) },
        );
      case 'escalate':
        return end(at, 'escalated', 'reflection', `step ${step.id} (${verdict.tool}) was refused (${verdict.error_type}): escalated to a person`);
      case 'fail':
        return end(
          at,
          'failed',
          'step_failed',
          `step ${step.id} (${verdict.tool}) failed: ${verdict.error_type} after ${obs.run.step_attempts[step.id] ?? 0} attempt(s); reflection found no way forward`,
        );
    }
  }

  // Only a wave that succeeded and still taught nothing new is stale; failures are the reflection's business.
  const stale = newInformation ? 0 : allValid ? obs.run.stale_waves + 1 : obs.run.stale_waves;
  // An unchanged plan keeps the text it came in (the JSON.stringify of the same plan, written when it was planned).
  const run: RunState = {
    ...obs.run,
    plan_json: plan === carried ? obs.run.plan_json : JSON.stringify(plan),
    outputs_json: JSON.stringify(outputs),
    failure_streaks: streaks,
    error_history: history,
    seen_data: [...seen],
    stale_waves: stale,
    reflections,
    failures_seen: failures,
  };
  const next: RunContext = { thoughtId: obs.thought_id, iteration: obs.iteration, run, plan, outputs };
  if (replan !== null) {
    if (!config.model) return end(next, 'failed', 'model_unavailable', `a new plan is needed (${replan}), but this Thought has no model loop configured`);
    return replanTurn(next, config.model, replan);
  }
  return nextWave(next, again, config);
}

/** Planner tokens as cost units: 1 unit per 1,000 tokens of a recorded answer with `usage` (the retired llm planner's; kept so its runs re-decide the same). */
function plannerCost(record: string | null): number {
  if (!record) return 0;
  try {
    const tokens = (JSON.parse(record) as { usage?: { total_tokens?: unknown } }).usage?.total_tokens;
    return typeof tokens === 'number' && tokens > 0 ? tokens / 1000 : 0;
  } catch {
    return 0; // a record that is not JSON carries no usage to charge
  }
}
