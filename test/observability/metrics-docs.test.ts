/**
 * The metric catalog (METRIC_HELP), what the processes register, and the tables of
 * docs/OBSERVABILITY.md name the same metrics with the same types and labels: a metric added,
 * renamed or dropped in one of them and not the others fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { METRIC_HELP } from '../../runtime/metrics.ts';
import { everyRegistry } from './metrics-text.ts';

interface Row {
  type: string;
  labels: string;
}

/** The metric tables of docs/OBSERVABILITY.md: name → type and labels as written there. */
function documented(): Map<string, Row> {
  const doc = readFileSync(new URL('../../docs/OBSERVABILITY.md', import.meta.url), 'utf8');
  const rows = new Map<string, Row>();
  for (const m of doc.matchAll(/^\| `(tao_[a-z_]+)` \| (\w+) \|([^|]*)\|/gm)) rows.set(m[1]!, { type: m[2]!, labels: m[3]!.trim() });
  return rows;
}

/** Every tao_* metric the processes register (all optional parts on), with type and labels. */
async function registered(): Promise<Map<string, Row>> {
  const rows = new Map<string, Row>();
  for (const registry of everyRegistry())
    for (const { name } of registry.getMetricsAsArray()) {
      if (!name.startsWith('tao_')) continue;
      // prom-client keeps a metric's label names on the instance, not in what `get()` returns
      const metric = registry.getSingleMetric(name) as unknown as { get(): Promise<{ type: string }>; labelNames: string[] };
      rows.set(name, { type: String((await metric.get()).type), labels: metric.labelNames.join(', ') });
    }
  return rows;
}

test('every catalogued metric is registered and documented, with the documented type and labels, and nothing else is', async () => {
  const reg = await registered();
  const docs = documented();
  const catalog = Object.keys(METRIC_HELP).sort();
  assert.deepEqual([...reg.keys()].sort(), catalog, 'registered = catalogued');
  assert.deepEqual([...docs.keys()].sort(), catalog, 'documented = catalogued');
  for (const name of catalog) assert.deepEqual(docs.get(name), reg.get(name), `${name}: docs/OBSERVABILITY.md says what the process registers`);
});
