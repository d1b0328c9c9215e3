/**
 * Dispatching a react run's model turn: the prompt built from the run's recorded state (prompt.ts),
 * bounded by the skill's turns, the run's iterations and the money budget, written as one model
 * step `M<n>` in its own wave. Pure.
 */
import type { RunState, StepCall } from '../../schemas/types.gen.ts';
import type { Plan, PlanStep } from '../plan.ts';
import { buildPrompt } from './prompt.ts';
import { PLAN_TURN_RULES } from './replan.ts';
import { atIterationLimit, callKey, dispatchWave, type ThoughtDecision } from './run-end.ts';
import { endTurn, modelStep, turnOf, withState, type ModelState, type TurnContext, type TurnMode } from './react-types.ts';
import { notes, promptTurns, promptUndercount, promptWindow } from './react-prompt.ts';
import { money, turnCeilingOf } from './react-cost.ts';

/** The next model turn: the prompt built from the run, as one model step in its own wave. */
export function modelTurn(ctx: TurnContext, mode: TurnMode): ThoughtDecision {
  const { state, skill } = ctx;
  if (state.turns >= skill.maxModelTurns) {
    const last = state.rejected.at(-1);
    // Out of turns right after an ungrounded answer: say that, rather than "no final answer".
    if (last && last.turn === state.turns && last.error === 'ungrounded')
      return endTurn(
        ctx,
        'escalated',
        'ungrounded',
        `the skill's ${skill.maxModelTurns} model turns are used up without a grounded final answer: ${last.evidence.slice(0, 200)}`,
      );
    return endTurn(ctx, 'budget_exhausted', 'model_turns', `the skill's ${skill.maxModelTurns} model turns are used up without a final answer`);
  }
  const limit = iterationLimit(ctx);
  if (limit) return limit;
  const turn = state.turns + 1;
  const step: PlanStep = { id: modelStep(turn), tool: ctx.loop.tool, input: { turn, mode }, depends_on: [] };
  const grown: Plan = { ...ctx.plan, steps: [...ctx.plan.steps, step] };
  return dispatchModelStep({ ...ctx, plan: grown, state: { ...state, turns: turn } }, step.id, mode, true);
}

/** The same turn again, after the endpoint failed it (the prompt is rebuilt from the same state, so it is the same). */
export function redispatch(ctx: TurnContext, stepId: string): ThoughtDecision {
  const limit = iterationLimit(ctx);
  if (limit) return limit;
  const step = ctx.plan.steps.find((s) => s.id === stepId)!;
  return dispatchModelStep(ctx, stepId, (step.input as { mode?: TurnMode }).mode ?? 'react');
}

/** The run's end at its wave bound (run-end.ts `atIterationLimit`), with its model state; null while it may go on. */
export function iterationLimit(ctx: TurnContext): ThoughtDecision | null {
  return atIterationLimit({ ...ctx, run: withState(ctx.run, ctx.state) }, `after ${ctx.state.turns} model turn(s)`);
}

/**
 * Builds turn `stepId`'s prompt from the run and dispatches it, unless it overflows the skill's window or could cross the money budget.
 * @param fresh the turn is dispatched for the first time (`ctx.state.turns` already counts it)
 */
export function dispatchModelStep(ctx: TurnContext, stepId: string, mode: TurnMode, fresh = false): ThoughtDecision {
  const { run, state, skill, loop } = ctx;
  const turn = turnOf(stepId);
  const toolCalls = skill.toolCalls ?? loop.toolCalls ?? 'native';
  const window = promptWindow(skill.contextWindow, state);
  const built = buildPrompt(
    {
      system: mode === 'plan' ? `${loop.system}\n\n${PLAN_TURN_RULES}` : loop.system,
      skill: { ref: state.skill, prompt: skill.prompt, tools: skill.allowedTools.flatMap((t) => loop.toolSpec(t) ?? []) },
      // After a reply the run's text holds it too; the conversation opens with the original text and the reply follows the question.
      task: state.opening ?? run.task_text,
      facts: state.facts,
      turns: promptTurns(ctx, turn),
      reflections: notes(run),
      mode,
      toolCalls,
      ...(skill.outputSchema ? { output: skill.outputSchema } : {}),
    },
    window,
  );
  const tokensOfTurn = { turn, ...built.tokens, ...(window !== skill.contextWindow ? { window } : {}) };
  const next: ModelState = { ...state, turn_tokens: [...state.turn_tokens.filter((t) => t.turn !== turn), tokensOfTurn] };
  if (built.overflow)
    return endTurn(
      { ...ctx, state: next },
      'failed',
      'context_overflow',
      `the task and its facts alone (${built.tokens.system} tokens) do not fit the skill's context window of ${skill.contextWindow}`,
    );
  const maxTokens = Math.min(built.maxTokens, skill.maxTokens);
  // The money budget: this turn is not sent when it could cross it. Only recorded numbers (the
  // prompt estimate, scaled as the window is by what the server counted) and configuration.
  const budget = loop.moneyBudget ?? 0;
  const ceiling = budget > 0 ? turnCeilingOf(skill, loop, Math.ceil(built.tokens.prompt * promptUndercount(state)), maxTokens) : null;
  if (ceiling && (state.cost ?? 0) + ceiling.cost > budget) {
    const spent = state.cost ?? 0;
    const before: ModelState = { ...state, turns: fresh ? turn - 1 : state.turns };
    return endTurn(
      { ...ctx, state: before },
      'budget_exhausted',
      'money_budget',
      `model turn ${turn} could cost up to ${money(ceiling.cost)} (about ${ceiling.promptTokens} prompt tokens and ${maxTokens} max_tokens at ${ceiling.model}'s prices) on top of ${money(spent)} spent: over the run's money budget of ${money(budget)}`,
    );
  }
  const request: Record<string, unknown> = {
    messages: built.messages,
    // A plan turn lists the tools for their contracts; the answer is the plan, not a call. Parallel
    // calls are asked for: llama.cpp makes one per turn without the flag.
    ...(built.tools.length
      ? { tools: built.tools, tool_choice: mode === 'plan' ? 'none' : 'auto', ...(mode === 'plan' ? {} : { parallel_tool_calls: true }) }
      : {}),
    ...(built.responseFormat ? { response_format: built.responseFormat } : {}),
    // Reasoning models refuse `temperature` other than their default and `max_tokens`.
    ...(loop.params === 'reasoning' ? { max_completion_tokens: maxTokens } : { temperature: 0, max_tokens: maxTokens }),
    ...(skill.model ? { model: skill.model } : {}),
  };
  const attempts = { ...run.step_attempts, [stepId]: (run.step_attempts[stepId] ?? 0) + 1 };
  const dispatched: RunState = withState({ ...run, plan_json: JSON.stringify(ctx.plan), step_attempts: attempts }, next);
  const steps: StepCall[] = [
    {
      step_id: stepId,
      tool: loop.tool,
      input_json: JSON.stringify(request),
      idempotency_key: callKey(ctx, stepId, loop.tool, request),
      attempt: attempts[stepId]!,
    },
  ];
  return dispatchWave({ ...ctx, run: dispatched }, steps);
}
