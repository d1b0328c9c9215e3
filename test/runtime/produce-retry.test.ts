/**
 * A produce that fails on one broker while partition leadership moves, retried by kafkajs's
 * sendMessages. kafkajs 2.2.4 kept a send's acknowledgements per broker across retries, so on the
 * retry it skipped a broker that had answered whatever it now led and resent to any other broker
 * what it led now: a partition that moved to a broker which had answered was never written, and a
 * partition already written that moved away was written a second time under new sequence numbers
 * (inside a transaction: committed twice, the 3-broker chaos run's "wave 1 planned twice").
 * scripts/patch-kafkajs.js (postinstall) applies patches/kafkajs/sendMessages.diff; this drives the
 * installed file with a scripted cluster, no broker needed.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
type Entry = { topicName: string; partition: number; errorCode: number; baseOffset: string };
type SendMessages = (
  deps: Record<string, unknown>,
) => (args: {
  acks: number;
  timeout: number;
  compression?: number;
  topicMessages: Array<{ topic: string; messages: Array<{ key: string; value: string; partition: number }> }>;
}) => Promise<Entry[]>;
const sendMessages = require('kafkajs/src/producer/sendMessages') as SendMessages;
const createRetry = require('kafkajs/src/retry') as (o: Record<string, number>) => unknown;
const { KafkaJSProtocolError } = require('kafkajs/src/errors') as { KafkaJSProtocolError: new (e: Record<string, unknown>) => Error };
const { createErrorFromCode } = require('kafkajs/src/protocol/error') as { createErrorFromCode: (code: number) => Record<string, unknown> };

type Produced = { node: number; topic: string; partition: number; firstSequence: number; count: number };

/**
 * A cluster of three nodes and one topic of two partitions: p0 led by node 1, p1 by node 2. Node 2
 * answers the first produce with NOT_LEADER_FOR_PARTITION; the metadata refresh that follows says
 * that p0 moved to node 3 and p1 to node 1 (a broker restart moves several leaders at once).
 */
function scriptedCluster() {
  let leaders: Record<number, number> = { 0: 1, 1: 2 };
  const produced: Produced[] = [];
  const offsets = new Map<string, number>();
  const sequences = new Map<string, number>();
  let node2Failed = false;
  const broker = (nodeId: number) => ({
    nodeId,
    async produce({
      topicData,
    }: {
      topicData: Array<{ topic: string; partitions: Array<{ partition: number; firstSequence: number; messages: unknown[] }> }>;
    }) {
      if (nodeId === 2 && !node2Failed) {
        node2Failed = true;
        throw new KafkaJSProtocolError(createErrorFromCode(6));
      }
      const topics = topicData.map(({ topic, partitions }) => ({
        topicName: topic,
        partitions: partitions.map(({ partition, firstSequence, messages }) => {
          produced.push({ node: nodeId, topic, partition, firstSequence, count: messages.length });
          const key = `${topic}:${partition}`;
          const baseOffset = offsets.get(key) ?? 0;
          offsets.set(key, baseOffset + messages.length);
          return { partition, errorCode: 0, baseOffset: String(baseOffset) };
        }),
      }));
      return { topics };
    },
  });
  const brokers = new Map([1, 2, 3].map((id) => [id, broker(id)]));
  const cluster = {
    targetTopics: new Set<string>(),
    async addMultipleTargetTopics() {},
    async refreshMetadataIfNecessary() {},
    async refreshMetadata() {
      leaders = { 0: 3, 1: 1 };
    },
    isConnected: () => true,
    removeBroker() {},
    findTopicPartitionMetadata: () => Object.entries(leaders).map(([partitionId, leader]) => ({ partitionId: Number(partitionId), leader })),
    findLeaderForPartitions(_topic: string, partitions: string[]) {
      const result: Record<number, number[]> = {};
      for (const p of partitions) (result[leaders[Number(p)]!] ??= []).push(Number(p));
      return result;
    },
    async findBroker({ nodeId }: { nodeId: number | string }) {
      return brokers.get(Number(nodeId))!;
    },
  };
  const eosManager = {
    isTransactional: () => false,
    async acquireBrokerLock() {},
    async releaseBrokerLock() {},
    getSequence: (topic: string, partition: number) => sequences.get(`${topic}:${partition}`) ?? 0,
    updateSequence: (topic: string, partition: number, by: number) =>
      sequences.set(`${topic}:${partition}`, (sequences.get(`${topic}:${partition}`) ?? 0) + by),
    getProducerId: () => 7,
    getProducerEpoch: () => 0,
    getTransactionalId: () => undefined,
  };
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const send = sendMessages({
    logger: silent,
    cluster,
    partitioner: ({ message }: { message: { partition: number } }) => message.partition,
    eosManager,
    retrier: createRetry({ retries: 3, initialRetryTime: 1, maxRetryTime: 5 }),
  });
  return { send, produced };
}

test('a produce retried after a leader move writes every partition exactly once', async () => {
  const { send, produced } = scriptedCluster();
  const acks = await send({
    acks: -1,
    timeout: 1000,
    topicMessages: [
      {
        topic: 't',
        messages: [
          { key: 'a', value: 'x', partition: 0 },
          { key: 'b', value: 'y', partition: 1 },
        ],
      },
    ],
  });

  // p0 was written by node 1 on the first attempt; it must not be written again by its new leader.
  assert.deepEqual(
    produced.filter((p) => p.partition === 0).map((p) => p.node),
    [1],
    'p0 written once, by the leader that acknowledged it',
  );
  // p1 failed on node 2 and now belongs to node 1, which had already answered: it must still be sent.
  assert.deepEqual(
    produced.filter((p) => p.partition === 1).map((p) => ({ node: p.node, firstSequence: p.firstSequence })),
    [{ node: 1, firstSequence: 0 }],
    'p1 sent to its new leader with the sequence of the failed attempt',
  );
  assert.deepEqual(acks.map((a) => `${a.topicName}:${a.partition}`).sort(), ['t:0', 't:1'], 'one acknowledgement per partition');
});
