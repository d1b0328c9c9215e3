/**
 * A namespace of the loop of its own on a broker: every catalog topic created and every schema
 * registered under a fresh `TAO_NAMESPACE`, a read_committed follower of its topics, and its
 * deletion (topics and consumer groups) afterwards. `tao eval` runs a regression set in one, so it
 * never touches the live topics; the bench harness (bench/lib/) starts its phases in them too.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';
import { applyCatalogWith } from '../runtime/apply-catalog.ts';
import { AvroCodec } from '../runtime/codec.ts';
import { loadRuntimeConfig, type RuntimeConfig } from '../runtime/config.ts';
import { createKafka } from '../runtime/kafka.ts';
import { createLogger } from '../runtime/log.ts';
import { TOPICS, type TopicId } from '../topics/catalog.ts';

/** One namespace of the loop: every catalog topic created, every schema registered. */
export interface LoopNamespace {
  namespace: string;
  /** Environment for processes of this namespace (TAO_NAMESPACE set). */
  env: NodeJS.ProcessEnv;
  config: RuntimeConfig;
  kafka: Kafka;
  codec: AvroCodec;
}

/**
 * Creates a fresh namespace `<prefix><8 hex>` with the loop's topics and schemas. `extraEnv` is
 * merged over `baseEnv` for the processes started in it. The session timeout defaults to 6 s (the
 * broker's minimum is 6 s) so a SIGKILLed member leaves its group quickly.
 */
export async function freshNamespace(prefix: string, baseEnv: NodeJS.ProcessEnv, extraEnv: NodeJS.ProcessEnv = {}): Promise<LoopNamespace> {
  const namespace = `${prefix}${randomUUID().slice(0, 8)}`;
  // Stages print their ready line at level info, whatever level the caller itself logs at. The bench
  // tasks are the order-status flow's, on the graph planner (as when the numbers were first taken).
  const env: NodeJS.ProcessEnv = {
    ...baseEnv,
    TAO_NAMESPACE: namespace,
    TAO_SESSION_TIMEOUT_MS: '6000',
    TAO_LOG_LEVEL: 'info',
    TAO_PLANNER: 'graph',
    ...extraEnv,
  };
  const config = loadRuntimeConfig(env);
  // This process's own client logs errors only, on stderr: stdout is the caller's (tao eval --json prints there).
  const kafka = createKafka(
    config,
    `bench-${namespace}`,
    createLogger({ bench: namespace }, { level: 'error', write: (line) => process.stderr.write(`${line}\n`) }),
  );
  for (let attempt = 1; ; attempt++) {
    try {
      await applyCatalogWith(config, kafka, () => undefined);
      break;
    } catch (err) {
      // Right after creating topics a busy KRaft broker may answer metadata with
      // UNKNOWN_TOPIC_OR_PARTITION, which kafkajs' waitForLeaders does not retry; applying again is safe.
      if ((err as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION' || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 1000 * attempt));
    }
  }
  const codec = AvroCodec.create(config);
  await codec.register(['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes', 'thoughtRuns']);
  return { namespace, env, config, kafka, codec };
}

/**
 * Deletes the topics and the consumer groups whose names match (best effort, a line on stderr for
 * what fails: a namespace left behind only costs disk). Groups are deleted after their members left.
 */
export async function deleteNamespace(kafka: Kafka, matches: (name: string) => boolean): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const topics = (await admin.listTopics()).filter(matches);
    if (topics.length) await admin.deleteTopics({ topics, timeout: 30000 });
    // Deleted topics may still be listed for a moment (a CI run listed all 11 right after): the
    // namespace is gone when the command exits, so wait until the listing agrees (30 s at most).
    for (const until = Date.now() + 30000; topics.length && (await admin.listTopics()).some(matches) && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 250));
    // A group whose last member has just left may still be refused for a moment (not empty yet): asked again.
    let groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter(matches);
    for (let attempt = 1; groups.length; attempt++) {
      try {
        await admin.deleteGroups(groups);
        groups = [];
      } catch (err) {
        // A group already gone (GROUP_ID_NOT_FOUND: its last member's session ended it) is deleted.
        const failed = ((err as { groups?: Array<{ groupId: string; error?: { type?: string } }> }).groups ?? []).filter(
          (g) => g.error && g.error.type !== 'GROUP_ID_NOT_FOUND',
        );
        if (!failed.length && ((err as { groups?: unknown[] }).groups ?? []).length) {
          groups = [];
          continue;
        }
        if (!failed.length || attempt >= 10) throw new Error(`${(err as Error).message}: ${failed.map((g) => `${g.groupId} ${g.error?.type}`).join(', ')}`);
        groups = failed.map((g) => g.groupId);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  } catch (err) {
    process.stderr.write(`could not delete the namespace's topics or groups: ${(err as Error).message}\n`);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** One committed record as read from the log, undecoded. */
export interface RawRecord {
  topic: string;
  partition: number;
  offset: string;
  key: string;
  value: Buffer | null;
  /** The record's CreateTime (ms): when its writer sent it, inside its transaction. */
  timestamp: number;
  headers: Record<string, string>;
}

/** A live read_committed reader of `topics` from the beginning (group `<groupPrefix>-<uuid>`); `records` grows as records commit. */
export async function followLog(
  kafka: Kafka,
  topics: string[],
  groupPrefix = 'bench-follow',
): Promise<{ records: RawRecord[]; waitFor(pred: (records: RawRecord[]) => boolean, timeoutMs: number): Promise<boolean>; stop(): Promise<void> }> {
  const records: RawRecord[] = [];
  const consumer = kafka.consumer({
    groupId: `${groupPrefix}-${randomUUID()}`,
    readUncommitted: false,
    maxBytesPerPartition: 8 * 1024 * 1024,
    sessionTimeout: 30000,
  });
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) records.push(rawRecord(batch.topic, batch.partition, m));
    },
  });
  return {
    records,
    waitFor: async (pred, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        if (pred(records)) return true;
        await new Promise((r) => setTimeout(r, 200));
      }
      return pred(records);
    },
    stop: () => consumer.disconnect(),
  };
}

/** A committed loop record, decoded (null `value` when it does not decode: never expected on these topics). */
export interface DecodedRecord extends RawRecord {
  id: TopicId;
  decoded: Record<string, unknown> | null;
}

/** Decodes records of the loop's topics (records of other topics are dropped; store barriers too). */
export async function decodeLoopRecords(ns: Pick<LoopNamespace, 'codec'>, records: readonly RawRecord[]): Promise<DecodedRecord[]> {
  const ids = new Map((Object.keys(TOPICS) as TopicId[]).map((id) => [ns.codec.topics.name(id), id]));
  const out: DecodedRecord[] = [];
  for (const r of records) {
    const id = ids.get(r.topic);
    if (!id || r.value === null) continue;
    let decoded: Record<string, unknown> | null = null;
    try {
      decoded = await ns.codec.decode<Record<string, unknown>>(id, r.value);
    } catch {
      decoded = null; // reported by the caller as an undecodable committed record
    }
    out.push({ ...r, id, decoded });
  }
  return out;
}

/** The names of every loop topic of `ns` (store changelog included). */
export function loopTopicNames(ns: Pick<LoopNamespace, 'codec'>, ids: readonly TopicId[] = Object.keys(TOPICS) as TopicId[]): string[] {
  return ids.map((id) => ns.codec.topics.name(id));
}

/** A consumed message as a {@link RawRecord} (headers as strings). */
export function rawRecord(topic: string, partition: number, m: KafkaMessage): RawRecord {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = v.toString();
  return { topic, partition, offset: m.offset, key: m.key?.toString('utf8') ?? '', value: m.value, timestamp: Number(m.timestamp), headers };
}
