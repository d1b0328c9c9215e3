import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RunIndex } from '../../console/run-index.ts';
import { runState } from '../../schemas/records.ts';
import type { ActionResult, ObservationResult, Outcome, RunState, StepResult, Task, ThoughtRequest } from '../../schemas/types.gen.ts';

const T0 = Date.parse('2026-05-01T10:00:00Z');

/** A react run's state, as Thought writes it. */
const state = (over: Partial<RunState> = {}): RunState =>
  runState({ task_id: 't', task_text: 'x', planner: 'react', flow_id: 'order-status', plan_json: '{}', planner_kind: 'react', ...over });
const task = (id: string, text: string, external: string | null, source = 'helpdesk', kind: Task['kind'] = 'NEW'): Task => ({
  thought_id: id,
  task_id: `${id}-t`,
  kind,
  text,
  source,
  external_id: external,
  metadata: {},
  submitted_at_ms: 0,
  decision: null,
  timer: null,
});
const request = (id: string, iteration: number, tools: string[], run = state()): ThoughtRequest =>
  ({
    thought_id: id,
    iteration,
    run,
    steps: tools.map((tool, i) => ({ step_id: `S${iteration}_${i}`, tool, input_json: '{}', idempotency_key: `${id}:${iteration}:${i}`, attempt: 1 })),
  }) as unknown as ThoughtRequest;
const result = (tool: string, over: Partial<StepResult> = {}): StepResult =>
  ({
    step_id: 'S',
    tool,
    input_json: '{}',
    idempotency_key: 'k',
    attempts: 1,
    status_code: 200,
    response_time_ms: 100,
    response_raw: '{}',
    data_json: '{}',
    error: null,
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: null,
    ...over,
  }) as StepResult;
const results = (id: string, iteration: number, rs: StepResult[], run = state()): ActionResult =>
  ({ thought_id: id, iteration, run, results: rs }) as unknown as ActionResult;
const outcome = (id: string, status: Outcome['status'], iterations: number, over: Partial<Outcome> = {}): Outcome =>
  ({
    thought_id: id,
    task_id: `${id}-t`,
    status,
    reason: '',
    iterations,
    steps_executed: iterations,
    output_json: null,
    missing_fields: [],
    planner: 'react',
    flow_id: 'order-status',
    flow_version: 1,
    reason_code: status === 'awaiting_input' ? 'needs_input' : status,
    reflections: [],
    planner_kind: 'react',
    planner_config: null,
    model_cost: null,
    ...over,
  }) as Outcome;

test('a run is summarised from its records: status, skill, planner, source, external id, ticket text, turns, tokens, cost, duration', () => {
  const index = new RunIndex();
  index.apply('tasks', task('r1', '我的订单 O-87654321 到哪了？', 'ZH-1'), T0);
  index.apply('thoughtRequests', request('r1', 1, ['model.chat']), T0 + 100);
  index.apply(
    'actionResults',
    results('r1', 1, [result('model.chat', { response_raw: '{"choices":[],"usage":{"prompt_tokens":90,"completion_tokens":10,"total_tokens":100}}' })]),
    T0 + 200,
  );
  index.apply('thoughtRequests', request('r1', 2, ['orders.get']), T0 + 300);
  index.apply('thoughtRequests', request('r1', 3, ['model.chat']), T0 + 500);
  index.apply('actionResults', results('r1', 3, [result('model.chat', { response_raw: '{"usage":{"total_tokens":120}}' })]), T0 + 600);
  assert.equal(index.get('r1')!.status, 'in_progress');
  index.apply('outcomes', outcome('r1', 'completed', 3, { model_cost: 0.0012, manifest: 'f'.repeat(64) }), T0 + 900);
  assert.deepEqual(index.get('r1'), {
    thought_id: 'r1',
    status: 'completed',
    reason_code: 'completed',
    flow: 'order-status@1',
    planner: 'react',
    source: 'helpdesk',
    external_id: 'ZH-1',
    text: '我的订单 O-87654321 到哪了？',
    turns: 2,
    tokens: 220,
    cost: 0.0012,
    waves: 3,
    started_at: T0,
    updated_at: T0 + 900,
    ended_at: T0 + 900,
    forked_from: null,
    manifest: 'f'.repeat(64),
  });
});

test('a parked run resumed by a reply is in progress again, then completed; the rates count it once, with a person involved', () => {
  const index = new RunIndex();
  index.apply('tasks', task('r2', 'Where is my order?', 'EN-2'), T0);
  index.apply('thoughtRequests', request('r2', 1, ['crm.find_customer'], state({ failures_seen: 1 })), T0 + 10);
  index.apply('outcomes', outcome('r2', 'awaiting_input', 1), T0 + 20);
  assert.equal(index.get('r2')!.status, 'awaiting_input');
  assert.equal(index.get('r2')!.ended_at, null);
  index.apply('tasks', task('r2', 'my e-mail is a@example.com', 'EN-2', 'helpdesk', 'REPLY'), T0 + 30);
  index.apply('thoughtRequests', request('r2', 2, ['crm.find_customer'], state({ failures_seen: 1, human_involved: true })), T0 + 40);
  assert.equal(index.get('r2')!.status, 'in_progress');
  assert.equal(index.get('r2')!.text, 'Where is my order?', 'the first task names the run');
  index.apply('outcomes', outcome('r2', 'completed', 2), T0 + 50);
  index.apply('outcomes', outcome('r2', 'completed', 2), T0 + 50);
  assert.equal(index.get('r2')!.status, 'completed');
  const { rates } = index.health(T0 + 60);
  assert.deepEqual([rates.ended, rates.completed, rates.hit_failure, rates.recovered, rates.tcr, rates.srr], [1, 1, 1, 0, 1, 0]);
});

test('the topics are read concurrently: an outcome read before the waves it ends still decides the status', () => {
  const index = new RunIndex();
  index.apply('outcomes', outcome('r3', 'failed', 2), T0 + 50);
  index.apply('tasks', task('r3', 'x', null), T0);
  index.apply('thoughtRequests', request('r3', 1, ['a']), T0 + 10);
  index.apply('thoughtRequests', request('r3', 2, ['a']), T0 + 20);
  assert.equal(index.get('r3')!.status, 'failed');
  assert.equal(index.get('r3')!.started_at, T0);
  // A parked run's outcome read after the wave that resumed it: the run is in progress.
  index.apply('thoughtRequests', request('r4', 2, ['a']), T0 + 70);
  index.apply('outcomes', outcome('r4', 'awaiting_input', 1), T0 + 60);
  assert.equal(index.get('r4')!.status, 'in_progress');
});

test('the runs page query: newest first, filters by status, skill, source and time, search by thought_id or external id, counts by status', () => {
  const index = new RunIndex();
  for (let i = 0; i < 5; i++) {
    const id = `run-${i}`;
    index.apply('tasks', task(id, `ticket ${i}`, `EXT-${i}`, i % 2 ? 'jira' : 'github'), T0 + i * 1000);
    index.apply('thoughtRequests', request(id, 1, ['a'], state(i === 4 ? { flow_id: 'refund', flow_version: 2 } : {})), T0 + i * 1000 + 1);
    if (i < 3)
      index.apply('outcomes', outcome(id, i === 0 ? 'failed' : 'completed', 1, i === 4 ? { flow_id: 'refund', flow_version: 2 } : {}), T0 + i * 1000 + 2);
  }
  const all = index.query();
  assert.deepEqual(
    all.runs.map((r) => r.thought_id),
    ['run-4', 'run-3', 'run-2', 'run-1', 'run-0'],
  );
  assert.deepEqual(all.counts, { failed: 1, completed: 2, in_progress: 2 });
  const completed = index.query({ status: 'completed' });
  assert.deepEqual(
    completed.runs.map((r) => r.thought_id),
    ['run-2', 'run-1'],
  );
  assert.deepEqual(completed.counts, all.counts, 'the counts ignore the status filter');
  assert.deepEqual(
    index.query({ source: 'jira' }).runs.map((r) => r.thought_id),
    ['run-3', 'run-1'],
  );
  assert.deepEqual(
    index.query({ flow: 'refund@2' }).runs.map((r) => r.thought_id),
    ['run-4'],
  );
  assert.deepEqual(
    index.query({ fromMs: T0 + 1000, toMs: T0 + 2500 }).runs.map((r) => r.thought_id),
    ['run-2', 'run-1'],
  );
  assert.deepEqual(
    index.query({ q: 'ext-3' }).runs.map((r) => r.thought_id),
    ['run-3'],
  );
  assert.deepEqual(
    index.query({ q: 'run-0' }).runs.map((r) => r.thought_id),
    ['run-0'],
  );
  assert.deepEqual(
    index.query({ limit: 2, offset: 1 }).runs.map((r) => r.thought_id),
    ['run-3', 'run-2'],
  );
  assert.deepEqual(index.facets(), { flows: ['order-status@1', 'refund@2'], sources: ['github', 'jira'] });
});

test('tool figures and the traceability index come from the step results; outcomes are bucketed per minute', () => {
  const index = new RunIndex();
  index.apply(
    'actionResults',
    results('r5', 1, [
      result('orders.get', { response_time_ms: 40 }),
      result('orders.get', { status_code: 503, response_time_ms: 900 }),
      result('crm.tier', { error: { type: 'timeout', message: 't', retryable: true } as StepResult['error'], status_code: null, response_raw: null }),
    ]),
    T0,
  );
  index.apply('outcomes', outcome('r5', 'completed', 1), T0 + 61_000);
  const h = index.health(T0 + 120_000, 3);
  assert.deepEqual(h.tools, [
    { tool: 'crm.tier', calls: 1, errors: 1, total_ms: 100, max_ms: 100 },
    { tool: 'orders.get', calls: 2, errors: 1, total_ms: 940, max_ms: 900 },
  ]);
  assert.deepEqual([h.rates.steps, h.rates.steps_with_evidence], [3, 3]);
  assert.deepEqual(
    h.perMinute.map((m) => m.counts),
    [{}, { completed: 1 }, {}],
  );
});

test("per-release rates: each manifest's ended runs, TCR and self-recovery as tao rollout status computes them; the runs list filters by release", () => {
  const index = new RunIndex();
  const [A, B] = ['a'.repeat(64), 'b'.repeat(64)];
  const observed = (id: string, manifest: string, verdict: Record<string, unknown>) =>
    ({
      thought_id: id,
      iteration: 1,
      run: state({ manifest }),
      verdicts: [{ valid: true, attempts: 1, fallback_from: null, ...verdict }],
    }) as unknown as ObservationResult;
  // A: 'a1' completes after a call retried in its last wave (recovered); 'a2' parks for a person, then completes after an invalid verdict (not self-recovery).
  index.apply('observationResults', observed('a1', A, { attempts: 2 }), T0);
  index.apply('outcomes', outcome('a1', 'completed', 1, { manifest: A, model_cost: 0.02 }), T0 + 1);
  index.apply('outcomes', outcome('a2', 'awaiting_input', 1, { manifest: A }), T0);
  index.apply('observationResults', observed('a2', A, { valid: false }), T0 + 2);
  index.apply('outcomes', outcome('a2', 'completed', 2, { manifest: A }), T0 + 3);
  // B: one escalated run, one still running (not counted).
  index.apply('outcomes', outcome('b1', 'escalated', 1, { manifest: B }), T0);
  index.apply('thoughtRequests', request('b2', 1, ['orders.get'], state({ manifest: B })), T0);
  const rates = index.manifests();
  assert.deepEqual(
    rates.map((m) => [m.manifest, m.runs, m.completed, m.escalated, m.tcr, m.hitFailure, m.recovered, m.srr, m.costPerRun]),
    [
      [A, 2, 2, 0, 1, 2, 1, 0.5, 0.02],
      [B, 1, 0, 1, 0, 0, 0, null, null],
    ],
  );
  assert.deepEqual(
    index
      .query({ manifest: B })
      .runs.map((r) => r.thought_id)
      .sort(),
    ['b1', 'b2'],
  );
  assert.deepEqual(index.query({ manifest: 'none' }).total, 0);
});
