/**
 * The order of a run's event stream, as a pure merge of the run's records on its five topics (one
 * partition each: every loop topic is keyed by thought_id). The order is a function of the log
 * alone, so a stream resumed from a cursor yields what an unbroken one would have:
 *
 * 1. each topic's records in offset order;
 * 2. a record after the record that caused it (its `tao.cause` header, runtime/run-stream/cause.ts):
 *    a wave after the task or verdicts Thought read, the wave's results after it, the verdicts after
 *    the results, an outcome after what Thought read;
 * 3. of records that are all ready (their causes streamed), the one of the earlier topic in
 *    {@link STREAM_TOPICS} (two records of one transaction: Thought's wave before its outcome);
 *    a ready record before a task (Thought only acts on a reply or decision once the run is parked,
 *    that is after the records that parked it);
 * 4. a task right before the first record it caused. A task that caused nothing (a redelivered new
 *    task, a reply or decision Thought ignored) comes with the next task that caused something;
 *    one after the last such task is not streamed (`tao replay` shows it).
 *
 * Records written before the cause header existed have none: they count as ready, ordered among
 * themselves by record time, and a task comes before the first of them not older than it.
 *
 * A record is a candidate only below the `frontier` the reader hands in (runtime/run-stream/read.ts):
 * the reader moves the frontier only to offsets every topic was read past since, so a record whose
 * siblings of the same transaction are still unread is never streamed ahead of them.
 */
import type { RecordRef } from './cause.ts';

/** The topics a run's stream carries, in the order that breaks ties (rule 3). */
export const STREAM_TOPICS = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'] as const;
export type StreamTopic = (typeof STREAM_TOPICS)[number];

/** Per topic, an offset on the run's partition of it. */
export type Positions = Record<StreamTopic, bigint>;

/** One committed record of the run, decoded. */
export interface RunRecord {
  topic: StreamTopic;
  partition: number;
  offset: bigint;
  /** Record time (ms since epoch). */
  timestamp: number;
  /** What its `tao.cause` header names; null when it has none. */
  cause: RecordRef | null;
  value: Record<string, unknown>;
}

const CHAIN: readonly StreamTopic[] = STREAM_TOPICS.filter((t) => t !== 'tasks');

/** The merge of one run's records; see the module comment. */
export class RunMerge {
  private readonly queues: Record<StreamTopic, RunRecord[]>;
  private readonly next: Positions;

  /** @param start Per topic, the offset after the last record already streamed (a cursor's), or where the run's partition starts. */
  constructor(start: Positions) {
    this.next = { ...start };
    this.queues = { tasks: [], thoughtRequests: [], actionResults: [], observationResults: [], outcomes: [] };
  }

  /** Per topic, the offset after the last record streamed: the cursor of the last record {@link take} returned. */
  get positions(): Positions {
    return { ...this.next };
  }

  /** Records read and not streamed yet (tasks waiting for what they cause, records beyond the frontier). */
  get pending(): number {
    return STREAM_TOPICS.reduce((n, t) => n + this.queues[t].length, 0);
  }

  /** Adds a record read; each topic's records must come in offset order. Records already streamed (below the start) are dropped. */
  add(record: RunRecord): void {
    const queue = this.queues[record.topic];
    const last = queue[queue.length - 1];
    if (record.offset < this.next[record.topic] || (last && record.offset <= last.offset)) return;
    queue.push(record);
  }

  /** Whether a record at `ref` has been streamed (a cause on a topic the stream does not carry counts as streamed). */
  private streamed(ref: RecordRef): boolean {
    return !(STREAM_TOPICS as readonly string[]).includes(ref.topic) || ref.offset < this.next[ref.topic as StreamTopic];
  }

  /** The records now streamable below `frontier`, in stream order, each with the positions after it. */
  take(frontier: Positions): Array<{ record: RunRecord; positions: Positions }> {
    const out: Array<{ record: RunRecord; positions: Positions }> = [];
    const head = (t: StreamTopic) => {
      const r = this.queues[t][0];
      return r && r.offset < frontier[t] ? r : undefined;
    };
    const emit = (r: RunRecord) => {
      this.queues[r.topic].shift();
      this.next[r.topic] = r.offset + 1n;
      out.push({ record: r, positions: this.positions });
    };
    for (;;) {
      const heads = CHAIN.map(head).filter((r): r is RunRecord => r !== undefined);
      // Rule 2 and 3: a head whose cause is streamed (what Thought read before any task it could still read).
      const ready = heads.find((r) => r.cause !== null && this.streamed(r.cause));
      if (ready) {
        emit(ready);
        continue;
      }
      // Rule 4: a task the first waiting head was caused by (or by a later task), or (no header) is not older than.
      const task = head('tasks');
      if (task && heads.some((r) => (r.cause ? r.cause.topic === 'tasks' && r.cause.offset >= task.offset : r.timestamp >= task.timestamp))) {
        emit(task);
        continue;
      }
      const legacy = heads.filter((r) => r.cause === null);
      if (legacy.length === 0) return out;
      emit(legacy.reduce((a, b) => (b.timestamp < a.timestamp ? b : a)));
    }
  }
}

/** Whether an outcome status ends the run (the stream closes after it): anything but parked. */
export function endsRun(status: unknown): boolean {
  return status !== 'awaiting_input' && status !== 'awaiting_approval';
}
