/**
 * Deciding on a react run's model answer (react.ts hands it over): an answer the gate rejected or
 * that was not grounded goes back to the model with why; a request the model's server refused is
 * sent again smaller (too long) or ends the run; an endpoint that keeps failing ends it
 * (`model_unavailable`); the token, money and cost budgets are checked; then the answer's kind
 * decides: a final answer completes the run, a refusal escalates it, a question parks it, and tool
 * calls, a plan or a reflection are acted on (react-accepted.ts). Pure.
 */
import type { RunState, Verdict } from '../../schemas/types.gen.ts';
import { jsonField } from '../../runtime/json-field.ts';
import type { Plan } from '../plan.ts';
import type { ModelAnswer } from '../model-wire.ts';
import type { Outputs, ThoughtDecision } from './run-end.ts';
import {
  GATE_REJECTIONS,
  endTurn,
  isModelStep,
  nextTurnMode,
  turnOf,
  withState,
  type ModelState,
  type PlanRunner,
  type ReactBounds,
  type ReactSkill,
  type TurnContext,
} from './react-types.ts';
import { failedEvidence } from './step-reflection.ts';
import { answeredModel, charged, money } from './react-cost.ts';
import { modelTurn, redispatch } from './react-turn.ts';
import { dispatchCalls, onPlan, onReflection } from './react-accepted.ts';
import { provenanceEvidence, unsupportedIdentities, type GivenValues } from './provenance.ts';
import { answerFactProblems, factsEvidence } from './answer-facts.ts';

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
    // The gate (or the skill's grounding) stopped the answer before anything acted on it; the model hears why in its next turn.
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
      if (error === 'ungrounded' || error === 'unsupported_fact')
        return endTurn(failed, 'escalated', 'ungrounded', `the model's last ${next.invalid_streak} answers were not grounded: ${evidence.slice(0, 200)}`);
      return endTurn(failed, 'failed', 'model_invalid', `the model's last ${next.invalid_streak} answers were rejected (${error}: ${evidence.slice(0, 200)})`);
    }
    return modelTurn(failed, nextTurnMode(next));
  };
  if (!verdict.valid) {
    if (GATE_REJECTIONS.has(verdict.error_type)) {
      return reject(verdict.error_type, failedEvidence(verdict), ctx.run, state);
    }
    const failedTurn: TurnContext = {
      ...ctx,
      run: { ...ctx.run, error_history: { ...history, [verdict.step_id]: [...(history[verdict.step_id] ?? []), verdict.error_type] } },
      state,
    };
    // The server refused the request itself (a 4xx other than 408/429): sending it again unchanged
    // would be refused again, so only a prompt that was too long is sent again, smaller.
    const refused = serverErrorOf(verdict);
    if (refused?.kind === 'context_length') {
      const scale = (state.window_scale ?? 1) * 0.75;
      if (scale < 0.3)
        return endTurn(
          failedTurn,
          'failed',
          'context_overflow',
          `the model's server refused turn ${turn}'s prompt as too long even at ${Math.round((scale / 0.75) * 100)}% of the skill's window: ${refused.message}`,
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
    const missing = unsupported(answer, ctx, next, outputs, loop);
    // A grounded final answer is kept even when it crossed the budget: it is paid for, and it is the run's result.
    // The outcome names the model that answered it, and the model it stood in for when a fallback did.
    const by = { model: answeredModel(verdict, answer, skill, loop), ...(verdict.fallback_from ? { fallback_from: verdict.fallback_from } : {}) };
    // A structured answer (the skill's output schema, checked by the gate) is the outcome's result, beside the text.
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

  // Identity arguments the run was not given go back to the model before any tool runs (provenance.ts).
  const unproven = (calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>): ThoughtDecision | null => {
    const unsupported = unsupportedIdentities(calls, givenValues(ctx.run, next, outputs), (t) => loop.identityParameters?.(t) ?? []);
    return unsupported.length ? reject('unsupported_argument', provenanceEvidence(unsupported), run, { ...next, invalid_streak: state.invalid_streak }) : null;
  };
  switch (answer.kind) {
    case 'ask':
      return endTurn(accepted, 'awaiting_input', 'needs_input', `the model asks the customer: ${answer.question}`, {
        output: JSON.stringify({ question: answer.question, skill: state.skill, turns: state.turns, tokens }),
        missing: ['reply'],
      });
    case 'reflection':
      return onReflection(accepted, answer.reflection, turn);
    case 'tool_calls':
      return unproven(answer.calls) ?? dispatchCalls(accepted, turn, answer, bounds);
    case 'plan':
      if (!runner) return endTurn(accepted, 'failed', 'model_unavailable', 'the model answered with a plan, but this Thought runs no plans for models');
      // A plan's literal inputs are checked like calls; `{{S1.order_id}}` references are filled from verified results.
      return (
        unproven(answer.plan.steps.map((s) => ({ tool: s.tool, arguments: literalInputs((s as { input?: unknown }).input) }))) ??
        onPlan(accepted, turn, answer, bounds, runner)
      );
  }
}

/**
 * Why a final answer cannot complete the run (null when it can): it is not grounded yet, or it states
 * specifics that nothing the run was given or verified supports (answer-facts.ts).
 */
function unsupported(
  answer: Extract<ModelAnswer, { kind: 'final' }>,
  ctx: TurnContext,
  state: ModelState,
  outputs: Outputs,
  loop: TurnContext['loop'],
): { error: 'ungrounded' | 'unsupported_fact'; evidence: string } | null {
  const why = ungrounded(ctx.skill, ctx.plan, outputs);
  if (why) return { error: 'ungrounded', evidence: why };
  const tools = new Map(ctx.plan.steps.map((s) => [s.id, s.tool]));
  const results = Object.entries(outputs).flatMap(([id, data]) => {
    const tool = tools.get(id);
    return isModelStep(id) || !tool ? [] : [{ tool, data, response: loop.responseSchema?.(tool) }];
  });
  const text = [answer.content ?? '', answer.result ? JSON.stringify(answer.result) : ''].join('\n');
  const problems = answerFactProblems(text, givenValues(ctx.run, state, outputs), results);
  return problems.length ? { error: 'unsupported_fact', evidence: factsEvidence(problems) } : null;
}

/**
 * Why a final answer is not grounded yet (null when it is): the skill names tools one of whose
 * verified results the answer needs, and none of them has returned one in this run.
 */
function ungrounded(skill: ReactSkill, plan: Plan, outputs: Outputs): string | null {
  const needed = skill.groundedBy ?? [];
  if (!needed.length) return null;
  const verified = new Set(plan.steps.filter((s) => !isModelStep(s.id) && outputs[s.id] !== undefined).map((s) => s.tool));
  if (needed.some((t) => verified.has(t))) return null;
  return `a final answer needs a verified result of ${needed.join(' or ')} first, and none has one yet: call the tool, or ask the customer for what it needs`;
}

/** What the run was given that a model's identity arguments may come from: the ticket, the customer's replies, verified tool results. */
function givenValues(run: RunState, state: ModelState, outputs: Outputs): GivenValues {
  const texts = [run.task_text, state.opening ?? '', ...(state.replies ?? []).map((r) => r.text)];
  return { texts, results: Object.entries(outputs).flatMap(([id, out]) => (isModelStep(id) ? [] : [out])) };
}

/** A plan step's input without its references to other steps' results. */
function literalInputs(input: unknown): Record<string, unknown> {
  if (!input || typeof input !== 'object') return {};
  return Object.fromEntries(Object.entries(input).filter(([, v]) => !(typeof v === 'string' && v.includes('{{'))));
}

/** The server's own refusal of a model request, as Observation recorded it (model-gate.ts `modelErrorOf`). */
function serverErrorOf(v: Verdict): { status: number | null; code: string | null; kind: string; message: string } | null {
  if (v.extracted_data_json === null) return null;
  const data = jsonField(v.extracted_data_json, `verdicts[${v.step_id}].extracted_data_json`) as {
    server_error?: { status: number | null; code: string | null; kind: string; message: string };
  } | null;
  return data?.server_error ?? null;
}
