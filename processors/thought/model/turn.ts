/**
 * The run a model drives (ReAct, plan-replan), up to the request it sends: starting it, resuming it
 * after the customer's reply, re-planning it, and dispatching each model turn and the tool calls the
 * model asked for. Pure, like the rest of Thought's core: no I/O, no clock, no randomness. A model
 * call is a step (docs/ARCHITECTURE.md, the model in the loop):
 *
 *   turn n:  a wave with one model step `M<n>` (tool `model.chat`): its input is the whole
 *            chat-completions request, built by prompt.ts from the run's recorded state;
 *   Action performs it like any tool; Observation's gate verifies the answer (it parses, the tools
 *   it names are the skill's, the arguments satisfy their contracts) and extracts it;
 *   answer.ts takes the verified answer: tool calls become the next wave here (steps `M<n>_1`,
 *   `M<n>_2`, ...: parallel calls are one wave), a final answer ends the run `completed` once
 *   checks.ts finds its facts supported, and the tool wave's verdicts feed turn n+1's prompt.
 *
 * The model's requests and answers are records (thought.requests, action.results), so a replay
 * rebuilds the same prompts from the same records and never calls the model.
 *
 * Bounds, each ending the run with its own reason code: the skill's model turns (`model_turns`) and
 * token budget (`token_budget`), the run's iterations (`max_iterations`), the repeated-call cap on
 * model-proposed calls (`model_repeat`), waves without new information (`no_novelty`), consecutive
 * answers the gate rejected (`model_invalid`), a model endpoint that keeps failing after Action's
 * retries and fallback (`model_unavailable`), the money budget (`money_budget`), and a prompt whose
 * protected facts alone exceed the skill's context window (`context_overflow`).
 */
import type { RunState, StepCall } from '../../../schemas/types.gen.ts';
import { jsonObjectField } from '../../../runtime/json-field.ts';
import { planOfRun, type Plan, type PlanStep } from '../../plan.ts';
import { runDriver } from '../../run-driver.ts';
import type { ModelAnswer } from '../../model-wire.ts';
import { atIterationLimit, callKey, digest, dispatchWave, end, ordinal, type Outputs, type RunAt, type RunContext, type ThoughtDecision } from '../run-end.ts';
import {
  callStep,
  endTurn,
  modelStep,
  money,
  parseModelState,
  runSkill,
  turnCeilingOf,
  turnOf,
  withState,
  type ModelLoopConfig,
  type ModelState,
  type ReactBounds,
  type ReactSkill,
  type TurnContext,
  type TurnMode,
} from './state.ts';
import { answerSheetOf, callableNow, groundable, refusedTools } from './checks.ts';
import { languageOf, type Language } from '../language.ts';
import { PLAN_TURN_RULES, buildPrompt, notes, promptTurns } from './prompt.ts';

/** The skill a new model run is given, and how it runs: the planner's choice (planner.ts, kind `react`). */
export interface ReactChoice {
  skill: string;
  /** The slots the planner found: in every prompt. */
  facts: Record<string, string>;
  /** `react` (the default) asks for the first tool calls; `plan-replan` for the whole plan. */
  mode?: ModelState['mode'];
}

/**
 * Starts a model run: its first model turn. `at.run` is the new run state onTask built (planner, task
 * text, bounds); the skill's bounds decide how many turns and tokens the run may use.
 */
export function startReact(
  at: RunAt,
  choice: ReactChoice,
  loop: ModelLoopConfig,
  bounds: ReactBounds,
  /** What a routing turn that chose the skill already used (startRouting): its turn, tokens and cost count. */
  carried?: Pick<ModelState, 'turns' | 'tokens' | 'turn_tokens' | 'cost' | 'costs'>,
): ThoughtDecision {
  const mode = choice.mode ?? 'react';
  const skill = loop.skill(choice.skill);
  if (!skill) return end(at, 'escalated', 'unroutable', `no runnable skill "${choice.skill}": a person takes the run`);
  const state: ModelState = { ...freshState(skill.ref, mode, choice.facts, loop), ...carried };
  const plan: Plan = { flow: { id: `${mode}:${skill.name}`, version: skill.version ?? 0 }, steps: [], output: {} };
  // react: a turn is two waves (the model's, then its tools'), so the iteration bound follows the
  // skill's turns. plan-replan: each plan turn is one wave on top of the plans' own waves.
  const maxIterations =
    (mode === 'react' ? Math.max(bounds.maxIterations, 2 * skill.maxModelTurns + 1) : bounds.maxIterations + skill.maxReplans + 1) + (carried?.turns ?? 0);
  const run: RunState = {
    ...at.run,
    driver: mode,
    flow_id: plan.flow.id,
    flow_version: plan.flow.version,
    plan_json: JSON.stringify(plan),
    max_iterations: maxIterations,
  };
  return modelTurn({ ...at, run, plan, outputs: {}, state, skill, loop }, mode === 'react' ? 'react' : 'plan');
}

/** The model state of a run before its first turn. */
export function freshState(skill: string, mode: ModelState['mode'], facts: Record<string, string>, loop: ModelLoopConfig): ModelState {
  // The keys in this order: the state is recorded as JSON, and replay compares it byte for byte.
  return {
    skill,
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
}

/**
 * A plan-replan run's reflection called for a new plan: the model is asked again (a plan turn whose
 * prompt shows the steps that ran, their results and failures, and the reflection), unless the
 * skill's re-plans are used up (`replan_cap`).
 * @param why what failed, for the outcome's reason when the cap ends the run
 */
export function replanTurn(ctx: RunContext, loop: ModelLoopConfig, why: string): ThoughtDecision {
  const state = parseModelState(ctx.run);
  const skill = runSkill(state, loop);
  if (!skill) return skillUnloaded(ctx, state);
  const replans = (state.replans ?? 0) + 1;
  const turn: TurnContext = { ...ctx, state, skill, loop };
  if (replans > skill.maxReplans) return endTurn(turn, 'budget_exhausted', 'replan_cap', `the skill's ${skill.maxReplans} re-plan(s) are used up: ${why}`);
  return modelTurn({ ...turn, state: { ...state, replans } }, 'plan');
}

/**
 * Whether a parked run is waiting for the customer's answer to its model's question: a react run
 * whose last model turn asked (`ask_customer`). Its reply continues the conversation ({@link resumeReact}).
 */
export function askedCustomer(run: RunState): boolean {
  if (runDriver(run) !== 'react') return false;
  const state = parseModelState(run);
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json') as Record<string, { kind?: unknown }>;
  return outputs[modelStep(state.turns)]?.kind === 'ask';
}

/** The customer's reply to a model's question, as onTask read it. */
export interface CustomerReply {
  /** The reply's text: the customer's message after the question. */
  text: string;
  /** The facts the planner found in the run's whole text: added to the run's. */
  facts: Record<string, string>;
  /** What the reply changes in the run (its task id and text, planner cost, `human_involved`). */
  changes: Partial<RunState>;
}

/**
 * The customer replied to the model's question: the same conversation goes on. The run keeps its
 * plan, outputs, turns, tokens and cost; the reply becomes the customer's message after the question,
 * the facts the planner found in the whole text are added, and the next model turn is dispatched.
 * @param parked the run as it was parked
 */
export function resumeReact(parked: RunAt, reply: CustomerReply, loop: ModelLoopConfig): ThoughtDecision {
  const state = parseModelState(parked.run);
  const run: RunState = { ...parked.run, ...reply.changes };
  const skill = runSkill(state, loop);
  if (!skill) return skillUnloaded({ ...parked, run }, state);
  // The reply may hold what the model lacked: every tool is offered again (ask_only and withheld cleared).
  const { ask_only: _asked, withheld: _withheld, ...rest } = state;
  const next: ModelState = {
    ...rest,
    facts: { ...state.facts, ...reply.facts },
    replies: [...(state.replies ?? []), { turn: state.turns, text: reply.text }],
    opening: state.opening ?? parked.run.task_text,
    invalid_streak: 0,
  };
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json') as Outputs;
  return modelTurn({ ...parked, run, plan: planOfRun(run.plan_json), outputs, state: next, skill, loop }, 'react');
}

/** A run whose skill is no longer loaded ends: nothing is left to build its next prompt from. */
export function skillUnloaded(at: RunAt, state: ModelState): ThoughtDecision {
  return end(at, 'failed', 'model_unavailable', `the run's skill ${state.skill} is no longer loaded: nothing to build its next prompt from`);
}

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

/** Greedy, except right after a refused answer (greedy, the 1.5B wrote it again): 0.7, seeded by the turn so replay rebuilds the request. */
const sampling = (state: ModelState, turn: number) => (state.rejected.at(-1)?.turn === turn - 1 ? { temperature: 0.7, seed: turn } : { temperature: 0 });

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
  // Before a grounded-by tool has answered, a final answer could not stand: the turn offers calls only.
  // After the model's reflection chose to act, this turn offers calls only (ModelState.act_next), when it has any to offer.
  const acting = mode === 'react' && state.act_next === true && offeredTools(skill, state).length > 0;
  const answerable = !state.ask_only && !acting && groundable(skill, ctx.plan, ctx.outputs, refusedTools(state));
  // While no answer could stand, the calls the results already allow are due: the turn offers calls
  // only (the 1.5B, offered a question too, asked "Is there anything else you would like to know?").
  const callable = mode === 'react' && !answerable && !state.ask_only ? callableNow(ctx, ctx.outputs, offeredTools(skill, state)) : [];
  const built = buildPrompt(
    {
      system:
        mode === 'plan'
          ? `${loop.system}\n\n${PLAN_TURN_RULES}`
          : mode === 'reflection'
            ? `${loop.system}\n\n${REFLECTION_TURN_RULES}`
            : state.ask_only
              ? `${loop.system}\n\n${ASK_ONLY_RULES}`
              : loop.system,
      skill: { ref: state.skill, prompt: skill.prompt, tools: offeredTools(skill, state).flatMap((t) => loop.toolSpec(t) ?? []) },
      // After a reply the run's text holds it too; the conversation opens with the original text and the reply follows the question.
      task: state.opening ?? run.task_text,
      facts: state.facts,
      turns: promptTurns(ctx, turn),
      reflections: notes(run),
      mode,
      toolCalls,
      ...(skill.outputSchema ? { output: skill.outputSchema } : {}),
      answerable,
      ...(acting || callable.length ? { askable: false } : {}),
      ...languageHint(state.opening ?? run.task_text),
      // Said last: the verified values once a final answer may stand, else the calls the results allow.
      ...(mode === 'react' && answerable ? { sheet: answerSheetOf(ctx, ctx.outputs) ?? undefined } : { callable }),
    },
    window,
  );
  const tokensOfTurn = { turn, ...built.tokens, ...(window !== skill.contextWindow ? { window } : {}) };
  const { act_next: _acting, ...unacted } = state;
  const next: ModelState = { ...unacted, turn_tokens: [...state.turn_tokens.filter((t) => t.turn !== turn), tokensOfTurn] };
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
      ? {
          tools: built.tools,
          // Never `required`: llama.cpp 0.94's grammar under it lets Qwen2.5-Coder write its call as
          // text, then newlines up to max_tokens (infra/README.md). A turn that may not answer yet
          // offers no final_answer tool, and a prose answer is refused as ungrounded.
          tool_choice: mode === 'plan' ? 'none' : 'auto',
          ...(mode === 'plan' ? {} : { parallel_tool_calls: true }),
        }
      : {}),
    ...(built.responseFormat ? { response_format: built.responseFormat } : {}),
    // Reasoning models refuse `temperature` other than their default and `max_tokens`.
    ...(loop.params === 'reasoning' ? { max_completion_tokens: maxTokens } : { ...sampling(state, turn), max_tokens: maxTokens }),
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

/** The skill's tools a react turn offers: none in an ask-only turn, and not those withheld after a refused repeat. */
function offeredTools(skill: ReactSkill, state: ModelState): string[] {
  if (state.ask_only) return [];
  return state.withheld?.length ? skill.allowedTools.filter((t) => !state.withheld!.includes(t)) : [...skill.allowedTools];
}

/** What a reflection turn adds to the runtime's rules: what each action of the answer makes the run do next. */
const REFLECTION_TURN_RULES = [
  'This turn is a reflection turn: do not call tools and do not answer the customer. Judge the run so far on each dimension, then choose one action:',
  '- retry_with_changed_input: call the failed tool again in the next turn, with corrected input if the input was wrong; a timeout or a server error (5xx) is often passing, and the same input may be kept;',
  '- change_plan: reach the answer another way (other tools, another order);',
  '- ask_person: hand the run to a person, when a person must check or decide something;',
  '- escalate or fail: end the run, when it cannot succeed.',
].join('\n');

/** What a turn that may only ask the customer adds to the rules (ModelState.ask_only). */
const ASK_ONLY_RULES =
  'The ticket does not give an id the tools need, and the ids you tried were refused. Do not guess one: ask the customer for it (ask_customer), in the language of the ticket.';

/** The ticket's language for the prompt, when it is clear and not English (the rules already ask for the ticket's language). */
function languageHint(ticket: string): { language?: Language } {
  const language = languageOf(ticket);
  return language && language !== 'en' ? { language } : {};
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

/**
 * The window a turn's prompt is built for: the skill's, scaled down by what the recorded turns say.
 * The builder estimates tokens (one per four characters, one per CJK character); the server's
 * `usage.prompt_tokens` of each earlier turn says how far off that was for this model and template,
 * and a prompt the server refused as too long (`window_scale`) takes a quarter off each time. Only
 * recorded numbers are read, so a replay builds the same prompt.
 */
export function promptWindow(contextWindow: number, state: Pick<ModelState, 'turn_tokens' | 'window_scale'>): number {
  return Math.max(256, Math.floor((contextWindow * (state.window_scale ?? 1)) / promptUndercount(state)));
}

/** How far the server's count of earlier prompts exceeded the builder's estimate (at least 1), from the recorded turns. */
export function promptUndercount(state: Pick<ModelState, 'turn_tokens'>): number {
  const ratios = state.turn_tokens.filter((t) => t.reported !== undefined && t.prompt > 0).map((t) => t.reported! / t.prompt);
  return Math.max(1, ...ratios);
}
