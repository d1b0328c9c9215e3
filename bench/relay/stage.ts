/**
 * One hop of the relay ceiling as a process: `node --import tsx bench/relay/stage.ts <hop>` with
 * TAO_NAMESPACE, KAFKA_BROKERS and TAO_TEST_RELAY_SIZES (JSON {@link RelaySizes}). The Kafka usage is the
 * StageRunner's (same client settings, consumer settings, co-partitioned assignment, one
 * transactional producer per input partition, chunked transactions with sendOffsets, and for the
 * hops whose stage pipelines its partitions the same {@link PartitionPipeline}), minus decoding,
 * deciding and encoding. Prints `{"msg":"relay started","ops_port":N}` when running and
 * serves GET /health (assigned partitions) and GET /metrics (process metrics, and the runner's
 * `tao_transactions_total` / `tao_records_in_total`) on that port.
 */
import type { EachBatchPayload, KafkaMessage, Message, Producer } from 'kafkajs';
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';
import { coPartitionedAssigner } from '../../runtime/assigner.ts';
import { loadRuntimeConfig, setting } from '../../runtime/config.ts';
import { createKafka, createProducer } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';
import { startOpsServer } from '../../runtime/ops-server.ts';
import { PartitionPipeline } from '../../runtime/pipeline.ts';
import { HOP_INPUTS, RELAY_HOPS, relayStep, relayTopics, type RelayHop, type RelaySizes } from './relay.ts';

/** A fixed header as long as the loop's `traceparent`, so records weigh the same on the wire. */
const TRACEPARENT = `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01`;

async function main(): Promise<void> {
  const hop = process.argv[2] as RelayHop;
  if (!RELAY_HOPS.includes(hop)) throw new Error(`usage: stage.ts <${RELAY_HOPS.join('|')}>`);
  const sizes = JSON.parse(process.env.TAO_TEST_RELAY_SIZES ?? '') as RelaySizes;
  const config = loadRuntimeConfig(process.env);
  const logger = createLogger({ stage: `relay-${hop}`, pid: process.pid });
  const kafka = createKafka(config, `relay-${hop}`, logger);
  const topics = relayTopics(config.namespace);
  const group = `${config.namespace}.relay-${hop}`;
  const { inputs, chunk: perTransaction, pipelined, partitionsConcurrently } = HOP_INPUTS[hop];
  const sessionTimeout = config.kafka.sessionTimeoutMs;
  const consumer = kafka.consumer({
    groupId: group,
    readUncommitted: false,
    sessionTimeout,
    heartbeatInterval: Math.max(500, Math.floor(sessionTimeout / 5)),
    rebalanceTimeout: Math.max(30000, sessionTimeout * 2),
    maxBytesPerPartition: 1024 * 1024,
    retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 10000 },
    partitionAssigners: [coPartitionedAssigner],
  });
  const producers = new Map<string, Promise<Producer>>();
  const producerFor = (topic: string, partition: number) => {
    const transactionalId = `${group}.${topic}.${partition}`;
    let p = producers.get(transactionalId);
    if (!p) {
      p = (async () => {
        const producer = createProducer(kafka, { transactionalId });
        await producer.connect();
        return producer;
      })();
      p.catch(() => producers.delete(transactionalId));
      producers.set(transactionalId, p);
    }
    return p;
  };
  // The StageRunner's transaction and input counters, under the same names, so the bench reports
  // the relay's records per transaction as it does the loop's.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const transactions = new Counter({ name: 'tao_transactions_total', help: 'Kafka transactions by result', labelNames: ['result'], registers: [registry] });
  const recordsIn = new Counter({ name: 'tao_records_in_total', help: 'Records consumed (committed)', registers: [registry] });
  let assigned: Record<string, number[]> = {};
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => (assigned = payload.memberAssignment));

  const outputsOf = (chunk: KafkaMessage[], partition: number): Map<string, Message[]> => {
    const byTopic = new Map<string, Message[]>();
    for (const m of chunk) {
      if (!m.value || m.value.length < 4) continue;
      for (const out of relayStep(hop, m.value, sizes)) {
        const name = topics[out.topic];
        let list = byTopic.get(name);
        if (!list) byTopic.set(name, (list = []));
        list.push({ key: m.key, value: out.value, headers: { traceparent: TRACEPARENT }, ...(out.topic === 'runs' ? { partition } : {}) });
      }
    }
    return byTopic;
  };
  /** One transaction: the outputs, and the input offset `next`. A failed one drops the partition's producer. */
  const commit = async (topic: string, partition: number, byTopic: Map<string, Message[]>, next: bigint, records: number) => {
    const producer = await producerFor(topic, partition);
    const txn = await producer.transaction();
    try {
      if (byTopic.size > 0) await txn.sendBatch({ topicMessages: [...byTopic].map(([t, messages]) => ({ topic: t, messages })) });
      await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition, offset: next.toString() }] }] });
      await txn.commit();
      transactions.inc({ result: 'committed' });
      recordsIn.inc(records);
    } catch (err) {
      await txn.abort().catch(() => undefined);
      const id = `${group}.${topic}.${partition}`;
      const p = producers.get(id);
      producers.delete(id);
      await (await p?.catch(() => null))?.disconnect().catch(() => undefined);
      throw err;
    }
  };

  // The pipelined hops: the StageRunner's pipelined mode without claims (the relay has no rebalances
  // to survive in a bench phase): chunks handed to the partition's pipeline, kafkajs fetching on,
  // chunks handled meanwhile merged into the next transaction, a batch held back while its
  // partition has twice a chunk's records uncommitted, and after a failure the partition paused and
  // read again from its last commit.
  type Chunk = { byTopic: Map<string, Message[]>; records: number };
  const pipelines = new Map<string, PartitionPipeline<Chunk>>();
  const paused = new Set<string>();
  const pipelineFor = (topic: string, partition: number) => {
    const key = `${topic}|${partition}`;
    let pipeline = pipelines.get(key);
    if (!pipeline) {
      pipeline = new PartitionPipeline<Chunk>({
        maxRecords: perTransaction,
        // Action's commit linger (its stage reads the same variable).
        lingerMs: setting(process.env, 'TAO_ACTION_COMMIT_LINGER_MS'),
        mergeable: () => true,
        commit: async (chunks, next) => {
          const byTopic = new Map<string, Message[]>();
          for (const c of chunks) {
            for (const [t, messages] of c.byTopic) {
              const merged = byTopic.get(t);
              if (merged) merged.push(...messages);
              else byTopic.set(t, messages.slice());
            }
          }
          await commit(
            topic,
            partition,
            byTopic,
            next,
            chunks.reduce((n, c) => n + c.records, 0),
          );
        },
      });
      pipelines.set(key, pipeline);
    }
    return pipeline;
  };
  const recover = async (topic: string, partition: number, pipeline: PartitionPipeline<Chunk>) => {
    await pipeline.drained();
    const resumeAt = pipeline.resumeAt;
    console.error(JSON.stringify({ level: 'warn', msg: 'relay chunk failed; reading the partition again', topic, partition, error: String(pipeline.failure) }));
    await new Promise((r) => setTimeout(r, 300));
    if (resumeAt !== null) consumer.seek({ topic, partition, offset: resumeAt.toString() });
    pipeline.reset();
    paused.delete(`${topic}|${partition}`);
    consumer.resume([{ topic, partitions: [partition] }]);
  };

  const eachBatch = async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload) => {
    const pipeline = pipelined ? pipelineFor(batch.topic, batch.partition) : null;
    for (let i = 0; i < batch.messages.length; i += perTransaction) {
      if (!isRunning() || isStale() || pipeline?.failure) return;
      const chunk = batch.messages.slice(i, i + perTransaction);
      const last = chunk[chunk.length - 1]!;
      const next = BigInt(last.offset) + 1n;
      if (pipeline) {
        const settled = pipeline.add(chunk.length, BigInt(chunk[0]!.offset), next, async () => ({
          byTopic: outputsOf(chunk, batch.partition),
          records: chunk.length,
        }));
        void settled.then(() => {
          const key = `${batch.topic}|${batch.partition}`;
          if (!pipeline.failure || paused.has(key)) return;
          paused.add(key);
          consumer.pause([{ topic: batch.topic, partitions: [batch.partition] }]);
          void recover(batch.topic, batch.partition, pipeline);
        });
        resolveOffset(last.offset);
        continue;
      }
      await commit(batch.topic, batch.partition, outputsOf(chunk, batch.partition), next, chunk.length);
      resolveOffset(last.offset);
      await heartbeat();
    }
    if (pipeline) await pipeline.below(2 * perTransaction);
  };

  const ops = await startOpsServer(setting(process.env, 'TAO_OPS_PORT') ?? 0, registry, () => ({ ok: true, stage: `relay-${hop}`, assigned }), config.bindHost);
  await consumer.connect();
  for (const input of inputs) await consumer.subscribe({ topic: topics[input], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: partitionsConcurrently, eachBatch });
  // Printed directly: it is the line the bench waits for, whatever the log level.
  console.log(JSON.stringify({ msg: 'relay started', group, ops_port: ops.port }));

  const stop = () => {
    // Chunks already in a pipeline commit before their producers go.
    const drained = consumer.disconnect().then(() => Promise.all([...pipelines.values()].map((p) => p.drained())));
    Promise.all([drained.then(() => Promise.all([...producers.values()].map(async (p) => (await p.catch(() => null))?.disconnect()))), ops.close()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: Error) => {
  console.error(JSON.stringify({ level: 'error', msg: 'relay failed', error: err.message }));
  process.exit(1);
});
