/**
 * Plan-and-replan runs (`plan-replan`), the pure parts: what a plan turn tells the model, and how a
 * plan the model wrote joins the run's plan. No I/O, no clock, no randomness.
 *
 * A plan-replan run asks the model once for the whole plan (a model turn `M<n>` whose request has
 * `response_format` json_schema `plan`; see processors/thought/model/turn.ts for the turn machinery),
 * and Thought runs that plan in waves like any plan, without asking the model after each wave
 * (core.ts). Only when a reflection calls for a new plan (`change_plan`) is the model asked again,
 * with the steps that ran, their results or failures, and the reflection in its prompt; its new plan
 * replaces the steps of the old one that had not finished.
 *
 * Step ids: a plan written in turn n has its steps renamed `M<n>_<id>` (and its references with
 * them), so the plans of one run never collide and the timeline shows which turn wrote a step. A new
 * plan may reference a finished step of an earlier plan by its run id (`{{M1_S1.customer_id}}`, the
 * id the model saw as that call's `tool_call_id`); such a reference makes the step depend on it.
 */
import { referencesIn, type Plan, type PlanStep } from '../plan.ts';
import { isModelStep, planStepId } from '../run-driver.ts';

/** The result of {@link mergePlan}. */
export interface MergedPlan {
  /** The run's plan: every earlier step (model turns, finished and replaced steps) and the new ones. */
  plan: Plan;
  /** The part Thought validates as a plan: the finished steps the new plan may use, and the new steps. */
  candidate: Plan;
  /** Steps of the earlier plan that had not finished: the new plan replaces them (they are skipped). */
  replaced: string[];
  /** What is wrong with the new plan beyond what the plan validator checks (uses of unfinished earlier steps). */
  problems: string[];
}

/**
 * Joins a plan the model wrote in turn `turn` to the run's plan.
 * @param current the run's plan so far
 * @param proposed the model's plan, as the gate extracted it (it matched the plan schema, `flow` optional)
 * @param finished ids of steps with a verified result
 * @param skipped ids of steps skipped by conditions or replaced earlier
 */
export function mergePlan(
  current: Plan,
  proposed: Pick<Plan, 'steps' | 'output'>,
  turn: number,
  finished: ReadonlySet<string>,
  skipped: ReadonlySet<string>,
): MergedPlan {
  const own = new Set(proposed.steps.map((s) => s.id));
  const rename = (id: string) => (own.has(id) ? planStepId(turn, id) : id);
  const renameRefs = (value: unknown): unknown => {
    if (typeof value === 'string')
      return value.replace(/\{\{([A-Za-z][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\}\}/g, (_, step: string, field: string) => `{{${rename(step)}.${field}}}`);
    if (Array.isArray(value)) return value.map(renameRefs);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renameRefs(v)]));
    return value;
  };
  const steps: PlanStep[] = proposed.steps.map((s) => {
    // A reference to an earlier plan's finished step is a dependency on it (its result is there).
    const earlier = referencesIn(s.input)
      .map((r) => r.step)
      .filter((id) => !own.has(id) && finished.has(id));
    const depends = [...new Set([...s.depends_on.map(rename), ...earlier])];
    return {
      ...s,
      id: planStepId(turn, s.id),
      input: renameRefs(s.input) as Record<string, unknown>,
      depends_on: depends,
      ...(s.when ? { when: { ...s.when, step: rename(s.when.step) } } : {}),
    };
  });
  const output = renameRefs(proposed.output) as Record<string, string>;
  const earlierSteps = current.steps.filter((s) => !isModelStep(s.id));
  const replaced = earlierSteps.filter((s) => !finished.has(s.id) && !skipped.has(s.id)).map((s) => s.id);
  const problems: string[] = [];
  const usable = (id: string) => own.has(id) || finished.has(id) || !earlierSteps.some((s) => s.id === id);
  for (const s of proposed.steps) {
    for (const id of [...s.depends_on, ...referencesIn(s.input).map((r) => r.step)])
      if (!usable(id)) problems.push(`step ${s.id}: uses ${id}, an earlier step that did not finish (this plan replaces it)`);
  }
  for (const [name, ref] of Object.entries(proposed.output))
    for (const r of referencesIn(ref)) if (!usable(r.step)) problems.push(`output ${name}: uses ${r.step}, an earlier step that did not finish`);
  return {
    plan: { flow: current.flow, steps: [...current.steps, ...steps], output },
    // The earlier steps were valid when their plan was; they are here so references to them check.
    candidate: { flow: current.flow, steps: [...earlierSteps, ...steps], output },
    replaced,
    problems: [...new Set(problems)],
  };
}
