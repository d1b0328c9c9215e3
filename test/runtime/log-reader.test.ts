// test-needs: kafka
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { partitionForKey } from '../../runtime/partition.ts';
import { LogReader } from '../../runtime/log-reader.ts';
import { freshCluster } from '../helpers/cluster.ts';

test('partitionForKey gives the partition the producer put each keyed record on', { timeout: 60000 }, async () => {
  const cluster = await freshCluster();
  const topic = cluster.codec.topics.name('tasks');
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  const keys = Array.from({ length: 200 }, (_, i) => (i % 2 ? randomUUID() : `key-${i}-ä€`));
  const placed = await Promise.all(keys.map(async (key) => (await producer.send({ topic, acks: -1, messages: [{ key, value: 'x' }] }))[0]!.partition));
  await producer.disconnect();
  assert.deepEqual(
    keys.map((k) => partitionForKey(k, 6)),
    placed,
  );
  assert.ok(new Set(placed).size === 6, 'the keys spread over every partition');
});

test(
  'LogReader reads only committed records of the chosen partition range, and finishes on a range that ends in transaction markers',
  { timeout: 60000 },
  async () => {
    const cluster = await freshCluster();
    const topic = cluster.codec.topics.name('outcomes');
    const key = randomUUID();
    const partition = partitionForKey(key, 6);
    const producer = cluster.kafka.producer({ transactionalId: `reader-test-${randomUUID()}`, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const write = async (values: string[], commit: boolean) => {
      const txn = await producer.transaction();
      await txn.send({ topic, messages: values.map((value) => ({ key, value })) });
      await (commit ? txn.commit() : txn.abort());
    };
    await write(['a', 'b'], true);
    await write(['aborted'], false);
    await write(['c'], true);
    const other = await cluster.kafka.producer();
    await other.connect();
    // Another partition's record must not be read.
    const otherKey = [...Array(50).keys()].map((i) => `other-${i}`).find((k) => partitionForKey(k, 6) !== partition)!;
    await other.send({ topic, acks: -1, messages: [{ key: otherKey, value: 'elsewhere' }] });
    await other.disconnect();
    await producer.disconnect();

    const reader = await LogReader.connect(cluster.kafka);
    try {
      const offsets = await reader.offsets(topic);
      const p = offsets.find((o) => o.partition === partition)!;
      const lines: string[] = [];
      const records = await reader.read([{ topic, partition, from: p.low, to: p.high }], { timeoutMs: 30000, progress: (l) => lines.push(l) });
      assert.deepEqual(
        records.map((r) => r.value?.toString()),
        ['a', 'b', 'c'],
      );
      assert.ok(records.every((r) => r.key === key && r.partition === partition));
      assert.ok(
        lines.some((l) => l.includes(`${topic}[${partition}]`)),
        'progress names the partition read',
      );
      // A range that holds only markers and aborted records completes empty.
      const tail = await reader.read([{ topic, partition, from: String(BigInt(records[2]!.offset) + 1n), to: p.high }], { timeoutMs: 30000 });
      assert.deepEqual(tail, []);
    } finally {
      await reader.close();
    }
  },
);
