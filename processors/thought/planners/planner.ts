/**
 * The planner interface and its types: what every planner in this folder implements, and all that
 * Thought's core knows of a planner. Which planner runs is chosen in `factory.ts`.
 */
/** What a planner returns: a candidate plan (validated by the caller), or the inputs it still needs. */
export type PlanningResult =
  | { kind: 'plan'; planner: string; plan: unknown }
  | { kind: 'needs_input'; planner: string; flow: { id: string; version: number }; missing: string[]; reason: string }
  /** The planner will not guess (an off-domain or unclear task): a person takes the run. */
  | { kind: 'escalate'; planner: string; reason: string }
  /**
   * A model takes the run with a skill; `facts` are the slots the model must keep. `mode` `react`
   * (the default): the model takes every turn; `plan-replan`: it writes whole plans (processors/thought/replan.ts).
   */
  | { kind: 'react'; planner: string; skill: string; facts: Record<string, string>; mode?: 'react' | 'plan-replan' }
  /**
   * The router does not know, at low confidence: one constrained model turn chooses one of `skills`
   * (runnable skills a model takes) or none (route-turn.ts `startRouting`); none escalates.
   */
  | { kind: 'choose_skill'; planner: string; skills: string[]; facts: Record<string, string>; reason: string };

/** What a planner sees of a task. */
export interface PlannerTask {
  thought_id: string;
  /** The run's text: the task, and any replies that resumed it, one per line. */
  text: string;
  metadata: Record<string, string>;
}

/**
 * Makes a plan for a task, in two parts so that Thought stays deterministic:
 * - `gather` (optional) does the planner's I/O (asking an LLM, say) and returns what it learned as
 *   a string. Thought's shell calls it, and the result is written to the log with the run
 *   (`RunState.planner_record`), so a replay reads it back instead of asking again. It must not
 *   throw for anything the outside world does (timeouts, garbage): record that, and let `plan` decide.
 * - `plan` is pure: the same task and record always give the same result.
 */
export interface Planner {
  /** The planner's kind (graph, router, react, plan-replan; `llm` in runs recorded before it was retired), recorded with each run (`RunState.planner_kind`). */
  readonly name: string;
  /**
   * The versioned configuration it plans from, recorded with each run (`RunState.planner_config`) so
   * that a replay rebuilds the same planner: a flow key `<id>@<version>`, or `routes@<version>`.
   */
  readonly config: string;
  gather?(task: PlannerTask): Promise<string>;
  plan(task: PlannerTask, record: string | null): PlanningResult;
}
