/**
 * Bounded reads of chosen topic-partitions. kafkajs has no manual partition assignment, so a reader
 * is a consumer in a throw-away group (nothing is ever committed) that pauses every partition it
 * was not asked for, seeks the wanted ones to their start and stops once each has reached its end
 * offset. Reads are read_committed: aborted records and transaction markers are never returned.
 */
import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, IHeaders, Kafka } from 'kafkajs';
import { TransientError } from './errors.ts';

/** Offsets `[from, to)` of one partition. */
export interface PartitionRange {
  topic: string;
  partition: number;
  from: string;
  to: string;
}

/** A committed record as stored: key, value bytes and headers untouched. */
export interface RawRecord {
  topic: string;
  partition: number;
  offset: string;
  /** Record timestamp (ms since epoch, producer create time). */
  timestamp: number;
  key: string | null;
  value: Buffer | null;
  headers: Record<string, string>;
  /** The headers as stored (bytes), for re-producing a record exactly. */
  rawHeaders: IHeaders;
}

/** How a bounded read filters, reports progress and gives up. */
export interface ReadOptions {
  /** Keeps only the records for which this returns true (the scan still reads every offset of the range). */
  filter?: (record: RawRecord) => boolean;
  /** Gives up when the ranges are not all read within this time (an open transaction holds read_committed readers back). Default 60000. */
  timeoutMs?: number;
  /** Receives a progress line every `progressEveryMs` while reading (for stderr). */
  progress?: (line: string) => void;
  progressEveryMs?: number;
  /** Consumer group name of the reader (default `<groupPrefix>-<uuid>`); nothing is committed under it. */
  group?: string;
}

/** Partition offsets of one topic: `low` is the first retained offset, `high` the next to be written. */
export interface PartitionOffsets {
  partition: number;
  low: string;
  high: string;
}

/**
 * A connection to the cluster for bounded reads. `close()` must be called once done.
 */
export class LogReader {
  private constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly groupPrefix: string,
  ) {}

  /** @param groupPrefix Readers' throw-away groups are named `<groupPrefix>-<uuid>` (give the namespace's prefix, for ACLs). */
  static async connect(kafka: Kafka, groupPrefix = 'tao-replay'): Promise<LogReader> {
    const admin = kafka.admin();
    await admin.connect();
    return new LogReader(kafka, admin, groupPrefix);
  }

  async close(): Promise<void> {
    await this.admin.disconnect();
  }

  /** Low and high offsets of every partition of `topic`. */
  async offsets(topic: string): Promise<PartitionOffsets[]> {
    return (await this.admin.fetchTopicOffsets(topic))
      .map((p) => ({ partition: p.partition, low: p.low, high: p.high }))
      .sort((a, b) => a.partition - b.partition);
  }

  /** Per partition, the first offset whose record timestamp is at or after `timestampMs` (the high offset when none is). */
  async offsetsAt(topic: string, timestampMs: number): Promise<Map<number, string>> {
    return new Map((await this.admin.fetchTopicOffsetsByTimestamp(topic, timestampMs)).map((p) => [p.partition, p.offset]));
  }

  /** Committed offsets (and their metadata) of a consumer group on `topic`. */
  async groupOffsets(groupId: string, topic: string): Promise<Map<number, { offset: string; metadata: string | null }>> {
    const [entry] = await this.admin.fetchOffsets({ groupId, topics: [topic] });
    return new Map((entry?.partitions ?? []).map((p) => [p.partition, { offset: p.offset, metadata: p.metadata ?? null }]));
  }

  /**
   * Reads every committed record of the ranges (one consumer for all of them) and resolves with the
   * kept ones, in offset order per partition.
   * @throws TransientError when the ranges are not read within `timeoutMs`, naming where each stopped.
   */
  async read(ranges: readonly PartitionRange[], options: ReadOptions = {}): Promise<RawRecord[]> {
    const wanted = ranges.filter((r) => BigInt(r.from) < BigInt(r.to));
    if (wanted.length === 0) return [];
    const position = new Map(wanted.map((r) => [slot(r.topic, r.partition), { range: r, at: BigInt(r.from), end: BigInt(r.to) }]));
    const topics = [...new Set(wanted.map((r) => r.topic))];
    const metadata = await this.admin.fetchTopicMetadata({ topics });
    const consumer: Consumer = this.kafka.consumer({
      groupId: options.group ?? `${this.groupPrefix}-${randomUUID()}`,
      readUncommitted: false,
      sessionTimeout: 10000,
      heartbeatInterval: 1000,
      maxWaitTimeInMs: 250,
      retry: { retries: 5 },
    });
    const kept: RawRecord[] = [];
    let read = 0;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const advance = (topic: string, partition: number, next: bigint) => {
      const p = position.get(slot(topic, partition));
      if (!p || next <= p.at) return;
      p.at = next;
      if ([...position.values()].every((q) => q.at >= q.end)) finish();
    };
    // Batches of only transaction markers or aborted records reach no handler; this event still
    // reports their last offset, so a range ending in a commit marker completes.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => advance(payload.topic, payload.partition, BigInt(payload.lastOffset) + 1n));
    const timeoutMs = options.timeoutMs ?? 60000;
    const total = [...position.values()].reduce((n, p) => n + (p.end - p.at), 0n);
    options.progress?.(
      `reading ${wanted.length} partition(s), ${total} offset(s): ${wanted.map((r) => `${r.topic}[${r.partition}] ${r.from}..${r.to}`).join(', ')}`,
    );
    const ticker = options.progress
      ? setInterval(() => options.progress!(`read ${read} record(s); ${describe(position)}`), options.progressEveryMs ?? 2000)
      : undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: false });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          const p = position.get(slot(batch.topic, batch.partition));
          if (!p) return;
          for (const m of batch.messages) {
            const offset = BigInt(m.offset);
            if (offset < BigInt(p.range.from) || offset >= p.end) continue;
            read++;
            const record: RawRecord = {
              topic: batch.topic,
              partition: batch.partition,
              offset: m.offset,
              timestamp: Number(m.timestamp),
              key: m.key?.toString('utf8') ?? null,
              value: m.value,
              headers: stringHeaders(m.headers),
              rawHeaders: m.headers ?? {},
            };
            if (!options.filter || options.filter(record)) kept.push(record);
          }
        },
      });
      const others = metadata.topics
        .map((t) => ({ topic: t.name, partitions: t.partitions.map((p) => p.partitionId).filter((id) => !position.has(slot(t.name, id))) }))
        .filter((t) => t.partitions.length > 0);
      if (others.length) consumer.pause(others);
      for (const p of position.values()) consumer.seek({ topic: p.range.topic, partition: p.range.partition, offset: p.range.from });
      await Promise.race([
        finished,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new TransientError(
                  `bounded read did not finish within ${timeoutMs} ms (an open transaction holds read_committed readers back?): ${describe(position)}`,
                ),
              ),
            timeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
      clearInterval(ticker);
      await consumer.disconnect();
    }
    return kept.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)) : a.topic < b.topic ? -1 : 1));
  }
}

function slot(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

function describe(position: Map<string, { range: PartitionRange; at: bigint; end: bigint }>): string {
  return (
    [...position.values()]
      .filter((p) => p.at < p.end)
      .map((p) => `${p.range.topic}[${p.range.partition}] at ${p.at} of ${p.end}`)
      .join(', ') || 'all ranges read'
  );
}

/** Header values as UTF-8 strings (the loop writes only string headers). */
export function stringHeaders(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) if (v !== undefined) out[k] = Array.isArray(v) ? String(v[0]) : v.toString();
  return out;
}
