/**
 * Dead-letter management: list dead letters by topic and reason, show one with its original record,
 * and re-drive selected ones to their source topic after a fix, exactly once.
 *
 * Exactly once: a re-drive is one Kafka transaction of a producer whose transactional id is stable
 * per dead-letter topic (`<ns.>tao-redrive.<dlq topic>`), holding the re-produced records and the
 * ledger of what has been re-driven: the committed offsets of the consumer group `<ns.>tao-redrive`
 * on the dead-letter topic, advanced through `sendOffsets`. A partition's committed offset says
 * "every dead letter below this was re-driven"; dead letters re-driven above it (a selective
 * re-drive skips others) are listed in the offset's metadata. Starting the transaction fences any
 * other re-drive of the same topic and waits until a previous one is complete, so the ledger read
 * next is current; a second re-drive of the same dead letters finds them in the ledger and writes
 * nothing.
 */
import type { Kafka, Message } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { ContractViolation, TransientError, errorMessage } from '../runtime/errors.ts';
import { createProducer } from '../runtime/kafka.ts';
import { DLQ_HEADERS } from '../runtime/processor.ts';
import { DEAD_LETTERED, TOPICS, type TopicId } from '../topics/catalog.ts';
import { originalHeaders, readDeadLetter, type DeadLetter, type RecordRef } from './dead-letters.ts';
import { LogReader, type PartitionRange, type RawRecord } from '../runtime/log-reader.ts';
import { REDRIVEN_FROM_HEADER, refKey } from './record-format.ts';

/** Header on a re-driven record naming where the original was first read: `<source topic>/<partition>/<offset>`. */
export const REDRIVEN_SOURCE_HEADER = 'tao.redriven-source';

/** Offset metadata is capped by the broker (offset.metadata.max.bytes, 4096 by default). */
const MAX_LEDGER_METADATA = 4000;

/** What the dead-letter commands need: the cluster, the codec of the namespace, and where progress goes. */
export interface DlqDeps {
  kafka: Kafka;
  codec: AvroCodec;
  progress?: (line: string) => void;
  timeoutMs?: number;
}

/** A dead letter and whether it has been re-driven. */
export interface DlqEntry extends DeadLetter {
  redriven: boolean;
}

/** The `tao dlq list` document (`--format json`). */
export interface DlqListing {
  format: 'tao.dlq.v1';
  namespace: string;
  filters: { topic: string | null; reason: string | null };
  /** Counts by dead-letter topic and reason (error code), largest first. */
  counts: Array<{ topic: string; reason: string; count: number; redriven: number }>;
  entries: DlqEntry[];
}

/** Which dead letters to re-drive: all conditions given must hold. */
export interface RedriveSelection {
  reason?: string | null;
  key?: string | null;
  /** Only these dead letters. */
  offsets?: Array<{ partition: number; offset: string }> | null;
}

/** What a re-drive did (`--format json` of `tao dlq redrive`). */
export interface RedriveReport {
  format: 'tao.redrive.v1';
  topic: string;
  /** Re-produced now: the dead letter and where its copy went. */
  redriven: Array<{ from: RecordRef; to: { topic: string; partition: number }; key: string | null; code: string }>;
  /** Selected but re-driven before (found in the ledger). */
  already: RecordRef[];
  /** Asked for by --offsets but not a dead letter of the topic. */
  missing: RecordRef[];
}

/** The dead-letter topic a user names: a catalog id, a base name or a full name, with or without `.dlq`. */
export function resolveDlqTopic(codec: AvroCodec, name: string): { id: TopicId; topic: string } {
  const bare = name.replace(/\.dlq$/, '');
  const prefix = codec.topics.namespace ? `${codec.topics.namespace}.` : '';
  const id = DEAD_LETTERED.find((d) => d === bare || TOPICS[d].name === bare || prefix + TOPICS[d].name === bare);
  if (!id) throw new ContractViolation(`"${name}" is not a dead-lettered topic (choose ${DEAD_LETTERED.map((d) => TOPICS[d].name).join(', ')})`);
  return { id, topic: codec.topics.dlq(id) };
}

/** The consumer group whose committed offsets on a dead-letter topic are the re-drive ledger. */
export function redriveGroup(codec: AvroCodec): string {
  return codec.topics.group('redrive');
}

/**
 * Every dead letter of the namespace (or of one topic / one reason), with counts. Read-only.
 * @throws TransientError when the cluster or the registry can't be reached.
 */
export async function listDeadLetters(deps: DlqDeps, filters: { topic?: string | null; reason?: string | null } = {}): Promise<DlqListing> {
  const topics = filters.topic ? [resolveDlqTopic(deps.codec, filters.topic).topic] : DEAD_LETTERED.map((id) => deps.codec.topics.dlq(id));
  const reader = await LogReader.connect(deps.kafka, deps.codec.topics.group('replay'));
  try {
    const entries: DlqEntry[] = [];
    for (const topic of topics) {
      const ledger = await readLedger(reader, redriveGroup(deps.codec), topic);
      const ranges = (await reader.offsets(topic)).map((p) => ({ topic, partition: p.partition, from: p.low, to: p.high }));
      for (const raw of await reader.read(ranges, { progress: deps.progress, timeoutMs: deps.timeoutMs })) {
        const letter = await readDeadLetter(raw, deps.codec);
        if (filters.reason && letter.code !== filters.reason) continue;
        entries.push({ ...letter, redriven: ledger.has(raw.partition, raw.offset) });
      }
    }
    const counts = new Map<string, { topic: string; reason: string; count: number; redriven: number }>();
    for (const e of entries) {
      const k = `${e.ref.topic}\u0000${e.code}`;
      const c = counts.get(k) ?? { topic: e.ref.topic, reason: e.code, count: 0, redriven: 0 };
      c.count++;
      if (e.redriven) c.redriven++;
      counts.set(k, c);
    }
    return {
      format: 'tao.dlq.v1',
      namespace: deps.codec.topics.namespace,
      filters: { topic: filters.topic ?? null, reason: filters.reason ?? null },
      counts: [...counts.values()].sort((a, b) => b.count - a.count || a.topic.localeCompare(b.topic)),
      entries,
    };
  } finally {
    await reader.close();
  }
}

/**
 * One dead letter with its headers and original record.
 * @throws ContractViolation when there is no record at that position (a transaction marker, or past the end).
 */
export async function showDeadLetter(deps: DlqDeps, topicName: string, partition: number, offset: string): Promise<DlqEntry> {
  const { topic } = resolveDlqTopic(deps.codec, topicName);
  const reader = await LogReader.connect(deps.kafka, deps.codec.topics.group('replay'));
  try {
    const p = (await reader.offsets(topic)).find((o) => o.partition === partition);
    if (!p) throw new ContractViolation(`${topic} has no partition ${partition}`);
    if (BigInt(offset) < BigInt(p.low) || BigInt(offset) >= BigInt(p.high))
      throw new ContractViolation(`${topic}[${partition}] holds offsets ${p.low} to ${BigInt(p.high) - 1n}; ${offset} is not one of them`);
    const [raw] = await reader.read([{ topic, partition, from: offset, to: String(BigInt(offset) + 1n) }], { timeoutMs: deps.timeoutMs });
    if (!raw) throw new ContractViolation(`${topic}[${partition}]@${offset} is not a committed record (a transaction marker or an aborted write)`);
    const ledger = await readLedger(reader, redriveGroup(deps.codec), topic);
    return { ...(await readDeadLetter(raw, deps.codec)), redriven: ledger.has(partition, offset) };
  } finally {
    await reader.close();
  }
}

/**
 * Re-produces the selected dead letters of `topicName` to their source topic and partition, with
 * the original key, value and headers plus `tao.redriven-from` (the dead letter) and
 * `tao.redriven-source` (where the original was read), in one transaction with the ledger update.
 * Dead letters already in the ledger are skipped.
 * @throws ContractViolation for a selected dead letter without source headers or whose source is
 *         not the loop topic of this dead-letter topic; TransientError when the cluster can't be reached.
 */
export async function redriveDeadLetters(deps: DlqDeps, topicName: string, selection: RedriveSelection = {}): Promise<RedriveReport> {
  const { id, topic } = resolveDlqTopic(deps.codec, topicName);
  const group = redriveGroup(deps.codec);
  const producer = createProducer(deps.kafka, { transactionalId: `${group}.${topic}` });
  const reader = await LogReader.connect(deps.kafka, deps.codec.topics.group('replay'));
  await producer.connect();
  try {
    // Beginning the transaction initialises the transactional id: it fences any other re-drive of
    // this topic and completes the previous one, so the ledger read next includes it.
    const txn = await producer.transaction();
    let settled = false;
    try {
      const ledger = await readLedger(reader, group, topic);
      // From the first retained offset, not the ledger's floor, so dead letters re-driven before are reported as such.
      const ranges = (await reader.offsets(topic))
        .filter((p) => !selection.offsets || selection.offsets.some((o) => o.partition === p.partition))
        .map((p) => ({ topic, partition: p.partition, from: p.low, to: p.high }));
      const records = await reader.read(ranges, { progress: deps.progress, timeoutMs: deps.timeoutMs });
      const { report, messages } = await select(deps.codec, topic, deps.codec.topics.name(id), records, ranges, ledger, selection);
      if (messages.length === 0) {
        settled = true;
        await txn.abort();
        return report;
      }
      await txn.send({ topic: deps.codec.topics.name(id), messages: messages.map((m) => m.message) });
      const offsets = [...new Set(messages.map((m) => m.from.partition))].map((partition) => {
        const now = new Set(messages.filter((m) => m.from.partition === partition).map((m) => m.from.offset));
        const end = ranges.find((r) => r.partition === partition)!.to;
        return {
          partition,
          ...ledger.advance(
            partition,
            now,
            records.filter((r) => r.partition === partition).map((r) => r.offset),
            end,
          ),
        };
      });
      await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: offsets }] });
      await txn.commit();
      settled = true;
      return report;
    } catch (err) {
      if (fenced(err))
        throw new TransientError(
          `another re-drive of ${topic} ran at the same time and took over: run this one again, it re-drives only what is still open (${errorMessage(err)})`,
          { cause: err },
        );
      throw err;
    } finally {
      if (!settled) await txn.abort().catch(() => undefined);
    }
  } finally {
    await producer.disconnect();
    await reader.close();
  }
}

/** Chooses the dead letters to re-drive and builds their copies (reads the registry, writes nothing). */
async function select(
  codec: AvroCodec,
  topic: string,
  sourceTopic: string,
  records: RawRecord[],
  ranges: PartitionRange[],
  ledger: Ledger,
  selection: RedriveSelection,
): Promise<{ report: RedriveReport; messages: Array<{ from: RecordRef; message: Message }> }> {
  const report: RedriveReport = { format: 'tao.redrive.v1', topic, redriven: [], already: [], missing: [] };
  const messages: Array<{ from: RecordRef; message: Message }> = [];
  const wanted = selection.offsets ? new Set(selection.offsets.map((o) => `${o.partition}/${o.offset}`)) : null;
  for (const raw of records) {
    if (wanted && !wanted.has(`${raw.partition}/${raw.offset}`)) continue;
    const letter = await readDeadLetter(raw, codec);
    if (selection.reason && letter.code !== selection.reason) continue;
    if (selection.key && raw.key !== selection.key) continue;
    if (ledger.has(raw.partition, raw.offset)) {
      report.already.push(letter.ref);
      continue;
    }
    if (!letter.source) throw new ContractViolation(`${refKey(letter.ref)} has no source headers: it was not written by a stage and can't be re-driven`);
    if (letter.source.topic !== sourceTopic)
      throw new ContractViolation(`${refKey(letter.ref)} came from ${letter.source.topic}, not from ${sourceTopic}: refusing to re-drive it elsewhere`);
    const truncatedFrom = letter.headers[DLQ_HEADERS.originalBytes];
    if (truncatedFrom !== undefined) {
      throw new ContractViolation(
        `${refKey(letter.ref)} keeps only the first ${raw.value?.length ?? 0} bytes of a ${truncatedFrom}-byte original (sha256 ${letter.headers[DLQ_HEADERS.originalSha256] ?? 'unknown'}): it can't be re-driven; send the original again from where it came from`,
      );
    }
    const headers = { ...originalHeaders(raw.rawHeaders), [REDRIVEN_FROM_HEADER]: refKey(letter.ref), [REDRIVEN_SOURCE_HEADER]: refKey(letter.source) };
    messages.push({ from: letter.ref, message: { key: raw.key, value: raw.value, headers, partition: letter.source.partition } });
    report.redriven.push({ from: letter.ref, to: { topic: sourceTopic, partition: letter.source.partition }, key: raw.key, code: letter.code });
  }
  const read = new Set(records.map((r) => `${r.partition}/${r.offset}`));
  for (const o of selection.offsets ?? []) {
    const ref = { topic, partition: o.partition, offset: o.offset };
    if (report.already.some((r) => r.partition === o.partition && r.offset === o.offset)) continue;
    if (!read.has(`${o.partition}/${o.offset}`) || !ranges.some((r) => r.partition === o.partition)) report.missing.push(ref);
  }
  return { report, messages };
}

/** The re-drive ledger of one dead-letter topic. */
interface Ledger {
  /** Whether the dead letter at (partition, offset) was re-driven. */
  has(partition: number, offset: string): boolean;
  /** The committed offset of a partition (dead letters below it were all re-driven); -1 when none. */
  floor(partition: number): bigint;
  /**
   * The partition's next ledger entry after re-driving `now`: the offset moves past every record
   * (of `records`, the committed records read from the old floor to `end`) that is re-driven, and
   * the metadata lists the re-driven offsets above it.
   */
  advance(partition: number, now: Set<string>, records: string[], end: string): { offset: string; metadata: string };
}

async function readLedger(reader: LogReader, group: string, topic: string): Promise<Ledger> {
  const entries = await reader.groupOffsets(group, topic);
  const floors = new Map<number, bigint>();
  const above = new Map<number, Set<string>>();
  for (const [partition, { offset, metadata }] of entries) {
    floors.set(partition, BigInt(offset));
    above.set(partition, decodeOffsets(metadata));
  }
  const floor = (p: number) => floors.get(p) ?? -1n;
  const has = (p: number, o: string) => BigInt(o) < floor(p) || (above.get(p)?.has(o) ?? false);
  return {
    has,
    floor,
    advance(partition, now, records, end) {
      const isDone = (o: string) => has(partition, o) || now.has(o);
      const sorted = [...records].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
      const firstOpen = sorted.find((o) => BigInt(o) >= floor(partition) && !isDone(o));
      const next = firstOpen ?? end;
      const rest = [...new Set([...(above.get(partition) ?? []), ...now])].filter((o) => BigInt(o) >= BigInt(next));
      const metadata = encodeOffsets(rest);
      if (metadata.length > MAX_LEDGER_METADATA) {
        throw new ContractViolation(
          `the re-drive ledger of ${partition} would list ${rest.length} scattered offsets (${metadata.length} bytes, over the broker's limit): re-drive the earlier dead letters of that partition first`,
        );
      }
      return { offset: String(next), metadata };
    },
  };
}

/** Offsets as compact ranges: `3,7-9,12`, inside a versioned JSON object. */
export function encodeOffsets(offsets: Iterable<string>): string {
  const sorted = [...new Set(offsets)].map(BigInt).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1n) j++;
    parts.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return JSON.stringify({ v: 1, redriven: parts.join(',') });
}

/** Inverse of {@link encodeOffsets}; metadata not written by a re-drive lists nothing. */
export function decodeOffsets(metadata: string | null): Set<string> {
  const out = new Set<string>();
  if (!metadata) return out;
  let parsed: { v?: unknown; redriven?: unknown };
  try {
    parsed = JSON.parse(metadata) as { v?: unknown; redriven?: unknown };
  } catch {
    // Someone else's metadata on our group: it lists nothing we wrote.
    return out;
  }
  if (parsed.v !== 1 || typeof parsed.redriven !== 'string' || parsed.redriven === '') return out;
  for (const part of parsed.redriven.split(',')) {
    const [a, b] = part.split('-');
    for (let o = BigInt(a!); o <= BigInt(b ?? a!); o++) out.add(String(o));
  }
  return out;
}

/** Kafka error types that mean another producer with our transactional id took over. */
const FENCING: ReadonlySet<string> = new Set(['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH', 'INVALID_PRODUCER_ID_MAPPING']);

function fenced(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && FENCING.has(type)) return true;
    e = (e as { originalError?: unknown; cause?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}
