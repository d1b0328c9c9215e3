// test-needs: kafka
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { dlqCommand, replayCommand } from '../../replay/cli.ts';
import type { DlqEntry, DlqListing, RedriveReport } from '../../replay/dlq.ts';
import type { Timeline } from '../../replay/timeline.ts';
import type { VerifyReport } from '../../replay/verify.ts';
import type { ActionResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { DEFAULT_CATALOG_DIR } from '../../tools/catalog.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd, type TestCluster } from '../helpers/cluster.ts';
import { runCli } from './helpers.ts';

let cluster: TestCluster;
let tools: ToolServer;
let stages: StageFleet;
let action: StageFleet;
let follower: Awaited<ReturnType<typeof followOutcomes>>;
const runs = { first: '', second: '' };
let partial = '';

/**
 * Action starts with a catalog that lacks shipping.track, so each run's third wave (S4) is
 * dead-lettered as UNKNOWN_TOOL; Thought and Observation run with the full catalog.
 */
before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  partial = mkdtempSync(join(tmpdir(), 'tao-catalog-'));
  for (const f of readdirSync(DEFAULT_CATALOG_DIR).filter((f) => f.endsWith('.json') && f !== 'shipping.track.json'))
    copyFileSync(join(DEFAULT_CATALOG_DIR, f), join(partial, f));
  stages = new StageFleet(cluster.env);
  action = new StageFleet({ ...cluster.env, TAO_TOOL_CATALOG_DIR: partial });
  await Promise.all([stages.start('thought'), stages.start('observation'), action.start('action')]);
  const tasks = [1, 2].map((i) => buildTask({ text: `Where is my order? redrive${i}@example.com`, source: 'test', external_id: `${cluster.namespace}-${i}` }));
  runs.first = tasks[0]!.thought_id;
  runs.second = tasks[1]!.thought_id;
  follower = await followOutcomes(cluster);
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, tasks);
  await producer.disconnect();
  const deadline = Date.now() + 60000;
  while ((await listing()).entries.filter((e) => e.code === 'UNKNOWN_TOOL').length < 2) {
    if (Date.now() > deadline) throw new Error('the S4 waves were not dead-lettered within 60 s');
    await new Promise((r) => setTimeout(r, 500));
  }
});

after(async () => {
  await follower?.stop();
  await stages?.stop();
  await action?.stop();
  await tools?.close();
  if (partial) rmSync(partial, { recursive: true, force: true });
});

async function listing(...args: string[]): Promise<DlqListing> {
  const { code, stdout, stderr } = await runCli(dlqCommand, ['list', '--format', 'json', ...args], cluster.env);
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout) as DlqListing;
}

async function redrive(...args: string[]): Promise<RedriveReport> {
  const { code, stdout, stderr } = await runCli(dlqCommand, ['redrive', 'thought.requests', '--format', 'json', ...args], cluster.env);
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout) as RedriveReport;
}

test('dlq list counts dead letters by topic and reason, and dlq show decodes the original record, without calling any tool', { timeout: 60000 }, async () => {
  const before = tools.stats().total;
  const l = await listing();
  const dlq = cluster.codec.topics.dlq('thoughtRequests');
  assert.deepEqual(l.counts, [{ topic: dlq, reason: 'UNKNOWN_TOOL', count: 2, redriven: 0 }]);
  assert.deepEqual(l.entries.map((e) => e.key).sort(), [runs.first, runs.second].sort());
  for (const e of l.entries) {
    assert.equal(e.source?.topic, cluster.codec.topics.name('thoughtRequests'));
    assert.equal(e.stage, 'action');
    assert.match(e.message, /unknown tool "shipping\.track"/);
  }
  assert.equal((await listing('--reason', 'DECODE_FAILED')).entries.length, 0);
  assert.equal((await listing('--topic', 'tao.tasks')).entries.length, 0);

  const text = await runCli(dlqCommand, ['list'], cluster.env);
  assert.match(text.stdout, new RegExp(`${dlq.replace(/\./g, '\\.')} +UNKNOWN_TOOL +2 +0`));

  const e = l.entries.find((x) => x.key === runs.first)!;
  const shown = await runCli(dlqCommand, ['show', e.ref.topic, String(e.ref.partition), e.ref.offset, '--format', 'json'], cluster.env);
  assert.equal(shown.code, 0, shown.stderr);
  const entry = JSON.parse(shown.stdout) as DlqEntry;
  const original = entry.original.value as unknown as ThoughtRequest;
  assert.equal(original.thought_id, runs.first);
  assert.equal(original.iteration, 3);
  assert.deepEqual(
    original.steps.map((s) => [s.step_id, s.tool]),
    [['S4', 'shipping.track']],
  );
  assert.equal(entry.headers['tao.error.code'], 'UNKNOWN_TOOL');
  const shownText = await runCli(dlqCommand, ['show', 'thought.requests', String(e.ref.partition), e.ref.offset], cluster.env);
  assert.match(shownText.stdout, /Original record \(\d+ bytes, schema id \d+\):/);
  assert.match(shownText.stdout, /"tool": "shipping\.track"/);
  const missing = await runCli(dlqCommand, ['show', 'thought.requests', String(e.ref.partition), '999999'], cluster.env);
  assert.equal(missing.code, 1);
  assert.equal(tools.stats().total, before, 'listing and showing dead letters sent no request to the tool server');
});

test(
  'after the fix, re-driven dead letters are processed once: re-driving again, or twice at the same time, adds nothing',
  { timeout: 180000 },
  async (ctx) => {
    await action.stop();
    const fixed = new StageFleet(cluster.env);
    try {
      await fixed.start('action');
      const first = await redrive('--key', runs.first);
      assert.equal(first.redriven.length, 1);
      assert.equal(first.redriven[0]!.key, runs.first);
      const again = await redrive('--key', runs.first);
      assert.deepEqual([again.redriven.length, again.already.length], [0, 1], 'the second re-drive finds it in the ledger');

      // Two re-drives of the rest at once: one wins, the other is fenced or finds it done.
      const both = await Promise.allSettled([redriveQuiet('--reason', 'UNKNOWN_TOOL'), redriveQuiet('--reason', 'UNKNOWN_TOOL')]);
      const reports = both.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      ctx.diagnostic(
        `concurrent re-drives: ${both.map((r) => (r.status === 'fulfilled' ? `redriven ${r.value.redriven.length}, already ${r.value.already.length}` : `failed: ${String(r.reason)}`)).join(' | ')}`,
      );
      assert.ok(reports.length >= 1, JSON.stringify(both));
      assert.equal(
        reports.reduce((n, r) => n + r.redriven.length, 0),
        1,
        `exactly one copy of the second run's dead letter: ${JSON.stringify(both)}`,
      );

      // The dead letters had ended both runs failed (dead_letter); the re-driven waves resume them.
      const status = (id: string) => (follower.outcomes.get(id)?.value as unknown as Outcome | undefined)?.status;
      await follower.waitUntil(() => Object.values(runs).every((id) => status(id) === 'completed'), 60000);

      // Both runs have ended: the committed log as it stands now holds everything the re-drives caused.
      const settled = await scanToEnd(cluster, ['thoughtRequests', 'actionResults', 'outcomes']);
      for (const id of Object.values(runs)) {
        const mine = settled.filter((r) => r.key === id);
        const copies = mine.filter((r) => r.topic === 'thoughtRequests' && r.headers['tao.redriven-from']);
        assert.equal(copies.length, 1, `${id}: the source topic got the dead letter back once`);
        assert.match(copies[0]!.headers['tao.redriven-from']!, new RegExp(`^${cluster.codec.topics.dlq('thoughtRequests').replace(/\./g, '\\.')}/\\d+/\\d+$`));
        assert.ok(copies[0]!.headers.traceparent, 'the original headers are kept');
        assert.equal(copies[0]!.headers['tao.error.code'], undefined, 'the failure headers are not');
        const wave3 = mine.filter(
          (r) =>
            r.topic === 'actionResults' && (r.value as unknown as ActionResult).iteration === 3 && (r.value as unknown as ActionResult).dead_letter === null,
        );
        assert.equal(wave3.length, 1, `${id}: wave 3 executed once`);
        assert.deepEqual(
          mine.filter((r) => r.topic === 'outcomes').map((r) => [(r.value as unknown as Outcome).status, (r.value as unknown as Outcome).reason_code]),
          [
            ['failed', 'dead_letter'],
            ['completed', 'completed'],
          ],
          `${id}: ended by its dead letter, then once more after the re-drive resumed it`,
        );
      }
      const shipping = tools.stats().requests.filter((r) => r.route === 'shipping.track');
      assert.equal(shipping.length, 2, 'shipping.track was called once per run');

      const l = await listing();
      assert.ok(
        l.entries.every((e) => e.redriven),
        'the listing shows both as re-driven',
      );
      assert.deepEqual(
        l.counts.map((c) => [c.count, c.redriven]),
        [[2, 2]],
      );

      // The run replays with its dead-lettered wave and the re-drive, and verifies without drift.
      await fixed.stop();
      await stages.stop();
      const t = JSON.parse((await runCli(replayCommand, [runs.first, '--format', 'json'], cluster.env)).stdout) as Timeline;
      const w3 = t.iterations.find((w) => w.iteration === 3)!;
      assert.deepEqual(
        w3.requests.map((r) => [r.dead_letter?.code ?? null, r.redriven_from !== null]),
        [
          ['UNKNOWN_TOOL', false],
          [null, true],
        ],
      );
      assert.equal(w3.steps[0]!.status, 'verified');
      assert.equal(t.status, 'completed');
      const v = await runCli(replayCommand, [runs.first, '--verify', '--format', 'json'], cluster.env);
      assert.equal(v.code, 0, v.stdout);
      assert.equal((JSON.parse(v.stdout) as VerifyReport).drift, false);
    } finally {
      await fixed.stop();
    }
  },
);

async function redriveQuiet(...args: string[]): Promise<RedriveReport> {
  const { code, stdout, stderr } = await runCli(dlqCommand, ['redrive', 'thought.requests', '--format', 'json', ...args], cluster.env);
  if (code !== 0) throw new Error(stderr);
  return JSON.parse(stdout) as RedriveReport;
}

test('redrive refuses to run without a selection', async () => {
  const r = await runCli(dlqCommand, ['redrive', 'thought.requests'], cluster.env);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /needs a selection/);
});

test('redrive refuses a dead letter that keeps only the head of an oversized original, naming its size and digest', async () => {
  const key = `${cluster.namespace}-oversized`;
  const producer = cluster.kafka.producer();
  await producer.connect();
  await producer.send({
    topic: cluster.codec.topics.dlq('thoughtRequests'),
    messages: [
      {
        key,
        value: Buffer.alloc(64 * 1024, 1),
        headers: {
          'tao.error.code': 'RECORD_TOO_LARGE',
          'tao.source.topic': cluster.codec.topics.name('thoughtRequests'),
          'tao.source.partition': '0',
          'tao.source.offset': '0',
          'tao.stage': 'action',
          'tao.original.bytes': '2000000',
          'tao.original.sha256': 'ab'.repeat(32),
        },
      },
    ],
  });
  await producer.disconnect();
  const r = await runCli(dlqCommand, ['redrive', 'thought.requests', '--key', key], cluster.env);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /keeps only the first 65536 bytes of a 2000000-byte original \(sha256 (ab){32}\): it can't be re-driven/);
  const copies = await scanToEnd(cluster, ['thoughtRequests']);
  assert.equal(copies.filter((c) => c.key === key).length, 0, 'nothing was written to the source topic');
});
