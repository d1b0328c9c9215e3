/**
 * What a run a model drives carries from turn to turn, and what it spends: the model part of the run
 * state (`ModelState`, in `RunState.model_state_json`), what such a run needs of a skill and of
 * Thought's configuration, a turn's context (`TurnContext`), how a model run ends with its state
 * (`endTurn`), and the prices and arithmetic of what answers cost. Pure data and pure functions;
 * every other file of processors/thought/model/ imports this one, and it imports none of them.
 *
 * The price table (TAO_LLM_PRICES) is a JSON object of model name → prices per million tokens, in
 * whatever currency the operator keeps accounts in (every money figure, the budget included, is in it):
 *
 * ```json
 * { "gpt-4o-mini": { "input": 0.15, "cached": 0.075, "output": 0.60 },
 *   "*": { "input": 1, "output": 4 } }
 * ```
 *
 * `input` prices prompt tokens, `cached` the prompt tokens the server served from its prompt cache
 * (`usage.prompt_tokens_details.cached_tokens`; default: the input price), `output` completion
 * tokens. A model is priced by its own entry, else by the longest entry it starts with followed by
 * `-`, `:`, `@`, `/` or `.` (`gpt-4o-mini` prices `gpt-4o-mini-2024-07-18`), else by `*`.
 */
import { turnOfStep } from '../../run-driver.ts';
import type { OutcomeReason, OutcomeStatus, RunState, Verdict } from '../../../schemas/types.gen.ts';
import { ConfigError } from '../../../runtime/errors.ts';
import { jsonField, jsonObjectField } from '../../../runtime/json-field.ts';
import type { Plan } from '../../plan.ts';
import { end, type EndDetails, type Outputs, type RunAt, type RunContext, type ThoughtDecision } from '../run-end.ts';

/** A tool a final answer waits for (metadata.answer-after), when the last verified result of `when.tool` has `when.field` (among `when.values`, when given). */
export interface AnswerAfter {
  tool: string;
  when?: { tool: string; field: string; values?: readonly string[] };
}

/** What react runs need to know of a skill (processors/thought/skills.ts `Skill` satisfies it). */
export interface ReactSkill {
  name: string;
  /** What the skill does (SKILL.md `description`): shown to a routing turn choosing among skills. */
  description?: string;
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
  /** `<tool>.<field>` a final answer must state once the tool's verified result is in the run (metadata.answer-states). */
  answerStates?: readonly string[];
  /** Tools a final answer waits for (called, whatever their result), each when its condition holds (metadata.answer-after). */
  answerAfter?: readonly AnswerAfter[];
  /** How this skill's react turns ask for tool calls (metadata.tool-calls); unset: the loop's default. */
  toolCalls?: 'native' | 'json_schema';
  /**
   * The JSON Schema of the final answer (skills/<name>/output.schema.json): the answer is a
   * `final_answer` call or object matching it, and the outcome carries it as `result_json`. Unset: text.
   */
  outputSchema?: Record<string, unknown>;
}

/** Thought's configuration of the model loop. */
export interface ModelLoopConfig {
  /** Catalog name of the model tool (tools/model.ts). */
  tool: string;
  /** Skills by name (the run records `name@version`). */
  skill(name: string): ReactSkill | undefined;
  /** A catalog tool as the model sees it (name, description, parameter schema). */
  toolSpec(name: string): PromptTool | undefined;
  /** A catalog tool's `identity_parameters`: values a call may carry only when the run was given them (checks.ts). Unset: none. */
  identityParameters?(tool: string): readonly string[];
  /** Whether a catalog tool changes something (`side_effects`): an answer that says something was done needs a verified result of one (checks.ts). Unset: no such check. */
  sideEffects?(tool: string): boolean;
  /** A catalog tool's response JSON Schema: its state fields are what a final answer may not contradict (checks.ts). */
  responseSchema?(tool: string): Record<string, unknown> | undefined;
  /** The runtime's rules, the first part of every system prompt. */
  system: string;
  /** TAO_LLM_PARAMS: `chat` sends `temperature: 0` (0.7 with a `seed` on the turn after a refused answer) and `max_tokens`; `reasoning` `max_completion_tokens` only (reasoning models refuse both). */
  params?: 'chat' | 'reasoning';
  /** How react turns ask for tool calls when the skill names no mode (TAO_LLM_TOOL_CALLS). Default native. */
  toolCalls?: 'native' | 'json_schema';
  /** The models Action asks (TAO_LLM_MODEL, TAO_LLM_FALLBACK_MODEL): who answered a completion naming none, by tool (`fallbackTool`). */
  models?: { primary?: string; fallback?: string; fallbackTool?: string };
  /** The price table (TAO_LLM_PRICES, below): with it, every model answer is priced and the run's cost recorded. */
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
  turn_tokens: Array<
    SectionTokens & {
      turn: number;
      /** The window the prompt was built for, when not the skill's (promptWindow). */
      window?: number;
      /** The server's count of the prompt (`usage.prompt_tokens`), once it answered. */
      reported?: number;
    }
  >;
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
  /**
   * Set when the model kept calling with identity arguments nobody gave (`unsupported_argument`,
   * `TAO_REFLECT_AFTER + 1` in a row): its next turn offers only `ask_customer`. Unset: every tool.
   */
  ask_only?: boolean;
  /** Tools asked for again after their verified result (`repeated_call`): not offered until a customer's reply. Unset: none. */
  withheld?: string[];
  act_next?: boolean; // set by a reflection choosing to retry or re-plan: the next react turn offers calls only
  /** What the model's answers cost so far (rejected answers included), with a price table; and per model. */
  cost?: number;
  costs?: Record<string, number>;
  /**
   * The customer's replies to the model's questions (`ask_customer`), by the turn that asked: the
   * conversation goes on after each with the reply as the customer's message. Unset: none yet.
   */
  replies?: Array<{ turn: number; text: string }>;
  /** The run's opening text (its first user message) once a reply has been added to `task_text`. */
  opening?: string;
  /**
   * Set while a routing turn chooses the run's skill (route-turn.ts `startRouting`): the skills offered.
   * `skill` is then {@link ROUTING}; the chosen skill's run replaces both.
   */
  routing?: string[];
}

/** `ModelState.skill` of a run whose skill a routing turn is choosing. */
export const ROUTING = '(routing)';

/**
 * How a plan-replan run's plans are run: Thought's plan machinery (core.ts), handed in so that this
 * module does not import core.
 */
export interface PlanRunner {
  /** Problems of a candidate plan (empty when valid), as Thought validates any plan. */
  validate(plan: Plan): string[];
  /** The next wave of `plan` (or the run's end), as for any planned run. */
  run(run: RunState, plan: Plan, outputs: Outputs): ThoughtDecision;
}

/**
 * What deciding a model run's next step reads: the run at its wave with its plan and outputs, its
 * model state, its skill and the loop's configuration. The react modules hand it on whole and make a
 * changed one by copying (`{ ...ctx, run, state }`).
 */
export interface TurnContext extends RunContext {
  state: ModelState;
  skill: ReactSkill;
  loop: ModelLoopConfig;
}

/** The skill that takes the run (its state records `name@version`); undefined when it is no longer loaded. */
export const runSkill = (state: ModelState, loop: ModelLoopConfig): ReactSkill | undefined => loop.skill(state.skill.split('@')[0]!);

/** Ends a model run (or parks it) with its model state written into it: run-end.ts `end`. */
export function endTurn(at: RunAt & { state: ModelState }, status: OutcomeStatus, code: OutcomeReason, reason: string, details?: EndDetails): ThoughtDecision {
  return end({ ...at, run: withState(at.run, at.state) }, status, code, reason, details);
}

export type TurnMode = 'react' | 'reflection' | 'plan';

/** The turn after a rejected answer or a reflection: a plan-replan run asks for a plan again. */
export const nextTurnMode = (state: ModelState): TurnMode => (state.mode === 'plan-replan' ? 'plan' : 'react');

export { callStep, isModelStep, modelStep } from '../../run-driver.ts';
/** The turn of a model-turn step (`M<n>`, `M<n>_…`); 0 for any other (run-driver.ts holds the rule). */
export const turnOf = (stepId: string): number => turnOfStep(stepId) ?? 0;

export function parseModelState(run: RunState): ModelState {
  return jsonObjectField(run.model_state_json ?? 'null', 'run.model_state_json') as unknown as ModelState;
}

/** `run` with the model state written into it. */
export function withState(run: RunState, state: ModelState): RunState {
  return { ...run, model_state_json: JSON.stringify(state) };
}

/** A catalog tool as the model sees it. */
export interface PromptTool {
  /** Catalog name, e.g. `orders.get`. */
  name: string;
  description: string;
  /** The tool's parameter JSON Schema. */
  parameters: Record<string, unknown>;
}

/** Estimated tokens per section of a built prompt. */
export interface SectionTokens {
  system: number;
  skill: number;
  results: number;
  history: number;
  /** The request's `max_tokens`. */
  generation: number;
  /** Everything but generation. */
  prompt: number;
}

// What answers cost.

export interface ModelPrice {
  /** Per million prompt tokens. */
  input: number;
  /** Per million completion tokens. */
  output: number;
  /** Per million prompt tokens served from the prompt cache; default the input price. */
  cached?: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** Token counts of one answer, as the server reported them. */
export interface PricedUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
}

/**
 * The price table in `text` (JSON), checked.
 * @param where what to name in the error: `TAO_LLM_PRICES` or `TAO_LLM_PRICES file /etc/tao/prices.json`
 * @throws ConfigError with one line naming the model and the field that is wrong
 */
export function parsePriceTable(text: string, where: string): PriceTable {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${where} is not valid JSON (${(err as Error).message})`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigError(`${where} must be a JSON object of model name -> {"input", "output", "cached"?} prices per million tokens`);
  const table: Record<string, ModelPrice> = {};
  for (const [model, price] of Object.entries(doc as Record<string, unknown>)) {
    if (model.trim() === '') throw new ConfigError(`${where}: a model name is empty`);
    if (price === null || typeof price !== 'object' || Array.isArray(price))
      throw new ConfigError(`${where}: "${model}" must be an object {"input", "output", "cached"?} of prices per million tokens`);
    const p = price as Record<string, unknown>;
    for (const key of Object.keys(p))
      if (!['input', 'output', 'cached'].includes(key))
        throw new ConfigError(`${where}: "${model}" has an unknown key "${key}" (allowed: input, output, cached)`);
    for (const key of ['input', 'output', 'cached'] as const) {
      const v = p[key];
      if (v === undefined && key === 'cached') continue;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
        throw new ConfigError(`${where}: "${model}"."${key}" must be a number >= 0 (price per million tokens), got ${JSON.stringify(v) ?? 'nothing'}`);
    }
    table[model] = { input: p.input as number, output: p.output as number, ...(p.cached === undefined ? {} : { cached: p.cached as number }) };
  }
  return table;
}

/** The price of `model` by the table's rules (its entry, the longest prefix entry, `*`), or null. */
export function priceOf(table: PriceTable, model: string | null | undefined): ModelPrice | null {
  if (!model) return null;
  if (Object.hasOwn(table, model)) return table[model]!;
  let best: string | null = null;
  for (const key of Object.keys(table)) {
    if (key === '*' || key.length >= model.length || !model.startsWith(key)) continue;
    if (!'-:@/.'.includes(model[key.length]!)) continue;
    if (best === null || key.length > best.length) best = key;
  }
  if (best !== null) return table[best]!;
  return Object.hasOwn(table, '*') ? table['*']! : null;
}

/** What one answer cost: uncached prompt tokens at input, cached ones at the cached price, completion at output. */
export function usageCost(price: ModelPrice, usage: PricedUsage): number {
  const cached = Math.min(Math.max(0, usage.cached_tokens ?? 0), usage.prompt_tokens);
  const cost = ((usage.prompt_tokens - cached) * price.input + cached * (price.cached ?? price.input) + usage.completion_tokens * price.output) / 1e6;
  return roundMoney(cost);
}

/** The most a turn can cost: `promptTokens` at the input price and all of `maxTokens` at the output price. */
export function turnCeiling(price: ModelPrice, promptTokens: number, maxTokens: number): number {
  return roundMoney((promptTokens * price.input + maxTokens * price.output) / 1e6);
}

/** Rounded to 1e-9, so sums are the same on every platform and in every replay. */
export function roundMoney(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

/**
 * The model that answered a turn: the completion's own `model`, else the one the request named (the
 * skill's), else the configured model of the tool that answered (primary or fallback); `unknown`
 * when none is known.
 */
export function answeredModel(
  verdict: Pick<Verdict, 'tool' | 'fallback_from'>,
  answer: { model?: string | null },
  skill: Pick<ReactSkill, 'model'>,
  loop: Pick<ModelLoopConfig, 'models'>,
): string {
  if (answer.model) return answer.model;
  const fromFallback = verdict.fallback_from !== null && (loop.models?.fallbackTool === undefined || verdict.tool === loop.models.fallbackTool);
  if (fromFallback) return loop.models?.fallback ?? 'unknown';
  return skill.model ?? loop.models?.primary ?? 'unknown';
}

/** A money figure as the reasons show it (up to 6 decimals, no trailing zeros). */
export function money(x: number): string {
  return String(Number(x.toFixed(6)));
}

/**
 * The most the next turn can cost: `promptTokens` at the input price and `maxTokens` at the output
 * price of the model that will be asked (the skill's, else TAO_LLM_MODEL), or of the fallback model
 * when that costs more (Action may ask it). Null when neither is priced.
 */
export function turnCeilingOf(
  skill: Pick<ReactSkill, 'model'>,
  loop: Pick<ModelLoopConfig, 'prices' | 'models'>,
  promptTokens: number,
  maxTokens: number,
): { model: string; cost: number; promptTokens: number } | null {
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
export function answerCost(
  verdict: Pick<Verdict, 'tool' | 'fallback_from' | 'valid' | 'extracted_data_json' | 'step_id'>,
  skill: Pick<ReactSkill, 'model'>,
  loop: Pick<ModelLoopConfig, 'prices' | 'models'>,
): { model: string; cost: number } | null {
  if (!loop.prices || verdict.extracted_data_json === null) return null;
  const data = jsonField(verdict.extracted_data_json, `verdicts[${verdict.step_id}].extracted_data_json`) as {
    usage?: PricedUsage;
    model?: string | null;
    spent?: { usage?: PricedUsage; model?: string | null };
  } | null;
  const paid = verdict.valid ? data : data?.spent;
  if (!paid?.usage) return null;
  const model = answeredModel(verdict, { model: paid.model ?? null }, skill, loop);
  const price = priceOf(loop.prices, model) ?? priceOf(loop.prices, answeredModel(verdict, { model: null }, skill, loop));
  return price ? { model, cost: usageCost(price, paid.usage) } : null;
}

/** `state` with the cost of `verdict`'s answer added (unchanged when it is not priced). */
export function charged(state: ModelState, verdict: Verdict, skill: Pick<ReactSkill, 'model'>, loop: ModelLoopConfig): ModelState {
  if (!loop.prices) return state;
  const paid = answerCost(verdict, skill, loop);
  const cost = roundMoney((state.cost ?? 0) + (paid?.cost ?? 0));
  const costs = paid ? { ...state.costs, [paid.model]: roundMoney((state.costs?.[paid.model] ?? 0) + paid.cost) } : (state.costs ?? {});
  return { ...state, cost, costs };
}
