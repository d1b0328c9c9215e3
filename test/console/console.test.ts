// test-needs: kafka, chromium
/**
 * The operator console (`tao ui`) driven in a real Chromium (playwright-core against the Debian
 * chromium the runner installs), on the real broker and registry with the three stages running as
 * processes, the ReAct planner and the scripted model SIMULATOR (model-sim/: it is not a model),
 * and the demo tool server. Each test writes a screenshot of its page into docs/console/.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { startConsole, type RunningConsole } from '../../console/cli.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { dlqCommand, replayCommand } from '../../replay/cli.ts';
import type { DlqListing } from '../../replay/dlq.ts';
import { LogReader } from '../../runtime/log-reader.ts';
import { REDRIVEN_FROM_HEADER } from '../../replay/record-format.ts';
import type { Timeline } from '../../replay/timeline.ts';
import { createLogger } from '../../runtime/log.ts';
import type { Task } from '../../schemas/types.gen.ts';
import { orderById } from '../../tool-server/data.ts';
import { followOutcomes, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { runCli } from '../replay/helpers.ts';
import { launchChromium, opsEndpoints, SCREENSHOTS } from './browser.ts';

let sim: ModelSim;
let loop: RunningLoop;
let ui: RunningConsole;
let browser: Browser;
const tickets: Record<'en' | 'zh', Task> = {} as Record<'en' | 'zh', Task>;

before(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_LLM_BASE_URL: `${sim.url}/v1`,
    TAO_LLM_MODEL: 'sim-1',
    TAO_LLM_TIMEOUT_MS: '10000',
    TAO_APPROVAL_RULES: 'refunds.create:amount_cents>5000',
  });
  ui = await startConsole(
    { ...loop.cluster.env, TAO_STATUS_ENDPOINTS: opsEndpoints(loop.fleet.lines).join(',') },
    { host: '127.0.0.1', port: 0, readTimeoutMs: 60000, logger: createLogger({ test: 'console' }, { level: 'warn' }) },
  );
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await ui?.stop();
  await loop?.stop();
  await sim?.close();
});

async function open(path: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on('pageerror', (err) => assert.fail(`page error on ${path}: ${err.message}`));
  const res = await page.goto(`${ui.url}${path}`);
  assert.equal(res?.status(), 200);
  return page;
}

async function replayJson(thoughtId: string): Promise<Timeline> {
  const { code, stdout, stderr } = await runCli(replayCommand, [thoughtId, '--format', 'json'], loop.cluster.env);
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout) as Timeline;
}

test(
  'a submitted run appears on the runs page and its outcome updates without a reload; counts by status; ZH and EN tickets',
  { timeout: 180000 },
  async () => {
    const page = await open('/');
    await page.waitForSelector('#live.on');
    // A reload would start a new document without this mark.
    await page.evaluate(() => ((window as unknown as { loadedOnce: boolean }).loadedOnce = true));
    tickets.en = buildTask({
      text: 'Where is my order O-12345678? It was a birthday present.',
      source: 'helpdesk',
      external_id: `EN-${loop.cluster.namespace}`,
    });
    tickets.zh = buildTask({ text: '我的订单 O-87654321 到哪了？生日礼物，很着急。', source: 'helpdesk', external_id: `ZH-${loop.cluster.namespace}` });
    const follower = await followOutcomes(loop.cluster);
    const producer = loop.cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, loop.cluster.codec, [tickets.en, tickets.zh]);
    await producer.disconnect();
    for (const t of Object.values(tickets)) await page.waitForSelector(`tr.run[data-thought-id="${t.thought_id}"]`, { timeout: 60000 });
    await loop.fleet.explained(follower.waitFor(2, 150000), loop.cluster);
    await follower.stop();
    for (const t of Object.values(tickets)) {
      const status = (follower.outcomes.get(t.thought_id)!.value as unknown as { status: string }).status;
      assert.equal(status, 'completed', `${t.text}: ${JSON.stringify(follower.outcomes.get(t.thought_id)!.value)}`);
      await page.waitForSelector(`tr.run[data-thought-id="${t.thought_id}"][data-status="completed"]`, { timeout: 30000 });
    }
    assert.equal(await page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce), true, 'the page was never reloaded');
    assert.equal(await page.textContent('[data-count="completed"] b'), '2');
    const zhRow = await page.textContent(`tr.run[data-thought-id="${tickets.zh.thought_id}"]`);
    assert.match(zhRow!, /我的订单 O-87654321 到哪了/);
    assert.match(zhRow!, /order-status@1/);
    await page.screenshot({ path: join(SCREENSHOTS, 'runs.png'), fullPage: true });
    // Search by external id, then by a thought_id prefix; clear it; filter by a count's status.
    await page.fill('input[name=q]', tickets.zh.external_id!.toLowerCase());
    await page.waitForFunction(
      (id) => [...document.querySelectorAll('#runs tbody tr.run')].map((r) => (r as HTMLElement).dataset.thoughtId).join() === id,
      tickets.zh.thought_id,
    );
    await page.fill('input[name=q]', tickets.en.thought_id.slice(0, 12));
    await page.waitForFunction(
      (id) => [...document.querySelectorAll('#runs tbody tr.run')].map((r) => (r as HTMLElement).dataset.thoughtId).join() === id,
      tickets.en.thought_id,
    );
    assert.match(page.url(), new RegExp(`q=${tickets.en.thought_id.slice(0, 12)}`), 'the filters are in the address, so a view can be shared');
    await page.fill('input[name=q]', '');
    await page.selectOption('select[name=status]', 'failed');
    await page.waitForFunction(
      () => document.querySelectorAll('#runs tbody tr.run').length === 0 && document.querySelector('#runs-meta')?.textContent?.startsWith('0 run(s)'),
    );
    await page.click('[data-count="completed"]');
    await page.waitForFunction(() => document.querySelectorAll('#runs tbody tr.run[data-status="completed"]').length === 2);
    await page.close();
  },
);

test('the run page shows every step and model turn that tao replay --format json shows, and verify finds no drift', { timeout: 120000 }, async () => {
  assert.ok(tickets.zh, 'runs were submitted by the first test');
  const timeline = await replayJson(tickets.zh.thought_id);
  const page = await open(`/runs/${tickets.zh.thought_id}`);
  await page.waitForSelector('#report .wave');
  const shown = await page.$$eval('#report tr.step', (rows) => rows.map((r) => `${(r as HTMLElement).dataset.iteration}/${(r as HTMLElement).dataset.step}`));
  const replayed = timeline.iterations.flatMap((w) => w.steps.map((s) => `${s.iteration}/${s.step_id}`));
  assert.ok(replayed.length >= 3, `a ReAct run has turns and tool calls: ${replayed.join(' ')}`);
  assert.deepEqual(shown, replayed);
  const turns = await page.$$eval('#report details.model-turn', (ds) => ds.map((d) => (d as HTMLElement).dataset.step));
  const modelSteps = timeline.iterations.flatMap((w) => w.steps.filter((s) => s.tool.startsWith('model.')).map((s) => s.step_id));
  assert.ok(modelSteps.length >= 2, 'the run has model turns');
  assert.deepEqual(turns, modelSteps);
  const sections = await page.$$eval('#report details.model-turn table.sections', (ts) => ts.map((t) => t.textContent ?? ''));
  assert.equal(sections.length, modelSteps.length, 'each model turn shows its prompt sections');
  for (const text of sections) assert.match(text, /system.*skill.*results.*history.*generation/s);
  assert.match((await page.textContent('#report #tasks'))!, /我的订单 O-87654321 到哪了/);
  assert.match((await page.textContent('#report #outcome'))!, /completed/);

  await page.click('#verify');
  await page.waitForSelector('#verify-verdict', { timeout: 60000 });
  assert.match((await page.textContent('#verify-verdict'))!, /^No drift/);
  assert.match((await page.textContent('#verify-report'))!, /NO DRIFT/);
  await page.click('#report details.model-turn summary');
  await page.screenshot({ path: join(SCREENSHOTS, 'run.png'), fullPage: true });
  await page.close();
});

test('fork from a wave makes a new run, linked to its parent, that completes (seen live on its page)', { timeout: 150000 }, async () => {
  assert.ok(tickets.en, 'runs were submitted by the first test');
  const page = await open(`/runs/${tickets.en.thought_id}`);
  await page.waitForSelector('#report .wave');
  await page.selectOption('#fork-point', '2');
  await page.click('#fork');
  await page.waitForSelector('#fork-result a', { timeout: 60000 });
  const forkId = (await page.textContent('#fork-result a'))!.trim();
  assert.notEqual(forkId, tickets.en.thought_id);
  await page.click('#fork-result a');
  await page.waitForURL(`**/runs/${forkId}`);
  await page.waitForFunction(() => document.querySelector('#report header .status')?.textContent?.includes('completed'), undefined, { timeout: 120000 });
  assert.match((await page.textContent('#report header'))!, new RegExp(`forked from\\s*${tickets.en.thought_id} at 2`));
  const fork = await replayJson(forkId);
  assert.equal(fork.status, 'completed');
  assert.equal(fork.forked_from?.thought_id, tickets.en.thought_id);
  await page.close();
});

test('a dead letter is re-driven once from the dead-letters page; a second re-drive writes nothing', { timeout: 150000 }, async () => {
  assert.ok(tickets.en, 'runs were submitted by the first test');
  const key = tickets.en.thought_id;
  const producer = loop.cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await producer.send({
    topic: loop.cluster.codec.topics.name('thoughtRequests'),
    acks: -1,
    messages: [{ key, value: Buffer.from('garbage, not a request 这不是请求') }],
  });
  await producer.disconnect();
  const deadline = Date.now() + 60000;
  let listing: DlqListing | null = null;
  while (Date.now() < deadline && !listing?.entries.some((e) => e.key === key)) {
    listing = JSON.parse((await runCli(dlqCommand, ['list', '--format', 'json'], loop.cluster.env)).stdout) as DlqListing;
    if (!listing.entries.some((e) => e.key === key)) await new Promise((r) => setTimeout(r, 500));
  }
  const dead = listing!.entries.find((e) => e.key === key);
  assert.ok(dead, 'Action dead-lettered the garbage');
  const row = `tr.dead-letter[data-topic="${dead.ref.topic}"][data-partition="${dead.ref.partition}"][data-offset="${dead.ref.offset}"]`;

  const page = await open('/dead-letters');
  await page.waitForSelector(row);
  assert.match((await page.textContent(row))!, /DECODE_FAILED/);
  await page.check(`${row} input`);
  await page.click('#redrive');
  await page.waitForSelector('#redrive-summary');
  assert.deepEqual(await page.$eval('#redrive-summary', (e) => [(e as HTMLElement).dataset.now, (e as HTMLElement).dataset.before]), ['1', '0']);
  await page.waitForSelector(`${row}[data-redriven="true"]`);
  await page.screenshot({ path: join(SCREENSHOTS, 'dead-letters.png'), fullPage: true });

  await page.check(`${row} input`);
  await page.click('#redrive');
  await page.waitForFunction(() => document.querySelector('#redrive-summary')?.getAttribute('data-before') === '1');
  assert.equal(await page.$eval('#redrive-summary', (e) => (e as HTMLElement).dataset.now), '0');
  // The log: one copy of the dead letter went back to thought.requests, not two.
  const ref = `${dead.ref.topic}/${dead.ref.partition}/${dead.ref.offset}`;
  const reader = await LogReader.connect(loop.cluster.kafka);
  try {
    const topic = loop.cluster.codec.topics.name('thoughtRequests');
    const ranges = (await reader.offsets(topic)).map((p) => ({ topic, partition: p.partition, from: p.low, to: p.high }));
    const copies = await reader.read(ranges, { filter: (r) => r.headers[REDRIVEN_FROM_HEADER] === ref });
    assert.equal(copies.length, 1);
  } finally {
    await reader.close();
  }
  await page.close();
});

test(
  'approve on the page of a run awaiting approval lets the parked refund run once; reply on a run awaiting input continues it',
  { timeout: 240000 },
  async () => {
    const refund = buildTask({
      text: 'Please refund my order O-20250002, it arrived broken.',
      source: 'helpdesk',
      external_id: `REFUND-${loop.cluster.namespace}`,
    });
    const ask = buildTask({
      text: 'My order has not arrived yet. Can you check where it is?',
      source: 'helpdesk',
      external_id: `ASK-${loop.cluster.namespace}`,
    });
    const producer = loop.cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, loop.cluster.codec, [refund, ask]);
    await producer.disconnect();
    const refunds = () => loop.tools.stats().requests.filter((r) => r.route === 'refunds.create').length;

    const page = await open(`/runs/${refund.thought_id}`);
    await page.waitForSelector('#decide:not([hidden]) #approve', { timeout: 120000 });
    const pending = await page.$$eval('#report tr.approval-call[data-decision="pending"]', (rows) => rows.map((r) => r.textContent ?? ''));
    assert.equal(pending.length, 1);
    assert.match(pending[0]!, /refunds\.create.*O-20250002.*amount_cents \d+ > 5000/s);
    assert.equal(refunds(), 0, 'nothing reached the tool while the run awaits approval');
    // A decision for a run that does not await one is refused, not written.
    const refused = await page.evaluate(
      async (id) => (await fetch(`/api/runs/${id}/approve`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status,
      tickets.en?.thought_id ?? 'none',
    );
    assert.equal(refused, 409);
    // Each pending call by its interrupt id, with its arguments prefilled in an editor.
    const order = orderById('O-20250002');
    const call = page.locator(`#decide .pending-call[data-interrupt^="i-"]`);
    assert.match((await call.textContent())!, /refunds\.create/);
    await call.locator('.edit').click();
    assert.deepEqual(JSON.parse(await call.locator('.arguments').inputValue()), { order_id: 'O-20250002', amount_cents: order.total_cents });
    // An edit over the order's total: the skill's policy refuses it by name, and the page says so.
    await call.locator('.arguments').fill(JSON.stringify({ order_id: 'O-20250002', amount_cents: order.total_cents + 100 }));
    await call.locator('.approve-edited').click();
    await page.waitForSelector('#decision-error');
    assert.match((await page.textContent('#decision-error'))!, /refund_within_order_total/);
    const edited = Math.floor(order.total_cents / 2);
    await call.locator('.arguments').fill(JSON.stringify({ order_id: 'O-20250002', amount_cents: edited }));
    await page.fill('#decision-reason', 'checked the photos: approved');
    await page.screenshot({ path: join(SCREENSHOTS, 'approval.png'), fullPage: true });
    await call.locator('.approve-edited').click();
    await page.waitForSelector('#decision-result');
    await page.waitForFunction(() => document.querySelector('#report header .status')?.getAttribute('data-status') === 'completed', undefined, {
      timeout: 120000,
    });
    assert.ok(await page.isHidden('#decide'), 'the decision panel goes once the run goes on');
    assert.equal(refunds(), 1, 'the approved refund ran once');
    const approved = await replayJson(refund.thought_id);
    const decision = approved.tasks.find((t) => t.kind === 'DECISION');
    assert.match(decision?.text ?? '', /^approve with edited arguments i-[0-9a-f]{16} by user:\S+: checked the photos: approved$/);
    const refundStep = approved.iterations.flatMap((it) => it.steps).find((st) => st.tool === 'refunds.create');
    assert.deepEqual(refundStep?.input, { order_id: 'O-20250002', amount_cents: edited }, 'the refund ran with the edited amount');
    assert.equal(decision?.source, 'console');
    await page.close();

    const asking = await open(`/runs/${ask.thought_id}`);
    await asking.waitForSelector('#decide:not([hidden]) #reply-text', { timeout: 120000 });
    await asking.fill('#reply-text', 'Sorry, the order number is O-12345678.');
    await asking.click('#reply');
    await asking.waitForFunction(() => document.querySelector('#report header .status')?.getAttribute('data-status') === 'completed', undefined, {
      timeout: 120000,
    });
    assert.match((await asking.textContent('#report #tasks'))!, /Sorry, the order number is O-12345678\./);
    await asking.close();
  },
);

test('the health page shows each stage group with its instances and lag, the rates, tool figures and breakers', { timeout: 60000 }, async () => {
  const page = await open('/health');
  await page.waitForSelector('#groups tbody tr');
  const groups = await page.$$eval('#groups tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
  assert.deepEqual(
    groups.map((g) => [g[0], g[3]]),
    [
      ['thought', '1'],
      ['action', '1'],
      ['observation', '1'],
    ],
  );
  assert.match((await page.textContent('#tcr b'))!, /^\d+(\.\d)?%$/);
  assert.match((await page.textContent('#tools'))!, /model\.chat/);
  await page.waitForSelector('#chart .uplot');
  const action = await page.$$eval('#breakers tbody tr', (rows) => rows.map((r) => r.textContent ?? '').filter((t) => t.includes('action')));
  assert.equal(action.length, 1, 'the action process answered /health');
  assert.match(action[0]!, /yes/);
  await page.screenshot({ path: join(SCREENSHOTS, 'health.png'), fullPage: true });
  await page.close();
});
