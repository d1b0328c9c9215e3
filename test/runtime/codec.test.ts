// test-needs: kafka
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Outcome } from '../../schemas/types.gen.ts';
import { outcome as makeOutcome } from '../../schemas/records.ts';
import { freshCluster } from '../helpers/cluster.ts';

test('the codec writes the bytes the registry client writes, and reads them back', async () => {
  const cluster = await freshCluster();
  const value: Outcome = makeOutcome({ thought_id: 'codec-1', task_id: 't-1', reason: 'all good — ✓', iterations: 3, steps_executed: 4 });
  const encoded = await cluster.codec.encode('outcomes', value);
  const schemaId = encoded.readInt32BE(1);
  assert.deepEqual(encoded, await cluster.codec.registry.encode(schemaId, value), 'same framing and Avro body as @kafkajs/confluent-schema-registry');
  assert.deepEqual({ ...(await cluster.codec.decode<Outcome>('outcomes', encoded)) }, value);
});

test('a value that does not fit the schema is refused with the field named, as before', async () => {
  const cluster = await freshCluster();
  const bad = { ...makeOutcome({ thought_id: 'codec-2', task_id: 't-2', reason: 'r', iterations: 1, steps_executed: 1 }), iterations: 'three' };
  await assert.rejects(
    cluster.codec.encode('outcomes', bad),
    (err: Error) => /iterations/.test(err.message) || /iterations/.test(JSON.stringify((err as { paths?: unknown }).paths)),
  );
});

test('records of any size encode to the registry client bytes, one after another (the scratch buffer grows and is reused)', async () => {
  const cluster = await freshCluster();
  // 100 B, 1.5 KiB (over avsc's own 1 KiB buffer), 40 KiB (over the codec's first scratch size), then small again.
  const sizes = [100, 1536, 40 * 1024, 200, 3000];
  for (const [i, size] of sizes.entries()) {
    const value: Outcome = makeOutcome({ thought_id: `codec-size-${i}`, task_id: 't', reason: 'é'.repeat(size / 2), iterations: i, steps_executed: i });
    const encoded = await cluster.codec.encode('outcomes', value);
    assert.deepEqual(encoded, await cluster.codec.registry.encode(encoded.readInt32BE(1), value), `${size}: same bytes as the registry client`);
    assert.deepEqual({ ...(await cluster.codec.decode<Outcome>('outcomes', encoded)) }, value, `${size}: reads back`);
  }
});
