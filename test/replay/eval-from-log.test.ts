// test-needs: kafka
/**
 * `tao eval --from-log` (cli/eval-from-log.ts `main`, called in this process) over 52 runs recorded
 * by the real stages (processes) on the real broker: router runs of every flow, then ReAct runs of
 * two skills against the scripted model SIMULATOR (model-sim/, a test double of a model server),
 * with the demo tool server. An unchanged candidate re-runs every run as recorded and asks neither
 * the model nor any tool (counted at both servers); a changed skill prompt reports exactly the runs
 * whose tool calls changed; a changed catalog entry of a side-effecting tool makes no live call of
 * it, and the runs that would have made one are reported diverging at that step.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { main } from '../../cli/eval-from-log.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import type { FromLogReport } from '../../replay/from-log/evaluate.ts';
import type { Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { orderById } from '../../tool-server/data.ts';
import { freshCluster, runTasks, scanToEnd, StageFleet, type TestCluster } from '../helpers/cluster.ts';

let sim: ModelSim;
let tools: ToolServer;
let cluster: TestCluster;
let stages: StageFleet;
let dir: string;
const outcomes = new Map<string, Outcome>();
/** The ReAct runs, by skill. */
const react = { orderStatus: [] as string[], refund: [] as string[] };
/** Recorded tool calls (model turns aside) of each run. */
const calls = new Map<string, string[]>();
/** When the ReAct runs' tasks were written (every router run's task was written before). */
let reactFrom = 0;

/** A test double's stats API (`GET /__control/stats`, the model simulator's and the tool server's). */
async function statsOf(server: { url: string }): Promise<{ total: number; byRoute?: Record<string, number> }> {
  return (await (await fetch(`${server.url}/__control/stats`)).json()) as { total: number; byRoute?: Record<string, number> };
}
/** Requests the test double counted. */
const requestsAt = async (server: { url: string }) => (await statsOf(server)).total;

/** Order ids whose demo order has shipped or been delivered, and one only placed. */
function orders(): { shipped: string[]; placed: string[] } {
  const shipped: string[] = [];
  const placed: string[] = [];
  for (let n = 10000000; shipped.length < 8 || placed.length < 3; n += 7919) {
    const id = `O-${n}`;
    (orderById(id).status === 'placed' ? placed : shipped).push(id);
  }
  return { shipped: shipped.slice(0, 8), placed: placed.slice(0, 3) };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tao-eval-from-log-'));
  sim = await startModelSim({ port: 0 });
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({
    TAO_DEMO_TOOL_ORIGIN: tools.url,
    TAO_PLANNER: 'router',
    TAO_LLM_BASE_URL: `${sim.url}/v1`,
    TAO_LLM_MODEL: 'sim-1',
    TAO_LLM_TIMEOUT_MS: '5000',
  });
  stages = new StageFleet(cluster.env);
  const router = new StageFleet(cluster.env);
  await Promise.all([stages.start('action'), stages.start('observation'), router.start('thought')]);
  const ns = cluster.namespace;
  const { shipped, placed } = orders();
  const task = (text: string, i: string) => buildTask({ text, source: 'eval-test', external_id: `${ns}-${i}` });
  // 32 runs of the router planner over every flow (a refund, a password reset among them).
  const routed: Task[] = [
    ...[0, 1, 2, 3, 4, 5].map((i) => task(`Where is my order? My e-mail is shopper${i}@example.org`, `status-${i}`)),
    ...shipped.slice(0, 6).map((id, i) => task(`I want a refund for order ${id}`, `refund-${i}`)),
    ...[0, 1, 2, 3].map((i) => task(`我的订单 ${shipped[i]} 到哪了`, `lookup-${i}`)),
    ...[1, 2, 3, 4].map((i) => task(`请给我发票 INV-2024-004${i} 的副本`, `invoice-${i}`)),
    ...[0, 1, 2, 3].map((i) => task(`I can't log in, my email is member${i}@example.com`, `access-${i}`)),
    ...[0, 1].map((i) => task('payments 服务是不是挂了', `outage-${i}`)),
    ...[0, 1, 2, 3].map((i) => task(`What's the status of expense claim EC-12345${i}?`, `expense-${i}`)),
    ...[0, 1].map((i) => task('Tell me a joke about penguins', `joke-${i}`)),
  ];
  for (const [id, o] of await stages.explained(runTasks(cluster, routed, 180000), cluster)) outcomes.set(id, o);
  await router.stop();
  // 20 ReAct runs: Thought restarted with TAO_PLANNER=react, a model (the simulator) taking the turns.
  const model = new StageFleet({ ...cluster.env, TAO_PLANNER: 'react' });
  await model.start('thought');
  reactFrom = Date.now();
  const status = [...shipped.slice(0, 7), ...placed].map((id, i) => task(`Where is my order ${id}?`, `react-status-${i}`));
  const refunds = [...shipped.slice(0, 7), ...placed].map((id, i) => task(`I want a refund for order ${id}`, `react-refund-${i}`));
  for (const [id, o] of await model.explained(runTasks(cluster, [...status, ...refunds], 240000), cluster)) outcomes.set(id, o);
  await model.stop();
  react.orderStatus = status.map((t) => t.thought_id);
  react.refund = refunds.map((t) => t.thought_id);
  for (const r of await scanToEnd(cluster, ['thoughtRequests'])) {
    const request = r.value as unknown as ThoughtRequest;
    const list = calls.get(r.key) ?? [];
    list.push(...request.steps.filter((s) => !s.tool.startsWith('model.')).map((s) => s.tool));
    calls.set(r.key, list);
  }
});

after(async () => {
  await stages?.stop();
  await tools?.close();
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `tao eval --from-log <args> --json` against the recorded namespace. */
async function evaluate(args: string[]): Promise<{ code: number; report: FromLogReport; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(['--from-log', '--json', ...args], { env: cluster.env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  assert.ok(code === 0 || code === 1, `exit ${code}: ${stderr}`);
  return { code, report: JSON.parse(stdout) as FromLogReport, stderr };
}

/** A release folder holding a copy of the repository's `part` (skills, catalog), changed by `edit`. */
function release(name: string, part: 'skills' | 'catalog', edit: (root: string) => void): string {
  const root = join(dir, name);
  cpSync(join(import.meta.dirname, '..', '..', part === 'skills' ? 'skills' : 'tools/catalog'), join(root, part), { recursive: true });
  edit(join(root, part));
  return root;
}

test('the recording: at least 50 runs of a mix of skills, router and ReAct, ended', () => {
  assert.ok(outcomes.size >= 50, `${outcomes.size} runs`);
  const kinds = new Set([...outcomes.values()].map((o) => o.planner_kind));
  assert.deepEqual([...kinds].sort(), ['react', 'router']);
  assert.ok(new Set([...outcomes.values()].map((o) => o.flow_id)).size >= 6, 'runs of every flow');
  assert.ok(
    react.refund.some((id) => calls.get(id)?.includes('refunds.create')),
    'ReAct runs created refunds',
  );
});

test('an unchanged candidate: 0 divergences over every recorded run, and neither the model nor any tool is called', async () => {
  const model = await requestsAt(sim);
  const tool = await requestsAt(tools);
  const { code, report } = await evaluate([]);
  assert.equal(report.totals.runs, outcomes.size, 'every recorded run is re-run');
  assert.deepEqual(
    report.diverged.map((r) => `${r.thought_id}: ${r.divergence?.explanation}`),
    [],
  );
  assert.equal(code, 0);
  assert.equal(report.totals.model_calls, 0);
  assert.deepEqual(report.totals.live_calls, {});
  assert.ok(report.totals.recorded_answers > 100, `${report.totals.recorded_answers} calls answered from the record`);
  assert.equal(await requestsAt(sim), model, 'no request reached the model simulator');
  assert.equal(await requestsAt(tools), tool, 'no request reached the tool server');
});

test('the window: --since and --until by the time the first task was written, --status by the last outcome, --skill, --limit the earliest first', async () => {
  const ids = (report: FromLogReport) => report.runs.map((r) => r.thought_id).sort();
  const reactRuns = [...react.orderStatus, ...react.refund].sort();
  assert.deepEqual(ids((await evaluate(['--since', new Date(reactFrom).toISOString()])).report), reactRuns);
  const routed = [...outcomes.keys()].filter((id) => !reactRuns.includes(id)).sort();
  assert.deepEqual(ids((await evaluate(['--until', new Date(reactFrom - 1).toISOString()])).report), routed);
  const escalated = [...outcomes].filter(([, o]) => o.status === 'escalated').map(([id]) => id);
  assert.ok(escalated.length >= 2, 'the penguin jokes were escalated');
  const byStatus = (await evaluate(['--status', 'escalated'])).report;
  assert.deepEqual(ids(byStatus), escalated.sort());
  assert.equal(byStatus.skipped.other_status, outcomes.size - escalated.length);
  const refunds = (await evaluate(['--skill', 'refund-request', '--since', new Date(reactFrom).toISOString()])).report;
  assert.deepEqual(ids(refunds), [...react.refund].sort());
  const limited = (await evaluate(['--limit', '5'])).report;
  assert.equal(limited.totals.runs, 5);
  assert.equal(limited.skipped.over_limit, outcomes.size - 5);
  assert.ok(
    limited.runs.every((r) => !reactRuns.includes(r.thought_id)),
    'the earliest runs: the router runs',
  );
});

test('a changed skill prompt (order-status no longer offers shipping.track): exactly the runs whose tool calls changed are reported, each at its step', async () => {
  const folder = release('no-tracking', 'skills', (skills) => {
    const file = join(skills, 'order-status', 'SKILL.md');
    writeFileSync(
      file,
      readFileSync(file, 'utf8')
        .replace(
          'allowed-tools: orders.get shipping.track crm.find_customer orders.latest crm.tier',
          'allowed-tools: orders.get crm.find_customer orders.latest crm.tier',
        )
        .replace('grounded-by: orders.get orders.latest shipping.track', 'grounded-by: orders.get orders.latest')
        .replace(' shipping.track.carrier', '')
        .replace(/\n {2}answer-after: .*/, ''),
    );
  });
  const tool = await requestsAt(tools);
  const { code, report } = await evaluate(['--release', folder]);
  const expected = react.orderStatus.filter((id) => calls.get(id)?.includes('shipping.track')).sort();
  assert.ok(expected.length >= 5, `${expected.length} ReAct runs tracked a shipment`);
  assert.deepEqual(report.diverged.map((r) => r.thought_id).sort(), expected);
  assert.equal(code, 1, 'a divergence fails the gate');
  for (const r of report.diverged) {
    assert.ok(r.changed.includes('tool_calls'), `${r.thought_id}: ${r.changed.join(', ')}`);
    const d = r.divergence!;
    assert.equal(d.kind, 'tool_calls', d.explanation);
    assert.equal((d.recorded as { tool: string }).tool, 'shipping.track', d.explanation);
    assert.match(d.step ?? '', /^M\d+_\d+$/, 'the step where it diverged');
    assert.ok(d.wave !== null && d.wave > 1);
  }
  assert.ok(report.totals.model_calls > 0, 'the changed prompts were sent to the model');
  assert.equal(await requestsAt(tools), tool, 'no tool was called');

  // The terminal report: the totals, then each diverged run with its step and why.
  const ofSkill = [...outcomes.values()].filter((o) => o.flow_id === 'order-status').length + react.orderStatus.length;
  let text = '';
  assert.equal(
    await main(['--from-log', '--release', folder, '--skill', 'order-status'], { env: cluster.env, stdout: (t) => (text += t), stderr: () => undefined }),
    1,
  );
  assert.match(text, new RegExp(`^Candidate ${folder} against ${ofSkill} recorded run\\(s\\)\n  diverged ${expected.length} `));
  for (const id of expected)
    assert.match(
      text,
      new RegExp(`^DIVERGED ${id}  order-status  .*\n  at wave \\d+ step M\\d+_\\d+ \\([a-z_.]+\\): the run called shipping\\.track here`, 'm'),
    );
  assert.match(text, new RegExp(`${expected.length} of ${ofSkill} run\\(s\\) diverged\n$`));
});

test('a changed catalog entry of a side-effecting tool (refunds.create): 0 live calls of it at the tool server, and the runs that would call it diverge there', async () => {
  // The candidate's description asks for a restocking fee; its model (a second simulator, whose
  // refund scenario refunds 100 cents) follows it. The graph flow's calls do not change.
  const folder = release('restocking-fee', 'catalog', (catalog) => {
    const file = join(catalog, 'refunds.create.json');
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { description: string };
    entry.description += ' Refund the total minus the restocking fee.';
    writeFileSync(file, JSON.stringify(entry, null, 2));
  });
  const scenarios = join(dir, 'scenarios');
  cpSync(join(import.meta.dirname, '..', '..', 'model-sim', 'scenarios'), scenarios, { recursive: true });
  const scenario = readFileSync(join(scenarios, 'refund-request.json'), 'utf8');
  writeFileSync(join(scenarios, 'refund-request.json'), scenario.replace('"amount_cents": "{{tool:orders.get.total_cents}}"', '"amount_cents": 100'));
  const candidateModel = await startModelSim({ port: 0, scenariosDir: scenarios });
  try {
    const refunds = async () => (await statsOf(tools)).byRoute!['refunds.create']!;
    const before = { refunds: await refunds(), total: await requestsAt(tools) };
    const { code, report } = await evaluate(['--release', folder, '--base-url', `${candidateModel.url}/v1`]);
    assert.ok(before.refunds > 0, 'the recorded runs created refunds');
    assert.equal(await refunds(), before.refunds, 'no refund was created live');
    assert.equal(await requestsAt(tools), before.total, 'no tool was called live');
    const expected = react.refund.filter((id) => calls.get(id)?.includes('refunds.create')).sort();
    assert.ok(expected.length >= 5, `${expected.length} ReAct runs created a refund`);
    assert.deepEqual(report.diverged.map((r) => r.thought_id).sort(), expected);
    assert.equal(code, 1);
    for (const r of report.diverged) {
      const d = r.divergence!;
      assert.equal(d.kind, 'unrecorded_call', d.explanation);
      assert.equal(d.tool, 'refunds.create');
      assert.match(d.step ?? '', /^M\d+_1$/);
      assert.match(d.explanation, /never recorded, and was not called: it has side effects/);
      assert.equal((d.today as { amount_cents: number }).amount_cents, 100);
      assert.equal(r.today, null, 'the re-run stopped there');
    }
    assert.equal(report.totals.unrecorded_calls, expected.length);
    assert.ok((await requestsAt(candidateModel)) > 0, "the changed requests went to the candidate's model");
  } finally {
    await candidateModel.close();
  }
});

test('usage: --help helps, a bad option is exit 2 with the usage, a missing release folder is one line and exit 1', async () => {
  const run = async (argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await main(argv, { env: cluster.env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  };
  const help = await run(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: tao eval --from-log/);
  assert.match(help.stdout, /--live-reads/);
  for (const argv of [
    ['--from-log', '--limit', '0'],
    ['--from-log', '--since', 'yesterday'],
    ['--from-log', '--status', 'done'],
    ['--from-log', '--until', '2026-01-01T00:00:00Z', '--since', '2026-02-01T00:00:00Z'],
    ['--from-log', '--bogus'],
  ]) {
    const bad = await run(argv);
    assert.equal(bad.code, 2, argv.join(' '));
    assert.match(bad.stderr, /usage: tao eval --from-log/);
  }
  const missing = await run(['--from-log', '--release', join(dir, 'no-such-release')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^tao: release folder .*no-such-release: no such folder \[CONFIG_INVALID\]\n$/);
});
