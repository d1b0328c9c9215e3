/**
 * The transaction committer: how what a chunk produced reaches the log. One transaction, with the
 * producer of the partition's current claim (./claims.ts), holds
 *
 * - every output of the chunk's handled records, and the dead letters of the others
 *   (./record-processor.ts returns both as records to write);
 * - the tombstones of the store entries the chunk's record time has expired (the retention sweep:
 *   swept in the same transaction as the offsets, a tombstone is written once);
 * - the offset after the chunk, sent to the consumer group's offsets (sendOffsets).
 *
 * A crash at any point therefore commits all of it or none of it. A transaction that fails is
 * aborted, its store writes unstaged, and its claim dropped: the producer can't be reused (it may
 * be fenced by the partition's new owner), and a fresh one must not simply take its place without
 * a new look at the committed offsets, so the next attempt claims the partition again
 * (PartitionClaims.drop). The failure is rethrown as retriable, so that the strategy reads the
 * partition again from its last committed offset (./serial.ts: kafkajs's batch retry;
 * ./pipelined.ts: pause, seek, resume). Only once the transaction has committed are its records
 * counted and reported to the stage ({@link StageDefinition.committed}).
 *
 * Pinned without a broker by test/runtime/runner/serial.test.ts and pipelined.test.ts (a failed
 * commit aborts and commits nothing; dead letters share the transaction), against the broker by
 * test/runtime/read-committed.test.ts and handover.test.ts, and test/loop/exactly-once.test.ts.
 */
import type { KafkaMessage, Message, RecordMetadata, Transaction } from 'kafkajs';
import type { AvroCodec } from '../codec.ts';
import { TransientError, errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { StageMetrics } from '../metrics.ts';
import type { ChangelogStore } from '../state-store.ts';
import type { Claim, PartitionClaims } from '../claims.ts';
import type { StageDefinition } from './contract.ts';
import type { Processed, Source, TopicMessages } from './record-processor.ts';

export interface CommitterOptions {
  def: StageDefinition;
  /** The consumer group whose offsets the transactions commit. */
  group: string;
  codec: AvroCodec;
  logger: Logger;
  metrics: StageMetrics;
  store: ChangelogStore<unknown> | null;
  claims: PartitionClaims;
  /** `tao_transactions_total` of the stage, by result (looked up once). */
  transactions: { committed: { inc(): void }; aborted: { inc(): void } };
  /** Notes an error for /health's `lastError`. */
  noteError(err: unknown): void;
}

export class TransactionCommitter {
  constructor(private readonly o: CommitterOptions) {}

  /**
   * Commits what a chunk of one partition produced (`processed`, in the chunk's order) with the
   * offset `next` (after the chunk), in one transaction of `claim`'s producer; then calls `endBatch`
   * and reports the chunk. Throws a {@link TransientError} after aborting a failed transaction.
   */
  async commit(
    source: Source,
    partition: number,
    chunk: KafkaMessage[],
    next: bigint,
    claim: Promise<Claim>,
    processed: Processed[],
    endBatch: () => void,
  ): Promise<void> {
    const { def, metrics, logger, store } = this.o;
    const outputs = processed.map((p) => p.encoded);
    const swept = this.sweep(partition, chunk);
    let transaction: Transaction | null = null;
    try {
      const producer = (await claim).producers.get(source.name)!;
      transaction = await producer.transaction();
      const topicMessages = mergeByTopic([...outputs.flat(), ...swept]);
      const written = topicMessages.length > 0 ? await transaction.sendBatch({ topicMessages }) : [];
      await transaction.sendOffsets({
        consumerGroupId: this.o.group,
        topics: [{ topic: source.name, partitions: [{ partition, offset: next.toString() }] }],
      });
      await transaction.commit();
      store?.commit(partition, this.lastStoreOffset(partition, topicMessages, written));
      // The stream time moves with the committed chunk (a retried chunk sees the same one).
      for (const m of chunk) store?.observe(partition, Number(m.timestamp));
      this.o.transactions.committed.inc();
      for (const { topic, messages } of topicMessages) metrics.recordsOut.inc({ stage: def.stage, topic }, messages.length);
    } catch (err) {
      this.o.transactions.aborted.inc();
      store?.abort(partition);
      await transaction?.abort().catch((abortErr: Error) => logger.warn('transaction abort failed', { error: abortErr }));
      // The producer can't be reused: the next attempt claims the partition again (fence, then read
      // the committed offsets; PartitionClaims.drop says why).
      this.o.claims.drop(partition, claim);
      this.o.noteError(err);
      logger.warn('transaction aborted; the chunk is retried from the last committed offset', {
        group: this.o.group,
        topic: source.name,
        partition,
        records: chunk.length,
        error: errorMessage(err),
      });
      // Retriable whatever the cause, so that kafkajs retries the batch from the last committed
      // offset (and rejoins the group) instead of stopping this consumer for good: a producer fenced
      // by a partition's new owner is a normal part of a rebalance. Not chained as a cause: kafkajs
      // decides whether to restart from the innermost cause.
      throw new TransientError(
        `transaction on ${source.name}[${partition}] failed and was aborted (${errorMessage(err)}); the chunk is retried from the last committed offset`,
      );
    }
    endBatch();
    if (swept.length) logger.debug('expired store entries tombstoned', { group: this.o.group, partition, entries: swept[0]!.messages.length });
    this.reportCommitted(processed);
  }

  /**
   * Stages a tombstone for each store entry that has expired by the stream time the chunk moves the
   * partition to (at most `sweepPerTransaction`), to be written in the chunk's transaction: swept in
   * the same transaction as the offsets, a tombstone is written once.
   */
  private sweep(partition: number, chunk: readonly KafkaMessage[]): TopicMessages[] {
    const { store } = this.o;
    const retention = this.o.def.storeRetention;
    if (!store || !retention) return [];
    const now = chunk.reduce((t, m) => Math.max(t, Number(m.timestamp)), store.streamTime(partition) ?? -Infinity);
    if (!Number.isFinite(now)) return [];
    const keys = store.expired(partition, now, retention.retentionMs, retention.sweepPerTransaction);
    if (keys.length === 0) return [];
    for (const key of keys) store.stage(partition, key, null, now);
    return [{ topic: this.o.codec.topics.name(store.topic), messages: keys.map((key) => ({ key, value: null, partition, timestamp: String(now) })) }];
  }

  /** The changelog offset of the transaction's last write to the store's `partition` (null when it wrote none, or the broker did not say). */
  private lastStoreOffset(partition: number, sent: TopicMessages[], written: RecordMetadata[]): bigint | null {
    const { store } = this.o;
    if (!store) return null;
    const topic = this.o.codec.topics.name(store.topic);
    const count = sent.find((t) => t.topic === topic)?.messages.length ?? 0;
    const meta = written.find((w) => w.topicName === topic && w.partition === partition);
    if (count === 0 || meta?.baseOffset === undefined) return null;
    // One batch per partition in a produce request: its records take consecutive offsets.
    return BigInt(meta.baseOffset) + BigInt(count - 1);
  }

  /** Counts and reports what a just-committed chunk did; a failing report must not fail the batch. */
  private reportCommitted(processed: Processed[]): void {
    const { def, metrics, logger } = this.o;
    for (const p of processed) if (p.deadLetter) metrics.deadLetters.inc({ stage: def.stage, ...p.deadLetter });
    if (!def.committed) return;
    try {
      def.committed(processed.flatMap((p) => (p.handled ? [p.handled] : [])));
    } catch (err) {
      logger.error('committed hook failed; its metrics or logs for this chunk are missing', { error: err });
    }
  }
}

function mergeByTopic(items: TopicMessages[]): TopicMessages[] {
  const byTopic = new Map<string, Message[]>();
  for (const { topic, messages } of items) {
    const merged = byTopic.get(topic);
    if (merged) for (const m of messages) merged.push(m);
    else byTopic.set(topic, messages.slice());
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}
