/**
 * How a run ends (or parks) or dispatches its next wave, and the run at the wave decided on
 * (`RunAt`, `RunContext`), shared by Thought's decision modules (core.ts and plan-wave.ts for planned
 * runs, model/ for runs a model drives). Pure: no I/O, no clock.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../runtime/json-field.ts';
import { TOPICS, type TopicId } from '../../topics/catalog.ts';
import type {
  DeadLetterRef,
  ObservationResult,
  Outcome,
  OutcomeReason,
  OutcomeStatus,
  RunSnapshot,
  RunState,
  StepCall,
  Task,
  ThoughtRequest,
} from '../../schemas/types.gen.ts';
import type { Plan } from '../plan.ts';

export type ThoughtOutput =
  { topic: 'thoughtRequests'; value: ThoughtRequest } | { topic: 'outcomes'; value: Outcome } | { topic: 'thoughtRuns'; value: RunSnapshot };

/** What Thought decided for one input: the records to write, and why nothing was written when so. */
export interface ThoughtDecision {
  outputs: ThoughtOutput[];
  /** Set when the input was deliberately ignored (a redelivered task, a stale observation). */
  ignored?: string;
  /** Set when the input is refused (a decision for an interrupt that is not pending, an edit a contract or policy refuses): the stage dead-letters it with this reason. */
  refused?: string;
}

/** A run at the wave Thought decides on: whose it is, which wave, and its state as it stands. */
export interface RunAt {
  thoughtId: string;
  /** The wave decided on: an observation's, or for a task the wave its run parked at (0 for a new run). */
  iteration: number;
  run: RunState;
}

/** A run's verified step outputs by step id (`RunState.outputs_json`, parsed). */
export type Outputs = Record<string, Record<string, unknown>>;

/**
 * A run at a wave with its plan as it stands (written into `run.plan_json` when the next wave is
 * dispatched) and the outputs of its finished steps: what deciding a run's next wave reads.
 */
export interface RunContext extends RunAt {
  plan: Plan;
  outputs: Outputs;
}

/** What an outcome carries beside its status and reason. */
export interface EndDetails {
  /** The run's answer (JSON): a completed run's output, or a model's question to the customer. */
  output?: string | null;
  /** What a person must give, for a run parked awaiting input. */
  missing?: string[];
  /** A completed run's structured result (JSON), when its skill declares an output schema. */
  result?: string | null;
  /** The dead-lettered record that ended the run (reason `dead_letter`). */
  deadLetter?: DeadLetterRef | null;
}

/** Ends the run (or parks it, awaiting input): the outcome, and the snapshot that remembers it. */
export function end(at: RunAt, status: OutcomeStatus, code: OutcomeReason, reason: string, details: EndDetails = {}): ThoughtDecision {
  const { thoughtId, run, iteration: iterations } = at;
  const missing = details.missing ?? [];
  const stepsExecuted = Object.values(run.step_attempts).reduce((a, b) => a + b, 0);
  const outcome: Outcome = {
    thought_id: thoughtId,
    task_id: run.task_id,
    status,
    reason,
    iterations,
    steps_executed: stepsExecuted,
    output_json: details.output ?? null,
    missing_fields: missing,
    planner: run.planner,
    flow_id: run.flow_id,
    flow_version: run.flow_version,
    reason_code: code,
    reflections: run.reflections,
    planner_kind: run.planner_kind,
    planner_config: run.planner_config,
    model_cost: modelCostOf(run),
    too_large: null,
    result_json: details.result ?? null,
    approval: null,
    dead_letter: details.deadLetter ?? null,
    manifest: run.manifest,
  };
  const parked = status === 'awaiting_input' || status === 'awaiting_approval';
  return {
    outputs: [
      { topic: 'outcomes', value: outcome },
      // The snapshot remembers a dead letter that ended the run: a re-drive of it, once its cause is fixed, resumes the run.
      {
        topic: 'thoughtRuns',
        value: { ...snapshotOf(at, parked ? status : 'ended', missing, parked ? null : status), dead_letter: details.deadLetter ?? null },
      },
    ],
  };
}

/**
 * The run's end at its wave bound (`max_iterations`), or null while it may dispatch another wave.
 * @param progress how far the run got, for the reason (`with 2 step(s) unfinished`, `after 3 model turn(s)`)
 */
export function atIterationLimit(at: RunAt, progress: string): ThoughtDecision | null {
  if (at.iteration < at.run.max_iterations) return null;
  return end(at, 'budget_exhausted', 'max_iterations', `iteration limit ${at.run.max_iterations} reached ${progress}`);
}

/**
 * The idempotency key of a call: the one home of the rule. Action sends it with every attempt of the
 * call (HTTP `Idempotency-Key`; MCP `_meta` `dev.tao/idempotency-key` and the header; the model
 * endpoint's `Idempotency-Key`), so an upstream that de-duplicates by key applies the call once.
 *
 * `<thought_id>:<step_id>:<16 hex of the sha256 of the tool, the input as canonical JSON (keys
 * sorted) and, from a polling step's second round on, the round>`. No wave number, no attempt:
 * - a retry of a call (a timeout, a 5xx, a dead-lettered or lost answer: the same step, tool and
 *   input in a later wave) keeps its key, so a call the upstream applied but answered too late is
 *   not applied again, and an approval given to the call still covers it (approval.ts);
 * - a changed input or tool (a fallback tool, a re-planned step, a person's reply) is another call
 *   with another key;
 * - another step is another call: a model asking for the same tool and arguments in a later turn
 *   gets a new step id (`M<turn>_<n>`), so a new key;
 * - a polling step (`until` not met yet) calls again on purpose: each round is a new call
 *   (`round` > 1, plan-wave.ts), and its retries keep that round's key.
 */
export function callKey(at: Pick<RunAt, 'thoughtId'>, stepId: string, tool: string, input: unknown, round = 1): string {
  return `${at.thoughtId}:${stepId}:${digest(`${tool}\u0000${canonicalJson(input)}${round > 1 ? `\u0000${round}` : ''}`)}`;
}

/** Dispatches the run's next wave (`iteration` + 1): its calls, and the snapshot of the running run. */
export function dispatchWave(at: RunAt, steps: StepCall[]): ThoughtDecision {
  const wave = at.iteration + 1;
  return {
    outputs: [
      { topic: 'thoughtRequests', value: { thought_id: at.thoughtId, iteration: wave, run: at.run, steps } },
      { topic: 'thoughtRuns', value: snapshotOf({ ...at, iteration: wave }, 'running') },
    ],
  };
}

/**
 * What the run's model turns cost (`ModelState.cost`, model/state.ts), or null when they were not priced
 * (no price table) or no model took turns in the run.
 */
export function modelCostOf(run: RunState): number | null {
  if (!run.model_state_json) return null;
  const cost = (JSON.parse(run.model_state_json) as { cost?: unknown }).cost;
  return typeof cost === 'number' && Number.isFinite(cost) ? cost : null;
}

/**
 * Ends a run as failed (`record_too_large`) because Thought's decision on `input` would write a
 * record over the loop record limit (`over`), the run's state having grown past what a record holds.
 * An observation's run ends with the state it carried and the waves it completed. A task (a new run,
 * or a person's reply resuming a parked one) ends with the state of the wave it would have
 * dispatched, one wave short of it; a task whose decision dispatches no wave has no smaller
 * decision: null.
 */
export function endTooLarge(input: ThoughtInput, outputs: readonly ThoughtOutput[], over: TooLarge): ThoughtDecision | null {
  const reason = `the run's next ${over.topic} record would be ${over.bytes} bytes, over the ${over.limit}-byte limit of loop records: the run has grown past what a record holds (its state carries the data of every step so far)`;
  const withDetails = (decision: ThoughtDecision): ThoughtDecision => ({
    outputs: decision.outputs.map((o) => (o.topic === 'outcomes' ? { ...o, value: { ...o.value, too_large: { ...over } } } : o)),
  });
  if (input.topic === 'observationResults')
    return withDetails(
      end({ thoughtId: input.value.thought_id, iteration: input.value.iteration, run: input.value.run }, 'failed', 'record_too_large', reason),
    );
  const wave = outputs.find((o): o is Extract<ThoughtOutput, { topic: 'thoughtRequests' }> => o.topic === 'thoughtRequests');
  return wave
    ? withDetails(end({ thoughtId: wave.value.thought_id, iteration: wave.value.iteration - 1, run: wave.value.run }, 'failed', 'record_too_large', reason))
    : null;
}

/** An input Thought decides on. */
export type ThoughtInput = { topic: 'tasks'; value: Task } | { topic: 'observationResults'; value: ObservationResult };

/** Which record was too large, and by how much (what {@link endTooLarge} puts in its reason). */
export interface TooLarge {
  topic: TopicId;
  bytes: number;
  limit: number;
}

const isTopicId = (name: string): name is TopicId => Object.hasOwn(TOPICS, name);

/**
 * The {@link TooLarge} of a `record_too_large` outcome: its `too_large` field, or for an outcome
 * recorded before that field existed, what its reason text states (the wording of those records
 * is fixed: they are in the log); null for any other outcome.
 */
export function tooLargeOf(outcome: Pick<Outcome, 'reason' | 'too_large'>): TooLarge | null {
  if (outcome.too_large) return isTopicId(outcome.too_large.topic) ? { ...outcome.too_large, topic: outcome.too_large.topic } : null;
  const reason = outcome.reason;
  const m = /^the run's next (\w+) record would be (\d+) bytes, over the (\d+)-byte limit of loop records/.exec(reason);
  return m && isTopicId(m[1]!) ? { topic: m[1], bytes: Number(m[2]), limit: Number(m[3]) } : null;
}

/**
 * The run's snapshot in Thought's store (`thought.runs`) at `at.iteration`.
 * @param missing what a person must give, for a run parked awaiting input
 * @param outcome the ended run's outcome status
 */
export function snapshotOf(at: RunAt, status: RunSnapshot['status'], missing: string[] = [], outcome: string | null = null): RunSnapshot {
  const { thoughtId, iteration, run } = at;
  // The parked run state is kept only while a human is asked; a running run carries its state in its records.
  const parked = status === 'awaiting_input' || status === 'awaiting_approval';
  return {
    thought_id: thoughtId,
    status,
    iteration,
    task_id: run.task_id,
    task_text: run.task_text,
    missing_fields: missing,
    run: parked ? run : null,
    outcome_status: outcome,
    approval: null,
    parked_steps: [],
    dead_letter: null,
    parked_ttl_ms: null,
    manifest: run.manifest,
  };
}

/** A short stable hash (16 hex chars) of a text: call keys, data seen. */
export function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

export function ordinal(n: number): string {
  return n === 2 ? '2nd' : n === 3 ? '3rd' : `${n}th`;
}
