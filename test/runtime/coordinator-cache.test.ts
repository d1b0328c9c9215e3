/**
 * kafkajs 2.2.4's transaction manager sent a FindCoordinator request before every AddPartitionsToTxn,
 * AddOffsetsToTxn, TxnOffsetCommit and EndTxn: nine round trips per transaction where five do.
 * scripts/patch-kafkajs.js (postinstall) applies patches/kafkajs/eosManager.diff, which finds each
 * coordinator once and looks again only after a request to it failed; this drives the installed
 * file with a scripted cluster, no broker needed.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
type EosManager = {
  initProducerId(): Promise<void>;
  beginTransaction(): void;
  addPartitionsToTransaction(topicData: Array<{ topic: string; partitions: Array<{ partition: number }> }>): Promise<void>;
  sendOffsets(args: { consumerGroupId: string; topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }> }): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
};
const createEosManager = require('kafkajs/src/producer/eosManager') as (deps: Record<string, unknown>) => EosManager;
const { KafkaJSProtocolError } = require('kafkajs/src/errors') as { KafkaJSProtocolError: new (e: Record<string, unknown>) => Error };
const { createErrorFromCode } = require('kafkajs/src/protocol/error') as { createErrorFromCode: (code: number) => Record<string, unknown> };
const NOT_COORDINATOR = 16;

/** Two nodes; the transaction and group coordinators are on `coordinator`, which a test may move. */
function scriptedCluster() {
  const state = { coordinator: 1, lookups: [] as string[], requests: [] as string[] };
  const broker = (nodeId: number) => {
    const answer = (api: string) => async () => {
      state.requests.push(`${api}@${nodeId}`);
      if (nodeId !== state.coordinator) throw new KafkaJSProtocolError(createErrorFromCode(NOT_COORDINATOR));
      return api === 'initProducerId' ? { producerId: 7, producerEpoch: 0 } : {};
    };
    return {
      nodeId,
      initProducerId: answer('initProducerId'),
      addPartitionsToTxn: answer('addPartitionsToTxn'),
      addOffsetsToTxn: answer('addOffsetsToTxn'),
      txnOffsetCommit: answer('txnOffsetCommit'),
      endTxn: answer('endTxn'),
    };
  };
  const brokers = new Map([1, 2].map((id) => [id, broker(id)]));
  const cluster = {
    retry: { retries: 1, initialRetryTime: 1, maxRetryTime: 5 },
    async refreshMetadataIfNecessary() {},
    async findBroker({ nodeId }: { nodeId: number }) {
      return brokers.get(nodeId)!;
    },
    async findGroupCoordinator({ groupId }: { groupId: string }) {
      state.lookups.push(groupId);
      return brokers.get(state.coordinator)!;
    },
  };
  const logger = { debug() {}, info() {}, warn() {}, error() {} };
  return { state, eos: createEosManager({ logger, cluster, transactional: true, transactionalId: 'tx-1' }) };
}

async function transaction(eos: EosManager): Promise<void> {
  eos.beginTransaction();
  await eos.addPartitionsToTransaction([{ topic: 'out', partitions: [{ partition: 0 }] }]);
  await eos.sendOffsets({ consumerGroupId: 'group-a', topics: [{ topic: 'in', partitions: [{ partition: 0, offset: '1' }] }] });
  await eos.commit();
}

test('three transactions look each coordinator up once: five requests per transaction, not nine', async () => {
  const { state, eos } = scriptedCluster();
  await eos.initProducerId();
  for (let i = 0; i < 3; i++) await transaction(eos);
  assert.deepEqual(state.lookups, ['tx-1', 'group-a'], 'one lookup of the transaction coordinator (at init) and one of the group coordinator');
  assert.equal(state.requests.filter((r) => r === 'endTxn@1').length, 3);
  assert.equal(state.requests.length, 1 + 3 * 4, 'InitProducerId, then AddPartitions, AddOffsets, TxnOffsetCommit and EndTxn per transaction');
});

test('a coordinator that moved fails one request; the next request finds the new one and keeps it', async () => {
  const { state, eos } = scriptedCluster();
  await eos.initProducerId();
  await transaction(eos);
  state.coordinator = 2;
  state.requests.length = 0;
  state.lookups.length = 0;
  eos.beginTransaction();
  await assert.rejects(eos.addPartitionsToTransaction([{ topic: 'out', partitions: [{ partition: 0 }] }]), /coordinator/i);
  await eos.abort();
  // The chunk's retry: the transaction coordinator is looked up again; the group coordinator's
  // stale answer fails TxnOffsetCommit once, which kafkajs retries against the one found anew.
  await transaction(eos);
  await transaction(eos);
  assert.deepEqual(state.lookups, ['tx-1', 'group-a']);
  assert.deepEqual(state.requests, [
    'addPartitionsToTxn@1',
    'addPartitionsToTxn@2',
    'addOffsetsToTxn@2',
    'txnOffsetCommit@1',
    'txnOffsetCommit@2',
    'endTxn@2',
    'addPartitionsToTxn@2',
    'addOffsetsToTxn@2',
    'txnOffsetCommit@2',
    'endTxn@2',
  ]);
});
