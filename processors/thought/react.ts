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
 * This module starts, resumes and re-plans runs and folds each wave; beside it: react-answer.ts
 * (deciding on a model's answer), react-accepted.ts (acting on an accepted one: tool calls, a plan, a
 * reflection), react-types.ts (the run's model state, the configuration and a turn's context), react-turn.ts
 * (dispatching a model turn), react-prompt.ts (what a prompt is built from) and react-cost.ts (what
 * answers cost).
 */
import type { ObservationResult, RunState } from '../../schemas/types.gen.ts';
import { jsonField, jsonObjectField } from '../../runtime/json-field.ts';
import { planOfRun, type Plan } from '../plan.ts';
import { runDriver } from '../run-driver.ts';
import { digest, end, type Outputs, type RunAt, type RunContext, type ThoughtDecision } from './run-end.ts';
import {
  endTurn,
  isModelStep,
  modelStep,
  parseModelState,
  runSkill,
  type ModelLoopConfig,
  type ModelState,
  type PlanRunner,
  type ReactBounds,
  type TurnContext,
} from './react-types.ts';
import { failedEvidence } from './step-reflection.ts';
import { modelTurn } from './react-turn.ts';
import { onModelAnswer } from './react-answer.ts';

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
export function startReact(at: RunAt, choice: ReactChoice, loop: ModelLoopConfig, bounds: ReactBounds): ThoughtDecision {
  const mode = choice.mode ?? 'react';
  const skill = loop.skill(choice.skill);
  if (!skill) return end(at, 'escalated', 'unroutable', `no runnable skill "${choice.skill}": a person takes the run`);
  const state: ModelState = {
    skill: skill.ref,
    mode,
    ...(mode === 'plan-replan' ? { replans: 0 } : {}),
    turns: 0,
    tokens: 0,
    facts: choice.facts,
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
  const next: ModelState = {
    ...state,
    facts: { ...state.facts, ...reply.facts },
    replies: [...(state.replies ?? []), { turn: state.turns, text: reply.text }],
    opening: state.opening ?? parked.run.task_text,
    invalid_streak: 0,
  };
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json') as Outputs;
  return modelTurn({ ...parked, run, plan: planOfRun(run.plan_json), outputs, state: next, skill, loop }, 'react');
}

/** Folds a react run's wave into its state and decides: the model's next turn, its calls, or the end. */
export function onReactObservation(obs: ObservationResult, loop: ModelLoopConfig, bounds: ReactBounds, runner?: PlanRunner): ThoughtDecision {
  const state = parseModelState(obs.run);
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

/** A run whose skill is no longer loaded ends: nothing is left to build its next prompt from. */
function skillUnloaded(at: RunAt, state: ModelState): ThoughtDecision {
  return end(at, 'failed', 'model_unavailable', `the run's skill ${state.skill} is no longer loaded: nothing to build its next prompt from`);
}
