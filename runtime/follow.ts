/**
 * Reading topics to their end, for views of the log that are not a stage's work: the in-flight
 * count of Thought's run snapshots, and `tao status`.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';
import type { AvroCodec } from './codec.ts';
import { TaoError, errorMessage } from './errors.ts';
import type { Logger } from './log.ts';
import type { TopicId } from '../topics/catalog.ts';

/** Which of `names` the cluster does not have (so a command can say so instead of failing on metadata). */
export async function missingTopics(kafka: Kafka, names: readonly string[]): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    return names.filter((n) => !existing.has(n));
  } finally {
    await admin.disconnect();
  }
}

/** A running reader started by {@link followFromBeginning}. */
export interface Follower {
  /**
   * Resolves once every partition has been read up to the end offset it had when following
   * started; rejects if the consumer dies for good first.
   */
  readonly reachedEnd: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Follows `topics` from the beginning with a read_committed consumer in a throw-away group (the
 * random suffix keeps it from sharing offsets, and nothing is ever committed), handing each record
 * to `onMessage` in partition order. It keeps following after `reachedEnd`, until `stop()`.
 *
 * The end is tracked by offsets, not by records: transaction markers and aborted records take
 * offsets a read_committed consumer never sees, so the position comes from each fetched batch's
 * last offset (kafkajs reports batches of markers only through its END_BATCH_PROCESS event).
 */
export async function followFromBeginning(
  kafka: Kafka,
  topics: readonly string[],
  options: {
    groupPrefix: string;
    onMessage(topic: string, partition: number, message: KafkaMessage): Promise<void> | void;
    /** Caps one fetch (default kafkajs's 10 MiB): a reader of a long log that keeps a small view holds less at once. */
    fetchMaxBytes?: number;
    /** Called when the reader stops for good (kafkajs gave up restarting it), before or after `reachedEnd`. */
    onStopped?: (err: Error) => void;
  },
): Promise<Follower> {
  const pending = new Map<string, bigint>();
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (const topic of topics) {
      for (const p of await admin.fetchTopicOffsets(topic)) if (BigInt(p.high) > BigInt(p.low)) pending.set(`${topic}:${p.partition}`, BigInt(p.high));
    }
  } finally {
    await admin.disconnect();
  }
  let reached!: () => void;
  let failed!: (err: Error) => void;
  const reachedEnd = new Promise<void>((resolve, reject) => ((reached = resolve), (failed = reject)));
  reachedEnd.catch(() => undefined); // a caller that never waits for the end must not see an unhandled rejection
  if (pending.size === 0) reached();
  const advance = (topic: string, partition: number, nextOffset: bigint) => {
    const key = `${topic}:${partition}`;
    const end = pending.get(key);
    if (end !== undefined && nextOffset >= end) {
      pending.delete(key);
      if (pending.size === 0) reached();
    }
  };

  const limit = options.fetchMaxBytes === undefined ? {} : { maxBytes: options.fetchMaxBytes, maxBytesPerPartition: Math.min(options.fetchMaxBytes, 1048576) };
  const consumer = kafka.consumer({
    groupId: `${options.groupPrefix}-${randomUUID()}`,
    readUncommitted: false,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
    ...limit,
  });
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => advance(payload.topic, payload.partition, BigInt(payload.lastOffset) + 1n));
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (payload.restart) return;
    const err = new TaoError('TRANSIENT', `reader of ${topics.join(', ')} stopped: ${errorMessage(payload.error)}`, { cause: payload.error });
    failed(err);
    options.onStopped?.(err);
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [...topics], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachMessage: ({ topic, partition, message }) => Promise.resolve(options.onMessage(topic, partition, message)) });
  return { reachedEnd, stop: () => consumer.disconnect() };
}

/**
 * The latest value of every key of a compacted loop topic (thought.runs), per partition, projected
 * to what the caller needs. Null values (tombstones, and the state store's catch-up barriers)
 * remove their key; a value that does not decode is logged and skipped.
 */
export class CompactedView<V> {
  private readonly byPartition = new Map<number, Map<string, V>>();
  private follower: Follower | null = null;

  private constructor(
    private readonly codec: AvroCodec,
    private readonly topic: TopicId,
    private readonly project: (value: unknown) => V,
    private readonly logger: Logger,
  ) {}

  /** Starts reading `topic` from the beginning; use `reachedEnd` to wait for the current end. */
  static async start<V>(kafka: Kafka, codec: AvroCodec, topic: TopicId, project: (value: unknown) => V, logger: Logger): Promise<CompactedView<V>> {
    const view = new CompactedView(codec, topic, project, logger);
    view.follower = await followFromBeginning(kafka, [codec.topics.name(topic)], {
      groupPrefix: codec.topics.group('view'),
      onMessage: (_, partition, message) => view.apply(partition, message),
    });
    return view;
  }

  get reachedEnd(): Promise<void> {
    return this.follower?.reachedEnd ?? Promise.resolve();
  }

  /** How many keys hold a value matching `predicate`, in `partitions` (every partition when omitted). */
  count(predicate: (value: V) => boolean, partitions?: ReadonlySet<number>): number {
    let n = 0;
    for (const [partition, values] of this.byPartition) {
      if (partitions && !partitions.has(partition)) continue;
      for (const v of values.values()) if (predicate(v)) n++;
    }
    return n;
  }

  async stop(): Promise<void> {
    await this.follower?.stop();
    this.follower = null;
  }

  private async apply(partition: number, message: KafkaMessage): Promise<void> {
    const key = message.key?.toString('utf8') ?? '';
    let values = this.byPartition.get(partition);
    if (!values) this.byPartition.set(partition, (values = new Map()));
    if (message.value === null) {
      values.delete(key);
      return;
    }
    try {
      values.set(key, this.project(await this.codec.decode(this.topic, message.value)));
    } catch (err) {
      this.logger.warn('compacted topic entry undecodable; skipped', {
        topic: this.codec.topics.name(this.topic),
        partition,
        offset: message.offset,
        key,
        error: errorMessage(err),
      });
    }
  }
}
