import type { Admin, Kafka } from 'kafkajs';
import { watchRecords } from '../client/watch.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import type { Logger } from '../runtime/log.ts';
import type { Task } from '../schemas/types.gen.ts';

/** Task metadata key naming where the run's outcome is POSTed. */
export const CALLBACK_URL_KEY = 'callback_url';

/**
 * thought_id → callback URL, rebuilt in memory by reading `tao.tasks` from the beginning
 * (read_committed, throw-away group, nothing committed) and then following it.
 *
 * Why this shape: the outcome record does not carry the URL, the task does, and no state may live
 * outside Kafka. The price: start-up replays the whole retained `tao.tasks` (7 days), memory grows
 * with the runs that asked for a callback in that window, and a run whose task has aged out of
 * retention gets no callback. A later task of the same run with a callback URL replaces the URL;
 * one without keeps it.
 *
 * Ordering: a task is always written before its run's outcome, but the two topics are read by
 * different consumers, so an outcome can be read before its task. {@link lookup} therefore waits,
 * on a miss, until this index has read up to the tasks topic's end offsets as of the lookup. That
 * wait assumes `tao.tasks` has no transaction markers (its writers are plain idempotent producers);
 * if it never catches up within the timeout, the lookup answers "no callback" and says so.
 */
export class CallbackUrlIndex {
  private readonly urls = new Map<string, string>();
  /** Next offset to read, per partition, as far as this index has read. */
  private readonly next = new Map<number, bigint>();

  private constructor(
    private readonly topic: string,
    private readonly admin: Admin,
    private readonly logger: Logger,
  ) {}

  private watcher: { stop(): Promise<void> } | null = null;

  /** Starts reading `tao.tasks`; resolves once reading has begun (see {@link caughtUp}). */
  static async start(kafka: Kafka, codec: AvroCodec, logger: Logger): Promise<CallbackUrlIndex> {
    const admin = kafka.admin();
    await admin.connect();
    const index = new CallbackUrlIndex(codec.topics.name('tasks'), admin, logger);
    try {
      index.watcher = await watchRecords(kafka, codec, {
        topics: ['tasks'],
        from: 'beginning',
        onRecord: (record) => {
          const url = (record.value as unknown as Task).metadata?.[CALLBACK_URL_KEY];
          if (url) index.urls.set(record.key, url);
          index.advance(record.partition, record.offset);
        },
        onError: (err, where) => {
          logger.warn('task not decoded; skipped by the callback index', { ...where, error: err });
          index.advance(where.partition, where.offset);
        },
      });
    } catch (err) {
      await admin.disconnect();
      throw err;
    }
    return index;
  }

  /** Runs known to have a callback URL. */
  get size(): number {
    return this.urls.size;
  }

  private advance(partition: number, offset: string): void {
    const after = BigInt(offset) + 1n;
    if (after > (this.next.get(partition) ?? 0n)) this.next.set(partition, after);
  }

  /**
   * Waits until every record of `tao.tasks` written before this call has been read.
   * @returns false when that did not happen within `timeoutMs`.
   */
  async caughtUp(timeoutMs: number): Promise<boolean> {
    const ends = await this.admin.fetchTopicOffsets(this.topic);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const behind = ends.some((p) => BigInt(p.high) > BigInt(p.low) && (this.next.get(p.partition) ?? BigInt(p.low)) < BigInt(p.high));
      if (!behind) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The callback URL of run `thoughtId`, or null when its tasks carried none. */
  async lookup(thoughtId: string, timeoutMs: number): Promise<string | null> {
    const known = this.urls.get(thoughtId);
    if (known) return known;
    if (!(await this.caughtUp(timeoutMs)))
      this.logger.warn('callback index did not catch up with tao.tasks; answering without it', { thought_id: thoughtId, timeout_ms: timeoutMs });
    return this.urls.get(thoughtId) ?? null;
  }

  async stop(): Promise<void> {
    await this.watcher?.stop();
    await this.admin.disconnect();
  }
}
