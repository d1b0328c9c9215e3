/**
 * Runs that end without a verdict to decide on: a wave a stage dead-lettered (Action, Observation),
 * a parked run whose time-to-live passed, a wave whose observation never came. Every run ends with an
 * outcome; these are the ends that come from records the runtime and the scheduler write when the
 * loop itself cannot go on. Pure, like the rest of Thought's core: decided from the records alone
 * (a timer carries its due time; Thought reads no clock), so `replay --verify` re-decides them.
 */
import { runState } from '../../schemas/records.ts';
import type { DeadLetterRef, ObservationResult, RunSnapshot, RunState, Task } from '../../schemas/types.gen.ts';
import { modelDriven } from '../run-driver.ts';
import { parseModelState } from './model/state.ts';
import { end, type ThoughtDecision } from './run-end.ts';

/** Where a dead letter is, as people read it: `<topic>[<partition>]@<offset>`. */
export const deadLetterWhere = (ref: DeadLetterRef): string => `${ref.topic}[${ref.partition}]@${ref.offset}`;

/**
 * The end of a run whose wave was dead-lettered (`obs.dead_letter`): failed, `dead_letter`, the
 * reason naming the stage, the error code and message and where the record was (its dead letter is
 * on `<topic>.dlq`), the reference in the outcome. Null for an observation of a wave that ran.
 */
export function endDeadLettered(obs: ObservationResult): ThoughtDecision | null {
  const ref = obs.dead_letter;
  if (!ref) return null;
  const reason = `wave ${obs.iteration} was dead-lettered by ${ref.stage} (${ref.code}: ${ref.message}) at ${deadLetterWhere(ref)}; the record is on ${ref.topic}.dlq`;
  return end({ thoughtId: obs.thought_id, iteration: obs.iteration, run: obs.run }, 'failed', 'dead_letter', reason, { deadLetter: ref });
}

/**
 * Whether `obs` resumes a run its dead letter ended: the wave that was dead-lettered, re-driven
 * (`tao dlq redrive`) once the cause was fixed, ran this time. The run goes on from it as if the dead
 * letter had not been (its failed outcome stays in the log; a second outcome ends it again).
 */
export function resumesDeadLettered(obs: ObservationResult, snapshot: RunSnapshot | undefined): boolean {
  return snapshot?.status === 'ended' && snapshot.dead_letter !== null && snapshot.iteration === obs.iteration && obs.dead_letter === null;
}

/** How long parked runs wait before the scheduler expires them (0: never): the deployment's TAO_PARKED_RUN_TTL, or a skill's `metadata.parked-ttl`. */
export interface ParkingConfig {
  ttlMs: number;
  /** A skill's own time-to-live, by skill name; undefined: the deployment's. */
  skill(name: string): number | undefined;
}

const isParked = (status: string) => status === 'awaiting_input' || status === 'awaiting_approval';

/**
 * `decision` with the run's time-to-live (`parked_ttl_ms`) in the snapshot when it parks the run (the
 * scheduler expires it from there); unchanged otherwise, and without a parking configuration.
 */
export function withParkedTtl(decision: ThoughtDecision, parking: ParkingConfig | undefined): ThoughtDecision {
  if (!parking || !decision.outputs.some((o) => o.topic === 'thoughtRuns' && isParked(o.value.status))) return decision;
  return {
    ...decision,
    outputs: decision.outputs.map((o) =>
      o.topic === 'thoughtRuns' && isParked(o.value.status) ? { ...o, value: { ...o.value, parked_ttl_ms: parkedTtlMs(parking, o.value.run) } } : o,
    ),
  };
}

function parkedTtlMs(parking: ParkingConfig, run: RunState | null): number {
  const skill = run && modelDriven(run) ? parseModelState(run).skill.split('@')[0]! : null;
  return (skill === null ? undefined : parking.skill(skill)) ?? parking.ttlMs;
}

/**
 * Applies a TIMER task, a deadline the scheduler found passed (scheduler/run-timers.ts), if the run
 * still stands where the timer was set (same status, wave and task): a parked run ends `expired`
 * (`parked_expired`); a running run whose wave had no observation ends `failed`
 * (`observation_deadline`). Anything else is ignored: the run moved on before the timer came.
 * Decided from the records alone (the timer carries its due time), never from a clock.
 */
export function onTimer(task: Task, snapshot: RunSnapshot | undefined): ThoughtDecision {
  const timer = task.timer;
  if (!timer) return { outputs: [], ignored: `timer task ${task.task_id} carries no timer` };
  const stands = snapshot && snapshot.status === timer.status && snapshot.iteration === timer.wave && snapshot.task_id === timer.run_task_id;
  if (!snapshot || !stands)
    return {
      outputs: [],
      ignored: `${timer.reason} timer of run ${task.thought_id} (set ${timer.status} at wave ${timer.wave}) is stale: the run is ${snapshot ? `${snapshot.status} at wave ${snapshot.iteration}` : 'unknown'}`,
    };
  const due = new Date(timer.due_at_ms).toISOString();
  if (timer.reason === 'parked_expired' && isParked(snapshot.status) && snapshot.run) {
    const waited = snapshot.status === 'awaiting_input' ? 'for input' : 'for approval';
    const ttl = snapshot.parked_ttl_ms ? `its time-to-live of ${duration(snapshot.parked_ttl_ms)}` : 'its time-to-live';
    return end(
      { thoughtId: task.thought_id, iteration: snapshot.iteration, run: snapshot.run },
      'expired',
      'parked_expired',
      `the run waited ${waited} longer than ${ttl} (TAO_PARKED_RUN_TTL, or its skill's metadata.parked-ttl): expired at ${due}`,
      { missing: snapshot.missing_fields },
    );
  }
  if (timer.reason === 'observation_deadline' && snapshot.status === 'running') {
    // A running run's state travels in its records; the store keeps only what it needs, so this
    // outcome carries that: which task, which wave.
    const run = runState({
      task_id: snapshot.task_id,
      task_text: snapshot.task_text,
      planner: 'unknown',
      flow_id: 'unknown',
      flow_version: 0,
      max_iterations: 0,
    });
    return end(
      { thoughtId: task.thought_id, iteration: snapshot.iteration, run },
      'failed',
      'observation_deadline',
      `wave ${snapshot.iteration} had no observation by ${due} (TAO_OBSERVATION_DEADLINE): the run is ended without it`,
    );
  }
  return { outputs: [], ignored: `${timer.reason} timer of run ${task.thought_id} does not apply to a run ${snapshot.status}` };
}

/**
 * Applies a CANCEL task (`tao cancel`, `POST /v1/runs/{id}/cancel`, A2A `tasks/cancel`): a run that
 * has not ended ends `cancelled` at once, with who cancelled it and why (the task's text). A wave
 * already dispatched may still run its calls (once: their keys do not change); its observation then
 * finds the run ended and is ignored, so no later wave is sent. A run that has ended, or that this
 * Thought does not know, is left as it is (ignored, logged).
 */
export function onCancel(task: Task, snapshot: RunSnapshot | undefined): ThoughtDecision {
  if (!snapshot || snapshot.status === 'ended')
    return {
      outputs: [],
      ignored: `cancel ${task.task_id} arrived for run ${task.thought_id}, which is ${snapshot ? `ended (${snapshot.outcome_status ?? 'unknown'})` : 'unknown'}: nothing to cancel`,
    };
  // A running run's state travels in its records; the store keeps what the outcome needs.
  const run =
    snapshot.run ??
    runState({ task_id: snapshot.task_id, task_text: snapshot.task_text, planner: 'unknown', flow_id: 'unknown', flow_version: 0, max_iterations: 0 });
  const inFlight = snapshot.status === 'running' ? `; wave ${snapshot.iteration} was in flight and is not followed up` : '';
  return end(
    { thoughtId: task.thought_id, iteration: snapshot.iteration, run },
    'cancelled',
    'cancelled',
    `cancelled (${snapshot.status}${inFlight}): ${task.text}`,
  );
}

/** `90000` → `1m30s`, `604800000` → `7d`: a duration as the settings write it. */
function duration(ms: number): string {
  const units: Array<[string, number]> = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  let left = ms;
  let out = '';
  for (const [u, size] of units) {
    const n = Math.floor(left / size);
    if (n) out += `${n}${u}`;
    left -= n * size;
  }
  return out || `${ms}ms`;
}
