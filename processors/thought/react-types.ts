/**
 * The vocabulary of runs a model drives (react.ts): what a run needs of a skill and of Thought's
 * configuration, the model part of the run state, a turn's context (`TurnContext`) and how a model
 * run ends with its state (`endTurn`), and the step ids of model turns and their calls. Pure data and
 * pure functions.
 */
import { turnOfStep } from '../run-driver.ts';
import type { OutcomeReason, OutcomeStatus, RunState } from '../../schemas/types.gen.ts';
import { jsonObjectField } from '../../runtime/json-field.ts';
import type { Plan } from '../plan.ts';
import type { PromptTool, SectionTokens } from './prompt-types.ts';
import { end, type EndDetails, type Outputs, type RunAt, type RunContext, type ThoughtDecision } from './run-end.ts';
import type { PriceTable } from './prices.ts';

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
  /**
   * A catalog tool's identity parameters (`identity_parameters`): values a model's call may carry only
   * when the run was given them (provenance.ts). Unset: no tool has any.
   */
  identityParameters?(tool: string): readonly string[];
  /** A catalog tool's response JSON Schema: its state fields are what a final answer may not contradict (answer-facts.ts). */
  responseSchema?(tool: string): Record<string, unknown> | undefined;
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
}

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

/** Runtime rules at the top of every system prompt. */
export const DEFAULT_SYSTEM_RULES = [
  'You resolve a customer-service ticket by calling the tools you are given, then answering.',
  'Each turn, either call one or more tools (calls in the same turn run in parallel) or give the final answer.',
  'A final answer needs tool results behind it: say only what the ticket or a tool result says.',
  'Use only values from the ticket, the facts below, or earlier tool results. Never invent an id.',
  'Do not call a tool again with the same arguments: its result will not change.',
  'A tool result that is an error object means the call failed; decide what to do about it.',
].join('\n');

/** A model answer's verdict with one of these was stopped by the gate (a policy too): the model hears why and answers again. */
export const GATE_REJECTIONS: ReadonlySet<string> = new Set(['hallucinated_tool', 'invalid_arguments', 'schema_mismatch', 'malformed', 'policy_violation']);

export { callStep, isModelStep, modelStep } from '../run-driver.ts';
/** The turn of a model-turn step (`M<n>`, `M<n>_…`); 0 for any other (run-driver.ts holds the rule). */
export const turnOf = (stepId: string): number => turnOfStep(stepId) ?? 0;

export function parseModelState(run: RunState): ModelState {
  return jsonObjectField(run.model_state_json ?? 'null', 'run.model_state_json') as unknown as ModelState;
}

/** `run` with the model state written into it. */
export function withState(run: RunState, state: ModelState): RunState {
  return { ...run, model_state_json: JSON.stringify(state) };
}
