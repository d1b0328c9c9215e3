// test-needs: kafka, chromium
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { dlqCommand, replayCommand } from '../../replay/cli.ts';
import type { DlqListing } from '../../replay/dlq.ts';
import { partitionForKey } from '../../runtime/partition.ts';
import type { Timeline } from '../../replay/timeline.ts';
import type { VerifyReport } from '../../replay/verify.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { keyOf } from '../processors/fixtures.ts';
import { StageFleet, followOutcomes, freshCluster, scan, type TestCluster } from '../helpers/cluster.ts';
import { chromium, runCli } from './helpers.ts';

let cluster: TestCluster;
let tools: ToolServer;
let fleet: StageFleet;
const runs = { completed: '', escalated: '', awaiting: '' };
const tmp = mkdtempSync(join(tmpdir(), 'tao-replay-'));

/** Every run is recorded with the stages running; every test replays it after they stopped. */
before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
  tools.setFault({ route: 'crm.find_customer', mode: 'auth_failed', match: 'denied.user' });
  const tasks = {
    completed: buildTask({ text: 'Where is my order? alice.replay@example.com', source: 'test', external_id: `${cluster.namespace}-completed` }),
    escalated: buildTask({ text: 'Where is my order? denied.user@example.com', source: 'test', external_id: `${cluster.namespace}-escalated` }),
    awaiting: buildTask({ text: 'Where is my order? unknown.x@example.com', source: 'test', external_id: `${cluster.namespace}-awaiting` }),
  };
  for (const [name, task] of Object.entries(tasks)) runs[name as keyof typeof runs] = task.thought_id;
  const follower = await followOutcomes(cluster);
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, Object.values(tasks));
  await follower.waitFor(3, 90000);
  await follower.stop();
  // A record of the completed run that is not Avro: Action dead-letters it.
  await producer.send({
    topic: cluster.codec.topics.name('thoughtRequests'),
    acks: -1,
    messages: [{ key: runs.completed, value: Buffer.from('garbage, not a request') }],
  });
  await producer.disconnect();
  await scan(cluster, ['thoughtRequests'], { until: (rs) => rs.length >= 4 });
  await waitForDeadLetter(runs.completed);
  await fleet.stop();
});

after(async () => {
  await fleet?.stop();
  await tools?.close();
});

async function waitForDeadLetter(key: string): Promise<void> {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const { stdout } = await runCli(dlqCommand, ['list', '--format', 'json'], cluster.env);
    if ((JSON.parse(stdout) as DlqListing).entries.some((e) => e.key === key)) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`no dead letter for ${key} within 30 s`);
}

async function replayJson(thoughtId: string, ...extra: string[]): Promise<Timeline> {
  const { code, stdout, stderr } = await runCli(replayCommand, [thoughtId, '--format', 'json', ...extra], cluster.env);
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout) as Timeline;
}

test('a completed run replays after every stage stopped: each wave, step, verdict, latency, the outcome and its dead letter', { timeout: 60000 }, async () => {
  const before = tools.stats().total;
  const t = await replayJson(runs.completed);
  assert.equal(t.format, 'tao.replay.v1');
  assert.equal(t.status, 'completed');
  assert.deepEqual(
    t.iterations.map((w) => w.steps.map((s) => s.step_id).join('+')),
    ['S1', 'S2+S3', 'S4'],
  );
  const steps = t.iterations.flatMap((w) => w.steps);
  assert.deepEqual(
    steps.map((s) => s.tool),
    ['crm.find_customer', 'orders.latest', 'crm.tier', 'shipping.track'],
  );
  for (const s of steps) {
    assert.equal(s.status, 'verified', `${s.step_id}: ${JSON.stringify(s.verdict)}`);
    assert.equal(s.verdict?.valid, true);
    assert.equal(s.verdict?.error_type, 'ok');
    assert.equal(s.result?.status_code, 200);
    assert.ok(s.result!.response_time_ms >= 0 && s.result!.attempts >= 1);
    assert.equal(s.result?.retries, s.result!.attempts - 1);
    assert.ok(s.verdict!.checks.some((c) => c.name === 'response_schema' && c.passed));
    assert.equal(s.idempotency_key, keyOf(runs.completed, s.step_id, s.tool, s.input as Record<string, unknown>));
  }
  assert.deepEqual(steps[0]!.input, { email: 'alice.replay@example.com' });
  assert.match(String((steps[1]!.input as { customer_id: string }).customer_id), /^C-\d{6}$/);
  for (const w of t.iterations) assert.ok(w.timings.action_ms !== null && w.timings.observation_ms !== null, `wave ${w.iteration} has stage latencies`);
  assert.equal(t.outcome?.status, 'completed');
  assert.equal(t.outcome?.reason_code, 'completed');
  assert.match((t.outcome!.output as { order_id: string }).order_id, /^O-\d{8}$/);
  assert.equal(t.tasks.length, 1);
  assert.equal(t.tasks[0]!.text, 'Where is my order? alice.replay@example.com');
  assert.deepEqual(
    t.plan?.steps.map((s) => [s.id, s.state, s.depends_on.join(',')]),
    [
      ['S1', 'verified', ''],
      ['S2', 'verified', 'S1'],
      ['S3', 'verified', 'S1'],
      ['S4', 'verified', 'S2'],
    ],
  );
  // The garbage record: undecodable on thought.requests, and its dead letter with the error headers.
  assert.equal(t.dead_letters.length, 1);
  const d = t.dead_letters[0]!;
  assert.equal(d.code, 'DECODE_FAILED');
  assert.equal(d.stage, 'action');
  assert.equal(d.source?.topic, cluster.codec.topics.name('thoughtRequests'));
  assert.equal(d.source?.partition, partitionForKey(runs.completed, 6));
  assert.equal(d.original.utf8, 'garbage, not a request');
  assert.deepEqual(
    t.undecodable.map((u) => [u.ref.offset, u.code]),
    [[d.source!.offset, 'DECODE_FAILED']],
  );
  // Only the run's partition of each topic was read.
  assert.equal(t.scanned.length, 6 + 4);
  assert.ok(t.scanned.filter((s) => !s.topic.endsWith('.dlq')).every((s) => s.partition === partitionForKey(runs.completed, 6)));
  assert.equal(tools.stats().total, before, 'replay sent no request to the tool server');
});

test('a run escalated after auth_failed replays with the failed check and the reflection that escalated it', { timeout: 60000 }, async () => {
  const t = await replayJson(runs.escalated);
  assert.equal(t.status, 'escalated');
  assert.equal(t.outcome?.reason_code, 'reflection');
  assert.equal(t.iterations.length, 1);
  const [s1] = t.iterations[0]!.steps;
  assert.equal(s1!.status, 'invalid');
  assert.equal(s1!.verdict?.error_type, 'auth_failed');
  assert.equal(s1!.result?.status_code, 401);
  assert.ok(s1!.verdict!.checks.some((c) => c.name === 'status_class' && !c.passed));
  assert.equal(t.reflections.length, 1);
  const r = t.reflections[0]!;
  assert.deepEqual([r.step_id, r.iteration, r.action], ['S1', 1, 'escalate']);
  assert.equal(r.dimensions.find((x) => x.name === 'policy_compliance')?.result, 'INCONSISTENT');
  assert.deepEqual(
    t.plan?.steps.map((s) => s.state),
    ['failed', 'not_run', 'not_run', 'not_run'],
  );
  assert.deepEqual(t.dead_letters, []);
});

test('a run parked after not_found replays with its reflection (ask a person) and the awaiting_input outcome', { timeout: 60000 }, async () => {
  const t = await replayJson(runs.awaiting);
  assert.equal(t.status, 'awaiting_input');
  const [s1] = t.iterations[0]!.steps;
  assert.equal(s1!.verdict?.error_type, 'not_found');
  assert.equal(s1!.result?.status_code, 404);
  assert.match(s1!.result!.response ?? '', /customer_not_found/);
  assert.deepEqual(
    t.reflections.map((r) => r.action),
    ['ask_human'],
  );
  assert.deepEqual(t.outcome?.missing_fields, ['email']);
});

test('the terminal view lists every wave and step in aligned columns, and time bounds limit the scan', { timeout: 60000 }, async () => {
  const { code, stdout } = await runCli(replayCommand, [runs.completed], cluster.env);
  assert.equal(code, 0);
  assert.match(stdout, /^Run \S+ {2}namespace \S+ {2}COMPLETED \(completed\) after 3 wave\(s\)/);
  for (const line of ['Wave 1', 'Wave 2', 'Wave 3', 'Dead letters', 'Outcome ']) assert.ok(stdout.includes(line), `${line} in:\n${stdout}`);
  const rows = stdout.split('\n').filter((l) => /^ {2}S\d /.test(l));
  assert.equal(rows.length, 4, stdout);
  const statusColumn = new Set(rows.map((l) => l.indexOf('verified')));
  assert.equal(statusColumn.size, 1, `the status column is aligned:\n${rows.join('\n')}`);

  const future = new Date(Date.now() + 3600_000).toISOString();
  const none = await runCli(replayCommand, [runs.completed, '--from', future], cluster.env);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /no record of run .* within the time bounds/);
  const t = await replayJson(runs.completed, '--from', new Date(Date.now() - 3600_000).toISOString(), '--to', new Date().toISOString());
  assert.equal(t.iterations.length, 3);
  assert.ok(t.bounds.from && t.bounds.to);
  const bad = await runCli(replayCommand, [runs.completed, '--from', 'yesterday'], cluster.env);
  assert.equal(bad.code, 2);
});

test('the HTML report, rendered by headless Chromium, shows every step of the run and the plan DAG', { timeout: 120000 }, async (ctx) => {
  for (const [name, thoughtId] of Object.entries(runs)) {
    const file = join(tmp, `${name}.html`);
    const { code, stderr } = await runCli(replayCommand, [thoughtId, '--format', 'html', '--out', file], cluster.env);
    assert.equal(code, 0, stderr);
    const html = readFileSync(file, 'utf8');
    assert.doesNotMatch(html, /(src|href)=["']?https?:/, 'no external assets');
    const t = await replayJson(thoughtId);
    const shot = join(tmp, `${name}.png`);
    const dom = await chromium(file, shot);
    for (const s of t.iterations.flatMap((w) => w.steps)) {
      const row = new RegExp(
        `<tr class="step ${s.status}" id="step-${s.iteration}-${s.step_id}"[^>]*>[\\s\\S]*?<strong>${s.step_id}</strong>[\\s\\S]*?<code>${s.tool.replace('.', '\\.')}</code>`,
      );
      assert.match(dom, row, `${name}: the rendered page shows step ${s.step_id} of wave ${s.iteration}`);
    }
    for (const s of t.plan!.steps) assert.match(dom, new RegExp(`<g class="node" data-step="${s.id}"`), `${name}: the DAG draws ${s.id}`);
    assert.equal((dom.match(/<path class="edge"/g) ?? []).length, 3, `${name}: the DAG has the plan's 3 edges`);
    if (name === 'completed') assert.match(dom, /id="dead-letters"[\s\S]*DECODE_FAILED/);
    if (name === 'escalated') assert.match(dom, /id="reflections"[\s\S]*policy_compliance[\s\S]*INCONSISTENT/);
    ctx.diagnostic(`screenshot of the ${name} run's report: ${shot}`);
  }
});

test("verify re-decides each untouched run with today's code and finds no drift, without asking any tool", { timeout: 60000 }, async () => {
  const before = tools.stats().total;
  for (const thoughtId of Object.values(runs)) {
    const { code, stdout, stderr } = await runCli(replayCommand, [thoughtId, '--verify', '--format', 'json'], cluster.env);
    const report = JSON.parse(stdout) as VerifyReport;
    assert.equal(code, 0, `${thoughtId}: ${stdout}\n${stderr}`);
    assert.equal(report.drift, false);
    assert.ok(
      report.checked.thought_inputs >= 2 && report.checked.observation_inputs >= 1 && report.checked.records_compared >= 3,
      JSON.stringify(report.checked),
    );
  }
  const text = await runCli(replayCommand, [runs.completed, '--verify'], cluster.env);
  assert.match(text.stdout, /NO DRIFT/);
  assert.match(text.stdout, /dead-lettered by its stage: not re-decided/, 'the garbage record is noted, not re-decided');
  const listing = await runCli(dlqCommand, ['list'], cluster.env);
  assert.equal(listing.code, 0);
  assert.equal(tools.stats().total, before, 'verify and dlq list sent no request to the tool server');
});

test(
  'verify under another release names the first divergent record after a rule threshold changes (Observation: the rules are configuration drift) and after a Thought setting changes; the shell alone does not change the release a run is verified with',
  { timeout: 60000 },
  async () => {
    const rules = JSON.parse(readFileSync(new URL('../../rules/observation.json', import.meta.url), 'utf8')) as { latencyFactor: number };
    rules.latencyFactor = 0.0001;
    // A release folder with those rules: verify re-decides under it instead of the run's own manifest.
    const strictRelease = join(tmp, 'strict-release');
    mkdirSync(strictRelease, { recursive: true });
    const rulesFile = join(strictRelease, 'observation-rules.json');
    writeFileSync(rulesFile, JSON.stringify(rules));
    const before = tools.stats().total;

    // The shell's rules alone do not change what the run is verified with: the release it was made on.
    const own = await runCli(replayCommand, [runs.completed, '--verify', '--format', 'json'], { ...cluster.env, TAO_OBSERVATION_RULES: rulesFile });
    assert.equal(own.code, 0, own.stdout);

    const strict = await runCli(replayCommand, [runs.completed, '--verify', '--release', strictRelease, '--format', 'json'], cluster.env);
    assert.equal(strict.code, 1, strict.stderr);
    const report = JSON.parse(strict.stdout) as VerifyReport;
    assert.equal(report.drift, true);
    // Other rules today: configuration drift, so the different verdicts are not called a code change.
    assert.deepEqual(
      report.configuration_drift.map((c) => c.setting),
      ['observation_rules'],
    );
    assert.equal(report.code_drift, false);
    const d = report.first_divergence!;
    assert.equal(d.stage, 'observation');
    assert.equal(d.input.topic, 'actionResults');
    assert.equal(d.input.summary, 'actionResults wave 1', 'the first wave is where the new threshold first bites');
    assert.equal(d.recorded?.topic, 'observationResults');
    const paths = d.diff.map((f) => f.path);
    assert.ok(paths.includes('verdicts[0].valid') && paths.includes('verdicts[0].error_type'), paths.join(', '));
    assert.deepEqual(
      d.diff.find((f) => f.path === 'verdicts[0].error_type'),
      { path: 'verdicts[0].error_type', recorded: 'ok', today: 'timeout' },
    );
    const text = await runCli(replayCommand, [runs.completed, '--verify', '--release', strictRelease], cluster.env);
    assert.match(text.stdout, /observation_rules +1#[0-9a-f]{12} +1#[0-9a-f]{12}/);
    assert.match(
      text.stdout,
      /DECISIONS DIFFER \(with the configuration drift above, not necessarily a code change\) \(DETERMINISM_VIOLATION\) in observation/,
    );
    assert.match(text.stdout, /RECORDED +TODAY/);
    assert.match(text.stdout, /verdicts\[0\]\.error_type +"ok" +"timeout"/);

    const budgetRelease = join(tmp, 'budget-release');
    mkdirSync(budgetRelease, { recursive: true });
    writeFileSync(join(budgetRelease, 'settings.json'), JSON.stringify({ TAO_MAX_ITERATIONS: 2 }));
    const budget = await runCli(replayCommand, [runs.completed, '--verify', '--release', budgetRelease, '--format', 'json'], cluster.env);
    assert.equal(budget.code, 1);
    const t = (JSON.parse(budget.stdout) as VerifyReport).first_divergence!;
    assert.equal(t.stage, 'thought');
    assert.equal(t.input.topic, 'tasks');
    assert.deepEqual(
      t.diff.map((f) => [f.path, f.recorded, f.today]),
      [['run.max_iterations', 10, 2]],
    );
    assert.equal(tools.stats().total, before, 'verify sent no request to the tool server');
  },
);
