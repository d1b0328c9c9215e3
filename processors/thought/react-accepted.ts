/**
 * Acting on a react run's accepted answer (react-answer.ts decides it was one): its tool calls become
 * one wave, its plan is merged into the run's and run in waves, its reflection is recorded and acted
 * on (another turn, a person, escalation or the end). Pure.
 */
import type { Reflection, ReflectionAction, ReflectionDimension, RunState, StepCall } from '../../schemas/types.gen.ts';
import type { Plan, PlanStep } from '../plan.ts';
import type { DimensionVerdict, ModelAnswer, ModelReflection } from '../model-wire.ts';
import { mergePlan } from './replan.ts';
import { callKey, digest, dispatchWave, ordinal, type ThoughtDecision } from './run-end.ts';
import {
  callStep,
  endTurn,
  isModelStep,
  modelStep,
  nextTurnMode,
  withState,
  type ModelState,
  type PlanRunner,
  type ReactBounds,
  type TurnContext,
} from './react-types.ts';
import { iterationLimit, modelTurn } from './react-turn.ts';

/**
 * A verified plan answer: renamed into the run's plan (replan.ts), validated like any plan, and run
 * in waves; the steps of the earlier plan that had not finished are replaced (skipped). An invalid
 * plan is a rejected answer: the model hears why in its next plan turn.
 */
export function onPlan(
  ctx: TurnContext,
  turn: number,
  answer: Extract<ModelAnswer, { kind: 'plan' }>,
  bounds: ReactBounds,
  runner: PlanRunner,
): ThoughtDecision {
  const { run, plan, outputs, state } = ctx;
  const finished = new Set(Object.keys(outputs).filter((id) => !isModelStep(id)));
  // The gate checked the answer against the plan schema: its steps are plan steps.
  const merged = mergePlan(plan, answer.plan as Pick<Plan, 'steps' | 'output'>, turn, finished, new Set(run.skipped));
  const problems = [...merged.problems, ...runner.validate(merged.candidate)];
  if (problems.length) {
    const evidence = `invalid plan: ${problems.join('; ')}`.slice(0, 400);
    const next: ModelState = { ...state, invalid_streak: state.invalid_streak + 1, rejected: [...state.rejected, { turn, error: 'invalid_plan', evidence }] };
    const rejected: TurnContext = { ...ctx, run: withState(run, next), state: next };
    if (next.invalid_streak >= bounds.reflectAfter + 1)
      return endTurn(rejected, 'failed', 'model_invalid', `the model's last ${next.invalid_streak} answers were rejected (${evidence.slice(0, 200)})`);
    return modelTurn(rejected, 'plan');
  }
  return runner.run(withState({ ...run, plan_json: JSON.stringify(merged.plan), skipped: [...run.skipped, ...merged.replaced] }, state), merged.plan, outputs);
}

/**
 * A verified reflection: recorded in the run (its four dimensions, its action) and acted on. Asking a
 * person parks the run for the dimensions found MISSING, escalating or failing ends it; any other
 * action is the model's next turn.
 */
export function onReflection(ctx: TurnContext, r: ModelReflection, turn: number): ThoughtDecision {
  const { run, state } = ctx;
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
    tool: ctx.loop.tool,
    iteration: ctx.iteration,
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
  const next: ModelState = { ...state, failed_waves: 0 };
  const reflected: TurnContext = { ...ctx, run: withState({ ...run, reflections: [...run.reflections, reflection] }, next), state: next };
  switch (r.action) {
    case 'ask_person':
      return endTurn(reflected, 'awaiting_input', 'reflection', `the model asks a person: ${r.reason}`, { missing: missingFrom(r) });
    case 'escalate':
      return endTurn(reflected, 'escalated', 'reflection', `the model escalated: ${r.reason}`);
    case 'fail':
      return endTurn(reflected, 'failed', 'reflection', `the model found no way forward: ${r.reason}`);
    default:
      return modelTurn(reflected, nextTurnMode(next));
  }
}

/** The dimensions the model found MISSING name what a person must give. */
function missingFrom(r: ModelReflection): string[] {
  const missing = (['data_completeness', 'logic_consistency', 'policy_compliance', 'uncertainty'] as const).filter((d) => r[d].verdict === 'MISSING');
  return missing.length ? missing : ['reply'];
}

/** The tool calls of a verified answer become one wave (parallel calls run together). */
export function dispatchCalls(ctx: TurnContext, turn: number, answer: Extract<ModelAnswer, { kind: 'tool_calls' }>, bounds: ReactBounds): ThoughtDecision {
  const limit = iterationLimit(ctx);
  if (limit) return limit;
  const { run, plan } = ctx;
  const calls = { ...run.call_counts };
  const attempts = { ...run.step_attempts };
  const steps: StepCall[] = [];
  const added: PlanStep[] = [];
  for (const [i, call] of answer.calls.entries()) {
    const key = digest(`${call.tool}\u0000${JSON.stringify(call.arguments)}`);
    calls[key] = (calls[key] ?? 0) + 1;
    if (calls[key]! > bounds.repeatCap)
      return endTurn(
        ctx,
        'budget_exhausted',
        'model_repeat',
        `the model asked for ${call.tool} ${JSON.stringify(call.arguments)} a ${ordinal(calls[key]!)} time (cap ${bounds.repeatCap})`,
      );
    const id = callStep(turn, i + 1);
    attempts[id] = 1;
    added.push({ id, tool: call.tool, input: call.arguments, depends_on: [modelStep(turn)] });
    steps.push({
      step_id: id,
      tool: call.tool,
      input_json: JSON.stringify(call.arguments),
      idempotency_key: callKey(ctx, id, call.tool, call.arguments),
      attempt: 1,
    });
  }
  const grown: Plan = { ...plan, steps: [...plan.steps, ...added] };
  const next: RunState = withState(
    { ...run, plan_json: JSON.stringify(grown), call_counts: calls, step_attempts: attempts, cost_spent: run.cost_spent + steps.length },
    ctx.state,
  );
  return dispatchWave({ ...ctx, run: next }, steps);
}
