/**
 * `openRunStream(deps, thoughtId, after)`: a run's committed records as events, in the order of
 * runtime/run-stream/order.ts, from the start of the run's partitions or after a cursor, live until
 * the run's ending outcome. One read_committed consumer per stream, in a throw-away group (nothing
 * committed), reading only the run's partition of each of the five topics; `close()` (or leaving a
 * `for await`) disconnects it. Nothing is kept that the log cannot give again.
 *
 * Rounds: the reader asks each partition's end offset, reads every partition to it, and only then
 * lets the merge stream records read before the previous round's ask. A record's siblings of the
 * same transaction were written before it became readable, so they are below the ends asked after
 * it was read: the merge sees them together whatever the timing.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../codec.ts';
import { TransientError, errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { partitionForKey } from '../partition.ts';
import { CAUSE_HEADER, parseCause } from './cause.ts';
import { encodeCursor } from './cursor.ts';
import { eventOf, type RunEvent } from './events.ts';
import { RunMerge, STREAM_TOPICS, endsRun, type Positions, type StreamTopic } from './order.ts';

export interface RunStreamDeps {
  kafka: Kafka;
  codec: AvroCodec;
  logger: Logger;
}

export interface RunStreamOptions {
  /** Stop once the log as it stands is streamed (a snapshot), instead of following until the outcome. */
  untilEnd?: boolean;
  /** How long an idle stream waits for a record before asking the end offsets again. Default 1000 ms. */
  pollMs?: number;
}

/** A run's events; iterate it once. */
export interface RunStream extends AsyncIterable<RunEvent> {
  /** Records read but not streamed yet (a task waiting for what it causes). */
  readonly pending: number;
  /** Disconnects the consumer; an iteration in progress ends. Idempotent. */
  close(): Promise<void>;
}

/**
 * Opens the stream of run `thoughtId` after `after` (positions from a cursor; null: from the first
 * retained record). Resolves once the consumer is connected.
 * @throws TransientError when the cluster cannot be reached.
 */
export async function openRunStream(deps: RunStreamDeps, thoughtId: string, after: Positions | null, options: RunStreamOptions = {}): Promise<RunStream> {
  const { kafka, codec } = deps;
  const names = new Map<StreamTopic, string>(STREAM_TOPICS.map((t) => [t, codec.topics.name(t)]));
  const byName = new Map([...names].map(([t, n]) => [n, t]));
  const admin = kafka.admin();
  await admin.connect();
  const partition = {} as Record<StreamTopic, number>;
  const start = {} as Positions;
  const others: Array<{ topic: string; partitions: number[] }> = [];
  let closed = false;
  try {
    for (const t of STREAM_TOPICS) {
      const offsets = await admin.fetchTopicOffsets(names.get(t)!);
      partition[t] = partitionForKey(thoughtId, offsets.length);
      const low = BigInt(offsets.find((o) => o.partition === partition[t])!.low);
      // A cursor below what is retained starts at the first record still there.
      start[t] = after && after[t] > low ? after[t] : low;
      others.push({ topic: names.get(t)!, partitions: offsets.map((o) => o.partition).filter((p) => p !== partition[t]) });
    }
  } catch (err) {
    await admin.disconnect();
    throw new TransientError(`cannot read run ${thoughtId}'s partitions: ${errorMessage(err)}`, { cause: err });
  }
  const merge = new RunMerge(start);
  const read = { ...start };
  let wake: (() => void) | null = null;
  let failure: Error | null = null;
  const poke = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const advance = (topic: string, p: number, next: bigint) => {
    const t = byName.get(topic);
    if (t === undefined || p !== partition[t] || next <= read[t]) return;
    read[t] = next;
    poke();
  };
  const consumer = kafka.consumer({
    groupId: `${codec.topics.group('stream')}-${randomUUID()}`,
    readUncommitted: false,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 250,
  });
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => advance(payload.topic, payload.partition, BigInt(payload.lastOffset) + 1n));
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (payload.restart) return;
    failure = new TransientError(`the reader of run ${thoughtId} stopped: ${errorMessage(payload.error)}`);
    poke();
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...names.values()], fromBeginning: false });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const t = byName.get(batch.topic);
        if (t === undefined || batch.partition !== partition[t]) return;
        for (const m of batch.messages) {
          if (closed) return;
          const offset = BigInt(m.offset);
          if (offset < start[t] || m.key?.toString('utf8') !== thoughtId || m.value === null) continue;
          let value: Record<string, unknown>;
          try {
            value = await codec.decode<Record<string, unknown>>(t, m.value);
          } catch (err) {
            // The stage reading it dead-letters it; it is no step of the run.
            deps.logger.warn('run stream: record undecodable; not streamed', {
              thought_id: thoughtId,
              topic: batch.topic,
              offset: m.offset,
              error: errorMessage(err),
            });
            continue;
          }
          const header = m.headers?.[CAUSE_HEADER];
          merge.add({ topic: t, partition: batch.partition, offset, timestamp: Number(m.timestamp), cause: parseCause(header?.toString()), value });
        }
      },
    });
    consumer.pause(others.filter((o) => o.partitions.length > 0));
    for (const t of STREAM_TOPICS) consumer.seek({ topic: names.get(t)!, partition: partition[t], offset: String(start[t]) });
  } catch (err) {
    await Promise.allSettled([consumer.disconnect(), admin.disconnect()]);
    throw new TransientError(`cannot follow run ${thoughtId}: ${errorMessage(err)}`, { cause: err });
  }

  const close = async () => {
    if (closed) return;
    closed = true;
    poke();
    await Promise.allSettled([consumer.disconnect(), admin.disconnect()]);
  };
  const waitFor = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => ((wake = null), resolve()), ms);
      wake = () => (clearTimeout(timer), resolve());
    });
  const ends = async (): Promise<Positions> => {
    const out = {} as Positions;
    for (const t of STREAM_TOPICS) {
      const offsets = await admin.fetchTopicOffsets(names.get(t)!);
      out[t] = BigInt(offsets.find((o) => o.partition === partition[t])!.high);
    }
    return out;
  };
  const readTo = async (to: Positions) => {
    while (!closed && STREAM_TOPICS.some((t) => read[t] < to[t])) {
      if (failure) throw failure;
      await waitFor(options.pollMs ?? 1000);
    }
  };

  async function* events(): AsyncGenerator<RunEvent> {
    try {
      let frontier: Positions | null = null;
      while (!closed) {
        const asked = await ends();
        await readTo(asked);
        if (closed) return;
        if (frontier) {
          for (const { record, positions } of merge.take(frontier)) {
            yield { id: encodeCursor(positions), ...eventOf(record, names.get(record.topic)!) };
            if (record.topic === 'outcomes' && endsRun(record.value.status)) return;
          }
        }
        const idle = frontier !== null && STREAM_TOPICS.every((t) => asked[t] === frontier![t]);
        if (idle && options.untilEnd) return;
        frontier = asked;
        if (idle) await waitFor(options.pollMs ?? 1000);
        if (failure) throw failure;
      }
    } finally {
      await close();
    }
  }

  const iterator = events();
  return {
    get pending() {
      return merge.pending;
    },
    close,
    [Symbol.asyncIterator]: () => iterator,
  };
}
