/**
 * Verify, timeline and fork over recorded runs made in-process by the real cores (no broker): the
 * log of a run is what the stages would have written, so mutating it must show as drift and
 * leaving it alone must not.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { observe, type ObservationConfig } from '../../processors/observation/core.ts';
import { onObservation, onTask, type ThoughtConfig } from '../../processors/thought/core.ts';
import { endTooLarge } from '../../processors/thought/run-end.ts';
import { encodedValueBytes } from '../../runtime/codec.ts';
import { MAX_OUTPUT_VALUE_BYTES } from '../../runtime/processor.ts';
import { DEFAULT_FLOWS_DIR, loadFlows } from '../../processors/thought/planners/flows.ts';
import { observationConfig, thoughtConfig } from '../../processors/wiring/index.ts';
import { decodeOffsets, encodeOffsets } from '../../replay/dlq.ts';
import { planFork } from '../../replay/fork.ts';
import type { LoggedRecord, RunLog } from '../../replay/log.ts';
import { renderHtml } from '../../replay/render-html.ts';
import { renderTerminal } from '../../replay/render-terminal.ts';
import { buildTimeline } from '../../replay/build-timeline.ts';
import { verifyRun, type VerifyConfigs } from '../../replay/verify.ts';
import type { ActionResult, RunSnapshot, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { createContractAjv } from '../../tools/catalog.ts';
import type { TopicId } from '../../topics/catalog.ts';
import { keyOf } from '../processors/fixtures.ts';
import { answer } from './record-run.ts';

let configs: VerifyConfigs;

before(async () => {
  configs = { thought: await thoughtConfig({ TAO_PLANNER: 'graph' }), observation: await observationConfig({ TAO_SEMANTIC_CHECK: 'off' }) };
});

const ID = 'run-1';

function task(text: string, kind: Task['kind'] = 'NEW', n = 0): Task {
  return {
    thought_id: ID,
    task_id: `task-${kind}-${n}`,
    kind,
    text,
    source: 'test',
    external_id: null,
    metadata: {},
    submitted_at_ms: 1,
    decision: null,
    timer: null,
  };
}

/** Records a run the way the three stages would: Thought's store, the waves, the verdicts. */
class Recorder {
  readonly records: LoggedRecord[] = [];
  private clock = 1_700_000_000_000;
  private readonly offsets = new Map<TopicId, number>();
  private snapshot: RunSnapshot | undefined;
  /** The wave after whose observation the runner found Thought's decision too large for a record (Thought's fitOutputs). */
  tooLargeAfterWave: number | null = null;
  /** Characters of history added to step S1's answer (0: none). */
  padS1 = 0;
  /** The record limit (bytes) the runner measured a task's wave against (Thought's fitOutputs on a task); null: none. */
  taskWaveLimit: number | null = null;

  constructor(
    private readonly thought: ThoughtConfig,
    private readonly observation: ObservationConfig,
  ) {}

  add(topic: TopicId, value: object, headers: Record<string, string> = {}): LoggedRecord {
    this.clock += 10;
    const offset = (this.offsets.get(topic) ?? -1) + 1;
    this.offsets.set(topic, offset);
    const record: LoggedRecord = {
      topic,
      ref: { topic: `ns.${topic}`, partition: 0, offset: String(offset) },
      timestamp: this.clock,
      key: ID,
      headers,
      value: value as Record<string, unknown>,
      decodeError: null,
    };
    this.records.push(record);
    return record;
  }

  /**
   * Thought handles a task; the run's waves follow to the end (or until it parks). `early` arrives
   * before Thought's decision is written (a redelivery in the same batch); `between` runs after
   * each Thought decision.
   */
  async task(t: Task, between: (wave: number) => void = () => undefined, early: Task[] = []): Promise<void> {
    this.add('tasks', t);
    for (const e of early) this.add('tasks', e);
    let decision = onTask(t, this.thought, this.snapshot, null);
    const first = decision.outputs.find((o) => o.topic === 'thoughtRequests');
    if (this.taskWaveLimit !== null && first)
      decision = endTooLarge({ topic: 'tasks', value: t }, decision.outputs, {
        topic: 'thoughtRequests',
        bytes: encodedValueBytes('thoughtRequests', first.value),
        limit: this.taskWaveLimit,
      })!;
    let pending = this.decide(decision.outputs);
    between(0);
    while (pending) {
      const result: ActionResult = {
        thought_id: ID,
        iteration: pending.iteration,
        run: pending.run,
        results: pending.steps.map((c) => answer(c, this.padS1)),
        dead_letter: null,
      };
      this.add('actionResults', result);
      const obs = await observe(result, this.observation);
      this.add('observationResults', obs);
      const wave = pending.iteration;
      let decision = onObservation(obs, this.thought, this.snapshot);
      // As the runner would: the next wave measured, and the run ended in its place.
      const next = decision.outputs.find((o) => o.topic === 'thoughtRequests');
      if (wave === this.tooLargeAfterWave && next)
        decision = endTooLarge({ topic: 'observationResults', value: obs }, decision.outputs, {
          topic: 'thoughtRequests',
          bytes: encodedValueBytes('thoughtRequests', next.value),
          limit: MAX_OUTPUT_VALUE_BYTES,
        })!;
      pending = this.decide(decision.outputs);
      between(wave);
    }
  }

  private decide(outputs: ReturnType<typeof onTask>['outputs']): ThoughtRequest | undefined {
    let request: ThoughtRequest | undefined;
    for (const o of outputs) {
      this.add(o.topic, o.value);
      if (o.topic === 'thoughtRuns') this.snapshot = o.value;
      if (o.topic === 'thoughtRequests') request = o.value;
    }
    return request;
  }

  log(records: LoggedRecord[] = this.records): RunLog {
    return { thoughtId: ID, namespace: 'ns', bounds: { fromMs: null, toMs: null }, scanned: [], records, deadLetters: [] };
  }
}

async function completedRun(): Promise<Recorder> {
  const rec = new Recorder(configs.thought, configs.observation);
  await rec.task(task('Where is my order? alice@example.com'));
  return rec;
}

test('an untouched recorded run verifies without drift; redelivered tasks and a parked run resumed by a reply are matched to the right decisions', async () => {
  const plain = await completedRun();
  const report = await verifyRun(plain.log(), configs);
  assert.equal(report.drift, false, JSON.stringify(report.first_divergence, null, 2));
  // 3 waves, 3 observations, 1 outcome, and the 4 snapshots written with them (one per wave dispatched, one at the end).
  assert.deepEqual(report.checked, { thought_inputs: 4, observation_inputs: 3, records_compared: 3 + 3 + 1 + 4 });

  // The same task delivered again before the first decision was written, right after it, and
  // after the first wave: Thought ignores all three.
  const dup = new Recorder(configs.thought, configs.observation);
  const again = (n: number) => task('Where is my order? alice@example.com', 'NEW', n);
  await dup.task(again(0), (wave) => wave <= 1 && void dup.add('tasks', again(wave + 2)), [again(1)]);
  assert.equal(dup.records.filter((r) => r.topic === 'tasks').length, 4);
  const dupReport = await verifyRun(dup.log(), configs);
  assert.equal(dupReport.drift, false, JSON.stringify(dupReport.first_divergence, null, 2));

  // Parked for the e-mail address, then resumed by a reply.
  const parked = new Recorder(configs.thought, configs.observation);
  await parked.task(task('Where is my order? It never came.'));
  await parked.task(task('It is bob@example.com', 'REPLY', 1));
  const t = buildTimeline(parked.log());
  assert.deepEqual(
    t.outcomes.map((o) => o.status),
    ['awaiting_input', 'completed'],
  );
  assert.equal(t.status, 'completed');
  const parkedReport = await verifyRun(parked.log(), configs);
  assert.equal(parkedReport.drift, false, JSON.stringify(parkedReport.first_divergence, null, 2));
});

test("a run ended record_too_large verifies when today's decision writes a record too large as well, and drifts when it does not", async () => {
  // S1 answers with ~1 MB: the wave after it would carry that in its run state.
  const rec = new Recorder(configs.thought, configs.observation);
  rec.tooLargeAfterWave = 1;
  rec.padS1 = 1_000_000;
  await rec.task(task('Where is my order? alice@example.com'));
  assert.deepEqual(
    rec.records.filter((r) => r.topic === 'outcomes').map((r) => r.value!.reason_code),
    ['record_too_large'],
  );
  const report = await verifyRun(rec.log(), configs);
  assert.equal(report.drift, false, JSON.stringify(report.first_divergence, null, 2));
  assert.ok(
    report.notes.some((n) =>
      /ended record_too_large \(its next thoughtRequests record was (\d{7}) bytes\); today's decision writes one of \1 bytes, over the 983040-byte limit too/.test(
        n,
      ),
    ),
    report.notes.join('\n'),
  );

  // The same end recorded for a run whose next wave fits (a history that says so falsely, or a limit since raised): drift, at that wave.
  const small = new Recorder(configs.thought, configs.observation);
  small.tooLargeAfterWave = 1;
  await small.task(task('Where is my order? alice@example.com'));
  const fits = await verifyRun(small.log(), configs);
  assert.equal(fits.drift, true);
  assert.match(fits.first_divergence!.explanation, /today's Thought writes a next wave where the run recorded an outcome/);

  // Recorded as too large on a topic today's decision does not write (an outcome): drift too.
  const other = structuredClone(rec.records);
  const ended = other.find((r) => r.topic === 'outcomes')!;
  (ended.value!.too_large as { topic: string }).topic = 'outcomes';
  const drifted = await verifyRun(rec.log(other), configs);
  assert.equal(drifted.drift, true);
  assert.match(drifted.first_divergence!.explanation, /today's Thought writes a next wave where the run recorded an outcome/);
});

test('a parked run that a reply would have resumed into a wave too large verifies as ended record_too_large, and drifts when the wave fits', async () => {
  // The limit recorded in the outcome's reason is what the runner measured against: 500 bytes
  // (a wave is more), then 10 MB (a wave is less: the recorded end is not what today's code does).
  for (const [limit, drift] of [
    [500, false],
    [10_000_000, true],
  ] as const) {
    const rec = new Recorder(configs.thought, configs.observation);
    await rec.task(task('Where is my order? It never came.'));
    rec.taskWaveLimit = limit;
    await rec.task(task('It is bob@example.com', 'REPLY', 1));
    const outcomes = rec.records.filter((r) => r.topic === 'outcomes').map((r) => [r.value!.status, r.value!.reason_code]);
    assert.deepEqual(outcomes, [
      ['awaiting_input', 'needs_input'],
      ['failed', 'record_too_large'],
    ]);
    const report = await verifyRun(rec.log(), configs);
    assert.equal(report.drift, drift, JSON.stringify(report.first_divergence, null, 2));
    if (drift) assert.match(report.first_divergence!.explanation, /today's Thought writes a next wave where the run recorded an outcome/);
    else
      assert.ok(
        report.notes.some((n) => /ended record_too_large .*over the 500-byte limit too/.test(n)),
        report.notes.join('\n'),
      );
  }
});

test('a snapshot compacted away from thought.runs is noted, not reported as drift', async () => {
  const rec = await completedRun();
  const firstSnapshot = rec.records.find((r) => r.topic === 'thoughtRuns')!;
  const report = await verifyRun(rec.log(rec.records.filter((r) => r !== firstSnapshot)), configs);
  assert.equal(report.drift, false, JSON.stringify(report.first_divergence, null, 2));
  assert.ok(
    report.notes.some((n) => n.includes('compacted')),
    report.notes.join('\n'),
  );
});

test('a mutated history shows as drift at the first changed record, naming the field', async () => {
  const rec = await completedRun();
  const clone = () => structuredClone(rec.records);

  // Observation's recorded verdict differs from what today's Observation says.
  const verdictChanged = clone();
  const obs2 = verdictChanged.find((r) => r.topic === 'observationResults' && r.value!.iteration === 2)!;
  const verdicts = (obs2.value as { verdicts: Array<{ confidence_score: number }> }).verdicts;
  const original = verdicts[1]!.confidence_score;
  verdicts[1]!.confidence_score = 0.5;
  const a = (await verifyRun(rec.log(verdictChanged), configs)).first_divergence!;
  assert.equal(a.stage, 'observation');
  assert.equal(a.input.summary, 'actionResults wave 2');
  assert.deepEqual(a.diff, [{ path: 'verdicts[1].confidence_score', recorded: 0.5, today: original }]);

  // Thought's recorded wave asked for another input than today's Thought would.
  const inputChanged = clone();
  const request2 = inputChanged.find((r) => r.topic === 'thoughtRequests' && r.value!.iteration === 2)!;
  (request2.value as unknown as ThoughtRequest).steps[0]!.input_json = '{"customer_id":"C-999999"}';
  const b = (await verifyRun(rec.log(inputChanged), configs)).first_divergence!;
  assert.equal(b.stage, 'thought');
  assert.equal(b.input.summary, 'observationResults wave 1');
  assert.deepEqual(b.diff, [{ path: 'steps[0].input_json<json>.customer_id', recorded: 'C-999999', today: 'C-123456' }]);

  // A decision missing from the log: today's Thought writes wave 3, the record has none.
  const missing = rec.records.filter((r) => !(r.topic === 'thoughtRequests' && r.value!.iteration === 3));
  const c = (await verifyRun(rec.log(missing), configs)).first_divergence!;
  assert.equal(c.stage, 'thought');
  assert.match(c.explanation, /writes a next wave for this input; the run recorded none/);

  // A decision in the log that no input explains.
  const extra = clone();
  extra.push({
    ...structuredClone(extra.find((r) => r.topic === 'outcomes')!),
    timestamp: 1_800_000_000_000,
    ref: { topic: 'ns.outcomes', partition: 0, offset: '9' },
  });
  const d = (await verifyRun(rec.log(extra), configs)).first_divergence!;
  assert.match(d.explanation, /no recorded input makes today's code write it/);
});

test('the timeline of a parked run names the reflection and the failed check', async () => {
  const rec = new Recorder(configs.thought, configs.observation);
  await rec.task(task('Where is my order? unknown.x@example.com'));
  const t = buildTimeline(rec.log());
  assert.equal(t.status, 'awaiting_input');
  assert.equal(t.iterations[0]!.steps[0]!.verdict?.error_type, 'not_found');
  assert.deepEqual(
    t.reflections.map((r) => [r.step_id, r.action]),
    [['S1', 'ask_human']],
  );
  assert.deepEqual(
    t.plan?.steps.map((s) => s.state),
    ['failed', 'not_run', 'not_run', 'not_run'],
  );
});

test('a step served by a fallback after retries shows the fallback, its reason and the retries in every view', async () => {
  const rec = await completedRun();
  const records = structuredClone(rec.records);
  const result = records.find((r) => r.topic === 'actionResults' && r.value!.iteration === 2)!.value as unknown as ActionResult;
  Object.assign(result.results[1]!, { tool: 'crm.tier_cache', attempts: 3, fallback_from: 'crm.tier', fallback_reason: 'circuit_open: crm.tier is open' });
  const t = buildTimeline(rec.log(records));
  const s3 = t.iterations[1]!.steps.find((s) => s.step_id === 'S3')!;
  assert.deepEqual([s3.tool, s3.result?.tool, s3.result?.fallback_from, s3.result?.retries], ['crm.tier', 'crm.tier_cache', 'crm.tier', 2]);
  const text = renderTerminal(t);
  assert.match(text, /S3 +crm\.tier -> crm\.tier_cache +verified/);
  assert.match(text, /S3: fallback: served by crm\.tier_cache for crm\.tier \(circuit_open: crm\.tier is open\)/);
  const html = renderHtml(t);
  assert.match(html, /fallback: served by <code>crm\.tier_cache<\/code> for <code>crm\.tier<\/code>/);
  assert.match(html, />3 \(2 retries\)</);
});

test('planFork: wave 2 keeps S1, an override changes S2, wave 1 re-plans with the override, --flow re-plans on another flow version', async () => {
  const rec = await completedRun();
  const log = rec.log();
  const two = planFork(log, { point: '2', overrides: ['S2.customer_id=C-000001'], flow: null }, { thought: configs.thought, newThoughtId: 'child' });
  assert.equal(two.request.thought_id, 'child');
  assert.equal(two.request.iteration, 2);
  assert.deepEqual(
    two.request.steps.map((s) => [s.step_id, JSON.parse(s.input_json)]),
    [
      ['S2', { customer_id: 'C-000001' }],
      ['S3', { customer_id: 'C-123456' }],
    ],
  );
  assert.deepEqual(two.kept, ['S1']);
  assert.match(two.request.run.task_id, /^fork:run-1:2:/);
  assert.deepEqual(
    two.request.steps.map((s) => s.idempotency_key),
    [keyOf('child', 'S2', 'orders.latest', { customer_id: 'C-000001' }), keyOf('child', 'S3', 'crm.tier', { customer_id: 'C-123456' })],
  );
  assert.equal(two.headers['tao.fork.parent'], ID);

  const one = planFork(log, { point: 'S1', overrides: ['S1.email=carol@example.com'], flow: null }, { thought: configs.thought, newThoughtId: 'child-1' });
  assert.equal(one.iteration, 1);
  assert.deepEqual(JSON.parse(one.request.steps[0]!.input_json), { email: 'carol@example.com' });

  // Another version of the flow that drops S3: the fork keeps S1 and runs S2 alone.
  const dir = mkdtempSync(join(tmpdir(), 'tao-flows-'));
  const v1 = JSON.parse(readFileSync(join(DEFAULT_FLOWS_DIR, 'order-status.v1.json'), 'utf8')) as {
    version: number;
    nodes: Array<{ id: string }>;
    edges: Array<{ from: string; to: string }>;
    output: Record<string, string>;
  };
  const v2 = {
    ...v1,
    version: 2,
    nodes: v1.nodes.filter((n) => n.id !== 'S3'),
    edges: v1.edges.filter((e) => e.to !== 'S3'),
    output: Object.fromEntries(Object.entries(v1.output).filter(([k]) => k !== 'tier')),
  };
  writeFileSync(join(dir, 'order-status.v1.json'), JSON.stringify(v1));
  writeFileSync(join(dir, 'order-status.v2.json'), JSON.stringify(v2));
  const flows = loadFlows(dir, createContractAjv());
  const replanned = planFork(log, { point: '2', overrides: [], flow: 'order-status@2' }, { thought: configs.thought, flows, newThoughtId: 'child-2' });
  assert.deepEqual(
    replanned.request.steps.map((s) => s.step_id),
    ['S2'],
  );
  assert.deepEqual([replanned.request.run.flow_id, replanned.request.run.flow_version], ['order-status', 2]);
  assert.equal(replanned.headers['tao.fork.flow'], 'order-status@2');
  rmSync(dir, { recursive: true, force: true });
});

test('the re-drive ledger lists offsets as compact ranges and reads them back', () => {
  const text = encodeOffsets(['3', '4', '5', '9', '12', '13']);
  assert.equal(text, '{"v":1,"redriven":"3-5,9,12-13"}');
  assert.deepEqual(
    [...decodeOffsets(text)].sort((a, b) => Number(a) - Number(b)),
    ['3', '4', '5', '9', '12', '13'],
  );
  assert.deepEqual([...decodeOffsets(null)], []);
  assert.deepEqual([...decodeOffsets('something else')], []);
});
