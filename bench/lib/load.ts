/**
 * Load for the bench: a closed loop (a fixed number of runs in flight, a new one submitted as each
 * ends) or a paced stream, against any {@link LoadTarget} (the TAO loop, or the bare relay), and a
 * read_committed reader of the log with record timestamps, from which the latencies are computed.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka, Producer } from 'kafkajs';
import { createProducer } from '../../runtime/kafka.ts';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { watchRecords } from '../../client/watch.ts';
import type { BenchNamespace } from './harness.ts';
import { rawRecord, type RawRecord } from '../../eval/namespace.ts';

// The live follower and the record shape are the product's (eval/namespace.ts).
export { followLog, type RawRecord } from '../../eval/namespace.ts';

/** Something runs can be submitted to and whose run outcomes can be followed. */
export interface LoadTarget {
  /** Writes one run start per id; resolves once the broker acknowledged every record. */
  submit(ids: readonly string[]): Promise<void>;
  /** Follows run outcomes written from now on. */
  follow(onOutcome: (id: string, status: string) => void): Promise<{ stop(): Promise<void> }>;
}

/** The TAO loop: tasks (`order status for user<i>@example.com`, the order-status flow) into `tao.tasks`. */
export function loopTarget(ns: BenchNamespace, producer: Producer, text: (i: number) => string = (i) => `order status for user${i}@example.com`): LoadTarget {
  let n = 0;
  return {
    submit: (ids) =>
      submitTasks(
        producer,
        ns.codec,
        ids.map((id) => buildTask({ thought_id: id, kind: 'NEW', text: text(n++), source: 'bench' })),
      ),
    follow: (onOutcome) => watchRecords(ns.kafka, ns.codec, { topics: ['outcomes'], from: 'end', onRecord: (r) => onOutcome(r.key, String(r.value.status)) }),
  };
}

/** What a load phase measured from the driver's side. */
export interface LoadResult {
  ids: string[];
  submittedAt: Map<string, number>;
  endedAt: Map<string, number>;
  status: Map<string, string>;
  startMs: number;
  endMs: number;
}

/**
 * Keeps `concurrency` runs in flight until `runs` have been submitted, and resolves once each has
 * an outcome (rejects after `timeoutMs` naming how many are missing).
 */
export async function closedLoop(
  target: LoadTarget,
  options: { runs: number; concurrency: number; timeoutMs: number; onProgress?: (done: number) => void },
): Promise<LoadResult> {
  const { runs, concurrency } = options;
  const result: LoadResult = { ids: [], submittedAt: new Map(), endedAt: new Map(), status: new Map(), startMs: Date.now(), endMs: Date.now() };
  if (runs <= 0) return result;
  let inFlight = 0;
  let pumping = false;
  let failed: Error | null = null;
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  const pump = async () => {
    if (pumping) return;
    pumping = true;
    try {
      while (result.ids.length < runs && inFlight < concurrency) {
        const ids = Array.from({ length: Math.min(concurrency - inFlight, runs - result.ids.length) }, () => randomUUID());
        const now = Date.now();
        for (const id of ids) {
          result.ids.push(id);
          result.submittedAt.set(id, now);
        }
        inFlight += ids.length;
        await target.submit(ids);
      }
    } catch (err) {
      failed = err as Error;
      finish();
    } finally {
      pumping = false;
    }
  };
  let lastProgress = 0;
  const follower = await target.follow((id, status) => {
    if (!result.submittedAt.has(id) || result.endedAt.has(id)) return;
    result.endedAt.set(id, Date.now());
    result.status.set(id, status);
    inFlight--;
    if (options.onProgress && Date.now() - lastProgress > 5000) {
      lastProgress = Date.now();
      options.onProgress(result.endedAt.size);
    }
    if (result.endedAt.size >= runs) finish();
    else void pump();
  });
  result.startMs = Date.now();
  void pump();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([finished, new Promise<void>((r) => (timer = setTimeout(r, options.timeoutMs)))]);
  } finally {
    clearTimeout(timer);
    await follower.stop();
  }
  if (failed) throw failed;
  if (result.endedAt.size < runs) throw new Error(`closed loop: ${result.endedAt.size} of ${runs} runs ended within ${options.timeoutMs} ms`);
  result.endMs = Math.max(...result.endedAt.values());
  return result;
}

/**
 * Reads every committed record of `topics` from the beginning (read_committed, a throw-away
 * group). Resolves once nothing new arrived for `idleMs` (default 1000) and `until(records)` holds
 * (when given), or at `timeoutMs`. Partitions are read in parallel, so `until` alone (say, all
 * outcomes read) does not mean the other topics are read to their end: the quiet period does.
 */
export async function readLog(
  kafka: Kafka,
  topics: string[],
  options: { idleMs?: number; timeoutMs?: number; until?: (records: RawRecord[]) => boolean } = {},
): Promise<RawRecord[]> {
  const records: RawRecord[] = [];
  const idleMs = options.idleMs ?? 1000;
  const consumer = kafka.consumer({
    groupId: `bench-read-${randomUUID()}`,
    readUncommitted: false,
    maxBytesPerPartition: 4 * 1024 * 1024,
    sessionTimeout: 30000,
  });
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });
  const started = Date.now();
  let last = Date.now();
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) records.push(rawRecord(batch.topic, batch.partition, m));
      last = Date.now();
    },
  });
  const deadline = started + (options.timeoutMs ?? 120000);
  try {
    while (Date.now() < deadline) {
      const quiet = Date.now() - last > idleMs && (records.length > 0 || Date.now() - started > 3 * idleMs);
      if (quiet && (options.until?.(records) ?? true)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await consumer.disconnect();
  }
  return records;
}

/** Per run: when each wave was dispatched, and when the run ended. */
export interface RunTimeline {
  startedAt: number;
  /** Timestamps of wave 1, 2, ... requests. */
  waves: number[];
  /** Timestamps of wave 1, 2, ... results (Action's records) and verdicts (Observation's). */
  results: number[];
  verdicts: number[];
  endedAt: number | null;
  status: string | null;
}

/** A run's timeline before any of its records is read. */
export function emptyTimeline(): RunTimeline {
  return { startedAt: Number.NaN, waves: [], results: [], verdicts: [], endedAt: null, status: null };
}

/**
 * Iteration latencies (ms) of complete runs: from a wave's request record to the record that
 * Thought wrote after reading that wave's verdicts (the next wave's request, or the outcome). One
 * iteration is one full Thought → Action → Observation → Thought turn, transactions included.
 */
export function iterationLatencies(timelines: Iterable<RunTimeline>): number[] {
  const out: number[] = [];
  for (const t of timelines) {
    if (t.endedAt === null) continue;
    for (let i = 0; i < t.waves.length; i++) out.push((t.waves[i + 1] ?? t.endedAt) - t.waves[i]!);
  }
  return out;
}

/**
 * An iteration's latency split by the hop that ends it (ms), for complete runs whose every record of
 * the wave was read: `action` from the wave's request record to Action's result, `observation` from
 * the result to Observation's verdicts, `thought` from the verdicts to the record Thought wrote
 * next. Each hop is the wait for the previous record's transaction to commit and be fetched, plus
 * the stage's own work up to its send, so the three add up to the iteration.
 */
export function hopLatencies(timelines: Iterable<RunTimeline>): { action: number[]; observation: number[]; thought: number[] } {
  const out = { action: [] as number[], observation: [] as number[], thought: [] as number[] };
  for (const t of timelines) {
    if (t.endedAt === null) continue;
    for (let i = 0; i < t.waves.length; i++) {
      const [request, result, verdict, next] = [t.waves[i], t.results[i], t.verdicts[i], t.waves[i + 1] ?? t.endedAt];
      if (request === undefined || result === undefined || verdict === undefined) continue;
      out.action.push(result - request);
      out.observation.push(verdict - result);
      out.thought.push(next - verdict);
    }
  }
  return out;
}

/** Producer options shared by the drivers: idempotent, acks from all replicas. */
export async function connectProducer(kafka: Kafka): Promise<Producer> {
  const producer = createProducer(kafka);
  await producer.connect();
  return producer;
}
