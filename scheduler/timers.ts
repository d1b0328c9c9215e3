/**
 * The scheduler's bookkeeping of approval deadlines, pure (no clock, no I/O): fed every committed
 * run snapshot (`thought.runs`) with its record time, asked which deadlines are past at a given
 * time. The shell (scheduler/scheduler.ts) reads the log and writes the time-outs.
 *
 * A run is waiting for approval while its latest snapshot says `awaiting_approval`; its deadline is
 * the record time of the first snapshot of that parked wave plus `approval.timeout_ms` (no time-out
 * when null). A snapshot that says anything else, or parks another wave, replaces it. The record
 * time of a snapshot is the time of the input that wrote it (runtime/state-store.ts), i.e. when the
 * run parked. After a restart only the latest snapshot of a run is left in the compacted topic: if
 * a partial decision (one step of several) rewrote it, the deadline counts from that decision.
 */
import type { RunSnapshot } from '../schemas/types.gen.ts';

/** A parked wave whose deadline has passed. */
export interface DueApproval {
  thoughtId: string;
  wave: number;
  dueMs: number;
}

export class ApprovalTimers {
  private readonly parked = new Map<string, DueApproval>();
  /** `thought_id:wave` of time-outs written since this process started: each is written once per process. */
  private readonly fired = new Set<string>();

  /** Folds one committed snapshot (null: a tombstone) of run `thoughtId`, written at `timestampMs`. */
  onSnapshot(thoughtId: string, snapshot: RunSnapshot | null, timestampMs: number): void {
    const approval = snapshot?.status === 'awaiting_approval' ? snapshot.approval : null;
    if (!approval || approval.timeout_ms === null) {
      this.parked.delete(thoughtId);
      return;
    }
    if (this.parked.get(thoughtId)?.wave === approval.wave) return; // the same parking: its first deadline stands
    this.parked.set(thoughtId, { thoughtId, wave: approval.wave, dueMs: timestampMs + approval.timeout_ms });
  }

  /** Parked waves whose deadline is at or before `nowMs` and whose time-out was not written yet, earliest first. */
  due(nowMs: number): DueApproval[] {
    return [...this.parked.values()].filter((p) => p.dueMs <= nowMs && !this.fired.has(`${p.thoughtId}:${p.wave}`)).sort((a, b) => a.dueMs - b.dueMs);
  }

  /** Records that the time-out of `due` was written (acknowledged by Kafka). */
  markFired(due: DueApproval): void {
    this.fired.add(`${due.thoughtId}:${due.wave}`);
  }

  /** Runs waiting for approval with a deadline. */
  get size(): number {
    return this.parked.size;
  }
}
