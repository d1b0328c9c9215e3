/**
 * The relay ceiling: the loop's topology and Kafka usage with no logic and no Avro. Three hops
 * (`thought`, `action`, `observation`), each a separate process and consumer group, each a
 * read_committed consume → produce → sendOffsets → commit relay with one transactional producer
 * per input partition and the loop's chunk sizes. A run is a task that goes round the ring
 * `iterations` times and ends with an outcome; it writes the records the loop writes (Thought's
 * `thought.runs` snapshot with every dispatched wave and with the outcome included), each of the
 * byte size the loop's record at that point has (calibrated from a loop run), so the difference to
 * the loop is the work the loop does per record, and Thought's store tail, a consumer of
 * `thought.runs` the relay does not run (the loop's design, not Kafka's, needs it). Whatever the
 * loop reaches is measured against this.
 */
import { randomUUID } from 'node:crypto';
import type { Admin, Kafka, Message, Producer } from 'kafkajs';
import { REPO_ROOT, type ProcessSpec } from '../lib/harness.ts';
import { emptyTimeline, type LoadTarget, type RawRecord, type RunTimeline } from '../lib/load.ts';

/** Record kinds, in byte 1 of every relay value. */
export const KIND = { task: 0, request: 1, result: 2, observation: 3, outcome: 4, snapshot: 5 } as const;

/** Value sizes in bytes, per record kind and (for ring records) per iteration, taken from the loop. */
export interface RelaySizes {
  iterations: number;
  task: number;
  /** Index i: the record of iteration i + 1. */
  request: number[];
  result: number[];
  observation: number[];
  outcome: number;
  /** Index i: the `thought.runs` snapshot written with wave i + 1's request (Thought writes one per dispatched wave). */
  snapshot: number[];
  /** The snapshot written with the outcome. */
  snapshotEnd: number;
}

/** The relay's hops, named after the loop stage each stands in for. */
export type RelayHop = 'thought' | 'action' | 'observation';
export const RELAY_HOPS: readonly RelayHop[] = ['thought', 'action', 'observation'];

/** The relay's topics in namespace `ns` (same partition count as the loop's). */
export function relayTopics(ns: string) {
  const t = (name: string) => `${ns}.relay.${name}`;
  return { tasks: t('tasks'), requests: t('requests'), results: t('results'), observations: t('observations'), outcomes: t('outcomes'), runs: t('runs') };
}

/**
 * What each hop reads, its records per transaction, whether it pipelines its partitions
 * (runtime/pipeline.ts) and how many partitions' batches it takes at once: the loop's stage
 * settings (processors/<stage>/stage.ts; the runner's default of 3 where a stage sets none).
 */
export const HOP_INPUTS: Record<
  RelayHop,
  { inputs: Array<keyof ReturnType<typeof relayTopics>>; chunk: number; pipelined: boolean; partitionsConcurrently: number }
> = {
  thought: { inputs: ['tasks', 'observations'], chunk: 200, pipelined: false, partitionsConcurrently: 3 },
  action: { inputs: ['requests'], chunk: 100, pipelined: true, partitionsConcurrently: 12 },
  observation: { inputs: ['results'], chunk: 200, pipelined: false, partitionsConcurrently: 3 },
};

/** Creates the relay's topics (6 partitions, like the loop's) and waits until every partition has a leader. */
export async function createRelayTopics(admin: Admin, ns: string, partitions: number): Promise<void> {
  const topics = Object.values(relayTopics(ns));
  // kafkajs' own waitForLeaders gives up on UNKNOWN_TOPIC_OR_PARTITION, which a busy broker answers for a moment.
  await admin.createTopics({ waitForLeaders: false, topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })) });
  const deadline = Date.now() + 60000;
  for (;;) {
    try {
      const { topics: meta } = await admin.fetchTopicMetadata({ topics });
      if (meta.every((t) => t.partitions.length === partitions && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline) throw new Error(`relay topics of ${ns} have no leaders after 60 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A relay value: 'R', kind, iteration (u16), then padding up to `size` bytes. */
export function relayValue(kind: number, iteration: number, size: number): Buffer {
  const b = Buffer.alloc(Math.max(4, size));
  b[0] = 0x52;
  b[1] = kind;
  b.writeUInt16BE(iteration, 2);
  return b;
}

/** The records a hop writes for one input value (the ring's routing, nothing else). */
export function relayStep(hop: RelayHop, value: Buffer, sizes: RelaySizes): Array<{ topic: keyof ReturnType<typeof relayTopics>; value: Buffer }> {
  const kind = value[1];
  const iteration = value.readUInt16BE(2);
  switch (hop) {
    case 'thought':
      // Every dispatched wave is recorded in the store, so that a wave is decided on once.
      if (kind === KIND.task)
        return [
          { topic: 'requests', value: relayValue(KIND.request, 1, sizes.request[0]!) },
          { topic: 'runs', value: relayValue(KIND.snapshot, 1, sizes.snapshot[0]!) },
        ];
      if (iteration < sizes.iterations)
        return [
          { topic: 'requests', value: relayValue(KIND.request, iteration + 1, sizes.request[iteration]!) },
          { topic: 'runs', value: relayValue(KIND.snapshot, iteration + 1, sizes.snapshot[iteration]!) },
        ];
      return [
        { topic: 'outcomes', value: relayValue(KIND.outcome, iteration, sizes.outcome) },
        { topic: 'runs', value: relayValue(KIND.snapshot, iteration, sizes.snapshotEnd) },
      ];
    case 'action':
      return [{ topic: 'results', value: relayValue(KIND.result, iteration, sizes.result[iteration - 1]!) }];
    case 'observation':
      return [{ topic: 'observations', value: relayValue(KIND.observation, iteration, sizes.observation[iteration - 1]!) }];
  }
}

/** `node --import tsx bench/relay/stage.ts <hop>` as a fleet process. */
export function relayHopSpec(hop: RelayHop, env: NodeJS.ProcessEnv, sizes: RelaySizes): ProcessSpec {
  return {
    name: `relay-${hop}`,
    args: ['--import', 'tsx', `${REPO_ROOT}bench/relay/stage.ts`, hop],
    env: { ...env, TAO_TEST_RELAY_SIZES: JSON.stringify(sizes) },
    ready: (line) => (line.includes('"msg":"relay started"') ? (JSON.parse(line) as { ops_port: number }).ops_port : null),
  };
}

/** The relay as a load target: raw task records in, raw outcome records followed. */
export function relayTarget(kafka: Kafka, producer: Producer, ns: string, sizes: RelaySizes): LoadTarget {
  const topics = relayTopics(ns);
  return {
    submit: async (ids) => {
      const messages: Message[] = ids.map((id) => ({ key: id, value: relayValue(KIND.task, 0, sizes.task) }));
      await producer.send({ topic: topics.tasks, acks: -1, messages });
    },
    follow: async (onOutcome) => {
      const consumer = kafka.consumer({ groupId: `bench-relay-follow-${randomUUID()}`, readUncommitted: false });
      const admin = kafka.admin();
      await admin.connect();
      const ends = await admin.fetchTopicOffsets(topics.outcomes);
      await admin.disconnect();
      await consumer.connect();
      await consumer.subscribe({ topic: topics.outcomes, fromBeginning: true });
      await consumer.run({ autoCommit: false, eachMessage: async ({ message }) => onOutcome(message.key?.toString('utf8') ?? '', 'completed') });
      for (const e of ends) consumer.seek({ topic: topics.outcomes, partition: e.partition, offset: e.high });
      return { stop: () => consumer.disconnect() };
    },
  };
}

/** Run timelines from the relay's log (tasks, requests, outcomes). */
export function relayTimelines(records: readonly RawRecord[], ns: string): Map<string, RunTimeline> {
  const topics = relayTopics(ns);
  const runs = new Map<string, RunTimeline>();
  const get = (key: string) => {
    let t = runs.get(key);
    if (!t) runs.set(key, (t = emptyTimeline()));
    return t;
  };
  for (const r of records) {
    if (!r.value) continue;
    if (r.topic === topics.tasks) get(r.key).startedAt = r.timestamp;
    else if (r.topic === topics.requests) get(r.key).waves[r.value.readUInt16BE(2) - 1] = r.timestamp;
    else if (r.topic === topics.results) get(r.key).results[r.value.readUInt16BE(2) - 1] = r.timestamp;
    else if (r.topic === topics.observations) get(r.key).verdicts[r.value.readUInt16BE(2) - 1] = r.timestamp;
    else if (r.topic === topics.outcomes) Object.assign(get(r.key), { endedAt: r.timestamp, status: 'completed' });
  }
  return runs;
}
