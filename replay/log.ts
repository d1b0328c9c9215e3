/**
 * Finds every record of one run in the log. Each loop topic is keyed by the run's thought_id, so
 * the run lives on one partition of each topic (the default partitioner's choice for the key) and
 * only that partition is read, from its first retained offset (or the first at `from`) to its
 * current end (or the first after `to`). Dead letters are keyed like their original, so the same
 * rule finds them on the dead-letter topics.
 */
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { toTaoError, type ErrorCode } from '../runtime/errors.ts';
import { DEAD_LETTERED, type TopicId } from '../topics/catalog.ts';
import { readDeadLetter, type DeadLetter } from './dead-letters.ts';
import { partitionForKey } from '../runtime/partition.ts';
import { LogReader, type PartitionRange, type RawRecord } from '../runtime/log-reader.ts';

/** The loop topics a run has records in, in the order a run's records are caused. */
export const RUN_TOPICS: readonly TopicId[] = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes', 'thoughtRuns'];

/** Optional time bounds of a scan (record timestamps, ms since epoch, both inclusive). */
export interface TimeBounds {
  fromMs: number | null;
  toMs: number | null;
}

/** A record of the run on a loop topic, decoded with this code's schema (or why it does not decode). */
export interface LoggedRecord {
  topic: TopicId;
  ref: { topic: string; partition: number; offset: string };
  timestamp: number;
  key: string;
  headers: Record<string, string>;
  value: Record<string, unknown> | null;
  decodeError: { code: ErrorCode; message: string } | null;
}

/** Everything the log holds about one run. */
export interface RunLog {
  thoughtId: string;
  namespace: string;
  bounds: TimeBounds;
  /** The partition ranges read. */
  scanned: PartitionRange[];
  /** The run's loop records in causal order (timestamp, then topic order, then offset). */
  records: LoggedRecord[];
  deadLetters: DeadLetter[];
}

/** The cluster, the codec of the namespace, and where progress and time limits come from. */
export interface RunLogDeps {
  kafka: Kafka;
  codec: AvroCodec;
  /** Progress lines for long scans (the CLI writes them to stderr). */
  progress?: (line: string) => void;
  timeoutMs?: number;
}

/**
 * Reads the run `thoughtId` from every loop topic and dead-letter topic of the codec's namespace.
 * Read-only: nothing is committed or written, and no tool or model is asked anything.
 * @throws TransientError when the cluster or the registry can't be reached, or a partition can't be read to its end in time.
 */
export async function readRunLog(deps: RunLogDeps, thoughtId: string, bounds: TimeBounds = { fromMs: null, toMs: null }): Promise<RunLog> {
  const { codec } = deps;
  const reader = await LogReader.connect(deps.kafka, deps.codec.topics.group('replay'));
  try {
    const names = [...RUN_TOPICS.map((id) => codec.topics.name(id)), ...DEAD_LETTERED.map((id) => codec.topics.dlq(id))];
    const ranges: PartitionRange[] = [];
    for (const topic of names) ranges.push(await rangeFor(reader, topic, thoughtId, bounds));
    const inBounds = (r: RawRecord) =>
      r.key === thoughtId && (bounds.fromMs === null || r.timestamp >= bounds.fromMs) && (bounds.toMs === null || r.timestamp <= bounds.toMs);
    const raw = await reader.read(ranges, { filter: inBounds, progress: deps.progress, timeoutMs: deps.timeoutMs });
    const byName = new Map(RUN_TOPICS.map((id) => [codec.topics.name(id), id]));
    const records: LoggedRecord[] = [];
    const deadLetters: DeadLetter[] = [];
    for (const r of raw) {
      const id = byName.get(r.topic);
      // A tombstone in thought.runs is Thought sweeping an ended run from its store, not a step of the run.
      if (id === 'thoughtRuns' && r.value === null) continue;
      if (id) records.push(await decodeLogged(r, id, codec));
      else deadLetters.push(await readDeadLetter(r, codec));
    }
    records.sort(causalOrder);
    deadLetters.sort(
      (a, b) =>
        a.timestamp - b.timestamp || (a.ref.topic < b.ref.topic ? -1 : a.ref.topic > b.ref.topic ? 1 : Number(BigInt(a.ref.offset) - BigInt(b.ref.offset))),
    );
    deps.progress?.(`run ${thoughtId}: ${records.length} record(s), ${deadLetters.length} dead letter(s)`);
    return { thoughtId, namespace: codec.topics.namespace, bounds, scanned: ranges, records, deadLetters };
  } finally {
    await reader.close();
  }
}

/** The offsets of `topic` to read for key `key`: its partition, clamped to what is retained and to the time bounds. */
async function rangeFor(reader: LogReader, topic: string, key: string, bounds: TimeBounds): Promise<PartitionRange> {
  const offsets = await reader.offsets(topic);
  const partition = partitionForKey(key, offsets.length);
  const p = offsets.find((o) => o.partition === partition)!;
  let from = BigInt(p.low);
  let to = BigInt(p.high);
  if (bounds.fromMs !== null) from = max(from, BigInt((await reader.offsetsAt(topic, bounds.fromMs)).get(partition) ?? p.high));
  // Timestamps are the producers' clocks, not strictly ordered: the end bound keeps a margin and
  // the record filter applies the exact bound.
  if (bounds.toMs !== null) to = min(to, BigInt((await reader.offsetsAt(topic, bounds.toMs + 60_000)).get(partition) ?? p.high));
  return { topic, partition, from: String(from), to: String(max(from, to)) };
}

export async function decodeLogged(r: RawRecord, topic: TopicId, codec: AvroCodec): Promise<LoggedRecord> {
  const base = { topic, ref: { topic: r.topic, partition: r.partition, offset: r.offset }, timestamp: r.timestamp, key: r.key ?? '', headers: r.headers };
  try {
    return { ...base, value: await codec.decode<Record<string, unknown>>(topic, r.value), decodeError: null };
  } catch (raw) {
    const err = toTaoError(raw);
    if (err.retriable) throw err;
    // The stage dead-lettered it too; the timeline shows it next to its dead letter.
    return { ...base, value: null, decodeError: { code: err.code, message: err.message } };
  }
}

const TOPIC_ORDER = new Map<TopicId, number>(RUN_TOPICS.map((id, i) => [id, i]));

/**
 * Causal order of a run's records: a stage writes only after it read, so timestamps order them.
 * Within one millisecond, waves order by (iteration, stage), others by the loop's topic order.
 */
export function causalOrder(a: LoggedRecord, b: LoggedRecord): number {
  if (a.timestamp !== b.timestamp) return a.timestamp - b.timestamp;
  const ia = iterationOf(a);
  const ib = iterationOf(b);
  if (ia !== null && ib !== null && ia !== ib) return ia - ib;
  return TOPIC_ORDER.get(a.topic)! - TOPIC_ORDER.get(b.topic)! || Number(BigInt(a.ref.offset) - BigInt(b.ref.offset));
}

/** The wave a record belongs to (requests, action and observation results), else null. */
export function iterationOf(r: LoggedRecord): number | null {
  const it = r.value?.iteration;
  return r.topic !== 'thoughtRuns' && typeof it === 'number' ? it : null;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
