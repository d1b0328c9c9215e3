import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage, Producer } from 'kafkajs';
import type { AvroCodec } from './codec.ts';
import { errorMessage } from './errors.ts';
import type { Logger } from './log.ts';
import type { TopicId } from '../topics/catalog.ts';
import { expiredKeys, noteWrite, type ExpiryIndex } from './retention.ts';
import { ChangelogTail } from './store-tail.ts';

const BARRIER_KEY = '__tao_barrier__';
const BARRIER_HEADER = 'tao.barrier';

/** A write of the transaction in progress (null: a tombstone) and the record time it belongs to. */
type StagedWrite<V> = { value: V | null; recordMs: number };
/** A committed own write, and the changelog offset of its commit's last write to the partition (null: unknown). */
type OwnWrite<V> = { value: V | null; upTo: bigint | null };

/**
 * A keyed state store whose only durable copy is a compacted changelog topic, co-partitioned with
 * the stage's inputs (the stage must use the co-partitioned assigner, so one instance owns key k's
 * partition in every input). Writes go into the stage's Kafka transaction as ordinary output
 * records; the store only mirrors them. It holds in memory only the partitions this instance owns:
 *
 * - {@link hold} takes a partition on (the runner calls it for every partition it is assigned):
 *   the tail consumer (./store-tail.ts) reads it from its beginning, read_committed, into the
 *   partition's mirror; {@link release} lets it go (once the chunks of a revoked partition have
 *   settled) and forgets everything of it. Records of partitions not held are not fetched;
 * - `stage()` makes a write visible to later records of the same transaction, `commit()` /
 *   `abort()` settle it with the transaction;
 * - this instance's committed writes are kept per partition on top of the mirror (the tail lags
 *   behind them), until a catch-up or the loss of the partition;
 * - `catchUp()` runs before an instance processes a partition it claims: it writes a barrier
 *   through the partition's transactional producers (fencing any previous owner) and waits until the
 *   tail has read past it, so every committed write of the partition, this instance's included, is
 *   in the mirror (for a partition just taken on: the whole partition, read from its beginning),
 *   and drops the partition's own layer.
 *
 * The mirror takes every committed record of a held partition, whoever wrote it: a commit whose
 * outcome this instance could not tell (an error after the broker committed) still reaches it. A
 * null value (a tombstone) removes its key from every layer's view; an own write leaves the own
 * layer as soon as the tail has read the offset it was committed at, so the layer holds only what
 * the tail lags behind.
 *
 * Retention (./retention.ts): with `expirable`, the store keeps, per partition, the expirable keys
 * with the record time that wrote them, and the partition's stream time (the largest input record
 * time the stage reported through {@link observe}, or read back from the changelog's own record
 * timestamps after a restore); {@link expired} names the keys the stage should tombstone.
 */
export class ChangelogStore<V> {
  /** Per held partition: every committed entry the tail has read (a partition taken on anew gets a new map). */
  private readonly held = new Map<number, Map<string, V>>();
  /** Per partition: this instance's committed writes (null: a tombstone) the tail may not have read yet. */
  private readonly own = new Map<number, Map<string, OwnWrite<V>>>();
  /** Per partition: the own writes of each commit, in commit order, until the tail reads past them. */
  private readonly ownCommits = new Map<number, Array<{ upTo: bigint; keys: string[] }>>();
  /** Per partition: the writes of the transaction in progress. */
  private readonly pending = new Map<number, Map<string, StagedWrite<V>>>();
  /** Per partition: expirable keys and the record time that wrote them (see ./retention.ts). */
  private readonly expiry = new Map<number, ExpiryIndex>();
  /** Per partition: the largest record time seen (inputs observed, changelog records read). */
  private readonly streamTimes = new Map<number, number>();
  private readonly barriers = new Map<string, () => void>();
  private readonly tail: ChangelogTail;
  /** The changelog topic's full name. */
  private readonly name: string;

  constructor(
    kafka: Kafka,
    private readonly codec: AvroCodec,
    readonly topic: TopicId,
    private readonly logger: Logger,
    /** Called if the tail consumer stops for good: the store would stop following the changelog. */
    onFatal?: (error: Error) => void,
    /** Values that may leave the store once a retention of record time has passed (none when omitted). */
    private readonly expirable: (value: V) => boolean = () => false,
    /** Waits out the pause before a tail replacement (a test passes its own). */
    sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  ) {
    this.name = codec.topics.name(topic);
    this.tail = new ChangelogTail({
      kafka,
      group: codec.topics.group('store'),
      topic: this.name,
      logger,
      onFatal,
      sleep,
      reader: { holds: (p) => this.held.has(p), read: (p, message, offset) => this.read(p, message, offset) },
    });
  }

  async start(): Promise<void> {
    await this.tail.start();
  }

  /** Takes `partition` on: the tail reads it from its beginning (nothing if it is held already). */
  hold(partition: number): void {
    if (this.held.has(partition)) return;
    this.held.set(partition, new Map());
    this.tail.rewind(partition);
    this.logger.info('state store restoring partition', { topic: this.name, partition });
  }

  /**
   * Lets `partitions` go: their entries, this instance's writes to them and their retention
   * bookkeeping are dropped, and the tail stops reading them. Taken on again, one is read anew.
   */
  release(partitions: Iterable<number>): void {
    for (const p of partitions) {
      const entries = this.held.get(p);
      this.held.delete(p);
      this.own.delete(p);
      this.ownCommits.delete(p);
      this.pending.delete(p);
      this.expiry.delete(p);
      this.streamTimes.delete(p);
      this.tail.pause(p);
      if (entries) this.logger.info('state store released partition', { topic: this.name, partition: p, entries: entries.size });
    }
  }

  /** The partitions the store holds, in order. */
  partitions(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /**
   * Applies one changelog record of a held partition: a barrier, or an entry for its mirror. False
   * when the partition was let go or taken on anew while the record was decoded (nothing applied).
   */
  private async read(partition: number, message: KafkaMessage, offset: bigint): Promise<boolean> {
    const entries = this.held.get(partition);
    if (!entries) return false;
    const key = message.key?.toString('utf8') ?? '';
    if (key === BARRIER_KEY) {
      const id = message.headers?.[BARRIER_HEADER]?.toString();
      if (id) this.barriers.get(id)?.();
      this.forgetOwnUpTo(partition, offset);
      return true;
    }
    let value: V | null = null;
    // This instance's own committed write of the key, at this offset or after it: the record is
    // that write or an older one it supersedes, so its value is already known, and decoding it
    // again (every snapshot Thought writes comes back through here) would only cost CPU.
    const mine = this.own.get(partition)?.get(key);
    if (mine && mine.upTo !== null && mine.upTo >= offset) {
      value = mine.value;
    } else if (message.value !== null) {
      try {
        value = await this.codec.decode<V>(this.topic, message.value);
      } catch (err) {
        // The changelog is written only by this stage; an undecodable entry is a bug or a foreign writer.
        this.logger.error('state store entry undecodable; ignored', { topic: this.name, partition, offset: message.offset, key, error: errorMessage(err) });
        if (this.held.get(partition) !== entries) return false;
        this.forgetOwnUpTo(partition, offset);
        return true;
      }
      if (this.held.get(partition) !== entries) return false;
    }
    // Changelog records carry the record time of the input that wrote them (tombstones: the
    // stream time of their sweep), so a restored partition resumes its stream time.
    const writtenMs = Number(message.timestamp);
    this.observe(partition, writtenMs);
    if (value === null) entries.delete(key);
    else entries.set(key, value);
    // An own write of the key is newer than (or the same as) this record: it keeps the index.
    if (!this.own.get(partition)?.has(key)) noteWrite(this.expiryOf(partition), key, writtenMs, value !== null && this.expirable(value));
    this.forgetOwnUpTo(partition, offset);
    return true;
  }

  async stop(): Promise<void> {
    await this.tail.stop();
  }

  /** The value of `key` as of the records processed so far (this transaction's writes included). */
  get(partition: number, key: string): V | undefined {
    const staged = this.pending.get(partition)?.get(key) ?? this.own.get(partition)?.get(key);
    if (staged) return staged.value ?? undefined;
    return this.held.get(partition)?.get(key);
  }

  /** Stages a write (null: a tombstone) of the transaction in progress, with the record time it belongs to. */
  stage(partition: number, key: string, value: V | null, recordMs: number): void {
    let map = this.pending.get(partition);
    if (!map) this.pending.set(partition, (map = new Map()));
    map.set(key, { value, recordMs });
  }

  /**
   * The transaction in progress committed. `upTo`: the changelog offset of its last write to the
   * partition, when known; the own layer forgets these writes once the tail has read that offset.
   */
  commit(partition: number, upTo: bigint | null = null): void {
    const staged = this.pending.get(partition);
    if (!staged) return;
    let mine = this.own.get(partition);
    if (!mine) this.own.set(partition, (mine = new Map()));
    const index = this.expiryOf(partition);
    for (const [key, { value, recordMs }] of staged) {
      mine.set(key, { value, upTo });
      noteWrite(index, key, recordMs, value !== null && this.expirable(value));
      this.observe(partition, recordMs);
    }
    if (upTo !== null) {
      let commits = this.ownCommits.get(partition);
      if (!commits) this.ownCommits.set(partition, (commits = []));
      commits.push({ upTo, keys: [...staged.keys()] });
    }
    this.pending.delete(partition);
  }

  abort(partition: number): void {
    this.pending.delete(partition);
  }

  /** Moves the partition's stream time forward to `recordMs` (it never moves back). */
  observe(partition: number, recordMs: number): void {
    if (!Number.isFinite(recordMs)) return;
    const now = this.streamTimes.get(partition);
    if (now === undefined || recordMs > now) this.streamTimes.set(partition, recordMs);
  }

  /** The partition's stream time: the largest record time it has seen, or null before any. */
  streamTime(partition: number): number | null {
    return this.streamTimes.get(partition) ?? null;
  }

  /**
   * Up to `limit` keys of `partition` whose expirable value was written `retentionMs` or more of
   * record time before `nowMs` (the stream time), oldest first; keys the transaction in progress
   * writes are left for a later sweep.
   */
  expired(partition: number, nowMs: number, retentionMs: number, limit: number): string[] {
    const pending = this.pending.get(partition);
    return expiredKeys(this.expiryOf(partition), nowMs, retentionMs, limit, (key) => pending?.has(key) === true);
  }

  /** Committed entries the tail has read, of every partition the store holds. */
  size(): number {
    let n = 0;
    for (const entries of this.held.values()) n += entries.size;
    return n;
  }

  /**
   * Committed entries of `partitions` for which `predicate` holds, as far as the tail has read
   * (a held partition is read from its beginning, so the count is right after a restart too).
   */
  count(predicate: (value: V) => boolean, partitions: ReadonlySet<number>): number {
    let n = 0;
    for (const [partition, entries] of this.held) if (partitions.has(partition)) for (const value of entries.values()) if (predicate(value)) n++;
    return n;
  }

  private expiryOf(partition: number): ExpiryIndex {
    let index = this.expiry.get(partition);
    if (!index) this.expiry.set(partition, (index = new Map()));
    return index;
  }

  /** The tail has read `partition` up to `offset`: own writes committed at or before it are in the mirror. */
  private forgetOwnUpTo(partition: number, offset: bigint): void {
    const commits = this.ownCommits.get(partition);
    const mine = this.own.get(partition);
    while (commits?.length && commits[0]!.upTo <= offset) {
      const { upTo, keys } = commits.shift()!;
      for (const key of keys) if (mine?.get(key)?.upTo === upTo) mine.delete(key);
    }
  }

  /**
   * Makes the mirror of `partition` current before its new owner processes it (taking the partition
   * on first, if the store does not hold it yet). `producers` are the owner's transactional
   * producers for that partition of every input topic; each commits a barrier (initialising its
   * transactional id fences any zombie that still holds it). For a partition just taken on, the
   * barrier is read after the whole partition, from its beginning.
   */
  async catchUp(partition: number, producers: Producer[], timeoutMs = 60000): Promise<void> {
    const name = this.name;
    const started = performance.now();
    this.hold(partition);
    const seen: Promise<void>[] = [];
    const ids: string[] = [];
    let timer: NodeJS.Timeout | undefined;
    try {
      for (const producer of producers) {
        const id = randomUUID();
        ids.push(id);
        seen.push(
          new Promise<void>((resolve) =>
            this.barriers.set(id, () => {
              this.barriers.delete(id);
              resolve();
            }),
          ),
        );
        const txn = await producer.transaction();
        try {
          await txn.send({ topic: name, messages: [{ partition, key: BARRIER_KEY, value: null, headers: { [BARRIER_HEADER]: id } }] });
          await txn.commit();
        } catch (err) {
          await txn.abort().catch(() => undefined);
          throw err;
        }
      }
      await Promise.race([
        Promise.all(seen),
        new Promise(
          (_, reject) => (timer = setTimeout(() => reject(new Error(`state store ${name}[${partition}] did not catch up within ${timeoutMs} ms`)), timeoutMs)),
        ),
      ]);
    } finally {
      clearTimeout(timer);
      // A barrier that failed or timed out is never waited for again.
      for (const id of ids) this.barriers.delete(id);
    }
    // The mirror has read past every write committed to the partition before the barrier.
    this.own.delete(partition);
    this.ownCommits.delete(partition);
    this.logger.info('state store caught up', {
      topic: name,
      partition,
      entries: this.held.get(partition)?.size ?? 0,
      duration_ms: Math.round(performance.now() - started),
    });
  }
}
