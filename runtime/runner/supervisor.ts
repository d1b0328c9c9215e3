/**
 * The consumer supervisor: the stage's one group consumer (read_committed, offsets committed only
 * by the runner's transactions, the co-partitioned assigner), the events that follow its
 * assignments and crashes, and its replacement when kafkajs stops it for good.
 *
 * kafkajs restarts a consumer itself after an error it classifies as retriable, and stops it for
 * good after the others, some of which are passing (no group coordinator while the broker
 * restarts). The supervisor then replaces the consumer with a new one, up to
 * {@link MAX_REBUILDS_IN_A_ROW} times in a row with a growing pause (2 s, 4 s, ... : linear, so that
 * five tries span half a minute of broker restart); the count resets once a new consumer joins the
 * group. After that it gives up through `onFatal`, and the process exits for its supervisor.
 *
 * Not runtime/retry.ts's `retry`: that one retries one call, counting its attempts inside the call,
 * only on retriable TaoErrors, with a jittered exponential delay; here the attempts in a row span
 * several calls (a rebuilt consumer that runs and then crashes again before joining counts on), the
 * failures are kafkajs's own errors, and the pause is the one the runner has always used.
 *
 * Between a crash and kafkajs's restart, and until a rebuilt consumer runs, kafkajs refuses pause,
 * seek and resume (it throws): {@link ConsumerSupervisor.onConsumer} skips the call then, since such
 * a consumer joins the group again with nothing paused and reads every partition from its committed
 * offset, which is where a failed partition is read again from anyway.
 *
 * Pinned without a broker by test/runtime/runner/supervisor.test.ts; against a broker that
 * restarts by the chaos bench (bench/chaos.ts).
 */
import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { coPartitionedAssigner } from '../assigner.ts';

/** Consumers rebuilt in a row (without a join in between) before the supervisor gives up. */
export const MAX_REBUILDS_IN_A_ROW = 5;

/** The pause before the `attempt`th rebuild in a row. */
export function rebuildPauseMs(attempt: number): number {
  return 2000 * attempt;
}

export interface SupervisorOptions {
  kafka: Pick<Kafka, 'consumer'>;
  group: string;
  /** The input topics' full names. */
  topics: readonly string[];
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  rebalanceTimeoutMs: number;
  /** kafkajs's `partitionsConsumedConcurrently` (the stage's `partitionsConcurrently`). */
  partitionsConcurrently: number;
  logger: Logger;
  onFatal?(error: Error): void;
  /** Waits out a rebuild's pause (a test passes its own). */
  sleep?(ms: number): Promise<void>;
}

/** What the supervisor reports to the runner. */
export interface SupervisorHooks {
  /** A consumer joined the group with this assignment (topic name to partitions). */
  assigned(assignment: Record<string, number[]>): void;
  /** A fetch of the partition reached no batch (only transaction markers or aborted records) yet moved its position. */
  emptyFetch(topic: string, partition: number, lag: bigint): void;
  eachBatch(payload: EachBatchPayload): Promise<void>;
  /** An error for /health's `lastError`. */
  noteError(err: unknown): void;
}

export class ConsumerSupervisor {
  private consumer: Consumer;
  private stopping = false;
  private running = false;
  /** Consumers rebuilt in a row since the last successful join (see {@link rebuild}). */
  private rebuilds = 0;
  /** Consumers kafkajs stopped for good (a crash without restart): one may crash inside its own `run()`. */
  private readonly stoppedConsumers = new WeakSet<Consumer>();

  constructor(
    private readonly o: SupervisorOptions,
    private readonly hooks: SupervisorHooks,
  ) {
    this.consumer = this.create();
  }

  /** Whether the current consumer runs (joined, or restarting by kafkajs's own retry). */
  get isRunning(): boolean {
    return this.running;
  }

  /** Whether {@link stop} was called. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** Connects, subscribes to the topics and runs the consumer (resolves once kafkajs's `run` has). */
  async start(): Promise<void> {
    await this.run();
  }

  /** Disconnects the consumer (kafkajs waits for the batches in hand) and rebuilds none after it. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.running = false;
    await this.consumer.disconnect();
  }

  /** Pauses, seeks or resumes the current consumer; skipped (with an info line) while kafkajs refuses it (see the module's comment). */
  onConsumer(what: 'pause' | 'seek' | 'resume', topic: string, partition: number, call: (consumer: Consumer) => void): void {
    try {
      call(this.consumer);
    } catch (err) {
      this.o.logger.info(`${what} skipped: the consumer is restarting and reads the partition from its committed offset`, {
        group: this.o.group,
        topic,
        partition,
        error: errorMessage(err),
      });
    }
  }

  /** The stage's group consumer, with the handlers that follow its assignments, lag and crashes. */
  private create(): Consumer {
    const { o, hooks } = this;
    const consumer = o.kafka.consumer({
      groupId: o.group,
      readUncommitted: false,
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: o.heartbeatIntervalMs,
      rebalanceTimeout: o.rebalanceTimeoutMs,
      maxBytesPerPartition: 1024 * 1024,
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 10000 },
      partitionAssigners: [coPartitionedAssigner],
    });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      this.rebuilds = 0;
      hooks.assigned(payload.memberAssignment);
    });
    // A fetch that returned only transaction markers (or aborted records) never reaches eachBatch,
    // yet moves the position past offsets that would otherwise show as lag forever.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.batchSize === 0) hooks.emptyFetch(payload.topic, payload.partition, BigInt(payload.highWatermark) - BigInt(payload.lastOffset) - 1n);
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (consumer !== this.consumer) return;
      hooks.noteError(payload.error);
      this.running = payload.restart;
      if (!payload.restart) this.stoppedConsumers.add(consumer);
      o.logger.error('consumer crashed', { group: o.group, error: payload.error, restart: payload.restart });
      if (!payload.restart) void this.rebuild(payload.error);
    });
    return consumer;
  }

  private async run(): Promise<void> {
    const consumer = this.consumer;
    await consumer.connect();
    for (const topic of this.o.topics) await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.o.partitionsConcurrently,
      eachBatch: (payload) => this.hooks.eachBatch(payload),
    });
    // kafkajs's run() resolves even when its first join failed for good (it reports that as a
    // crash, already handled above): such a consumer is not running.
    if (!this.stoppedConsumers.has(consumer)) this.running = true;
  }

  /** Replaces a consumer kafkajs stopped for good (see the module's comment). */
  private async rebuild(error: Error): Promise<void> {
    const { o } = this;
    const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    while (!this.stopping) {
      if (++this.rebuilds > MAX_REBUILDS_IN_A_ROW) {
        o.logger.error(`consumer could not be rebuilt ${MAX_REBUILDS_IN_A_ROW} times in a row; giving up`, { group: o.group, error });
        o.onFatal?.(error);
        return;
      }
      const pauseMs = rebuildPauseMs(this.rebuilds);
      o.logger.warn('rebuilding the stopped consumer', { group: o.group, attempt: this.rebuilds, pause_ms: pauseMs });
      await sleep(pauseMs);
      if (this.stopping) return;
      await this.consumer.disconnect().catch(() => undefined);
      this.consumer = this.create();
      try {
        await this.run();
        return;
      } catch (err) {
        this.hooks.noteError(err);
        error = err as Error;
      }
    }
  }
}
