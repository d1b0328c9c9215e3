/**
 * Taking what a model run's wave brought back (turn.ts dispatched it): a tool wave's results are
 * folded into the run and the model's next turn follows; a model's answer is decided on. An answer the
 * gate rejected, or that checks.ts finds ungrounded or holding unsupported facts or identities, goes
 * back to the model with why; a request the model's server refused is sent again smaller (too long)
 * or ends the run; an endpoint that keeps failing ends it (`model_unavailable`); the token, money and
 * cost budgets are checked; then the answer's kind decides: a final answer completes the run, a
 * refusal escalates it, a question parks it, tool calls become the next wave, a plan is merged into
 * the run's (replan.ts) and run in waves, a reflection is recorded and acted on. Pure.
 *
 * After `reflectAfter` consecutive failed tool waves the model is asked for a Reflexion (four
 * dimensions — data completeness, logic consistency, policy compliance, uncertainty — each PASS,
 * MISSING or INCONSISTENT, and one action), kept in the run and shown in every later prompt.
 */
import type { ObservationResult, Reflection, ReflectionAction, ReflectionDimension, RunState, Verdict } from '../../../schemas/types.gen.ts';
import { jsonField, jsonObjectField } from '../../../runtime/json-field.ts';
import { planOfRun, type Plan } from '../../plan.ts';
import type { DimensionVerdict, ModelAnswer, ModelReflection } from '../../model-wire.ts';
import { digest, type Outputs, type RunAt, type ThoughtDecision } from '../run-end.ts';
import { failedEvidence } from '../step-reflection.ts';
import { mergePlan } from '../replan.ts';
import {
  charged,
  answeredModel,
  endTurn,
  isModelStep,
  modelStep,
  money,
  nextTurnMode,
  parseModelState,
  runSkill,
  turnOf,
  withState,
  type ModelLoopConfig,
  type ModelState,
  type PlanRunner,
  type ReactBounds,
  type TurnContext,
} from './state.ts';
import { dispatchCalls, modelTurn, redispatch, skillUnloaded } from './turn.ts';
import {
  failedWrite,
  finalAnswerProblem,
  literalInputs,
  questionProblem,
  refusedTools,
  repeatEvidence,
  repeatedCalls,
  unprovenCalls,
  withheldNamed,
} from './checks.ts';
import { onRouting } from '../route-turn.ts';

/** A model answer's verdict with one of these was stopped by the gate (a policy too): the model hears why and answers again. */
export const GATE_REJECTIONS: ReadonlySet<string> = new Set(['hallucinated_tool', 'invalid_arguments', 'schema_mismatch', 'malformed', 'policy_violation']);

/** Folds a react run's wave into its state and decides: the model's next turn, its calls, or the end. */
export function onReactObservation(obs: ObservationResult, loop: ModelLoopConfig, bounds: ReactBounds, runner?: PlanRunner): ThoughtDecision {
  const state = parseModelState(obs.run);
  if (state.routing) return onRouting(obs, state, loop, bounds);
  const skill = runSkill(state, loop);
  const failures = obs.run.failures_seen + obs.verdicts.filter((v) => !v.valid || v.attempts > 1 || v.fallback_from !== null).length;
  const at: RunAt = { thoughtId: obs.thought_id, iteration: obs.iteration, run: { ...obs.run, failures_seen: failures } };
  if (!skill) return skillUnloaded(at, state);
  const outputs = jsonObjectField(obs.run.outputs_json, 'run.outputs_json') as Outputs;
  const ctx: TurnContext = { ...at, plan: planOfRun(obs.run.plan_json), outputs, state, skill, loop };

  const modelVerdict = obs.verdicts.find((v) => isModelStep(v.step_id));
  if (modelVerdict) return onModelAnswer(ctx, modelVerdict, bounds, runner);

  // A tool wave: record what each call found; the next model turn sees it all.
  const history: Record<string, string[]> = { ...obs.run.error_history };
  const seen = new Set(at.run.seen_data);
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
  const next: TurnContext = {
    ...ctx,
    run: {
      ...at.run,
      outputs_json: JSON.stringify(outputs),
      error_history: history,
      seen_data: [...seen],
      stale_waves: newInformation ? 0 : allValid ? at.run.stale_waves + 1 : at.run.stale_waves,
    },
    state: { ...state, failed_waves: valid === 0 ? state.failed_waves + 1 : 0 },
  };
  if (next.run.stale_waves >= bounds.noveltyWaves)
    return endTurn(next, 'budget_exhausted', 'no_novelty', `no new information for ${next.run.stale_waves} waves`);
  // Consecutive failed waves: the model reflects on them before it tries again.
  return modelTurn(next, next.state.failed_waves >= bounds.reflectAfter ? 'reflection' : 'react');
}

/**
 * A wave that held the model step `M<n>`: its answer (or its failure) decides the run's next step.
 * The answer is charged first: every answer the server sent is paid for, a rejected one too.
 * @param ctx the run as the wave left it, its model state not charged for the answer yet
 */
export function onModelAnswer(ctx: TurnContext, verdict: Verdict, bounds: ReactBounds, runner?: PlanRunner): ThoughtDecision {
  const { outputs, skill, loop } = ctx;
  const history = ctx.run.error_history;
  const streaks = ctx.run.failure_streaks;
  const turn = turnOf(verdict.step_id);
  // Every answer the server sent is paid for, one the gate rejected too.
  const state = charged(ctx.state, verdict, skill, loop);
  const reject = (error: string, evidence: string, from: RunState, nextState: ModelState): ThoughtDecision => {
    const next: ModelState = {
      ...nextState,
      invalid_streak: nextState.invalid_streak + 1,
      rejected: [...nextState.rejected, { turn, error, evidence: evidence.slice(0, 400) }],
    };
    const failed: TurnContext = {
      ...ctx,
      run: withState({ ...from, error_history: { ...history, [verdict.step_id]: [...(history[verdict.step_id] ?? []), error] } }, next),
      state: next,
    };
    if (next.invalid_streak >= bounds.reflectAfter + 1) {
      // A model that keeps guessing an id the ticket lacks gets one turn in which it can only ask for it.
      if (error === 'unsupported_argument' && !next.ask_only) return modelTurn({ ...failed, state: { ...next, ask_only: true } }, 'react');
      // The streak may mix refusals: the reason names them all, and the last decides how the run ends.
      const kinds = next.rejected.slice(-next.invalid_streak).map((r) => r.error);
      const said = (what: string) =>
        new Set(kinds).size > 1
          ? `the model's last ${next.invalid_streak} answers were refused (${kinds.join(', ')}); the last ${what}: ${evidence.slice(0, 200)}`
          : `the model's last ${next.invalid_streak} answers ${what}: ${evidence.slice(0, 200)}`;
      if (error === 'ungrounded' || error === 'unsupported_fact') return endTurn(failed, 'escalated', 'ungrounded', said('were not grounded'));
      if (error === 'repeated_call') return endTurn(failed, 'budget_exhausted', 'model_repeat', said('asked again for calls it had the results of'));
      // An answer the customer could not read, or one that leaves out what it must say, is a person's to write, not a failure of the run.
      if (error === 'wrong_language' || error === 'incomplete_answer')
        return endTurn(
          failed,
          'escalated',
          'model_invalid',
          said(error === 'wrong_language' ? "were not in the ticket's language" : 'left out what the skill says an answer states'),
        );
      return endTurn(failed, 'failed', 'model_invalid', `the model's last ${next.invalid_streak} answers were rejected (${error}: ${evidence.slice(0, 200)})`);
    }
    return modelTurn(failed, nextTurnMode(next));
  };
  if (!verdict.valid) {
    if (GATE_REJECTIONS.has(verdict.error_type)) {
      // A tool withheld after a refused repeat, named again (native calls are not held to the offer): still a repeat.
      const withheld = verdict.error_type === 'hallucinated_tool' ? withheldNamed(failedEvidence(verdict), state) : null;
      if (withheld) return reject('repeated_call', repeatEvidence(withheld, ctx.plan, ctx.outputs, ctx.skill, refusedTools(state)), ctx.run, state);
      return reject(verdict.error_type, failedEvidence(verdict), ctx.run, state);
    }
    const failedTurn: TurnContext = {
      ...ctx,
      run: { ...ctx.run, error_history: { ...history, [verdict.step_id]: [...(history[verdict.step_id] ?? []), verdict.error_type] } },
      state,
    };
    // The server refused the request itself (a 4xx other than 408/429): sending it again unchanged
    // would be refused again, so only a prompt that was too long is sent again, smaller: a quarter
    // off the window and off the prompt sent (a first turn under 3/4 of the window went out unchanged).
    const refused = serverErrorOf(verdict);
    if (refused?.kind === 'context_length') {
      const sent = state.turn_tokens.find((t) => t.turn === turn)?.prompt ?? Infinity;
      const scale = Math.min((state.window_scale ?? 1) * 0.75, (0.75 * sent) / ctx.skill.contextWindow);
      if (scale * ctx.skill.contextWindow < 256)
        return endTurn(
          failedTurn,
          'failed',
          'context_overflow',
          `the model's server refused turn ${turn}'s prompt as too long even at ${sent === Infinity ? '?' : sent} tokens: ${refused.message}`,
        );
      return redispatch({ ...failedTurn, state: { ...state, window_scale: scale } }, verdict.step_id);
    }
    if (refused)
      return endTurn(
        failedTurn,
        'failed',
        'model_request_refused',
        `the model's server refused turn ${turn} with HTTP ${refused.status}${refused.code ? ` ${refused.code}` : ''}: ${refused.message}`,
      );
    // The endpoint failed after Action's retries (and its fallback model): try the same turn again, then give up.
    const streak = (streaks[verdict.step_id] ?? 0) + 1;
    const retried: TurnContext = { ...failedTurn, run: { ...failedTurn.run, failure_streaks: { ...streaks, [verdict.step_id]: streak } } };
    if (streak >= bounds.reflectAfter || verdict.error_type === 'auth_failed') {
      return endTurn(
        retried,
        'failed',
        'model_unavailable',
        `the model endpoint failed turn ${turn}: ${verdict.error_type} (${streak} wave(s), ${verdict.attempts} attempt(s) in the last)`,
      );
    }
    return redispatch(retried, verdict.step_id);
  }

  const answer = jsonField(verdict.extracted_data_json ?? 'null', `verdicts[${verdict.step_id}].extracted_data_json`) as ModelAnswer;
  const used = answer.usage?.total_tokens ?? 0;
  const tokens = state.tokens + used;
  // The server's count of this turn's prompt, beside the builder's estimate: later prompts are built for a window scaled by the two's ratio.
  const reported = answer.usage?.prompt_tokens ?? 0;
  const turnTokens = reported > 0 ? state.turn_tokens.map((t) => (t.turn === turn ? { ...t, reported } : t)) : state.turn_tokens;
  const next: ModelState = { ...state, tokens, invalid_streak: 0, turn_tokens: turnTokens };
  outputs[verdict.step_id] = answer as unknown as Record<string, unknown>;
  const run = withState(
    { ...ctx.run, outputs_json: JSON.stringify(outputs), failure_streaks: { ...streaks, [verdict.step_id]: 0 }, cost_spent: ctx.run.cost_spent + used / 1000 },
    next,
  );
  const accepted: TurnContext = { ...ctx, run, state: next };

  const overTokenBudget = () =>
    endTurn(accepted, 'budget_exhausted', 'token_budget', `the model used ${tokens} tokens, over the skill's budget of ${skill.tokenBudget}`);
  if (answer.kind === 'final') {
    const missing = finalAnswerProblem(answer, ctx, next, outputs);
    // A grounded final answer is kept even when it crossed the budget: it is paid for, and it is the run's result.
    // The outcome names the model that answered it, and the model it stood in for when a fallback did.
    const by = { model: answeredModel(verdict, answer, skill, loop), ...(verdict.fallback_from ? { fallback_from: verdict.fallback_from } : {}) };
    // A structured answer (the skill's output schema, checked by the gate) is the outcome's result, beside the text.
    // A write the customer asked for did not happen (its last call failed): a person decides what to tell them; the answer is their draft.
    const unmade = !missing && failedWrite(ctx);
    if (unmade)
      return endTurn(accepted, 'escalated', 'step_failed', `${unmade}; the model's answer is kept as a draft for the person who takes the run`, {
        output: JSON.stringify({ draft: answer.content, skill: state.skill, turns: state.turns, tokens, ...by }),
      });
    if (!missing)
      return endTurn(accepted, 'completed', 'completed', `the model answered after ${state.turns} turn(s)`, {
        output: JSON.stringify({ answer: answer.content, skill: state.skill, turns: state.turns, tokens, ...by }),
        result: answer.result ? JSON.stringify(answer.result) : null,
      });
    // Ungrounded answers count toward the streak of rejected answers like any other.
    if (tokens <= skill.tokenBudget) return reject(missing.error, missing.evidence, run, { ...next, invalid_streak: state.invalid_streak });
    return overTokenBudget();
  }
  if (answer.kind === 'refusal') {
    return endTurn(
      accepted,
      'escalated',
      'model_refused',
      answer.reason === 'refusal'
        ? `the model refused: ${(answer.content ?? '').slice(0, 200)}`
        : "the model's server withheld the answer (content_filter): a person takes the run",
    );
  }
  if (tokens > skill.tokenBudget) return overTokenBudget();
  const budget = loop.moneyBudget ?? 0;
  if (budget > 0 && (next.cost ?? 0) > budget)
    return endTurn(
      accepted,
      'budget_exhausted',
      'money_budget',
      `the model's answers cost ${money(next.cost ?? 0)}, over the run's money budget of ${money(budget)}`,
    );
  if (run.cost_budget > 0 && run.cost_spent > run.cost_budget)
    return endTurn(accepted, 'budget_exhausted', 'cost_budget', `${run.cost_spent} cost units spent of the budget ${run.cost_budget}`);

  // Identity arguments the run was not given go back to the model before any tool runs (checks.ts).
  const unproven = (calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>): ThoughtDecision | null => {
    const evidence = unprovenCalls(calls, ctx, next, outputs);
    return evidence ? reject('unsupported_argument', evidence, run, { ...next, invalid_streak: state.invalid_streak }) : null;
  };
  switch (answer.kind) {
    case 'ask': {
      const wrong = questionProblem(answer.question, ctx, outputs);
      if (wrong) return reject(wrong.error, wrong.evidence, run, { ...next, invalid_streak: state.invalid_streak });
      return endTurn(accepted, 'awaiting_input', 'needs_input', `the model asks the customer: ${answer.question}`, {
        output: JSON.stringify({ question: answer.question, skill: state.skill, turns: state.turns, tokens }),
        missing: ['reply'],
      });
    }
    case 'reflection':
      return onReflection(accepted, answer.reflection, turn);
    case 'tool_calls': {
      const again = repeatedCalls(answer.calls, ctx.plan, outputs, ctx.skill, refusedTools(state));
      // Its later turns no longer offer the tools it asked for again (their results stay in the prompt).
      // A repeat that withholds a tool is absorbed so: it leaves the streak of refusals as it was.
      if (again) {
        const withheld = withholding(next, answer.calls);
        const absorbed = withheld.length > (next.withheld?.length ?? 0);
        return reject('repeated_call', again, run, { ...next, invalid_streak: state.invalid_streak - (absorbed ? 1 : 0), withheld });
      }
      return unproven(answer.calls) ?? dispatchCalls(accepted, turn, answer, bounds);
    }
    case 'route':
      // Asked only by a routing turn (onRouting): in a skill's run it is an answer to another question.
      return reject('malformed', 'a routing answer ({"skill"}) where a turn was asked for', run, { ...next, invalid_streak: state.invalid_streak });
    case 'plan':
      if (!runner) return endTurn(accepted, 'failed', 'model_unavailable', 'the model answered with a plan, but this Thought runs no plans for models');
      // A plan's literal inputs are checked like calls; `{{S1.order_id}}` references are filled from verified results.
      return (
        unproven(answer.plan.steps.map((s) => ({ tool: s.tool, arguments: literalInputs((s as { input?: unknown }).input) }))) ??
        onPlan(accepted, turn, answer, bounds, runner)
      );
  }
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
      // The model decided to act (retry, re-plan): its next turn offers calls only, so it does what it decided.
      return modelTurn({ ...reflected, state: { ...next, act_next: true } }, nextTurnMode(next));
  }
}

/** The dimensions the model found MISSING name what a person must give. */
function missingFrom(r: ModelReflection): string[] {
  const missing = (['data_completeness', 'logic_consistency', 'policy_compliance', 'uncertainty'] as const).filter((d) => r[d].verdict === 'MISSING');
  return missing.length ? missing : ['reply'];
}

/** The run's withheld tools with those of `calls` added (ModelState.withheld). */
function withholding(state: ModelState, calls: ReadonlyArray<{ tool: string }>): string[] {
  return [...new Set([...(state.withheld ?? []), ...calls.map((c) => c.tool)])];
}
