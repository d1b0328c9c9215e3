/**
 * The scheduler's bookkeeping of run deadlines other than approvals, pure (no clock, no I/O): fed
 * every committed run snapshot (`thought.runs`) with its record time, asked which deadlines are past
 * at a given time. Two kinds, each ended by Thought when the scheduler's TIMER task reaches it:
 *
 * - **parked_expired**: a run parked `awaiting_input` or `awaiting_approval` longer than its
 *   snapshot's `parked_ttl_ms` (TAO_PARKED_RUN_TTL or its skill's `metadata.parked-ttl`, set by
 *   Thought when it parked; the scheduler's own TAO_PARKED_RUN_TTL for a snapshot written before the
 *   field; 0: never), counted from the record time of the parking's first snapshot;
 * - **observation_deadline**: a running run whose latest wave has had no observation for
 *   TAO_OBSERVATION_DEADLINE (0: never), counted from the later of the snapshot's record time and
 *   when this process first read it: a Thought that dispatches a backlog of old inputs, or a
 *   scheduler that starts late, never makes a deadline come early (only late).
 *
 * A deadline belongs to one standing of the run (its status, wave and task id); any other snapshot
 * replaces it, a tombstone or an ended run drops it. Thought checks the same standing when the
 * timer arrives, so a stale one changes nothing.
 */
import type { RunSnapshot, RunTimer } from '../schemas/types.gen.ts';

/** A run deadline that has passed: whose, and the timer to write. */
export interface DueTimer {
  thoughtId: string;
  timer: RunTimer;
}

export interface RunTimerSettings {
  /** TAO_PARKED_RUN_TTL: for snapshots that carry no `parked_ttl_ms`. 0: never. */
  parkedTtlMs: number;
  /** TAO_OBSERVATION_DEADLINE. 0: never. */
  observationDeadlineMs: number;
}

const standing = (t: RunTimer) => `${t.reason}:${t.status}:${t.wave}:${t.run_task_id}`;

export class RunTimers {
  /** Each run's deadline, and whether this process wrote its timer: it goes with the entry when the run moves on or ends. */
  private readonly set = new Map<string, RunTimer & { fired?: true }>();

  constructor(private readonly settings: RunTimerSettings) {}

  /**
   * Folds one committed snapshot (null: a tombstone) of run `thoughtId`, written at `timestampMs`
   * and read by this process at `readAtMs`.
   */
  onSnapshot(thoughtId: string, snapshot: RunSnapshot | null, timestampMs: number, readAtMs: number): void {
    const next = snapshot ? this.timerOf(snapshot, timestampMs, readAtMs) : null;
    if (!next) {
      this.set.delete(thoughtId);
      return;
    }
    const current = this.set.get(thoughtId);
    if (current && standing(current) === standing(next)) return; // the same standing: its first deadline stands
    this.set.set(thoughtId, next);
  }

  private timerOf(s: RunSnapshot, timestampMs: number, readAtMs: number): RunTimer | null {
    const at = { status: s.status, wave: s.iteration, run_task_id: s.task_id };
    if (s.status === 'awaiting_input' || s.status === 'awaiting_approval') {
      const ttl = s.parked_ttl_ms ?? this.settings.parkedTtlMs;
      return ttl > 0 ? { reason: 'parked_expired', ...at, due_at_ms: timestampMs + ttl } : null;
    }
    if (s.status === 'running' && this.settings.observationDeadlineMs > 0)
      return { reason: 'observation_deadline', ...at, due_at_ms: Math.max(timestampMs, readAtMs) + this.settings.observationDeadlineMs };
    return null;
  }

  /** Deadlines at or before `nowMs` whose timer was not written yet, earliest first. */
  due(nowMs: number): DueTimer[] {
    return [...this.set.entries()]
      .filter(([, t]) => t.due_at_ms <= nowMs && !t.fired)
      .map(([thoughtId, { fired: _, ...timer }]) => ({ thoughtId, timer }))
      .sort((a, b) => a.timer.due_at_ms - b.timer.due_at_ms);
  }

  /** Records that the timer of `due` was written (acknowledged by Kafka). */
  markFired(due: DueTimer): void {
    const current = this.set.get(due.thoughtId);
    // Only while the run still stands where the timer was set: a new standing is a new deadline.
    if (current && standing(current) === standing(due.timer)) current.fired = true;
  }

  /** Runs with a deadline. */
  get size(): number {
    return this.set.size;
  }
}
