// test-needs: kafka
/**
 * The `manifest` fields (the release a run was made with: RunState.manifest in every loop record,
 * RunSnapshot.manifest, Outcome.manifest) are BACKWARD compatible: each value schema as it was
 * before them (rebuilt here by taking them out of today's) is registered first, then today's, under
 * one subject of the real registry, which checks the pair with BACKWARD compatibility; and a record
 * written before them decodes with today's schema, its manifest null.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { readValueSchema } from '../../runtime/codec.ts';
import type { Outcome } from '../../schemas/types.gen.ts';
import { outcome } from '../../schemas/records.ts';
import type { TopicId } from '../../topics/catalog.ts';
import { freshCluster } from '../helpers/cluster.ts';

/** `schema` without the manifest fields. */
function before(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(before);
  if (schema === null || typeof schema !== 'object') return schema;
  const s = { ...(schema as Record<string, unknown>) };
  if (s.type === 'record' && Array.isArray(s.fields))
    s.fields = (s.fields as Array<{ name: string }>).filter((f) => f.name !== 'manifest').map((f) => before(f));
  for (const [k, v] of Object.entries(s)) if (k !== 'fields' && typeof v === 'object') s[k] = before(v);
  return s;
}

test(
  'every loop record with a manifest field: a BACKWARD-compatible next version, and records written before it read with manifest null',
  { timeout: 60000 },
  async () => {
    const cluster = await freshCluster();
    const registry = cluster.codec.registry;
    for (const topic of ['thoughtRequests', 'actionResults', 'observationResults', 'outcomes', 'thoughtRuns'] as TopicId[]) {
      const subject = `${cluster.codec.topics.name(topic)}-manifest-evolution-value`;
      const today = readValueSchema(topic);
      const old = before(today);
      assert.notDeepEqual(old, today, `${topic}: the manifest field changed this schema`);
      await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(old) }, { subject });
      await fetch(`${cluster.config.registry.url}/config/${encodeURIComponent(subject)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
        body: JSON.stringify({ compatibility: 'BACKWARD' }),
      });
      const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(today) }, { subject });
      assert.ok(id > 0, `${topic}: today's schema registered as the next version`);
    }

    // An outcome written before the field, read by today's codec.
    const subject = `${cluster.codec.topics.name('outcomes')}-old-value`;
    const { id: oldId } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(before(readValueSchema('outcomes'))) }, { subject });
    const written = outcome({ thought_id: 'old', task_id: 't' });
    const { manifest: _, ...oldRecord } = written;
    const read = await cluster.codec.decode<Outcome>('outcomes', await registry.encode(oldId, oldRecord));
    assert.equal(read.manifest, null);
    assert.equal(read.thought_id, 'old');
  },
);
