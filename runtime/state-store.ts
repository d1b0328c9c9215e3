import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka, Producer } from 'kafkajs';
import type { AvroCodec } from './codec.ts';
import { errorMessage } from './errors.ts';
import type { Logger } from './log.ts';
import type { TopicId } from '../topics/catalog.ts';

const BARRIER_KEY = '__tao_barrier__';
const BARRIER_HEADER = 'tao.barrier';

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
 * The mirror takes every committed record, whoever wrote it: a commit whose outcome this instance
 * could not tell (an error after the broker committed) still reaches it.
 */
export class ChangelogStore<V> {
  /** Every committed entry the tail has read. */
  private readonly mirror = new Map<string, V>();
  /** Per partition: this instance's committed writes the tail may not have read yet. */
  private readonly own = new Map<number, Map<string, V>>();
  /** Per partition: the writes of the transaction in progress. */
  private readonly pending = new Map<number, Map<string, V>>();
  private readonly barriers = new Map<string, () => void>();
  private consumer: Consumer | null = null;

  constructor(
    private readonly kafka: Kafka,
    private readonly codec: AvroCodec,
    readonly topic: TopicId,
    private readonly logger: Logger,
    /** Called if the tail consumer stops for good: the store would stop following the changelog. */
    private readonly onFatal?: (error: Error) => void,
  ) {}

  async start(): Promise<void> {
    const name = this.codec.topics.name(this.topic);
    const consumer = this.kafka.consumer({ groupId: `${this.codec.topics.group('store')}-${randomUUID()}`, readUncommitted: false, sessionTimeout: 30000 });
    this.consumer = consumer;
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart) return;
      this.logger.error('state store tail consumer stopped for good', { topic: this.codec.topics.name(this.topic), error: payload.error });
      this.onFatal?.(payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topic: name, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const key = message.key?.toString('utf8') ?? '';
        if (key === BARRIER_KEY) {
          const id = message.headers?.[BARRIER_HEADER]?.toString();
          if (id) this.barriers.get(id)?.();
          return;
        }
        if (message.value === null) {
          this.mirror.delete(key);
          return;
        }
        try {
          this.mirror.set(key, await this.codec.decode<V>(this.topic, message.value));
        } catch (err) {
          // The changelog is written only by this stage; an undecodable entry is a bug or a foreign writer.
          this.logger.error('state store entry undecodable; ignored', { topic: name, partition, offset: message.offset, key, error: errorMessage(err) });
        }
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
    this.consumer = null;
  }

  /** The value of `key` as of the records processed so far (this transaction's writes included). */
  get(partition: number, key: string): V | undefined {
    return this.pending.get(partition)?.get(key) ?? this.own.get(partition)?.get(key) ?? this.mirror.get(key);
  }

  stage(partition: number, key: string, value: V): void {
    let map = this.pending.get(partition);
    if (!map) this.pending.set(partition, (map = new Map()));
    map.set(key, value);
  }

  commit(partition: number): void {
    const staged = this.pending.get(partition);
    if (!staged) return;
    let mine = this.own.get(partition);
    if (!mine) this.own.set(partition, (mine = new Map()));
    for (const [key, value] of staged) mine.set(key, value);
    this.pending.delete(partition);
  }

  abort(partition: number): void {
    this.pending.delete(partition);
  }

  /** The partitions this instance no longer owns are read from the mirror only. */
  release(partitions: Iterable<number>): void {
    for (const p of partitions) {
      this.own.delete(p);
      this.pending.delete(p);
    }
  }

  /**
   * Makes the mirror of `partition` current before its new owner processes it. `producers` are the
   * owner's transactional producers for that partition of every input topic; each commits a barrier
   * (initialising its transactional id fences any zombie that still holds it).
   */
  async catchUp(partition: number, producers: Producer[], timeoutMs = 60000): Promise<void> {
    const name = this.codec.topics.name(this.topic);
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
      await Promise.race([Promise.all(seen), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`state store ${name}[${partition}] did not catch up within ${timeoutMs} ms`)), timeoutMs)))]);
    } finally {
      clearTimeout(timer);
      // A barrier that failed or timed out is never waited for again.
      for (const id of ids) this.barriers.delete(id);
    }
    // The mirror has read past every write committed to the partition before the barrier.
    this.own.delete(partition);
  }
}
