// test-needs: kafka
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { readValueSchema } from '../../runtime/codec.ts';
import type { Outcome } from '../../schemas/types.gen.ts';
import { freshCluster } from '../helpers/cluster.ts';
import { outcome as makeOutcome } from '../../schemas/records.ts';

type AvroRecordSchema = { fields: Array<Record<string, unknown>> } & Record<string, unknown>;

const outcome: Outcome = makeOutcome({ thought_id: 'evo-1', task_id: 't', reason: 'all good', iterations: 3, steps_executed: 4 });

test('a v2 value schema that adds an optional field is BACKWARD compatible, and v1 readers decode v2 records', async () => {
  const cluster = await freshCluster();
  const subject = `${cluster.codec.topics.name('outcomes')}-value`;
  const v1 = readValueSchema('outcomes') as AvroRecordSchema;
  const v2: AvroRecordSchema = { ...v1, fields: [...v1.fields, { name: 'cost_usd', type: ['null', 'double'], default: null }] };

  const registry = cluster.codec.registry;
  const { id: v2Id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v2) }, { subject });
  const v1Id = await registry.getRegistryIdBySchema(subject, { type: SchemaType.AVRO, schema: JSON.stringify(v1) });
  assert.notEqual(v2Id, v1Id, 'v2 is a new version of the subject');
  const config = (await (await fetch(`${cluster.config.registry.url}/config/${encodeURIComponent(subject)}`)).json()) as {
    compatibilityLevel?: string;
    compatibility?: string;
  };
  assert.equal(config.compatibilityLevel ?? config.compatibility, 'BACKWARD');

  // A writer on v2 adds the new field; our codec (a v1 reader) resolves it away and reads the rest.
  const written = await registry.encode(v2Id, { ...outcome, cost_usd: 0.42 });
  assert.equal(written.readInt32BE(1), v2Id, 'the record names the v2 schema id in its wire header');
  const read = await cluster.codec.decode<Outcome>('outcomes', written);
  assert.deepEqual({ ...read }, outcome, 'v1 fields read back unchanged, the v2 field dropped');
});

test('an incompatible change (a new required field) is rejected by the registry', async () => {
  const cluster = await freshCluster();
  const subject = `${cluster.codec.topics.name('outcomes')}-value`;
  const v1 = readValueSchema('outcomes') as AvroRecordSchema;
  const breaking: AvroRecordSchema = { ...v1, fields: [...v1.fields, { name: 'region', type: 'string' }] };
  await assert.rejects(
    cluster.codec.registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(breaking) }, { subject }),
    (err: Error & { status?: number }) => err.status === 409 || /incompatible/i.test(err.message),
  );
});
