import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { errorMessage } from '../runtime/errors.ts';
import type { TopicId } from '../topics/catalog.ts';

/** A committed record of the loop, decoded. */
export interface LoopRecord {
  topic: TopicId;
  partition: number;
  offset: string;
  key: string;
  value: Record<string, unknown> & { thought_id: string };
  headers: Record<string, string>;
  /** The record's Kafka timestamp (ms), where the reader kept it. */
  timestampMs?: number;
}

export interface WatchOptions {
  topics: TopicId[];
  /** 'end': only records written after `start` resolves; 'beginning': everything retained. */
  from: 'end' | 'beginning';
  onRecord: (record: LoopRecord) => void;
  onError?: (err: Error, where: { topic: string; partition: number; offset: string }) => void;
}

/** A consumed message of the loop topic `id`, decoded through the registry. */
export async function decodeLoopRecord(codec: AvroCodec, id: TopicId, partition: number, message: KafkaMessage): Promise<LoopRecord> {
  const value = await codec.decode<LoopRecord['value']>(id, message.value);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(message.headers ?? {})) if (v !== undefined) headers[k] = v.toString();
  return { topic: id, partition, offset: message.offset, key: message.key?.toString('utf8') ?? '', value, headers, timestampMs: Number(message.timestamp) };
}

/**
 * Follows loop topics with a read_committed consumer in a throw-away group (nothing is committed)
 * and hands every decoded record to `onRecord`. With `from: 'end'`, start() resolves once the
 * consumer is positioned at the current end of every partition, so nothing written afterwards is
 * missed.
 */
export async function watchRecords(kafka: Kafka, codec: AvroCodec, options: WatchOptions): Promise<{ stop(): Promise<void> }> {
  const consumer: Consumer = kafka.consumer({ groupId: `tao-watch-${randomUUID()}`, readUncommitted: false, sessionTimeout: 10000, heartbeatInterval: 1000 });
  const names = new Map(options.topics.map((id) => [codec.topics.name(id), id]));
  const ends = new Map<string, Array<{ partition: number; offset: string }>>();
  if (options.from === 'end') {
    const admin = kafka.admin();
    await admin.connect();
    try {
      for (const name of names.keys())
        ends.set(
          name,
          (await endOffsets(admin, name)).map((p) => ({ partition: p.partition, offset: p.high })),
        );
    } finally {
      await admin.disconnect();
    }
  }
  await consumer.connect();
  await consumer.subscribe({ topics: [...names.keys()], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      try {
        options.onRecord(await decodeLoopRecord(codec, names.get(topic)!, partition, message));
      } catch (err) {
        if (options.onError) options.onError(err as Error, { topic, partition, offset: message.offset });
        else throw new Error(`cannot decode ${topic}/${partition}@${message.offset}: ${errorMessage(err)}`);
      }
    },
  });
  for (const [topic, partitions] of ends) for (const p of partitions) consumer.seek({ topic, partition: p.partition, offset: p.offset });
  return { stop: () => consumer.disconnect() };
}

/** A topic's end offsets, waiting out the retriable errors a partition gives while its leader settles. */
async function endOffsets(admin: ReturnType<Kafka['admin']>, topic: string, timeoutMs = 30000): Promise<Array<{ partition: number; high: string }>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (err) {
      if ((err as { retriable?: boolean }).retriable !== true || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
