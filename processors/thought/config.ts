/**
 * What Thought's pure core is configured with: the planner, plan validation, the run bounds, and the
 * optional model loop, approval rules and parking. Built once per process (processors/wiring) and
 * handed to every decision; below the decision modules (core, approval, plan-wave), so none of them
 * imports another to name it.
 */
import type { PlanValidator, ToolContracts } from '../plan.ts';
import type { ApprovalConfig } from './approval-rules.ts';
import type { ParkingConfig } from './forced-end.ts';
import type { Planner } from './planners/planner.ts';
import type { ModelLoopConfig } from './model/state.ts';

export interface ThoughtConfig {
  planner: Planner;
  validator: PlanValidator;
  tools: ToolContracts;
  /** Waves a run may take before it ends as budget_exhausted (max_iterations). */
  maxIterations: number;
  /** Cost units a run may spend; 0 means unlimited. */
  costBudget: number;
  /** Consecutive waves without new information that end a run (no_novelty). */
  noveltyWaves: number;
  /** Identical calls (same tool, same input) allowed per run, unless a step says otherwise. */
  repeatCap: number;
  /** Consecutive failures of a step after which Thought reflects instead of retrying. */
  reflectAfter: number;
  /** The model loop (skills, the model tool, prompt rules); runs a planner hands to a model need it. */
  model?: ModelLoopConfig;
  /** Which calls of tools with side effects wait for a person's approval (approval-rules.ts); unset: none. */
  approvals?: ApprovalConfig;
  /** How long a parked run waits before the scheduler expires it (forced-end.ts); unset: the snapshot names none. */
  parking?: ParkingConfig;
  /** The release this configuration was built from (its tao.manifests digest): a run it starts records it and keeps it to its end. */
  manifest?: string;
}
