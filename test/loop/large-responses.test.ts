// test-needs: kafka
/**
 * A tool whose catalog entry accepts responses larger than a wave's result record can hold
 * (`maxResponseBytes` 2 MiB here; the OpenAPI import's default is 1 MiB): the body counts twice in
 * the record (verbatim and parsed), and loop records are at most 960 KiB. Action writes the step as
 * a `too_large` error result instead of dead-lettering the wave, so the run still ends with an
 * outcome. The demo tool server (a SIMULATOR of the CRM API) pads its answer with `large_body`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import type { ActionResult } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, freshCluster, runTasks, scanToEnd, type TestCluster } from '../helpers/cluster.ts';

let tools: ToolServer;
let cluster: TestCluster;
let fleet: StageFleet;

before(async () => {
  tools = await startToolServer({ port: 0 });
  const dir = mkdtempSync(join(tmpdir(), 'tao-large-catalog-'));
  const catalogDir = new URL('../../tools/catalog/', import.meta.url).pathname;
  for (const file of readdirSync(catalogDir).filter((f) => f.endsWith('.json'))) {
    const spec = JSON.parse(readFileSync(join(catalogDir, file), 'utf8')) as Record<string, unknown>;
    if (spec.name === 'crm.find_customer') Object.assign(spec, { maxResponseBytes: 2 * 1024 * 1024, retry: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 10 } });
    writeFileSync(join(dir, file), JSON.stringify(spec));
  }
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url, TAO_TOOL_CATALOG_DIR: dir });
  fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
});

after(async () => {
  await fleet?.stop();
  await tools?.close();
});

test('a response too large for the wave record fails its step with too_large, and the run ends with an outcome', { timeout: 120000 }, async () => {
  tools.setFault({ route: 'crm.find_customer', mode: 'large_body', bytes: 700_000 });
  const task = buildTask({ text: 'order status for big@example.com', source: 'large', external_id: `${cluster.namespace}-big` });
  const outcomes = await fleet.explained(runTasks(cluster, [task], 90000), cluster);
  const outcome = outcomes.get(task.thought_id)!;
  assert.equal(outcome.status, 'failed');
  assert.equal(outcome.reason_code, 'step_failed');
  assert.match(outcome.reason, /crm\.find_customer.*response_too_large/);

  const records = await scanToEnd(cluster, ['actionResults']);
  const results = records.filter((r) => r.topic === 'actionResults').flatMap((r) => (r.value as unknown as ActionResult).results);
  assert.ok(results.length >= 1);
  for (const r of results) {
    assert.equal(r.tool, 'crm.find_customer');
    assert.equal(r.error?.type, 'too_large');
    assert.match(r.error!.message, /would make the wave's result record \d+ bytes, over the \d+-byte limit of loop records/);
    assert.equal(r.response_raw, null);
    assert.equal(r.status_code, 200, 'the tool answered; the record could not hold the answer');
  }
  // Every wave was handled before the outcome was written, so a dead letter would have been logged by now.
  assert.deepEqual(fleet.lines.filter((l) => l.includes('"msg":"record dead-lettered"')), [], 'no wave was dead-lettered');
  assert.ok(fleet.lines.some((l) => l.startsWith('action:') && l.includes('"msg":"output over the loop record limit; the stage wrote a smaller one instead"')));
});
