/**
 * The state store's tail consumer (./state-store.ts): it reads the changelog of the partitions the
 * store holds, and only those.
 *
 * kafkajs has no manual assignment, so the tail is the one member of a group of its own, assigned
 * every partition of the changelog; it pauses those the store does not hold (no fetch, no decode,
 * no memory for them). A partition the store takes on is read again from its beginning
 * ({@link ChangelogTail.rewind}: a seek to offset 0 and a resume), one it lets go is paused again.
 * Whenever the consumer (re)joins its group (its first join, a restart kafkajs does itself, a
 * replacement) the join applies the same: held partitions resume from the next offset the store
 * has to read, the others are paused. Between a crash and kafkajs's restart the consumer refuses
 * pause, seek and resume; the call is skipped then, and the join that follows applies it.
 *
 * Records of a partition read after it was paused (fetched before) are skipped; a record is
 * applied only once, by position ({@link ChangelogTail.next}): what a restarted or replacing
 * consumer reads again before its seeks apply is skipped. After a seek kafkajs delivers nothing
 * more of the old position (its runner stops a batch whose partition has a seek pending, and drops
 * a fetch answered meanwhile); the one record being applied at that moment is the reader's to drop
 * (`read` answers false, and the position stays).
 *
 * A tail consumer kafkajs stops for good ("no group coordinator" while a broker restarts) is
 * replaced as the stage's own consumer is (runner/supervisor.ts: the same count and pauses, reset
 * once a consumer joins); after the last try the stage stops (`onFatal`) for its supervisor.
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import { errorMessage } from './errors.ts';
import type { Logger } from './log.ts';
import { MAX_REBUILDS_IN_A_ROW, rebuildPauseMs } from './runner/supervisor.ts';

/** The tail consumer's fetch: answered once this many bytes are readable, or after the wait. */
const TAIL_FETCH_MIN_BYTES = 64 * 1024;
const TAIL_FETCH_WAIT_MS = 50;

/** What the tail reads for. */
export interface TailReader {
  /** Whether the store holds `partition` (the tail reads only those). */
  holds(partition: number): boolean;
  /**
   * Applies one record of a held partition. False when the partition was let go, or taken on
   * again, while the record was being applied: the record was not applied, and the position stays.
   */
  read(partition: number, message: KafkaMessage, offset: bigint): Promise<boolean>;
}

export interface TailOptions {
  kafka: Kafka;
  /** The group id prefix; each tail consumer's group is this plus a random suffix. */
  group: string;
  /** The changelog topic's full name. */
  topic: string;
  logger: Logger;
  reader: TailReader;
  /** Called if the tail consumer stops for good and can't be replaced. */
  onFatal?: (error: Error) => void;
  /** Waits out the pause before a replacement (a test passes its own). */
  sleep: (ms: number) => Promise<void>;
}

export class ChangelogTail {
  private consumer: Consumer | null = null;
  /** Per held partition: the next changelog offset to read (one past the last applied). */
  private readonly next = new Map<number, bigint>();
  /** Tail consumers replaced in a row without a join since. */
  private rebuilds = 0;

  constructor(private readonly o: TailOptions) {}

  async start(): Promise<void> {
    await this.follow();
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = null; // first: a crash while it disconnects is not replaced
    await consumer?.disconnect();
  }

  /** Reads `partition` again from its beginning (the store takes it on). */
  rewind(partition: number): void {
    this.next.set(partition, 0n);
    const { topic } = this.o;
    this.onConsumer((c) => {
      c.seek({ topic, partition, offset: '0' });
      c.resume([{ topic, partitions: [partition] }]);
    });
  }

  /** Stops reading `partition` (the store let it go). */
  pause(partition: number): void {
    this.next.delete(partition);
    this.onConsumer((c) => c.pause([{ topic: this.o.topic, partitions: [partition] }]));
  }

  /** Calls `call` on the running consumer; skipped while kafkajs refuses it (its next join applies the state). */
  private onConsumer(call: (consumer: Consumer) => void): void {
    if (!this.consumer) return;
    try {
      call(this.consumer);
    } catch (err) {
      this.o.logger.info('state store tail consumer is restarting; its next join applies the partition change', {
        topic: this.o.topic,
        error: errorMessage(err),
      });
    }
  }

  /** A join: held partitions read on from their next offset, the others paused. */
  private joined(consumer: Consumer, assignment: Record<string, number[]>): void {
    this.rebuilds = 0;
    const { topic, reader } = this.o;
    const partitions = assignment[topic] ?? [];
    const held = partitions.filter((p) => reader.holds(p));
    const others = partitions.filter((p) => !reader.holds(p));
    try {
      if (others.length) consumer.pause([{ topic, partitions: others }]);
      if (held.length) consumer.resume([{ topic, partitions: held }]);
      for (const partition of held) consumer.seek({ topic, partition, offset: String(this.next.get(partition) ?? 0n) });
    } catch (err) {
      this.o.logger.warn('state store tail consumer refused its partitions at its join', { topic, error: errorMessage(err) });
    }
  }

  /** Starts a tail consumer; its join puts it where the store stands (see the module's comment). */
  private async follow(): Promise<void> {
    const { topic, reader, logger } = this.o;
    // The tail only mirrors (this instance's own writes are visible through the store's own layer at
    // once): it fetches up to TAIL_FETCH_WAIT_MS late rather than once per committed transaction.
    const consumer = this.o.kafka.consumer({
      groupId: `${this.o.group}-${randomUUID()}`,
      readUncommitted: false,
      sessionTimeout: 30000,
      minBytes: TAIL_FETCH_MIN_BYTES,
      maxWaitTimeInMs: TAIL_FETCH_WAIT_MS,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => this.joined(consumer, payload.memberAssignment));
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      // A restart is kafkajs's own recovery, but a catch-up waits on this consumer meanwhile.
      if (payload.restart) return logger.warn('state store tail consumer crashed; kafkajs restarts it', { topic, error: errorMessage(payload.error) });
      void this.replace(consumer, payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (!reader.holds(partition)) return; // fetched before its pause
        const offset = BigInt(message.offset);
        if (offset < (this.next.get(partition) ?? 0n)) return; // applied already
        if (await reader.read(partition, message, offset)) this.next.set(partition, offset + 1n);
      },
    });
  }

  /** Replaces `stopped` (see the module's comment), unless the tail stopped or replaced it already. */
  private async replace(stopped: Consumer, error: Error): Promise<void> {
    if (this.consumer !== stopped) return;
    const { topic, logger } = this.o;
    if (++this.rebuilds > MAX_REBUILDS_IN_A_ROW) {
      logger.error(`state store tail consumer could not be replaced ${MAX_REBUILDS_IN_A_ROW} times in a row; giving up`, { topic, error });
      this.o.onFatal?.(error);
      return;
    }
    const pauseMs = rebuildPauseMs(this.rebuilds);
    logger.warn('state store tail consumer stopped; replacing it where it stopped', {
      topic,
      error: errorMessage(error),
      attempt: this.rebuilds,
      pause_ms: pauseMs,
    });
    await stopped.disconnect().catch(() => undefined);
    await this.o.sleep(pauseMs);
    if (this.consumer !== stopped) return;
    try {
      await this.follow();
    } catch (err) {
      await this.replace(this.consumer ?? stopped, err instanceof Error ? err : new Error(String(err)));
    }
  }
}
