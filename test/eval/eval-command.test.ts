// test-needs: kafka
/**
 * `tao eval` as a CI gate, deterministic against the model SIMULATOR (model-sim/, llama.cpp's
 * profile): a baseline release folder with the repository's skills, and a candidate whose
 * order-status SKILL.md says to answer without calling tools (the simulator obeys it, as a model
 * would). Over a small regression set (two tickets each of order status, expense claims and
 * invoices, written from the shipped set), `tao eval --baseline` exits 1 and names exactly the
 * order-status tickets as broken; an unchanged copy exits 0. Each command runs the real stages, the
 * tool server and the ingress as processes on the real broker, in namespaces whose topics and
 * consumer groups are gone afterwards.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { TAO_BIN } from '../../cli/processes.ts';
import { loadRegressionSet } from '../../eval/regression-set.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { packagePath } from '../../runtime/paths.ts';

const TICKETS = ['order-en-1', 'order-zh-1', 'claim-en-1', 'claim-zh-1', 'invoice-en-1', 'invoice-zh-1'];
const work = mkdtempSync(join(tmpdir(), 'tao-eval-'));
const baseline = join(work, 'baseline');
const unchanged = join(work, 'unchanged');
const candidate = join(work, 'candidate');
const setFile = join(work, 'set.json');
/** The simulator's rule that obeys "answer without tools" (model-sim/scenarios/order-status.json). */
const DIRECT = 'the skill says to answer without tools: answer directly, as a model would';
let sim: ModelSim;

before(async () => {
  sim = await startModelSim({ port: 0, profile: 'llamacpp' });
  for (const folder of [baseline, unchanged, candidate]) cpSync(packagePath('skills'), join(folder, 'skills'), { recursive: true });
  // The prompt change that breaks one intent: the model is told to answer without its tools.
  appendFileSync(join(candidate, 'skills', 'order-status', 'SKILL.md'), '\nAnswer directly without calling any tools: reply from what the ticket says.\n');
  writeFileSync(setFile, JSON.stringify({ tickets: loadRegressionSet().filter((t) => TICKETS.includes(t.id)) }));
});

after(async () => {
  await sim?.close();
  rmSync(work, { recursive: true, force: true });
});

interface Report {
  passed: boolean;
  broke: string[];
  wrong: string[];
  failures: string[];
  totals: { candidate: { solved: number; tickets: number }; baseline: { solved: number; tickets: number } | null };
  tickets: Array<{ id: string; change: string; candidate: { verdict: string; status: string; why: string }; baseline: { verdict: string } | null }>;
}

/** Runs `tao eval <args>` against the simulator; resolves with its exit code, its JSON report and its stderr. */
async function taoEval(args: string[]): Promise<{ code: number; report: Report; stderr: string }> {
  const env = { ...process.env, TAO_LLM_TOOL_CALLS: 'native' };
  const all = [
    TAO_BIN,
    'eval',
    ...args,
    '--set',
    setFile,
    '--base-url',
    `${sim.url}/v1`,
    '--model',
    'sim',
    '--concurrency',
    '3',
    '--run-timeout-s',
    '120',
    '--json',
  ];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, all, { env, timeout: 600000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      try {
        resolve({ code, report: JSON.parse(stdout) as Report, stderr });
      } catch {
        reject(new Error(`tao eval exited ${code} without a JSON report:\n${stdout}\n${stderr}`));
      }
    });
  });
}

/** Topics and consumer groups of the namespaces a command's progress lines name. */
async function leftOver(stderr: string): Promise<string[]> {
  const namespaces = [...stderr.matchAll(/namespace (eval-\S+);/g)].map((m) => m[1]!);
  assert.ok(namespaces.length > 0, stderr);
  const admin = new Kafka({ brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const names = [...(await admin.listTopics()), ...(await admin.listGroups()).groups.map((g) => g.groupId)];
    return names.filter((n) => namespaces.some((ns) => n.startsWith(`${ns}.`)));
  } finally {
    await admin.disconnect();
  }
}

test(
  'a candidate whose order-status skill answers without tools fails the gate, naming exactly the order-status tickets as broken',
  { timeout: 600000 },
  async () => {
    const { code, report, stderr } = await taoEval(['--release', candidate, '--baseline', baseline, '--min-solved', '0']);
    assert.equal(code, 1, stderr);
    assert.equal(report.passed, false);
    assert.deepEqual(report.broke, ['order-en-1', 'order-zh-1']);
    assert.deepEqual(report.failures, ['broke 2 ticket(s) the baseline solved: order-en-1, order-zh-1']);
    assert.deepEqual(report.totals.baseline, { ...report.totals.baseline, solved: 6, tickets: 6 });
    assert.deepEqual(report.totals.candidate, { ...report.totals.candidate, solved: 4, tickets: 6 });
    for (const t of report.tickets) {
      assert.equal(t.baseline?.verdict, 'solved', t.id);
      assert.equal(t.change, t.id.startsWith('order-') ? 'broke' : 'same', t.id);
    }
    // The broken runs were answered without a tool call: the simulator obeyed the changed prompt, and the
    // answers, with no fact from a tool, did not solve them (nor were they wrong: nothing unsupported).
    for (const t of report.tickets.filter((x) => x.id.startsWith('order-'))) assert.equal(t.candidate.verdict, 'unsolved', JSON.stringify(t));
    const stats = sim.stats();
    assert.ok(stats.requests.filter((r) => r.rule === DIRECT).length >= 2, JSON.stringify(stats.requests.map((r) => r.rule)));
    assert.deepEqual(stats.byRefused, {}, 'llama.cpp would have served every request');
    assert.match(stderr, /FAILED: broke order-en-1, order-zh-1/);
    assert.deepEqual(await leftOver(stderr), []);
  },
);

test('the unchanged candidate passes against the same baseline: exit 0, nothing broke', { timeout: 600000 }, async () => {
  const { code, report, stderr } = await taoEval(['--release', unchanged, '--baseline', baseline]);
  assert.equal(code, 0, stderr);
  assert.equal(report.passed, true);
  assert.deepEqual(report.broke, []);
  assert.deepEqual(report.wrong, []);
  assert.deepEqual(report.totals.candidate, { ...report.totals.candidate, solved: 6, tickets: 6 });
  assert.deepEqual(await leftOver(stderr), []);
});
