/**
 * Acting on a react run's accepted answer (react-answer.ts decides it was one): its tool calls become
 * one wave, its plan is merged into the run's and run in waves, its reflection is recorded and acted
 * on (another turn, a person, escalation or the end). Pure.
 */
import type { ObservationResult, Reflection, ReflectionAction, ReflectionDimension, RunState, StepCall } from '../../schemas/types.gen.ts';
import type { Plan, PlanStep } from '../plan.ts';
import type { DimensionVerdict, ModelAnswer, ModelReflection } from '../model-wire.ts';
import { mergePlan } from './replan.ts';
import { digest, end, ordinal, snapshotOf, type ThoughtDecision } from './run-end.ts';
import {
  callStep,
  isModelStep,
  modelStep,
  nextTurnMode,
  withState,
  type ModelLoopConfig,
  type ModelState,
  type PlanRunner,
  type ReactBounds,
  type ReactSkill,
} from './react-types.ts';
import { modelTurn } from './react-turn.ts';

/**
 * A verified plan answer: renamed into the run's plan (replan.ts), validated like any plan, and run
 * in waves; the steps of the earlier plan that had not finished are replaced (skipped). An invalid
 * plan is a rejected answer: the model hears why in its next plan turn.
 */
export function onPlan(
  thoughtId: string,
  iteration: number,
  run: RunState,
  plan: Plan,
  outputs: Record<string, Record<string, unknown>>,
  turn: number,
  answer: Extract<ModelAnswer, { kind: 'plan' }>,
  state: ModelState,
  skill: ReactSkill,
  loop: ModelLoopConfig,
  bounds: ReactBounds,
  runner: PlanRunner,
): ThoughtDecision {
  const finished = new Set(Object.keys(outputs).filter((id) => !isModelStep(id)));
  // The gate checked the answer against the plan schema: its steps are plan steps.
  const merged = mergePlan(plan, answer.plan as Pick<Plan, 'steps' | 'output'>, turn, finished, new Set(run.skipped));
  const problems = [...merged.problems, ...runner.validate(merged.candidate)];
  if (problems.length) {
    const evidence = `invalid plan: ${problems.join('; ')}`.slice(0, 400);
    const next: ModelState = { ...state, invalid_streak: state.invalid_streak + 1, rejected: [...state.rejected, { turn, error: 'invalid_plan', evidence }] };
    const rejected = withState(run, next);
    if (next.invalid_streak >= bounds.reflectAfter + 1)
      return end(
        thoughtId,
        rejected,
        iteration,
        'failed',
        'model_invalid',
        `the model's last ${next.invalid_streak} answers were rejected (${evidence.slice(0, 200)})`,
        null,
      );
    return modelTurn(thoughtId, iteration, rejected, plan, outputs, next, skill, 'plan', loop);
  }
  return runner.run(withState({ ...run, plan_json: JSON.stringify(merged.plan), skipped: [...run.skipped, ...merged.replaced] }, state), merged.plan, outputs);
}

/**
 * A verified reflection: recorded in the run (its four dimensions, its action) and acted on. Asking a
 * person parks the run for the dimensions found MISSING, escalating or failing ends it; any other
 * action is the model's next turn.
 */
export function onReflection(
  obs: ObservationResult,
  run: RunState,
  plan: Plan,
  outputs: Record<string, Record<string, unknown>>,
  state: ModelState,
  skill: ReactSkill,
  r: ModelReflection,
  turn: number,
  loop: ModelLoopConfig,
): ThoughtDecision {
  const thoughtId = obs.thought_id;
  const actions: Record<ModelReflection['action'], ReflectionAction> = {
    retry_with_changed_input: 'retry_with_changed_input',
    change_plan: 'change_plan',
    ask_person: 'ask_human',
    escalate: 'escalate',
    fail: 'fail',
  };
  const dimension = (name: ReflectionDimension['name'], d: DimensionVerdict): ReflectionDimension => ({
    name,
    result: d.verdict,
    evidence: d.reason,
    recommendation: d.verdict === 'PASS' ? 'none' : r.reason,
  });
  const reflection: Reflection = {
    step_id: modelStep(turn),
    tool: loop.tool,
    iteration: obs.iteration,
    error_types: Object.values(run.error_history)
      .flat()
      .slice(-5)
      .map((e) => e.split(':')[0]!),
    dimensions: [
      dimension('data_completeness', r.data_completeness),
      dimension('logic_consistency', r.logic_consistency),
      dimension('policy_compliance', r.policy_compliance),
      dimension('uncertainty', r.uncertainty),
    ],
    action: actions[r.action],
    author: `model:${state.skill}`,
    summary: r.reason,
  };
  const reflected: RunState = { ...run, reflections: [...run.reflections, reflection] };
  const next: ModelState = { ...state, failed_waves: 0 };
  switch (r.action) {
    case 'ask_person':
      return end(
        thoughtId,
        withState(reflected, next),
        obs.iteration,
        'awaiting_input',
        'reflection',
        `the model asks a person: ${r.reason}`,
        null,
        missingFrom(r),
      );
    case 'escalate':
      return end(thoughtId, withState(reflected, next), obs.iteration, 'escalated', 'reflection', `the model escalated: ${r.reason}`, null);
    case 'fail':
      return end(thoughtId, withState(reflected, next), obs.iteration, 'failed', 'reflection', `the model found no way forward: ${r.reason}`, null);
    default:
      return modelTurn(thoughtId, obs.iteration, withState(reflected, next), plan, outputs, next, skill, nextTurnMode(next), loop);
  }
}

/** The dimensions the model found MISSING name what a person must give. */
function missingFrom(r: ModelReflection): string[] {
  const missing = (['data_completeness', 'logic_consistency', 'policy_compliance', 'uncertainty'] as const).filter((d) => r[d].verdict === 'MISSING');
  return missing.length ? missing : ['reply'];
}

/** The tool calls of a verified answer become one wave (parallel calls run together). */
export function dispatchCalls(
  thoughtId: string,
  iteration: number,
  run: RunState,
  plan: Plan,
  turn: number,
  answer: Extract<ModelAnswer, { kind: 'tool_calls' }>,
  state: ModelState,
  bounds: ReactBounds,
): ThoughtDecision {
  if (iteration >= run.max_iterations)
    return end(
      thoughtId,
      run,
      iteration,
      'budget_exhausted',
      'max_iterations',
      `iteration limit ${run.max_iterations} reached after ${state.turns} model turn(s)`,
      null,
    );
  const wave = iteration + 1;
  const calls = { ...run.call_counts };
  const attempts = { ...run.step_attempts };
  const steps: StepCall[] = [];
  const added: PlanStep[] = [];
  for (const [i, call] of answer.calls.entries()) {
    const key = digest(`${call.tool}\u0000${JSON.stringify(call.arguments)}`);
    calls[key] = (calls[key] ?? 0) + 1;
    if (calls[key]! > bounds.repeatCap)
      return end(
        thoughtId,
        run,
        iteration,
        'budget_exhausted',
        'model_repeat',
        `the model asked for ${call.tool} ${JSON.stringify(call.arguments)} a ${ordinal(calls[key]!)} time (cap ${bounds.repeatCap})`,
        null,
      );
    const id = callStep(turn, i + 1);
    attempts[id] = 1;
    added.push({ id, tool: call.tool, input: call.arguments, depends_on: [modelStep(turn)] });
    steps.push({ step_id: id, tool: call.tool, input_json: JSON.stringify(call.arguments), idempotency_key: `${thoughtId}:${wave}:${id}`, attempt: 1 });
  }
  const grown: Plan = { ...plan, steps: [...plan.steps, ...added] };
  const next: RunState = withState(
    { ...run, plan_json: JSON.stringify(grown), call_counts: calls, step_attempts: attempts, cost_spent: run.cost_spent + steps.length },
    state,
  );
  return {
    outputs: [
      { topic: 'thoughtRequests', value: { thought_id: thoughtId, iteration: wave, run: next, steps } },
      { topic: 'thoughtRuns', value: snapshotOf(thoughtId, 'running', wave, next, [], null) },
    ],
  };
}
