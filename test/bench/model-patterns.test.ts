// test-needs: kafka
/**
 * `npm run models:patterns` end to end against the scripted model SIMULATOR (model-sim/, not a
 * model), so its plumbing is shown deterministically: in a namespace of its own, with the tool
 * server, the ingress and the stages as processes, ReAct, plan-replan (the tracking down for its
 * first two calls: a rule-based reflection, then a re-plan) and Reflexion (the order lookup times
 * out once, TAO_REFLECT_AFTER=1: the model's reflection, then the lookup again) each complete; the command
 * reads each pattern from the log, prints the timeline, and `tao replay --verify` re-decides each run
 * with the model unreachable: no drift. The simulator is stopped before the verifies would matter:
 * the command points TAO_LLM_BASE_URL at a closed port for them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';

interface PatternReport {
  pattern: string;
  thought_id: string | null;
  status: string | null;
  answer: string | null;
  fault: { tool: string; calls: number; requests_failed: number } | null;
  turns: Array<{ step: string; kind: string }>;
  tool_calls: Array<{ step: string; tool: string; valid: boolean; error: string | null }>;
  reflections: Array<{ action: string; author: string }>;
  timeline: string;
  timeline_excerpt: string;
  verify: { drift: boolean; checked: { thought_inputs: number } } | null;
  completed: boolean;
  problems: string[];
}

let sim: ModelSim;
let code = -1;
let stderr = '';
let doc: { passed: boolean; patterns: PatternReport[] };

before(async () => {
  sim = await startModelSim({ port: 0 });
  const args = ['--import', 'tsx', 'bench/model-patterns.ts', '--base-url', `${sim.url}/v1`, '--model', 'sim-1', '--tool-calls', 'native', '--json'];
  try {
    const out = await promisify(execFile)(process.execPath, args, {
      env: { ...process.env, TAO_LLM_TIMEOUT_MS: '5000' },
      timeout: 240000,
      maxBuffer: 32 * 1024 * 1024,
    });
    [code, stderr] = [0, out.stderr];
    doc = JSON.parse(out.stdout) as typeof doc;
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    [code, stderr] = [typeof e.code === 'number' ? e.code : -1, e.stderr ?? ''];
    doc = JSON.parse(e.stdout || '{"passed":false,"patterns":[]}') as typeof doc;
  }
});

after(async () => {
  await sim?.close();
});

const pattern = (id: string) => doc.patterns.find((p) => p.pattern === id)!;
const kinds = (p: PatternReport) => p.turns.map((t) => t.kind);

test('the three patterns complete, each shown from the log, and the command exits 0', { timeout: 250000 }, () => {
  assert.equal(code, 0, stderr.slice(-3000));
  assert.equal(doc.passed, true);
  assert.deepEqual(
    doc.patterns.map((p) => [p.pattern, p.status, p.completed, p.problems]),
    [
      ['react', 'completed', true, []],
      ['plan-replan', 'completed', true, []],
      ['reflexion', 'completed', true, []],
    ],
  );
  assert.match(stderr, /react: run [0-9a-f-]{36} /, 'progress on stderr names each run');
});

test('ReAct: orders.get, shipping.track, then the answer, in react turns only', () => {
  const p = pattern('react');
  assert.deepEqual(kinds(p), ['react', 'react', 'react']);
  assert.deepEqual(
    p.tool_calls.map((c) => [c.tool, c.valid]),
    [
      ['orders.get', true],
      ['shipping.track', true],
    ],
  );
  assert.match(p.answer!, /^Order O-55501234 is delivered\./);
});

test('plan-replan: a plan turn, the tracking fails twice, a rule-based change_plan, a second plan turn that completes', () => {
  const p = pattern('plan-replan');
  assert.deepEqual(kinds(p), ['plan', 'plan']);
  assert.equal(p.fault?.requests_failed, 6, 'two calls of three attempts each were answered 503');
  assert.deepEqual(
    p.tool_calls.map((c) => [c.tool, c.valid]),
    [
      ['orders.get', true],
      ['shipping.track', false],
      ['shipping.track', false],
      ['crm.tier', true],
    ],
  );
  assert.deepEqual(
    p.reflections.map((r) => [r.action, r.author]),
    [['change_plan', 'rules']],
  );
  assert.deepEqual(JSON.parse(p.answer!), { order_id: 'O-27182818', status: 'shipped', tier: 'silver' });
});

test('Reflexion: the order lookup times out, a Turn: reflection turn writes a reflection, the lookup is called again and the run answers', () => {
  const p = pattern('reflexion');
  assert.deepEqual(kinds(p), ['react', 'reflection', 'react', 'react', 'react']);
  assert.deepEqual(
    p.tool_calls.map((c) => [c.tool, c.valid, c.error]),
    [
      ['orders.get', false, 'timeout'],
      ['orders.get', true, null],
      ['shipping.track', true, null],
    ],
  );
  assert.deepEqual(
    p.reflections.map((r) => [r.action, r.author]),
    [['retry_with_changed_input', 'model:order-status@1']],
  );
  assert.match(p.answer!, /^Order O-31415926 is delivered\./);
});

test('each run has its timeline from tao replay, and tao replay --verify with the model unreachable reports no drift', () => {
  for (const p of doc.patterns) {
    assert.match(p.timeline, new RegExp(`^Run ${p.thought_id} .* COMPLETED \\(completed\\)`), p.pattern);
    assert.match(p.timeline_excerpt, /^Outcome .* COMPLETED/m, p.pattern);
    assert.doesNotMatch(p.timeline_excerpt, /attempt_time_ms|observation\.rules_version/, 'the excerpt leaves the bookkeeping lines out');
    assert.equal(p.verify?.drift, false, `${p.pattern}: ${p.problems.join('; ')}`);
    assert.ok(p.verify.checked.thought_inputs >= 3, `${p.pattern}: the task and every wave were re-decided`);
  }
  assert.match(pattern('reflexion').timeline, /RETRY_WITH_CHANGED_INPUT/, 'the reflection is in the timeline');
  const turns = doc.patterns.reduce((n, p) => n + p.turns.length, 0);
  assert.equal(sim.stats().total, turns, 'the simulator answered the model turns and nothing else: replay and verify asked no model');
});
