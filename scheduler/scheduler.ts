/**
 * `tao run scheduler`: writes the time-out of every approval that waited too long, and the timer of
 * every other run deadline that passed (a parked run's time-to-live, a wave's observation deadline:
 * scheduler/run-timers.ts), as records.
 *
 * Thought never reads the wall clock to time an approval out (its decisions must replay the same
 * way); this process does, and what it decides becomes a DECISION task (`verdict: timeout`,
 * `decided_by: scheduler`, the parked wave) in `tao.tasks`, which Thought applies like a person's
 * denial (reason `approval_timeout`); a passed run deadline becomes a TIMER task (`timer`: reason,
 * the run's status, wave and task when it was set, the due time), on which Thought ends the run
 * `expired` (`parked_expired`) or `failed` (`observation_deadline`) if it still stands there.
 *
 * State: none of its own. At start it reads the compacted `thought.runs` from the beginning
 * (read_committed) and keeps following it (scheduler/timers.ts); every `tickMs` it writes the
 * time-outs that are due. Idempotent: a time-out for a run no longer awaiting approval, or for
 * another wave, is ignored by Thought, so a restart that writes one again (or a second scheduler)
 * changes nothing. A time-out that fails to be written is tried again at the next tick.
 */
import type { Kafka, Producer } from 'kafkajs';
import { buildTask, submitTasks } from '../client/tasks.ts';
import { watchRecords } from '../client/watch.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import type { Logger } from '../runtime/log.ts';
import type { RunSnapshot } from '../schemas/types.gen.ts';
import { RunTimers, type DueTimer, type RunTimerSettings } from './run-timers.ts';
import { ApprovalTimers, type DueApproval } from './timers.ts';

export interface SchedulerOptions extends Partial<RunTimerSettings> {
  /** How often due deadlines are looked for (TAO_SCHEDULER_TICK_MS). */
  tickMs: number;
  /** The wall clock (injected for tests). */
  now?: () => number;
}

export interface Scheduler {
  /** Time-outs written since start. */
  readonly written: number;
  /** Runs waiting for approval with a deadline. */
  readonly waiting: number;
  /** Run timers (parked runs expired, observation deadlines) written since start. */
  readonly timersWritten: number;
  stop(): Promise<void>;
}

/** Starts following `thought.runs` and writing due time-outs with `producer` (connected by the caller). */
export async function startScheduler(
  deps: { kafka: Kafka; codec: AvroCodec; producer: Producer; logger: Logger },
  options: SchedulerOptions,
): Promise<Scheduler> {
  const { kafka, codec, producer, logger } = deps;
  const now = options.now ?? Date.now;
  const timers = new ApprovalTimers();
  // Without settings (a caller of the approval scheduler alone): no run timer.
  const runTimers = new RunTimers({ parkedTtlMs: options.parkedTtlMs ?? 0, observationDeadlineMs: options.observationDeadlineMs ?? 0 });
  let written = 0;
  let timersWritten = 0;
  const watcher = await watchRecords(kafka, codec, {
    topics: ['thoughtRuns'],
    from: 'beginning',
    onRecord: (r) => {
      timers.onSnapshot(r.key, r.value as unknown as RunSnapshot, r.timestampMs ?? 0);
      runTimers.onSnapshot(r.key, r.value as unknown as RunSnapshot, r.timestampMs ?? 0, now());
    },
    // A tombstone (an ended run swept from the store) has no value to decode: the run is not parked.
    onError: (_err, where) => logger.debug('run snapshot not decoded (a tombstone); skipped', where),
  });
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      for (const due of timers.due(now())) await fire(due);
      for (const due of runTimers.due(now())) await fireTimer(due);
    } finally {
      busy = false;
    }
  };
  const fire = async (due: DueApproval) => {
    const decidedAt = now();
    const task = buildTask(
      {
        text: `approval of wave ${due.wave} timed out`,
        source: 'scheduler',
        thought_id: due.thoughtId,
        decision: {
          verdict: 'timeout',
          step_id: null,
          wave: due.wave,
          reason: 'approval_timeout',
          decided_by: 'scheduler',
          decided_at_ms: decidedAt,
          interrupt_id: null,
          edited_input_json: null,
        },
      },
      decidedAt,
    );
    try {
      await submitTasks(producer, codec, [task]);
    } catch (err) {
      logger.warn('approval time-out not written; retried at the next tick', { thought_id: due.thoughtId, iteration: due.wave, error: err });
      return;
    }
    timers.markFired(due);
    written++;
    logger.info('approval timed out', { thought_id: due.thoughtId, iteration: due.wave, task_id: task.task_id, late_ms: decidedAt - due.dueMs });
  };
  const fireTimer = async (due: DueTimer) => {
    const { timer } = due;
    const task = buildTask(
      { text: `${timer.reason}: the run stood ${timer.status} at wave ${timer.wave} past its deadline`, source: 'scheduler', thought_id: due.thoughtId, timer },
      now(),
    );
    try {
      await submitTasks(producer, codec, [task]);
    } catch (err) {
      logger.warn('run timer not written; retried at the next tick', { thought_id: due.thoughtId, iteration: timer.wave, reason: timer.reason, error: err });
      return;
    }
    runTimers.markFired(due);
    timersWritten++;
    logger.info('run deadline passed', {
      thought_id: due.thoughtId,
      iteration: timer.wave,
      reason: timer.reason,
      status: timer.status,
      task_id: task.task_id,
      late_ms: now() - timer.due_at_ms,
    });
  };
  const timer = setInterval(() => void tick(), options.tickMs);
  return {
    get written() {
      return written;
    },
    get waiting() {
      return timers.size;
    },
    get timersWritten() {
      return timersWritten;
    },
    async stop() {
      clearInterval(timer);
      await watcher.stop();
    },
  };
}
