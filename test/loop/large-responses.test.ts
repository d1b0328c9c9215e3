// test-needs: kafka
/**
 * A tool whose catalog entry accepts responses larger than a wave's result record can hold
 * (`maxResponseBytes` 2 MiB here; the OpenAPI import's default is 1 MiB): the body counts twice in
 * the record (verbatim and parsed), and loop records are at most 960 KiB. Action writes the step as
 * a `too_large` error result instead of dead-lettering the wave, so the run still ends with an
 * outcome. The demo tool server (a SIMULATOR of the CRM API) pads its answer with `large_body`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import type { ActionResult } from '../../schemas/types.gen.ts';
import { catalogCopy } from '../helpers/catalog.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';

let loop: RunningLoop;

before(async () => {
  const dir = catalogCopy('tao-large-catalog', (spec) => {
    if (spec.name === 'crm.find_customer')
      Object.assign(spec, { maxResponseBytes: 2 * 1024 * 1024, retry: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 10 } });
  });
  loop = await startLoop({ TAO_TOOL_CATALOG_DIR: dir });
});

after(async () => {
  await loop?.stop();
});

test('a response too large for the wave record fails its step with too_large, and the run ends with an outcome', { timeout: 120000 }, async () => {
  loop.tools.setFault({ route: 'crm.find_customer', mode: 'large_body', bytes: 700_000 });
  const task = buildTask({ text: 'order status for big@example.com', source: 'large', external_id: `${loop.cluster.namespace}-big` });
  const outcomes = await loop.fleet.explained(runTasks(loop.cluster, [task], 90000), loop.cluster);
  const outcome = outcomes.get(task.thought_id)!;
  assert.equal(outcome.status, 'failed');
  assert.equal(outcome.reason_code, 'step_failed');
  assert.match(outcome.reason, /crm\.find_customer.*response_too_large/);

  const records = await scanToEnd(loop.cluster, ['actionResults']);
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
  assert.deepEqual(
    loop.fleet.lines.filter((l) => l.includes('"msg":"record dead-lettered"')),
    [],
    'no wave was dead-lettered',
  );
  assert.ok(
    loop.fleet.lines.some((l) => l.startsWith('action:') && l.includes('"msg":"output over the loop record limit; the stage wrote a smaller one instead"')),
  );
});
