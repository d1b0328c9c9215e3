/**
 * The local infra's cluster mode without starting anything: how nodes are laid out and named, the
 * port rule, the node count found from a running infra, and the replication a cluster's size gives.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InfraError, status, stopKafka } from '../../infra/local.ts';
import { replicationFor } from '../../topics/catalog.ts';

const ports = { kafkaPort: 19092, controllerPort: 19093, registryPort: 18081, log: () => undefined, env: process.env };

test('replication from the cluster size: 3 replicas and 2 in sync from 3 brokers up, one per broker below', () => {
  assert.deepEqual(replicationFor(1), { replicationFactor: 1, minInsyncReplicas: 1 });
  assert.deepEqual(replicationFor(2), { replicationFactor: 2, minInsyncReplicas: 1 });
  assert.deepEqual(replicationFor(3), { replicationFactor: 3, minInsyncReplicas: 2 });
  assert.deepEqual(replicationFor(5), { replicationFactor: 3, minInsyncReplicas: 2 });
  assert.throws(() => replicationFor(0), /brokers must be a positive integer, got 0/);
});

test('a 3-node infra names nodes kafka-1..3 on kafkaPort + 2(n-1); the single broker keeps its names', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tao-infra-opts-'));
  const cluster = await status({ dir, ...ports, brokers: 3 });
  assert.deepEqual(
    cluster.map((c) => [c.name, c.nodeId ?? null, c.url, c.running]),
    [
      ['kafka-1', 1, '127.0.0.1:19092', false],
      ['kafka-2', 2, '127.0.0.1:19094', false],
      ['kafka-3', 3, '127.0.0.1:19096', false],
      ['schema-registry', null, 'http://127.0.0.1:18081', false],
    ],
  );
  assert.equal(cluster[1]!.log, join(dir, 'logs', 'kafka-2.log'));
  const single = await status({ dir, ...ports, brokers: 1 });
  assert.deepEqual(
    single.map((c) => [c.name, c.url, c.log]),
    [
      ['kafka', '127.0.0.1:19092', join(dir, 'logs', 'kafka.log')],
      ['schema-registry', 'http://127.0.0.1:18081', join(dir, 'logs', 'schema-registry.log')],
    ],
  );
});

test('without brokers, the count recorded by up is used (status finds the running cluster)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tao-infra-opts-'));
  assert.equal((await status({ dir, ...ports })).length, 2, 'nothing recorded: one broker');
  mkdirSync(join(dir, 'run'));
  writeFileSync(join(dir, 'run', 'kafka.nodes'), '3\n');
  assert.deepEqual(
    (await status({ dir, ...ports })).map((c) => c.name),
    ['kafka-1', 'kafka-2', 'kafka-3', 'schema-registry'],
  );
});

test('bad cluster options are one CONFIG_INVALID line naming the problem', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tao-infra-opts-'));
  const invalid = (re: RegExp) => (err: unknown) => err instanceof InfraError && err.code === 'CONFIG_INVALID' && re.test(err.message);
  await assert.rejects(status({ dir, ...ports, brokers: 6 }), invalid(/brokers must be an integer from 1 to 5, got 6/));
  await assert.rejects(status({ dir, ...ports, brokers: 1.5 }), invalid(/brokers must be an integer/));
  // Node 2's client port would be node 1's controller port.
  await assert.rejects(status({ dir, ...ports, controllerPort: 19094, brokers: 3 }), invalid(/a 3-node cluster needs ports .* all different/));
  await assert.rejects(status({ dir, ...ports, registryPort: 19096, brokers: 3 }), invalid(/all different from each other and from registryPort/));
  await assert.rejects(stopKafka({ dir, ...ports, brokers: 3 }, { node: 4 }), invalid(/node must be a Kafka node id from 1 to 3, got 4/));
});
