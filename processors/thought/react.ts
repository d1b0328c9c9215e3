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
 */
import type { ObservationResult, Reflection, ReflectionAction, ReflectionDimension, RunState, StepCall, Verdict } from '../../schemas/types.gen.ts';
import { jsonField, jsonObjectField } from '../../runtime/json-field.ts';
import { planOfRun, resolveReferences, type Plan, type PlanStep } from '../plan.ts';
import { buildPrompt, type PromptCall, type PromptTool, type PromptTurn } from './prompt.ts';
import type { DimensionVerdict, ModelAnswer, ModelReflection } from '../model-wire.ts';
import { mergePlan, PLAN_TURN_RULES } from './replan.ts';
import { digest, end, ordinal, snapshotOf, type ThoughtDecision } from './run-end.ts';
import { priceOf, roundMoney, turnCeiling, usageCost, type PriceTable, type PricedUsage } from './prices.ts';

/** What react runs need to know of a skill (processors/thought/skills.ts `Skill` satisfies it). */
export interface ReactSkill {
  name: string;
  version: number | null;
  ref: string;
  prompt: string;
  allowedTools: string[];
  model?: string;
  maxModelTurns: number;
  tokenBudget: number;
  contextWindow: number;
  maxTokens: number;
  /** New plans a `plan-replan` run may ask for after its first. */
  maxReplans: number;
  /**
   * Tools one of whose verified results a final answer needs (metadata.grounded-by): a final answer
   * before any of them returned a valid result goes back to the model. Empty: no such rule.
   */
  groundedBy?: readonly string[];
  /** How this skill's react turns ask for tool calls (metadata.tool-calls); unset: the loop's default. */
  toolCalls?: 'native' | 'json_schema';
}

/** Thought's configuration of the model loop. */
export interface ModelLoopConfig {
  /** Catalog name of the model tool (tools/model.ts). */
  tool: string;
  /** Skills by name (the run records `name@version`). */
  skill(name: string): ReactSkill | undefined;
  /** A catalog tool as the model sees it (name, description, parameter schema). */
  toolSpec(name: string): PromptTool | undefined;
  /** The runtime's rules, the first part of every system prompt. */
  system: string;
  /**
   * Sampling parameters (TAO_LLM_PARAMS): `chat` sends `temperature: 0` and `max_tokens`;
   * `reasoning` sends `max_completion_tokens` and no temperature (reasoning models refuse both). Default chat.
   */
  params?: 'chat' | 'reasoning';
  /** How react turns ask for tool calls when the skill names no mode (TAO_LLM_TOOL_CALLS). Default native. */
  toolCalls?: 'native' | 'json_schema';
  /**
   * The models Action's model tools ask (TAO_LLM_MODEL, TAO_LLM_FALLBACK_MODEL): what answered when
   * a completion does not name its model, by the tool that answered (`fallbackTool`: the fallback's).
   */
  models?: { primary?: string; fallback?: string; fallbackTool?: string };
  /** The price table (TAO_LLM_PRICES, prices.ts): with it, every model answer is priced and the run's cost recorded. */
  prices?: PriceTable;
  /**
   * Money a run's model turns may cost (TAO_MONEY_BUDGET, in the price table's currency; 0 or unset:
   * unlimited). A turn is not dispatched when what was spent plus the most it can cost (its prompt
   * estimate at the input price, its max_tokens at the output price) would cross it.
   */
  moneyBudget?: number;
}

/** The settings of Thought a react run uses (a subset of ThoughtConfig). */
export interface ReactBounds {
  maxIterations: number;
  noveltyWaves: number;
  repeatCap: number;
  reflectAfter: number;
  costBudget: number;
}

export type { ModelAnswer, ModelReflection, Usage } from '../model-wire.ts';

/** The model part of a run's state (`RunState.model_state_json`). */
export interface ModelState {
  skill: string;
  /** `react`: the model takes every turn; `plan-replan`: it writes whole plans, Thought runs them (replan.ts). */
  mode: 'react' | 'plan-replan';
  /** New plans asked for after the first (plan-replan runs only). */
  replans?: number;
  /** Model turns dispatched so far (reflection turns included). */
  turns: number;
  /** Tokens the model's answers used (their `usage.total_tokens`). */
  tokens: number;
  /** Extracted slots and values the user gave: in every prompt, never compacted away. */
  facts: Record<string, string>;
  /** Estimated prompt tokens per section of each turn, as the prompt builder counted them. */
  turn_tokens: Array<{ turn: number; system: number; skill: number; results: number; history: number; generation: number; prompt: number; window?: number; reported?: number }>;
  /**
   * The share of the skill's window the prompts are built for: below 1 after the server refused a
   * prompt as longer than its context (each refusal takes a quarter off). Unset: 1.
   */
  window_scale?: number;
  /** Answers the gate rejected, fed back to the model in the next turn. */
  rejected: Array<{ turn: number; error: string; evidence: string }>;
  /** Consecutive rejected answers. */
  invalid_streak: number;
  /** Consecutive tool waves with no valid result. */
  failed_waves: number;
  /** What the model's answers cost so far (rejected answers included), with a price table; and per model. */
  cost?: number;
  costs?: Record<string, number>;
}

/**
 * How a plan-replan run's plans are run: Thought's plan machinery (core.ts), handed in so that this
 * module does not import core.
 */
export interface PlanRunner {
  /** Problems of a candidate plan (empty when valid), as Thought validates any plan. */
  validate(plan: Plan): string[];
  /** The next wave of `plan` (or the run's end), as for any planned run. */
  run(run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>): ThoughtDecision;
}

type TurnMode = 'react' | 'reflection' | 'plan';

/** The turn after a rejected answer or a reflection: a plan-replan run asks for a plan again. */
const nextTurnMode = (state: ModelState): TurnMode => (state.mode === 'plan-replan' ? 'plan' : 'react');

/** Runtime rules at the top of every system prompt. */
export const DEFAULT_SYSTEM_RULES = [
  'You resolve a customer-service ticket by calling the tools you are given, then answering.',
  'Each turn, either call one or more tools (calls in the same turn run in parallel) or give the final answer.',
  'A final answer needs tool results behind it: say only what the ticket or a tool result says.',
  'Use only values from the ticket, the facts below, or earlier tool results. Never invent an id.',
  'Do not call a tool again with the same arguments: its result will not change.',
  'A tool result that is an error object means the call failed; decide what to do about it.',
].join('\n');

const modelStep = (turn: number) => `M${turn}`;
const callStep = (turn: number, i: number) => `M${turn}_${i}`;
const turnOf = (stepId: string) => Number(/^M(\d+)/.exec(stepId)?.[1] ?? 0);
const isModelStep = (stepId: string) => /^M\d+$/.test(stepId);

export function parseModelState(run: RunState): ModelState {
  return jsonObjectField(run.model_state_json ?? 'null', 'run.model_state_json') as unknown as ModelState;
}

/**
 * Starts a model run: its first model turn. `run` is the new run state onTask built (planner, task
 * text, bounds); the skill's bounds decide how many turns and tokens the run may use. `react` asks
 * for the first tool calls; `plan-replan` for the whole plan.
 */
export function startReact(thoughtId: string, iteration: number, run: RunState, skillName: string, facts: Record<string, string>, loop: ModelLoopConfig, bounds: ReactBounds, mode: ModelState['mode'] = 'react'): ThoughtDecision {
  const skill = loop.skill(skillName);
  if (!skill) return end(thoughtId, run, iteration, 'escalated', 'unroutable', `no runnable skill "${skillName}": a person takes the run`, null);
  const state: ModelState = { skill: skill.ref, mode, ...(mode === 'plan-replan' ? { replans: 0 } : {}), turns: 0, tokens: 0, facts, turn_tokens: [], rejected: [], invalid_streak: 0, failed_waves: 0, ...(loop.prices ? { cost: 0, costs: {} } : {}) };
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
export function replanTurn(thoughtId: string, iteration: number, run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>, loop: ModelLoopConfig, why: string): ThoughtDecision {
  const state = parseModelState(run);
  const skill = loop.skill(state.skill.split('@')[0]!);
  if (!skill) return end(thoughtId, run, iteration, 'failed', 'model_unavailable', `the run's skill ${state.skill} is no longer loaded: nothing to build its next prompt from`, null);
  const replans = (state.replans ?? 0) + 1;
  if (replans > skill.maxReplans) return end(thoughtId, run, iteration, 'budget_exhausted', 'replan_cap', `the skill's ${skill.maxReplans} re-plan(s) are used up: ${why}`, null);
  return modelTurn(thoughtId, iteration, run, plan, outputs, { ...state, replans }, skill, 'plan', loop);
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
  if (!skill) return end(thoughtId, run, obs.iteration, 'failed', 'model_unavailable', `the run's skill ${state.skill} is no longer loaded: nothing to build its next prompt from`, null);

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
  run = { ...run, outputs_json: JSON.stringify(outputs), error_history: history, seen_data: [...seen], stale_waves: newInformation ? 0 : allValid ? run.stale_waves + 1 : run.stale_waves };
  if (run.stale_waves >= bounds.noveltyWaves) return end(thoughtId, withState(run, next), obs.iteration, 'budget_exhausted', 'no_novelty', `no new information for ${run.stale_waves} waves`, null);
  // Consecutive failed waves: the model reflects on them before it tries again.
  const mode = next.failed_waves >= bounds.reflectAfter ? 'reflection' : 'react';
  return modelTurn(thoughtId, obs.iteration, run, plan, outputs, next, skill, mode, loop);
}

function onModelAnswer(obs: ObservationResult, verdict: Verdict, run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>, history: Record<string, string[]>, streaks: Record<string, number>, unpaid: ModelState, skill: ReactSkill, loop: ModelLoopConfig, bounds: ReactBounds, runner?: PlanRunner): ThoughtDecision {
  const thoughtId = obs.thought_id;
  const turn = turnOf(verdict.step_id);
  // Every answer the server sent is paid for, one the gate rejected too.
  const state = charged(unpaid, verdict, skill, loop);
  const reject = (error: string, evidence: string, from: RunState, nextState: ModelState): ThoughtDecision => {
    // The gate (or the skill's grounding) stopped the answer before anything acted on it; the model hears why in its next turn.
    const next: ModelState = { ...nextState, invalid_streak: nextState.invalid_streak + 1, rejected: [...nextState.rejected, { turn, error, evidence: evidence.slice(0, 400) }] };
    const failed = withState({ ...from, error_history: { ...history, [verdict.step_id]: [...(history[verdict.step_id] ?? []), error] } }, next);
    if (next.invalid_streak >= bounds.reflectAfter + 1) {
      if (error === 'ungrounded') return end(thoughtId, failed, obs.iteration, 'escalated', 'ungrounded', `the model's last ${next.invalid_streak} answers were not grounded: ${evidence.slice(0, 200)}`, null);
      return end(thoughtId, failed, obs.iteration, 'failed', 'model_invalid', `the model's last ${next.invalid_streak} answers were rejected (${error}: ${evidence.slice(0, 200)})`, null);
    }
    return modelTurn(thoughtId, obs.iteration, failed, plan, outputs, next, skill, nextTurnMode(next), loop);
  };
  if (!verdict.valid) {
    if (verdict.error_type === 'hallucinated_tool' || verdict.error_type === 'invalid_arguments' || verdict.error_type === 'schema_mismatch' || verdict.error_type === 'malformed') {
      return reject(verdict.error_type, failedEvidence(verdict), run, state);
    }
    const failedRun: RunState = { ...run, error_history: { ...history, [verdict.step_id]: [...(history[verdict.step_id] ?? []), verdict.error_type] } };
    // The server refused the request itself (a 4xx other than 408/429): sending it again unchanged
    // would be refused again, so only a prompt that was too long is sent again, smaller.
    const refused = serverErrorOf(verdict);
    if (refused?.kind === 'context_length') {
      const scale = (state.window_scale ?? 1) * 0.75;
      if (scale < 0.3) return end(thoughtId, withState(failedRun, state), obs.iteration, 'failed', 'context_overflow', `the model's server refused turn ${turn}'s prompt as too long even at ${Math.round(scale / 0.75 * 100)}% of the skill's window: ${refused.message}`, null);
      return redispatch(thoughtId, obs.iteration, failedRun, plan, verdict.step_id, { ...state, window_scale: scale }, skill, loop);
    }
    if (refused) return end(thoughtId, withState(failedRun, state), obs.iteration, 'failed', 'model_request_refused', `the model's server refused turn ${turn} with HTTP ${refused.status}${refused.code ? ` ${refused.code}` : ''}: ${refused.message}`, null);
    // The endpoint failed after Action's retries (and its fallback model): try the same turn again, then give up.
    const streak = (streaks[verdict.step_id] ?? 0) + 1;
    const retried: RunState = { ...failedRun, failure_streaks: { ...streaks, [verdict.step_id]: streak } };
    if (streak >= bounds.reflectAfter || verdict.error_type === 'auth_failed') {
      return end(thoughtId, withState(retried, state), obs.iteration, 'failed', 'model_unavailable', `the model endpoint failed turn ${turn}: ${verdict.error_type} (${streak} wave(s), ${verdict.attempts} attempt(s) in the last)`, null);
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
  run = withState({ ...run, outputs_json: JSON.stringify(outputs), failure_streaks: { ...streaks, [verdict.step_id]: 0 }, cost_spent: run.cost_spent + used / 1000 }, next);

  if (answer.kind === 'final') {
    const missing = ungrounded(skill, plan, outputs);
    // A grounded final answer is kept even when it crossed the budget: it is paid for, and it is the run's result.
    // The outcome names the model that answered it, and the model it stood in for when a fallback did.
    const by = { model: answeredModel(verdict, answer, skill, loop), ...(verdict.fallback_from ? { fallback_from: verdict.fallback_from } : {}) };
    if (!missing) return end(thoughtId, run, obs.iteration, 'completed', 'completed', `the model answered after ${state.turns} turn(s)`, JSON.stringify({ answer: answer.content, skill: state.skill, turns: state.turns, tokens, ...by }));
    // Ungrounded answers count toward the streak of rejected answers like any other.
    if (tokens <= skill.tokenBudget) return reject('ungrounded', missing, run, { ...next, invalid_streak: state.invalid_streak });
  }
  if (answer.kind === 'refusal') {
    return end(thoughtId, run, obs.iteration, 'escalated', 'model_refused', answer.reason === 'refusal' ? `the model refused: ${(answer.content ?? '').slice(0, 200)}` : 'the model\'s server withheld the answer (content_filter): a person takes the run', null);
  }
  if (tokens > skill.tokenBudget) return end(thoughtId, run, obs.iteration, 'budget_exhausted', 'token_budget', `the model used ${tokens} tokens, over the skill's budget of ${skill.tokenBudget}`, null);
  const budget = loop.moneyBudget ?? 0;
  if (budget > 0 && (next.cost ?? 0) > budget) return end(thoughtId, run, obs.iteration, 'budget_exhausted', 'money_budget', `the model's answers cost ${money(next.cost ?? 0)}, over the run's money budget of ${money(budget)}`, null);
  if (run.cost_budget > 0 && run.cost_spent > run.cost_budget) return end(thoughtId, run, obs.iteration, 'budget_exhausted', 'cost_budget', `${run.cost_spent} cost units spent of the budget ${run.cost_budget}`, null);

  switch (answer.kind) {
    case 'final':
      return reject('ungrounded', ungrounded(skill, plan, outputs)!, run, { ...next, invalid_streak: state.invalid_streak });
    case 'ask':
      return end(thoughtId, run, obs.iteration, 'awaiting_input', 'needs_input', `the model asks the customer: ${answer.question}`, JSON.stringify({ question: answer.question, skill: state.skill, turns: state.turns, tokens }), ['reply']);
    case 'reflection':
      return onReflection(obs, run, plan, outputs, next, skill, answer.reflection, turn, loop);
    case 'tool_calls':
      return dispatchCalls(thoughtId, obs.iteration, run, plan, turn, answer, next, bounds);
    case 'plan':
      if (!runner) return end(thoughtId, run, obs.iteration, 'failed', 'model_unavailable', 'the model answered with a plan, but this Thought runs no plans for models', null);
      return onPlan(thoughtId, obs.iteration, run, plan, outputs, turn, answer, next, skill, loop, bounds, runner);
  }
}

/**
 * The model that answered a turn: the completion's own `model`, else the one the request named (the
 * skill's), else the configured model of the tool that answered (primary or fallback); `unknown`
 * when none is known.
 */
export function answeredModel(verdict: Pick<Verdict, 'tool' | 'fallback_from'>, answer: { model?: string | null }, skill: Pick<ReactSkill, 'model'>, loop: Pick<ModelLoopConfig, 'models'>): string {
  if (answer.model) return answer.model;
  const fromFallback = verdict.fallback_from !== null && (loop.models?.fallbackTool === undefined || verdict.tool === loop.models.fallbackTool);
  if (fromFallback) return loop.models?.fallback ?? 'unknown';
  return skill.model ?? loop.models?.primary ?? 'unknown';
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
  const data = jsonField(v.extracted_data_json, `verdicts[${v.step_id}].extracted_data_json`) as { server_error?: { status: number | null; code: string | null; kind: string; message: string } } | null;
  return data?.server_error ?? null;
}

/**
 * A verified plan answer: renamed into the run's plan (replan.ts), validated like any plan, and run
 * in waves; the steps of the earlier plan that had not finished are replaced (skipped). An invalid
 * plan is a rejected answer: the model hears why in its next plan turn.
 */
function onPlan(thoughtId: string, iteration: number, run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>, turn: number, answer: Extract<ModelAnswer, { kind: 'plan' }>, state: ModelState, skill: ReactSkill, loop: ModelLoopConfig, bounds: ReactBounds, runner: PlanRunner): ThoughtDecision {
  const finished = new Set(Object.keys(outputs).filter((id) => !isModelStep(id)));
  // The gate checked the answer against the plan schema: its steps are plan steps.
  const merged = mergePlan(plan, answer.plan as Pick<Plan, 'steps' | 'output'>, turn, finished, new Set(run.skipped));
  const problems = [...merged.problems, ...runner.validate(merged.candidate)];
  if (problems.length) {
    const evidence = `invalid plan: ${problems.join('; ')}`.slice(0, 400);
    const next: ModelState = { ...state, invalid_streak: state.invalid_streak + 1, rejected: [...state.rejected, { turn, error: 'invalid_plan', evidence }] };
    const rejected = withState(run, next);
    if (next.invalid_streak >= bounds.reflectAfter + 1) return end(thoughtId, rejected, iteration, 'failed', 'model_invalid', `the model's last ${next.invalid_streak} answers were rejected (${evidence.slice(0, 200)})`, null);
    return modelTurn(thoughtId, iteration, rejected, plan, outputs, next, skill, 'plan', loop);
  }
  return runner.run(withState({ ...run, plan_json: JSON.stringify(merged.plan), skipped: [...run.skipped, ...merged.replaced] }, state), merged.plan, outputs);
}

function onReflection(obs: ObservationResult, run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>, state: ModelState, skill: ReactSkill, r: ModelReflection, turn: number, loop: ModelLoopConfig): ThoughtDecision {
  const thoughtId = obs.thought_id;
  const actions: Record<ModelReflection['action'], ReflectionAction> = { retry_with_changed_input: 'retry_with_changed_input', change_plan: 'change_plan', ask_person: 'ask_human', escalate: 'escalate', fail: 'fail' };
  const dimension = (name: ReflectionDimension['name'], d: DimensionVerdict): ReflectionDimension => ({ name, result: d.verdict, evidence: d.reason, recommendation: d.verdict === 'PASS' ? 'none' : r.reason });
  const reflection: Reflection = {
    step_id: modelStep(turn),
    tool: loop.tool,
    iteration: obs.iteration,
    error_types: Object.values(run.error_history).flat().slice(-5).map((e) => e.split(':')[0]!),
    dimensions: [dimension('data_completeness', r.data_completeness), dimension('logic_consistency', r.logic_consistency), dimension('policy_compliance', r.policy_compliance), dimension('uncertainty', r.uncertainty)],
    action: actions[r.action],
    author: `model:${state.skill}`,
    summary: r.reason,
  };
  const reflected: RunState = { ...run, reflections: [...run.reflections, reflection] };
  const next: ModelState = { ...state, failed_waves: 0 };
  switch (r.action) {
    case 'ask_person':
      return end(thoughtId, withState(reflected, next), obs.iteration, 'awaiting_input', 'reflection', `the model asks a person: ${r.reason}`, null, missingFrom(r));
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
function dispatchCalls(thoughtId: string, iteration: number, run: RunState, plan: Plan, turn: number, answer: Extract<ModelAnswer, { kind: 'tool_calls' }>, state: ModelState, bounds: ReactBounds): ThoughtDecision {
  if (iteration >= run.max_iterations) return end(thoughtId, run, iteration, 'budget_exhausted', 'max_iterations', `iteration limit ${run.max_iterations} reached after ${state.turns} model turn(s)`, null);
  const wave = iteration + 1;
  const calls = { ...run.call_counts };
  const attempts = { ...run.step_attempts };
  const steps: StepCall[] = [];
  const added: PlanStep[] = [];
  for (const [i, call] of answer.calls.entries()) {
    const key = digest(`${call.tool}\u0000${JSON.stringify(call.arguments)}`);
    calls[key] = (calls[key] ?? 0) + 1;
    if (calls[key]! > bounds.repeatCap) return end(thoughtId, run, iteration, 'budget_exhausted', 'model_repeat', `the model asked for ${call.tool} ${JSON.stringify(call.arguments)} a ${ordinal(calls[key]!)} time (cap ${bounds.repeatCap})`, null);
    const id = callStep(turn, i + 1);
    attempts[id] = 1;
    added.push({ id, tool: call.tool, input: call.arguments, depends_on: [modelStep(turn)] });
    steps.push({ step_id: id, tool: call.tool, input_json: JSON.stringify(call.arguments), idempotency_key: `${thoughtId}:${wave}:${id}`, attempt: 1 });
  }
  const grown: Plan = { ...plan, steps: [...plan.steps, ...added] };
  const next: RunState = withState({ ...run, plan_json: JSON.stringify(grown), call_counts: calls, step_attempts: attempts, cost_spent: run.cost_spent + steps.length }, state);
  return {
    outputs: [
      { topic: 'thoughtRequests', value: { thought_id: thoughtId, iteration: wave, run: next, steps } },
      { topic: 'thoughtRuns', value: snapshotOf(thoughtId, 'running', wave, next, [], null) },
    ],
  };
}

/** The next model turn: the prompt built from the run, as one model step in its own wave. */
function modelTurn(thoughtId: string, iteration: number, run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>, state: ModelState, skill: ReactSkill, mode: TurnMode, loop: ModelLoopConfig): ThoughtDecision {
  if (state.turns >= skill.maxModelTurns) {
    const last = state.rejected.at(-1);
    // Out of turns right after an ungrounded answer: say that, rather than "no final answer".
    if (last && last.turn === state.turns && last.error === 'ungrounded') return end(thoughtId, withState(run, state), iteration, 'escalated', 'ungrounded', `the skill's ${skill.maxModelTurns} model turns are used up without a grounded final answer: ${last.evidence.slice(0, 200)}`, null);
    return end(thoughtId, withState(run, state), iteration, 'budget_exhausted', 'model_turns', `the skill's ${skill.maxModelTurns} model turns are used up without a final answer`, null);
  }
  if (iteration >= run.max_iterations) return end(thoughtId, withState(run, state), iteration, 'budget_exhausted', 'max_iterations', `iteration limit ${run.max_iterations} reached after ${state.turns} model turn(s)`, null);
  const turn = state.turns + 1;
  const step: PlanStep = { id: modelStep(turn), tool: loop.tool, input: { turn, mode }, depends_on: [] };
  const grown: Plan = { ...plan, steps: [...plan.steps, step] };
  return dispatchModelStep(thoughtId, iteration, run, grown, outputs, step.id, mode, { ...state, turns: turn }, skill, loop, true);
}

/** The same turn again, after the endpoint failed it (the prompt is rebuilt from the same state, so it is the same). */
function redispatch(thoughtId: string, iteration: number, run: RunState, plan: Plan, stepId: string, state: ModelState, skill: ReactSkill, loop: ModelLoopConfig): ThoughtDecision {
  if (iteration >= run.max_iterations) return end(thoughtId, withState(run, state), iteration, 'budget_exhausted', 'max_iterations', `iteration limit ${run.max_iterations} reached after ${state.turns} model turn(s)`, null);
  const step = plan.steps.find((s) => s.id === stepId)!;
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json') as Record<string, Record<string, unknown>>;
  return dispatchModelStep(thoughtId, iteration, run, plan, outputs, stepId, (step.input as { mode?: TurnMode }).mode ?? 'react', state, skill, loop);
}

/** @param fresh the turn is dispatched for the first time (`state.turns` already counts it) */
function dispatchModelStep(thoughtId: string, iteration: number, run: RunState, plan: Plan, outputs: Record<string, Record<string, unknown>>, stepId: string, mode: TurnMode, state: ModelState, skill: ReactSkill, loop: ModelLoopConfig, fresh = false): ThoughtDecision {
  const turn = turnOf(stepId);
  const toolCalls = skill.toolCalls ?? loop.toolCalls ?? 'native';
  const window = promptWindow(skill.contextWindow, state);
  const built = buildPrompt(
    {
      system: mode === 'plan' ? `${loop.system}\n\n${PLAN_TURN_RULES}` : loop.system,
      skill: { ref: state.skill, prompt: skill.prompt, tools: skill.allowedTools.flatMap((t) => loop.toolSpec(t) ?? []) },
      task: run.task_text,
      facts: state.facts,
      turns: promptTurns(plan, outputs, run.error_history, state.rejected, turn, new Set(run.skipped)),
      reflections: notes(run),
      mode,
      toolCalls,
    },
    window,
  );
  const tokensOfTurn = { turn, ...built.tokens, ...(window !== skill.contextWindow ? { window } : {}) };
  const next: ModelState = { ...state, turn_tokens: [...state.turn_tokens.filter((t) => t.turn !== turn), tokensOfTurn] };
  if (built.overflow) return end(thoughtId, withState(run, next), iteration, 'failed', 'context_overflow', `the task and its facts alone (${built.tokens.system} tokens) do not fit the skill's context window of ${skill.contextWindow}`, null);
  const maxTokens = Math.min(built.maxTokens, skill.maxTokens);
  // The money budget: this turn is not sent when it could cross it. Only recorded numbers (the
  // prompt estimate, scaled as the window is by what the server counted) and configuration.
  const budget = loop.moneyBudget ?? 0;
  const ceiling = budget > 0 ? turnCeilingOf(skill, loop, Math.ceil(built.tokens.prompt * promptUndercount(state)), maxTokens) : null;
  if (ceiling && (state.cost ?? 0) + ceiling.cost > budget) {
    const spent = state.cost ?? 0;
    const before: ModelState = { ...state, turns: fresh ? turn - 1 : state.turns };
    return end(thoughtId, withState(run, before), iteration, 'budget_exhausted', 'money_budget', `model turn ${turn} could cost up to ${money(ceiling.cost)} (about ${ceiling.promptTokens} prompt tokens and ${maxTokens} max_tokens at ${ceiling.model}'s prices) on top of ${money(spent)} spent: over the run's money budget of ${money(budget)}`, null);
  }
  const request: Record<string, unknown> = {
    messages: built.messages,
    // A plan turn lists the tools for their contracts; the answer is the plan, not a call. Parallel
    // calls are asked for: llama.cpp makes one per turn without the flag.
    ...(built.tools.length ? { tools: built.tools, tool_choice: mode === 'plan' ? 'none' : 'auto', ...(mode === 'plan' ? {} : { parallel_tool_calls: true }) } : {}),
    ...(built.responseFormat ? { response_format: built.responseFormat } : {}),
    // Reasoning models refuse `temperature` other than their default and `max_tokens`.
    ...(loop.params === 'reasoning' ? { max_completion_tokens: maxTokens } : { temperature: 0, max_tokens: maxTokens }),
    ...(skill.model ? { model: skill.model } : {}),
  };
  const wave = iteration + 1;
  const attempts = { ...run.step_attempts, [stepId]: (run.step_attempts[stepId] ?? 0) + 1 };
  const dispatched: RunState = withState({ ...run, plan_json: JSON.stringify(plan), step_attempts: attempts }, next);
  const steps: StepCall[] = [{ step_id: stepId, tool: loop.tool, input_json: JSON.stringify(request), idempotency_key: `${thoughtId}:${wave}:${stepId}`, attempt: attempts[stepId]! }];
  return {
    outputs: [
      { topic: 'thoughtRequests', value: { thought_id: thoughtId, iteration: wave, run: dispatched, steps } },
      { topic: 'thoughtRuns', value: snapshotOf(thoughtId, 'running', wave, dispatched, [], null) },
    ],
  };
}

/**
 * The earlier turns for the prompt builder: each with its tool calls and what each call found, and
 * each rejected answer as the model's own turn saying what was wrong with it (the model sees its
 * mistake where it made it, and the conversation moves on).
 */
function promptTurns(plan: Plan, outputs: Record<string, Record<string, unknown>>, errors: Record<string, string[]>, rejected: ModelState['rejected'], before: number, skipped: ReadonlySet<string>): PromptTurn[] {
  const turns: PromptTurn[] = [];
  for (const step of plan.steps) {
    if (!isModelStep(step.id) || turnOf(step.id) >= before) continue;
    const turn = turnOf(step.id);
    const refused = rejected.find((r) => r.turn === turn);
    if (refused) {
      turns.push({ turn, content: null, calls: [], rejected: { error: refused.error, evidence: refused.evidence } });
      continue;
    }
    const answer = outputs[step.id] as unknown as ModelAnswer | undefined;
    if (answer?.kind === 'plan') {
      turns.push({ turn, content: answer.content, calls: planCalls(plan, step.id, outputs, errors, skipped) });
      continue;
    }
    if (!answer || answer.kind !== 'tool_calls') continue;
    const calls: PromptCall[] = answer.calls.map((c, i) => {
      const id = callStep(turn, i + 1);
      const data = outputs[id];
      const failure = errors[id]?.at(-1) ?? null;
      return { id: c.id, tool: c.tool, arguments: c.arguments, valid: data !== undefined, extracted: data ?? null, raw: data !== undefined ? JSON.stringify(data) : '', error: data !== undefined ? null : (failure ?? 'no result') };
    });
    turns.push({ turn, content: answer.content, calls });
  }
  return turns;
}

/**
 * The steps of the plan written in turn `modelStepId` that ran, as that turn's calls (id = the step's
 * run id, so a later plan can reference a result by it), with what each found or why it failed.
 */
function planCalls(plan: Plan, modelStepId: string, outputs: Record<string, Record<string, unknown>>, errors: Record<string, string[]>, skipped: ReadonlySet<string>): PromptCall[] {
  return plan.steps
    .filter((s) => s.id.startsWith(`${modelStepId}_`) && (outputs[s.id] !== undefined || (errors[s.id]?.length ?? 0) > 0))
    .map((s) => {
      const data = outputs[s.id];
      const input = resolveReferences(s.input, outputs, skipped);
      const args = 'value' in input ? (input.value as Record<string, unknown>) : s.input;
      return { id: s.id, tool: s.tool, arguments: args, valid: data !== undefined, extracted: data ?? null, raw: data !== undefined ? JSON.stringify(data) : '', error: data !== undefined ? null : (errors[s.id]?.at(-1) ?? 'no result') };
    });
}

/** Reflections, shown in every later prompt: the model's own in its words, a rule-based one by what it found. */
function notes(run: RunState): string[] {
  return run.reflections.map((r) => {
    if (r.author.startsWith('model:')) return `turn ${turnOf(r.step_id)} reflection (${r.action}): ${r.summary}`;
    const found = r.dimensions.filter((d) => d.result !== 'PASS').map((d) => `${d.name} ${d.result}: ${d.evidence}`);
    return `rule-based reflection on ${r.step_id} (${r.tool}, ${r.action})${found.length ? `: ${found.join('; ')}` : ''}`;
  });
}

function failedEvidence(v: Verdict): string {
  return v.audit_trail.filter((c) => !c.passed).map((c) => `${c.name}: ${c.evidence}`).join(' | ') || v.error_type;
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

/** A money figure as the reasons show it (up to 6 decimals, no trailing zeros). */
function money(x: number): string {
  return String(Number(x.toFixed(6)));
}

/**
 * The most the next turn can cost: `promptTokens` at the input price and `maxTokens` at the output
 * price of the model that will be asked (the skill's, else TAO_LLM_MODEL), or of the fallback model
 * when that costs more (Action may ask it). Null when neither is priced.
 */
export function turnCeilingOf(skill: Pick<ReactSkill, 'model'>, loop: Pick<ModelLoopConfig, 'prices' | 'models'>, promptTokens: number, maxTokens: number): { model: string; cost: number; promptTokens: number } | null {
  if (!loop.prices) return null;
  let best: { model: string; cost: number; promptTokens: number } | null = null;
  for (const model of [skill.model ?? loop.models?.primary, loop.models?.fallback]) {
    const price = priceOf(loop.prices, model);
    if (!model || !price) continue;
    const cost = turnCeiling(price, promptTokens, maxTokens);
    if (!best || cost > best.cost) best = { model, cost, promptTokens };
  }
  return best;
}

/**
 * What a model verdict's answer cost, by the model that answered: a verified answer's usage, or the
 * usage Observation recorded of an answer its gate rejected (`spent`). Priced by the answering
 * model's entry, else by the entry of the model the tool asked. Null without a price table, usage
 * or a price.
 */
export function answerCost(verdict: Pick<Verdict, 'tool' | 'fallback_from' | 'valid' | 'extracted_data_json' | 'step_id'>, skill: Pick<ReactSkill, 'model'>, loop: Pick<ModelLoopConfig, 'prices' | 'models'>): { model: string; cost: number } | null {
  if (!loop.prices || verdict.extracted_data_json === null) return null;
  const data = jsonField(verdict.extracted_data_json, `verdicts[${verdict.step_id}].extracted_data_json`) as { usage?: PricedUsage; model?: string | null; spent?: { usage?: PricedUsage; model?: string | null } } | null;
  const paid = verdict.valid ? data : data?.spent;
  if (!paid?.usage) return null;
  const model = answeredModel(verdict, { model: paid.model ?? null }, skill, loop);
  const price = priceOf(loop.prices, model) ?? priceOf(loop.prices, answeredModel(verdict, { model: null }, skill, loop));
  return price ? { model, cost: usageCost(price, paid.usage) } : null;
}

/** `state` with the cost of `verdict`'s answer added (unchanged when it is not priced). */
function charged(state: ModelState, verdict: Verdict, skill: ReactSkill, loop: ModelLoopConfig): ModelState {
  if (!loop.prices) return state;
  const paid = answerCost(verdict, skill, loop);
  const cost = roundMoney((state.cost ?? 0) + (paid?.cost ?? 0));
  const costs = paid ? { ...state.costs, [paid.model]: roundMoney((state.costs?.[paid.model] ?? 0) + paid.cost) } : (state.costs ?? {});
  return { ...state, cost, costs };
}

function withState(run: RunState, state: ModelState): RunState {
  return { ...run, model_state_json: JSON.stringify(state) };
}
