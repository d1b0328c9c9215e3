// test-needs: kafka
/**
 * The approval fields and symbols are BACKWARD compatible: each value schema as it was before them
 * (rebuilt here by taking them out of today's) is registered first, then today's, under one subject
 * of the real registry, which checks the pair with BACKWARD compatibility. Records written before
 * (v1) decode with today's schema.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { readValueSchema } from '../../runtime/codec.ts';
import type { TopicId } from '../../topics/catalog.ts';
import { freshCluster } from '../helpers/cluster.ts';

const ADDED_SYMBOLS = new Set(['awaiting_approval', 'approval_required', 'approval_denied', 'approval_timeout', 'DECISION']);
const ADDED_FIELDS = new Set(['approval', 'parked_steps', 'decision']);
/** Enums that had no default before a symbol was added to them. */
const DEFAULT_ADDED = new Set(['OutcomeStatus', 'RunStatus']);

/** `schema` without what the approvals added. */
function before(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(before);
  if (schema === null || typeof schema !== 'object') return schema;
  const s = { ...(schema as Record<string, unknown>) };
  if (s.type === 'enum' && Array.isArray(s.symbols)) {
    s.symbols = (s.symbols as string[]).filter((x) => !ADDED_SYMBOLS.has(x));
    if (DEFAULT_ADDED.has(String(s.name))) delete s.default;
    return s;
  }
  if (s.type === 'record' && Array.isArray(s.fields))
    s.fields = (s.fields as Array<{ name: string }>).filter((f) => !ADDED_FIELDS.has(f.name)).map((f) => before(f));
  for (const [k, v] of Object.entries(s)) if (k !== 'fields' && typeof v === 'object') s[k] = before(v);
  return s;
}

test(
  "tasks, outcomes, run snapshots and observation results: today's schema is a BACKWARD-compatible next version of the one before approvals",
  { timeout: 60000 },
  async () => {
    const cluster = await freshCluster();
    const registry = cluster.codec.registry;
    for (const topic of ['tasks', 'outcomes', 'thoughtRuns', 'observationResults'] as TopicId[]) {
      const subject = `${cluster.codec.topics.name(topic)}-evolution-value`;
      const today = readValueSchema(topic);
      const old = before(today);
      assert.notDeepEqual(old, today, `${topic}: the approvals changed this schema`);
      await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(old) }, { subject });
      await fetch(`${cluster.config.registry.url}/config/${encodeURIComponent(subject)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
        body: JSON.stringify({ compatibility: 'BACKWARD' }),
      });
      const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(today) }, { subject });
      assert.ok(id > 0, `${topic}: today's schema registered as the next version`);
    }
  },
);
