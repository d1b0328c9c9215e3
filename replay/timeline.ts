/**
 * The timeline of one run: the `tao.replay.v1` document (`tao replay --format json`, each field
 * described in docs/REPLAY.md) and what the terminal and HTML views render. Built from the run's
 * records by build-timeline.ts; fields of the records that this code does not know (a newer writer,
 * a field added since) are kept under `extra` rather than dropped.
 */
import type { Check, Reflection } from '../schemas/types.gen.ts';
import type { TopicId } from '../topics/catalog.ts';
import type { RecordRef } from './dead-letters.ts';

/** A run's timeline: the `tao.replay.v1` document (see docs/REPLAY.md for each field). */
export interface Timeline {
  format: 'tao.replay.v1';
  thought_id: string;
  namespace: string;
  bounds: { from: string | null; to: string | null };
  scanned: Array<{ topic: string; partition: number; from: string; to: string }>;
  /** Records found per topic (dead letters under their dead-letter topic). */
  counts: Record<string, number>;
  /** The last outcome's status, `in_progress` when records follow it or none exists yet. */
  status: string;
  forked_from: ForkOrigin | null;
  tasks: TaskView[];
  plan: PlanView | null;
  iterations: IterationView[];
  reflections: ReflectionView[];
  outcomes: OutcomeView[];
  /** The last outcome, or null. */
  outcome: OutcomeView | null;
  /** The latest run state seen (plan and outputs parsed; bulky bookkeeping left out). */
  state: Record<string, unknown> | null;
  dead_letters: DeadLetterView[];
  /** Records of the run's key on loop topics that do not decode (each was dead-lettered by its stage). */
  undecodable: Array<{ ref: RecordRef; at: string; code: string; message: string }>;
}

/** Where a forked run came from, read from the `tao.fork.*` headers of its first record. */
export interface ForkOrigin {
  thought_id: string;
  fork_point: string;
  iteration: number;
  overrides: string[];
  flow: string | null;
}

/** A task record of the run (a new run's task, or a person's reply). */
export interface TaskView {
  ref: RecordRef;
  at: string;
  task_id: string;
  kind: string;
  text: string;
  source: string;
  external_id: string | null;
  metadata: Record<string, string>;
  dead_letter: DeadLetterLink | null;
  extra: Record<string, unknown>;
}

/** The run's latest plan, each step with where it got to. */
export interface PlanView {
  planner: string;
  flow_id: string;
  flow_version: number;
  steps: PlanStepView[];
  output: unknown;
}

/** Where a plan step got to over the whole run. */
export type StepState = 'verified' | 'failed' | 'skipped' | 'in_progress' | 'dead_lettered' | 'not_run';

/** A step of the plan (its DAG node). */
export interface PlanStepView {
  id: string;
  tool: string;
  depends_on: string[];
  input: unknown;
  /** Where the step got to: its last verdict, or why it has none. */
  state: StepState;
  /** Waves that ran it. */
  attempts: number;
  extra: Record<string, unknown>;
}

/** The dead letter a record became. */
export interface DeadLetterLink {
  ref: RecordRef;
  code: string;
  message: string;
}

/** One wave: its request(s), its steps with their results and verdicts, and how long each stage took. */
export interface IterationView {
  iteration: number;
  /** Every thought.requests record of this wave (a dead-lettered one and its re-drive are two). */
  requests: Array<{ ref: RecordRef; at: string; dead_letter: DeadLetterLink | null; redriven_from: string | null; fork: boolean }>;
  /** When the wave was asked for, executed and judged, and how long each stage took (ms, from record timestamps). */
  requested_at: string | null;
  executed_at: string | null;
  observed_at: string | null;
  timings: { action_ms: number | null; observation_ms: number | null; thought_ms: number | null };
  steps: StepView[];
  extra: Record<string, unknown>;
}

/** Where a step of one wave got to. */
export type StepStatus = 'verified' | 'invalid' | 'awaiting_result' | 'awaiting_verdict' | 'dead_lettered';

/** One step of one wave: what was asked, what the tool answered, what Observation said. */
export interface StepView {
  iteration: number;
  step_id: string;
  tool: string;
  attempt: number;
  input: unknown;
  idempotency_key: string;
  status: StepStatus;
  result: StepResultView | null;
  verdict: VerdictView | null;
  dead_letter: DeadLetterLink | null;
  extra: Record<string, unknown>;
}

/** Action's result for a step. */
export interface StepResultView {
  ref: RecordRef;
  at: string;
  /** The tool that answered (the fallback's name when a fallback served). */
  tool: string;
  status_code: number | null;
  response_time_ms: number;
  attempts: number;
  retries: number;
  error: { type: string; message: string; retryable: boolean } | null;
  fallback_from: string | null;
  fallback_reason: string | null;
  /** The response body, cut at 2,000 characters (the full body is in the record). */
  response: string | null;
}

/** Observation's verdict on a step, with its audit trail. */
export interface VerdictView {
  ref: RecordRef;
  at: string;
  valid: boolean;
  error_type: string;
  confidence: number;
  checks: Check[];
  extracted: unknown;
}

/** A Reflexion record of the run, once, with the record it was first seen in. */
export interface ReflectionView extends Reflection {
  /** The record it was first seen in. */
  ref: RecordRef;
  extra: Record<string, unknown>;
}

/** An outcome of the run (a parked run that resumed has more than one). */
export interface OutcomeView {
  ref: RecordRef;
  at: string;
  status: string;
  reason_code: string;
  reason: string;
  iterations: number;
  steps_executed: number;
  output: unknown;
  missing_fields: string[];
  planner: string;
  flow_id: string;
  flow_version: number;
  extra: Record<string, unknown>;
}

/** A dead letter of the run with its original record. */
export interface DeadLetterView {
  ref: RecordRef;
  at: string;
  of: TopicId | null;
  code: string;
  error_class: string;
  message: string;
  source: RecordRef | null;
  stage: string;
  attempt: number;
  original: { bytes: number; schema_id: number | null; value: unknown; decode_error: { code: string; message: string } | null; hex: string; utf8: string };
}
