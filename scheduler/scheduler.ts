/**
 * `tao run scheduler`: writes the time-out of every approval that waited too long, as a record.
 *
 * Thought never reads the wall clock to time an approval out (its decisions must replay the same
 * way); this process does, and what it decides becomes a DECISION task (`verdict: timeout`,
 * `decided_by: scheduler`, the parked wave) in `tao.tasks`, which Thought applies like a person's
 * denial (reason `approval_timeout`).
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
import { ApprovalTimers, type DueApproval } from './timers.ts';

export interface SchedulerOptions {
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
  let written = 0;
  const watcher = await watchRecords(kafka, codec, {
    topics: ['thoughtRuns'],
    from: 'beginning',
    onRecord: (r) => timers.onSnapshot(r.key, r.value as unknown as RunSnapshot, r.timestampMs ?? 0),
    // A tombstone (an ended run swept from the store) has no value to decode: the run is not parked.
    onError: (_err, where) => logger.debug('run snapshot not decoded (a tombstone); skipped', where),
  });
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      for (const due of timers.due(now())) await fire(due);
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
        decision: { verdict: 'timeout', step_id: null, wave: due.wave, reason: 'approval_timeout', decided_by: 'scheduler', decided_at_ms: decidedAt },
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
  const timer = setInterval(() => void tick(), options.tickMs);
  return {
    get written() {
      return written;
    },
    get waiting() {
      return timers.size;
    },
    async stop() {
      clearInterval(timer);
      await watcher.stop();
    },
  };
}
