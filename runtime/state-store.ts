import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka, KafkaMessage, Producer } from 'kafkajs';
import type { AvroCodec } from './codec.ts';
import { errorMessage } from './errors.ts';
import type { Logger } from './log.ts';
import type { TopicId } from '../topics/catalog.ts';
import { expiredKeys, noteWrite, type ExpiryIndex } from './retention.ts';
import { MAX_REBUILDS_IN_A_ROW, rebuildPauseMs } from './runner/supervisor.ts';

/** The tail consumer's fetch: answered once this many bytes are readable, or after the wait. */
const TAIL_FETCH_MIN_BYTES = 64 * 1024;
const TAIL_FETCH_WAIT_MS = 50;
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
 * records; the store only mirrors them:
 *
 * - `stage()` makes a write visible to later records of the same transaction, `commit()` /
 *   `abort()` settle it with the transaction;
 * - a tail consumer (read_committed, from the beginning) mirrors every partition, so any instance
 *   can take a partition over;
 * - this instance's committed writes are kept per partition on top of the mirror (the tail lags
 *   behind them), until a catch-up or the loss of the partition;
 * - `catchUp()` runs before an instance processes a partition it claims: it writes a barrier
 *   through the partition's transactional producers (fencing any previous owner) and waits until the
 *   tail consumer has read past it, so every committed write of the partition, this instance's
 *   included, is in the mirror, and drops the partition's own layer.
 *
 * A tail consumer kafkajs stops for good ("no group coordinator" while a broker restarts) is
 * replaced as the stage's own consumer is (runner/supervisor.ts: the same count and pauses, reset
 * once a consumer joins), by one that goes on from the next offset of each partition; what it
 * reads again before its seeks apply is skipped, and so is what a consumer kafkajs restarted
 * itself reads again. After the last try the stage stops (`onFatal`) for its supervisor.
 *
 * The mirror takes every committed record, whoever wrote it: a commit whose outcome this instance
 * could not tell (an error after the broker committed) still reaches it. A null value (a
 * tombstone) removes its key from every layer's view; an own write leaves the own layer as soon as
 * the tail has read the offset it was committed at, so the layer holds only what the tail lags behind.
 *
 * Retention (./retention.ts): with `expirable`, the store keeps, per partition, the expirable keys
 * with the record time that wrote them, and the partition's stream time (the largest input record
 * time the stage reported through {@link observe}, or read back from the changelog's own record
 * timestamps after a restart); {@link expired} names the keys the stage should tombstone.
 */
export class ChangelogStore<V> {
  /** Every committed entry the tail has read. */
  private readonly mirror = new Map<string, V>();
  /** The changelog partition of each mirror entry. */
  private readonly mirrorPartitions = new Map<string, number>();
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
  private consumer: Consumer | null = null;
  /** Per partition: the next changelog offset the tail has to read (one past the last it read). */
  private readonly next = new Map<number, bigint>();
  /** Tail consumers replaced in a row without a join since. */
  private rebuilds = 0;
  /** The changelog topic's full name. */
  private readonly name: string;

  constructor(
    private readonly kafka: Kafka,
    private readonly codec: AvroCodec,
    readonly topic: TopicId,
    private readonly logger: Logger,
    /** Called if the tail consumer stops for good: the store would stop following the changelog. */
    private readonly onFatal?: (error: Error) => void,
    /** Values that may leave the store once a retention of record time has passed (none when omitted). */
    private readonly expirable: (value: V) => boolean = () => false,
    /** Waits out the pause before a replacement (a test passes its own). */
    private readonly sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  ) {
    this.name = codec.topics.name(topic);
  }

  async start(): Promise<void> {
    await this.follow();
  }

  /** Starts a tail consumer, from the beginning or, replacing one, from where it stopped. */
  private async follow(): Promise<void> {
    const name = this.name;
    // The tail only mirrors (this instance's own writes are visible through the own layer at once):
    // it fetches up to TAIL_FETCH_WAIT_MS late rather than once per committed transaction, which
    // under load was a fetch request, and its share of the broker's work, per chunk of the stage.
    const consumer = this.kafka.consumer({
      groupId: `${this.codec.topics.group('store')}-${randomUUID()}`,
      readUncommitted: false,
      sessionTimeout: 30000,
      minBytes: TAIL_FETCH_MIN_BYTES,
      maxWaitTimeInMs: TAIL_FETCH_WAIT_MS,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      this.rebuilds = 0;
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      // A restart is kafkajs's own recovery, but a catch-up waits on this consumer meanwhile.
      if (payload.restart)
        return this.logger.warn('state store tail consumer crashed; kafkajs restarts it', {
          topic: name,
          error: errorMessage(payload.error),
        });
      void this.replace(consumer, payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topic: name, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const offset = BigInt(message.offset);
        if (offset < (this.next.get(partition) ?? 0n)) return; // read by the consumer this one replaced
        await this.read(partition, message, offset);
        this.next.set(partition, offset + 1n);
      },
    });
    for (const [partition, offset] of this.next) consumer.seek({ topic: name, partition, offset: String(offset) });
  }

  /** Replaces `stopped` (see the class comment), unless the store stopped or replaced it already. */
  private async replace(stopped: Consumer, error: Error): Promise<void> {
    if (this.consumer !== stopped) return;
    const topic = this.name;
    if (++this.rebuilds > MAX_REBUILDS_IN_A_ROW) {
      this.logger.error(`state store tail consumer could not be replaced ${MAX_REBUILDS_IN_A_ROW} times in a row; giving up`, { topic, error });
      this.onFatal?.(error);
      return;
    }
    const pauseMs = rebuildPauseMs(this.rebuilds);
    this.logger.warn('state store tail consumer stopped; replacing it where it stopped', {
      topic,
      error: errorMessage(error),
      attempt: this.rebuilds,
      pause_ms: pauseMs,
    });
    await stopped.disconnect().catch(() => undefined);
    await this.sleep(pauseMs);
    if (this.consumer !== stopped) return;
    try {
      await this.follow();
    } catch (err) {
      await this.replace(this.consumer ?? stopped, err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** Applies one changelog record the tail read: a barrier, or an entry for the mirror. */
  private async read(partition: number, message: KafkaMessage, offset: bigint): Promise<void> {
    const key = message.key?.toString('utf8') ?? '';
    if (key === BARRIER_KEY) {
      const id = message.headers?.[BARRIER_HEADER]?.toString();
      if (id) this.barriers.get(id)?.();
      this.forgetOwnUpTo(partition, offset);
      return;
    }
    // Changelog records carry the record time of the input that wrote them (tombstones: the
    // stream time of their sweep), so a restarted store resumes the partition's stream time.
    const writtenMs = Number(message.timestamp);
    this.observe(partition, writtenMs);
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
        this.forgetOwnUpTo(partition, offset);
        return;
      }
    }
    if (value === null) {
      this.mirror.delete(key);
      this.mirrorPartitions.delete(key);
    } else {
      this.mirror.set(key, value);
      this.mirrorPartitions.set(key, partition);
    }
    // An own write of the key is newer than (or the same as) this record: it keeps the index.
    if (!this.own.get(partition)?.has(key)) noteWrite(this.expiryOf(partition), key, writtenMs, value !== null && this.expirable(value));
    this.forgetOwnUpTo(partition, offset);
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = null; // first: a crash while it disconnects is not replaced
    await consumer?.disconnect();
  }

  /** The value of `key` as of the records processed so far (this transaction's writes included). */
  get(partition: number, key: string): V | undefined {
    const staged = this.pending.get(partition)?.get(key) ?? this.own.get(partition)?.get(key);
    if (staged) return staged.value ?? undefined;
    return this.mirror.get(key);
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

  /** The partitions this instance no longer owns are read from the mirror only. */
  release(partitions: Iterable<number>): void {
    for (const p of partitions) {
      this.own.delete(p);
      this.ownCommits.delete(p);
      this.pending.delete(p);
    }
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

  /** Entries in the mirror (every partition this instance follows). */
  size(): number {
    return this.mirror.size;
  }

  /**
   * Committed entries of `partitions` for which `predicate` holds, as far as the tail has read
   * (every partition is followed from the beginning, so the count is right after a restart too).
   */
  count(predicate: (value: V) => boolean, partitions: ReadonlySet<number>): number {
    let n = 0;
    for (const [key, value] of this.mirror) if (partitions.has(this.mirrorPartitions.get(key)!) && predicate(value)) n++;
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
   * Makes the mirror of `partition` current before its new owner processes it. `producers` are the
   * owner's transactional producers for that partition of every input topic; each commits a barrier
   * (initialising its transactional id fences any zombie that still holds it).
   */
  async catchUp(partition: number, producers: Producer[], timeoutMs = 60000): Promise<void> {
    const name = this.name;
    const started = performance.now();
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
    this.logger.info('state store caught up', { topic: name, partition, entries: this.mirror.size, duration_ms: Math.round(performance.now() - started) });
  }
}
