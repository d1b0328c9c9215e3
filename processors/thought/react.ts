/**
 * Runs a model drives (ReAct), as pure functions like the rest of Thought's core: no I/O, no clock,
 * no randomness. A model call is a step (docs/ARCHITECTURE.md, the model in the loop):
 *
 *   turn n:  a wave with one model step `M<n>` (tool `model.chat`): its input is the whole
 *            chat-completions request, built here by the prompt builder from the run's state;
 *   Action performs it like any tool; Observation verifies the answer (it parses, the tools it
 *   names are the skill's, the arguments satisfy their contracts) and extracts it;
 *   a verified answer with tool calls becomes the next wave (steps `M<n>_1`, `M<n>_2`, ...: parallel
 *   calls are one wave); a final answer ends the run `completed`; the tool wave's verdicts feed
 *   turn n+1's prompt.
 *
 * The model's requests and answers are records (thought.requests, action.results), so a replay
 * rebuilds the same prompts from the same records and never calls the model.
 *
 * Bounds, each ending the run with its own reason code: the skill's model turns (`model_turns`) and
 * token budget (`token_budget`), the run's iterations (`max_iterations`), the repeated-call cap on
 * model-proposed calls (`model_repeat`), waves without new information (`no_novelty`), consecutive
 * answers the gate rejected (`model_invalid`), a model endpoint that keeps failing after Action's
 * retries and fallback (`model_unavailable`), and a prompt whose protected facts alone exceed the
 * skill's context window (`context_overflow`). After `reflectAfter` consecutive failed tool waves the
 * model is asked for a Reflexion (four dimensions — data completeness, logic consistency, policy
 * compliance, uncertainty — each PASS, MISSING or INCONSISTENT, and one action), kept in the run and
 * shown in every later prompt.
 *
 * This module decides on each answer; beside it: react-types.ts (the run's model state and the
 * configuration), react-turn.ts (dispatching a model turn), react-prompt.ts (what a prompt is built
 * from) and react-cost.ts (what answers cost).
 */
import type { ObservationResult, Reflection, ReflectionAction, ReflectionDimension, RunState, StepCall, Verdict } from '../../schemas/types.gen.ts';
import { jsonField, jsonObjectField } from '../../runtime/json-field.ts';
import { planOfRun, type Plan, type PlanStep } from '../plan.ts';
import type { DimensionVerdict, ModelAnswer, ModelReflection } from '../model-wire.ts';
import { mergePlan } from './replan.ts';
import { digest, end, ordinal, snapshotOf, type ThoughtDecision } from './run-end.ts';
import {
  callStep,
  GATE_REJECTIONS,
  isModelStep,
  modelStep,
  nextTurnMode,
  parseModelState,
  turnOf,
  withState,
  type ModelLoopConfig,
  type ModelState,
  type PlanRunner,
  type ReactBounds,
  type ReactSkill,
} from './react-types.ts';
import { failedEvidence } from './react-prompt.ts';
import { answeredModel, charged, money } from './react-cost.ts';
import { modelTurn, redispatch } from './react-turn.ts';

export {
  DEFAULT_SYSTEM_RULES,
  parseModelState,
  type ModelAnswer,
  type ModelLoopConfig,
  type ModelReflection,
  type ModelState,
  type PlanRunner,
  type ReactBounds,
  type ReactSkill,
  type Usage,
} from './react-types.ts';
export { promptUndercount, promptWindow } from './react-prompt.ts';
export { answerCost, answeredModel, turnCeilingOf } from './react-cost.ts';

/**
 * Starts a model run: its first model turn. `run` is the new run state onTask built (planner, task
 * text, bounds); the skill's bounds decide how many turns and tokens the run may use. `react` asks
 * for the first tool calls; `plan-replan` for the whole plan.
 */
export function startReact(
  thoughtId: string,
  iteration: number,
  run: RunState,
  skillName: string,
  facts: Record<string, string>,
  loop: ModelLoopConfig,
  bounds: ReactBounds,
  mode: ModelState['mode'] = 'react',
): ThoughtDecision {
  const skill = loop.skill(skillName);
  if (!skill) return end(thoughtId, run, iteration, 'escalated', 'unroutable', `no runnable skill "${skillName}": a person takes the run`, null);
  const state: ModelState = {
    skill: skill.ref,
    mode,
    ...(mode === 'plan-replan' ? { replans: 0 } : {}),
    turns: 0,
    tokens: 0,
    facts,
    turn_tokens: [],
    rejected: [],
    invalid_streak: 0,
    failed_waves: 0,
    ...(loop.prices ? { cost: 0, costs: {} } : {}),
  };
  const plan: Plan = { flow: { id: `${mode}:${skill.name}`, version: skill.version ?? 0 }, steps: [], output: {} };
  // react: a turn is two waves (the model's, then its tools'), so the iteration bound follows the
  // skill's turns. plan-replan: each plan turn is one wave on top of the plans' own waves.
  const maxIterations = mode === 'react' ? Math.max(bounds.maxIterations, 2 * skill.maxModelTurns + 1) : bounds.maxIterations + skill.maxReplans + 1;
  const started: RunState = { ...run, flow_id: plan.flow.id, flow_version: plan.flow.version, plan_json: JSON.stringify(plan), max_iterations: maxIterations };
  return modelTurn(thoughtId, iteration, started, plan, {}, state, skill, mode === 'react' ? 'react' : 'plan', loop);
}

/**
 * A plan-replan run's reflection called for a new plan: the model is asked again (a plan turn whose
 * prompt shows the steps that ran, their results and failures, and the reflection), unless the
 * skill's re-plans are used up (`replan_cap`).
 * @param why what failed, for the outcome's reason when the cap ends the run
 */
export function replanTurn(
  thoughtId: string,
  iteration: number,
  run: RunState,
  plan: Plan,
  outputs: Record<string, Record<string, unknown>>,
  loop: ModelLoopConfig,
  why: string,
): ThoughtDecision {
  const state = parseModelState(run);
  const skill = loop.skill(state.skill.split('@')[0]!);
  if (!skill)
    return end(
      thoughtId,
      run,
      iteration,
      'failed',
      'model_unavailable',
      `the run's skill ${state.skill} is no longer loaded: nothing to build its next prompt from`,
      null,
    );
  const replans = (state.replans ?? 0) + 1;
  if (replans > skill.maxReplans)
    return end(thoughtId, run, iteration, 'budget_exhausted', 'replan_cap', `the skill's ${skill.maxReplans} re-plan(s) are used up: ${why}`, null);
  return modelTurn(thoughtId, iteration, run, plan, outputs, { ...state, replans }, skill, 'plan', loop);
}

/**
 * Whether a parked run is waiting for the customer's answer to its model's question: a react run
 * whose last model turn asked (`ask_customer`). Its reply continues the conversation ({@link resumeReact}).
 */
export function askedCustomer(run: RunState): boolean {
  if (run.model_state_json === null) return false;
  const state = parseModelState(run);
  if (state.mode !== 'react') return false;
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json') as Record<string, { kind?: unknown }>;
  return outputs[modelStep(state.turns)]?.kind === 'ask';
}

/**
 * The customer replied to the model's question: the same conversation goes on. The run keeps its
 * plan, outputs, turns, tokens and cost; the reply becomes the customer's message after the question,
 * the facts the planner found in the whole text are added, and the next model turn is dispatched.
 * @param parked the run as it was parked
 * @param changes what the reply changes in the run (its task id and text, planner cost, `human_involved`)
 */
export function resumeReact(
  thoughtId: string,
  iteration: number,
  parked: RunState,
  changes: Partial<RunState>,
  reply: string,
  facts: Record<string, string>,
  loop: ModelLoopConfig,
): ThoughtDecision {
  const state = parseModelState(parked);
  const run: RunState = { ...parked, ...changes };
  const skill = loop.skill(state.skill.split('@')[0]!);
  if (!skill)
    return end(
      thoughtId,
      run,
      iteration,
      'failed',
      'model_unavailable',
      `the run's skill ${state.skill} is no longer loaded: nothing to build its next prompt from`,
      null,
    );
  const next: ModelState = {
    ...state,
    facts: { ...state.facts, ...facts },
    replies: [...(state.replies ?? []), { turn: state.turns, text: reply }],
    opening: state.opening ?? parked.task_text,
    invalid_streak: 0,
  };
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json') as Record<string, Record<string, unknown>>;
  return modelTurn(thoughtId, iteration, run, planOfRun(run.plan_json), outputs, next, skill, 'react', loop);
}

/** Folds a react run's wave into its state and decides: the model's next turn, its calls, or the end. */
export function onReactObservation(obs: ObservationResult, loop: ModelLoopConfig, bounds: ReactBounds, runner?: PlanRunner): ThoughtDecision {
  const state = parseModelState(obs.run);
  const skillName = state.skill.split('@')[0]!;
  const skill = loop.skill(skillName);
  const thoughtId = obs.thought_id;
  const plan = planOfRun(obs.run.plan_json);
  const outputs = jsonObjectField(obs.run.outputs_json, 'run.outputs_json') as Record<string, Record<string, unknown>>;
  const history: Record<string, string[]> = { ...obs.run.error_history };
  const streaks = { ...obs.run.failure_streaks };
  const failures = obs.run.failures_seen + obs.verdicts.filter((v) => !v.valid || v.attempts > 1 || v.fallback_from !== null).length;
  let run: RunState = { ...obs.run, failures_seen: failures };
  if (!skill)
    return end(
      thoughtId,
      run,
      obs.iteration,
      'failed',
      'model_unavailable',
      `the run's skill ${state.skill} is no longer loaded: nothing to build its next prompt from`,
      null,
    );

  const modelVerdict = obs.verdicts.find((v) => isModelStep(v.step_id));
  if (modelVerdict) return onModelAnswer(obs, modelVerdict, run, plan, outputs, history, streaks, state, skill, loop, bounds, runner);

  // A tool wave: record what each call found; the next model turn sees it all.
  const seen = new Set(run.seen_data);
  let newInformation = false;
  let valid = 0;
  for (const v of obs.verdicts) {
    if (v.valid) {
      valid++;
      outputs[v.step_id] = jsonField(v.extracted_data_json ?? '{}', `verdicts[${v.step_id}].extracted_data_json`) as Record<string, unknown>;
      const hash = digest(`${v.tool}\u0000${v.extracted_data_json}`);
      if (!seen.has(hash)) {
        seen.add(hash);
        newInformation = true;
      }
    } else {
      history[v.step_id] = [...(history[v.step_id] ?? []), `${v.error_type}: ${failedEvidence(v)}`];
    }
  }
  const allValid = valid === obs.verdicts.length;
  const next: ModelState = { ...state, failed_waves: valid === 0 ? state.failed_waves + 1 : 0 };
  run = {
    ...run,
    outputs_json: JSON.stringify(outputs),
    error_history: history,
    seen_data: [...seen],
    stale_waves: newInformation ? 0 : allValid ? run.stale_waves + 1 : run.stale_waves,
  };
  if (run.stale_waves >= bounds.noveltyWaves)
    return end(thoughtId, withState(run, next), obs.iteration, 'budget_exhausted', 'no_novelty', `no new information for ${run.stale_waves} waves`, null);
  // Consecutive failed waves: the model reflects on them before it tries again.
  const mode = next.failed_waves >= bounds.reflectAfter ? 'reflection' : 'react';
  return modelTurn(thoughtId, obs.iteration, run, plan, outputs, next, skill, mode, loop);
}

function onModelAnswer(
  obs: ObservationResult,
  verdict: Verdict,
  run: RunState,
  plan: Plan,
  outputs: Record<string, Record<string, unknown>>,
  history: Record<string, string[]>,
  streaks: Record<string, number>,
  unpaid: ModelState,
  skill: ReactSkill,
  loop: ModelLoopConfig,
  bounds: ReactBounds,
  runner?: PlanRunner,
): ThoughtDecision {
  const thoughtId = obs.thought_id;
  const turn = turnOf(verdict.step_id);
  // Every answer the server sent is paid for, one the gate rejected too.
  const state = charged(unpaid, verdict, skill, loop);
  const reject = (error: string, evidence: string, from: RunState, nextState: ModelState): ThoughtDecision => {
    // The gate (or the skill's grounding) stopped the answer before anything acted on it; the model hears why in its next turn.
    const next: ModelState = {
      ...nextState,
      invalid_streak: nextState.invalid_streak + 1,
      rejected: [...nextState.rejected, { turn, error, evidence: evidence.slice(0, 400) }],
    };
    const failed = withState({ ...from, error_history: { ...history, [verdict.step_id]: [...(history[verdict.step_id] ?? []), error] } }, next);
    if (next.invalid_streak >= bounds.reflectAfter + 1) {
      if (error === 'ungrounded')
        return end(
          thoughtId,
          failed,
          obs.iteration,
          'escalated',
          'ungrounded',
          `the model's last ${next.invalid_streak} answers were not grounded: ${evidence.slice(0, 200)}`,
          null,
        );
      return end(
        thoughtId,
        failed,
        obs.iteration,
        'failed',
        'model_invalid',
        `the model's last ${next.invalid_streak} answers were rejected (${error}: ${evidence.slice(0, 200)})`,
        null,
      );
    }
    return modelTurn(thoughtId, obs.iteration, failed, plan, outputs, next, skill, nextTurnMode(next), loop);
  };
  if (!verdict.valid) {
    if (GATE_REJECTIONS.has(verdict.error_type)) {
      return reject(verdict.error_type, failedEvidence(verdict), run, state);
    }
    const failedRun: RunState = { ...run, error_history: { ...history, [verdict.step_id]: [...(history[verdict.step_id] ?? []), verdict.error_type] } };
    // The server refused the request itself (a 4xx other than 408/429): sending it again unchanged
    // would be refused again, so only a prompt that was too long is sent again, smaller.
    const refused = serverErrorOf(verdict);
    if (refused?.kind === 'context_length') {
      const scale = (state.window_scale ?? 1) * 0.75;
      if (scale < 0.3)
        return end(
          thoughtId,
          withState(failedRun, state),
          obs.iteration,
          'failed',
          'context_overflow',
          `the model's server refused turn ${turn}'s prompt as too long even at ${Math.round((scale / 0.75) * 100)}% of the skill's window: ${refused.message}`,
          null,
        );
      return redispatch(thoughtId, obs.iteration, failedRun, plan, verdict.step_id, { ...state, window_scale: scale }, skill, loop);
    }
    if (refused)
      return end(
        thoughtId,
        withState(failedRun, state),
        obs.iteration,
        'failed',
        'model_request_refused',
        `the model's server refused turn ${turn} with HTTP ${refused.status}${refused.code ? ` ${refused.code}` : ''}: ${refused.message}`,
        null,
      );
    // The endpoint failed after Action's retries (and its fallback model): try the same turn again, then give up.
    const streak = (streaks[verdict.step_id] ?? 0) + 1;
    const retried: RunState = { ...failedRun, failure_streaks: { ...streaks, [verdict.step_id]: streak } };
    if (streak >= bounds.reflectAfter || verdict.error_type === 'auth_failed') {
      return end(
        thoughtId,
        withState(retried, state),
        obs.iteration,
        'failed',
        'model_unavailable',
        `the model endpoint failed turn ${turn}: ${verdict.error_type} (${streak} wave(s), ${verdict.attempts} attempt(s) in the last)`,
        null,
      );
    }
    return redispatch(thoughtId, obs.iteration, retried, plan, verdict.step_id, state, skill, loop);
  }

  const answer = jsonField(verdict.extracted_data_json ?? 'null', `verdicts[${verdict.step_id}].extracted_data_json`) as ModelAnswer;
  const used = answer.usage?.total_tokens ?? 0;
  const tokens = state.tokens + used;
  // The server's count of this turn's prompt, beside the builder's estimate: later prompts are built for a window scaled by the two's ratio.
  const reported = answer.usage?.prompt_tokens ?? 0;
  const turnTokens = reported > 0 ? state.turn_tokens.map((t) => (t.turn === turn ? { ...t, reported } : t)) : state.turn_tokens;
  const next: ModelState = { ...state, tokens, invalid_streak: 0, turn_tokens: turnTokens };
  outputs[verdict.step_id] = answer as unknown as Record<string, unknown>;
  run = withState(
    { ...run, outputs_json: JSON.stringify(outputs), failure_streaks: { ...streaks, [verdict.step_id]: 0 }, cost_spent: run.cost_spent + used / 1000 },
    next,
  );

  if (answer.kind === 'final') {
    const missing = ungrounded(skill, plan, outputs);
    // A grounded final answer is kept even when it crossed the budget: it is paid for, and it is the run's result.
    // The outcome names the model that answered it, and the model it stood in for when a fallback did.
    const by = { model: answeredModel(verdict, answer, skill, loop), ...(verdict.fallback_from ? { fallback_from: verdict.fallback_from } : {}) };
    // A structured answer (the skill's output schema, checked by the gate) is the outcome's result, beside the text.
    if (!missing)
      return end(
        thoughtId,
        run,
        obs.iteration,
        'completed',
        'completed',
        `the model answered after ${state.turns} turn(s)`,
        JSON.stringify({ answer: answer.content, skill: state.skill, turns: state.turns, tokens, ...by }),
        [],
        answer.result ? JSON.stringify(answer.result) : null,
      );
    // Ungrounded answers count toward the streak of rejected answers like any other.
    if (tokens <= skill.tokenBudget) return reject('ungrounded', missing, run, { ...next, invalid_streak: state.invalid_streak });
  }
  if (answer.kind === 'refusal') {
    return end(
      thoughtId,
      run,
      obs.iteration,
      'escalated',
      'model_refused',
      answer.reason === 'refusal'
        ? `the model refused: ${(answer.content ?? '').slice(0, 200)}`
        : "the model's server withheld the answer (content_filter): a person takes the run",
      null,
    );
  }
  if (tokens > skill.tokenBudget)
    return end(
      thoughtId,
      run,
      obs.iteration,
      'budget_exhausted',
      'token_budget',
      `the model used ${tokens} tokens, over the skill's budget of ${skill.tokenBudget}`,
      null,
    );
  const budget = loop.moneyBudget ?? 0;
  if (budget > 0 && (next.cost ?? 0) > budget)
    return end(
      thoughtId,
      run,
      obs.iteration,
      'budget_exhausted',
      'money_budget',
      `the model's answers cost ${money(next.cost ?? 0)}, over the run's money budget of ${money(budget)}`,
      null,
    );
  if (run.cost_budget > 0 && run.cost_spent > run.cost_budget)
    return end(thoughtId, run, obs.iteration, 'budget_exhausted', 'cost_budget', `${run.cost_spent} cost units spent of the budget ${run.cost_budget}`, null);

  switch (answer.kind) {
    case 'final':
      return reject('ungrounded', ungrounded(skill, plan, outputs)!, run, { ...next, invalid_streak: state.invalid_streak });
    case 'ask':
      return end(
        thoughtId,
        run,
        obs.iteration,
        'awaiting_input',
        'needs_input',
        `the model asks the customer: ${answer.question}`,
        JSON.stringify({ question: answer.question, skill: state.skill, turns: state.turns, tokens }),
        ['reply'],
      );
    case 'reflection':
      return onReflection(obs, run, plan, outputs, next, skill, answer.reflection, turn, loop);
    case 'tool_calls':
      return dispatchCalls(thoughtId, obs.iteration, run, plan, turn, answer, next, bounds);
    case 'plan':
      if (!runner)
        return end(
          thoughtId,
          run,
          obs.iteration,
          'failed',
          'model_unavailable',
          'the model answered with a plan, but this Thought runs no plans for models',
          null,
        );
      return onPlan(thoughtId, obs.iteration, run, plan, outputs, turn, answer, next, skill, loop, bounds, runner);
  }
}

/**
 * Why a final answer is not grounded yet (null when it is): the skill names tools one of whose
 * verified results the answer needs, and none of them has returned one in this run.
 */
function ungrounded(skill: ReactSkill, plan: Plan, outputs: Record<string, Record<string, unknown>>): string | null {
  const needed = skill.groundedBy ?? [];
  if (!needed.length) return null;
  const verified = new Set(plan.steps.filter((s) => !isModelStep(s.id) && outputs[s.id] !== undefined).map((s) => s.tool));
  if (needed.some((t) => verified.has(t))) return null;
  return `a final answer needs a verified result of ${needed.join(' or ')} first, and none has one yet: call the tool, or ask the customer for what it needs`;
}

/** The server's own refusal of a model request, as Observation recorded it (model-gate.ts `modelErrorOf`). */
function serverErrorOf(v: Verdict): { status: number | null; code: string | null; kind: string; message: string } | null {
  if (v.extracted_data_json === null) return null;
  const data = jsonField(v.extracted_data_json, `verdicts[${v.step_id}].extracted_data_json`) as {
    server_error?: { status: number | null; code: string | null; kind: string; message: string };
  } | null;
  return data?.server_error ?? null;
}

/**
 * A verified plan answer: renamed into the run's plan (replan.ts), validated like any plan, and run
 * in waves; the steps of the earlier plan that had not finished are replaced (skipped). An invalid
 * plan is a rejected answer: the model hears why in its next plan turn.
 */
function onPlan(
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

function onReflection(
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
function dispatchCalls(
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
