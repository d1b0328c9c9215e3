/**
 * Who drives a run, and which of its steps are model turns: the one place Thought, Observation and
 * the tools ask, so that a run's mode is read from the run state, not guessed from its step ids.
 * Pure.
 */
import { ContractViolation } from '../runtime/errors.ts';
import { jsonObjectField } from '../runtime/json-field.ts';
import type { RunState } from '../schemas/types.gen.ts';
import { planOfRun } from './plan.ts';

/**
 * Who drives a run (`RunState.driver`):
 * - `flow`: Thought runs the waves of a plan (the graph or router planner, or a skill's flows);
 * - `react`: a model takes every turn;
 * - `plan-replan`: a model writes whole plans, and a new one only when a reflection calls for it.
 */
export const RUN_DRIVERS = ['flow', 'react', 'plan-replan'] as const;
export type RunDriver = (typeof RUN_DRIVERS)[number];

/**
 * The driver of `run`: its `driver` field, set by Thought when the run starts.
 *
 * Compatibility path, for records written before the field existed (`driver` null): a run without
 * a model state is driven by its flow, one with a model state by that state's mode (`react` when it
 * names none, as runs recorded before plan-replan). This is the only place that inference is made.
 * @throws ContractViolation when `driver` is none of {@link RUN_DRIVERS}, or a model state to infer from is not a JSON object.
 */
export function runDriver(run: Pick<RunState, 'driver' | 'model_state_json'>): RunDriver {
  if (run.driver !== null) {
    if (!(RUN_DRIVERS as readonly string[]).includes(run.driver))
      throw new ContractViolation(`run.driver is "${run.driver}", not one of ${RUN_DRIVERS.join(', ')}`);
    return run.driver as RunDriver;
  }
  if (run.model_state_json === null) return 'flow';
  return jsonObjectField(run.model_state_json, 'run.model_state_json').mode === 'plan-replan' ? 'plan-replan' : 'react';
}

/** Whether a model takes the run's turns (react or plan-replan), so the run has a model state. */
export const modelDriven = (run: Pick<RunState, 'driver' | 'model_state_json'>): boolean => runDriver(run) !== 'flow';

/**
 * Whether a step is a model turn: Thought names the model call of turn n `M<n>` (its tool calls
 * `M<n>_<i>`, the steps of a plan it wrote `M<n>_<id>`). By id rather than by tool, because Action
 * may answer a model turn with the fallback model's tool.
 */
export const isModelStep = (stepId: string): boolean => modelTurnOf(stepId) !== null;

/** The turn n of a model turn's step `M<n>`, or null for any other step. */
export function modelTurnOf(stepId: string): number | null {
  const turn = /^M(\d+)$/.exec(stepId)?.[1];
  return turn === undefined ? null : Number(turn);
}

/** The turn n a step belongs to: the model call `M<n>`, its tool calls `M<n>_<i>`, its plan's steps `M<n>_<id>`; null for a flow's step. */
export function turnOfStep(stepId: string): number | null {
  const turn = /^M(\d+)(?:$|_)/.exec(stepId)?.[1];
  return turn === undefined ? null : Number(turn);
}

/** The model call of turn n. */
export const modelStep = (turn: number): string => `M${turn}`;
/** The i-th tool call (from 1) the model asked for in turn n. */
export const callStep = (turn: number, i: number): string => `M${turn}_${i}`;
/** Step `id` of the plan the model wrote in turn n, renamed into the run's plan. */
export const planStepId = (turn: number, id: string): string => `M${turn}_${id}`;

/** The skill of a run a model drives (its model state's `name@version`, by name), else null. */
export function modelSkillOf(run: RunState): string | null {
  if (!modelDriven(run) || run.model_state_json === null) return null;
  return String((jsonObjectField(run.model_state_json, 'run.model_state_json') as { skill?: unknown }).skill ?? '').split('@')[0]! || null;
}

/**
 * The tool steps a run has recorded (model turns aside), in plan order: which ran, and each one's
 * verified output (undefined when it has none): what a policy document is built from. `parked`: the
 * step of a parked call being judged, whose dispatch a parked run counts already (the wave is kept
 * as it was proposed) but which has not run: it is not counted.
 */
export function recordedSteps(run: RunState, parked: string | null = null): Array<{ id: string; tool: string; dispatched: boolean; output?: unknown }> {
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json');
  return planOfRun(run.plan_json)
    .steps.filter((s) => !isModelStep(s.id))
    .map((s) => ({ id: s.id, tool: s.tool, dispatched: (run.step_attempts[s.id] ?? 0) - (s.id === parked ? 1 : 0) > 0, output: outputs[s.id] }));
}
