// test-needs: kafka
/**
 * What the records gained since 0.1.0 is BACKWARD compatible: each value schema as it was before
 * (rebuilt here by taking the additions out of today's: the `dead_letter`, `parked_ttl_ms`, `timer`,
 * `interrupt_id` and `edited_input_json` fields, the `expired`, `dead_letter`, `parked_expired`,
 * `observation_deadline`, `TIMER`, `cancelled` and `CANCEL` symbols) is registered first, then
 * today's, under one subject of the real registry, which checks the pair with BACKWARD
 * compatibility; and a record written before decodes with today's schema.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import avro from 'avsc';
import { readValueSchema } from '../../runtime/codec.ts';
import type { TopicId } from '../../topics/catalog.ts';
import { freshCluster } from '../helpers/cluster.ts';
import { outcome } from '../../schemas/records.ts';

const ADDED_SYMBOLS = new Set(['expired', 'dead_letter', 'parked_expired', 'observation_deadline', 'TIMER', 'cancelled', 'CANCEL']);
const ADDED_FIELDS = new Set(['dead_letter', 'parked_ttl_ms', 'timer', 'interrupt_id', 'edited_input_json']);

/** `schema` without what every-run-ends added. */
function before(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(before);
  if (schema === null || typeof schema !== 'object') return schema;
  const s = { ...(schema as Record<string, unknown>) };
  if (s.type === 'enum' && Array.isArray(s.symbols)) {
    s.symbols = (s.symbols as string[]).filter((x) => !ADDED_SYMBOLS.has(x));
    return s;
  }
  if (s.type === 'record' && Array.isArray(s.fields))
    s.fields = (s.fields as Array<{ name: string }>).filter((f) => !ADDED_FIELDS.has(f.name)).map((f) => before(f));
  for (const [k, v] of Object.entries(s)) if (k !== 'fields' && typeof v === 'object') s[k] = before(v);
  return s;
}

const TOPICS: TopicId[] = ['tasks', 'actionResults', 'observationResults', 'outcomes', 'thoughtRuns'];

test("every record the change touched: today's schema is a BACKWARD-compatible next version of the one before it", { timeout: 60000 }, async () => {
  const cluster = await freshCluster();
  const registry = cluster.codec.registry;
  for (const topic of TOPICS) {
    const subject = `${cluster.codec.topics.name(topic)}-every-run-ends-value`;
    const today = readValueSchema(topic);
    const old = before(today);
    assert.notDeepEqual(old, today, `${topic}: the change touched this schema`);
    await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(old) }, { subject });
    await fetch(`${cluster.config.registry.url}/config/${encodeURIComponent(subject)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ compatibility: 'BACKWARD' }),
    });
    const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(today) }, { subject });
    assert.ok(id > 0, `${topic}: today's schema registered as the next version`);
  }
});

test('an outcome written before the change reads with the new fields at their defaults; an old reader maps expired to its enum default', () => {
  const today = avro.Type.forSchema(readValueSchema('outcomes') as avro.Schema);
  const old = avro.Type.forSchema(before(readValueSchema('outcomes')) as avro.Schema);
  const { dead_letter: _none, ...written } = outcome({ thought_id: 'r', task_id: 't' });
  const read = today.fromBuffer(old.toBuffer(written), today.createResolver(old)) as { dead_letter: unknown; status: string };
  assert.equal(read.dead_letter, null);
  const expired = old.fromBuffer(
    today.toBuffer(outcome({ thought_id: 'r', task_id: 't', status: 'expired', reason_code: 'parked_expired' })),
    old.createResolver(today),
  ) as {
    status: string;
    reason_code: string;
  };
  assert.deepEqual([expired.status, expired.reason_code], ['escalated', 'unspecified']);
});
