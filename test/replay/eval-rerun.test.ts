/**
 * How `tao eval --from-log` re-runs one recorded run (replay/from-log/rerun.ts, calls.ts), over runs
 * recorded in-process by the real cores (test/replay/record-run.ts; no broker): which calls read the
 * record, which are made (and through what), and which stop the re-run, and where a changed
 * candidate is reported to diverge.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ToolExecutor } from '../../processors/action/executor.ts';
import type { HttpDeps } from '../../processors/action/invoke.ts';
import type { ObservationConfig } from '../../processors/observation/core.ts';
import type { ThoughtConfig } from '../../processors/thought/core.ts';
import { loadCatalog, observationConfig, thoughtConfig } from '../../processors/wiring/index.ts';
import { RecordedCalls, resolveCall, type CallCounts, type CallSources } from '../../replay/from-log/calls.ts';
import { rerunRun } from '../../replay/from-log/rerun.ts';
import type { RunLog } from '../../replay/log.ts';
import type { StepCall, StepResult } from '../../schemas/types.gen.ts';
import { createContractAjv } from '../../tools/catalog.ts';
import { answer, recordRun } from './record-run.ts';

let dir: string;
let thought: ThoughtConfig;
let observation: ObservationConfig;
let log: RunLog;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tao-eval-rerun-'));
  thought = await thoughtConfig({ TAO_PLANNER: 'graph' });
  observation = await observationConfig({ TAO_SEMANTIC_CHECK: 'off' });
  log = await recordRun(thought, observation, null);
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** The calls a re-run made through the executor (none, unless a test allows them). */
let made: StepCall[] = [];

/** Call sources over the catalog `env` names; the executor answers as the demo data does, and counts. */
function sources(env: NodeJS.ProcessEnv = {}, liveReads = false): CallSources {
  const catalog = loadCatalog(env, createContractAjv(), 'contracts');
  const executor = {
    execute: async (tool: { spec: { name: string } }, stepId: string, input: unknown, ctx: { idempotencyKey: string }): Promise<StepResult> => {
      const call = { step_id: stepId, tool: tool.spec.name, input_json: JSON.stringify(input), idempotency_key: ctx.idempotencyKey, attempt: 1 };
      made.push(call);
      return answer(call);
    },
  } as unknown as ToolExecutor;
  return { catalog, executor, http: {} as HttpDeps, secrets: { resolve: (t) => t, valuesIn: () => [] }, liveReads, hasModel: false, namedModel: null };
}

const counts = (): CallCounts => ({ model: 0, live: {} });

/** A copy of the repository's flows with order-status@1 changed by `edit`, as the graph planner's Thought. */
async function flowCandidate(name: string, edit: (flow: { nodes: Array<Record<string, unknown>>; edges: unknown[]; output: Record<string, string> }) => void) {
  const flows = join(dir, name);
  cpSync(join(import.meta.dirname, '..', '..', 'flows'), flows, { recursive: true });
  const file = join(flows, 'order-status.v1.json');
  const flow = JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof edit>[0];
  edit(flow);
  writeFileSync(file, JSON.stringify(flow));
  return thoughtConfig({ TAO_PLANNER: 'graph', TAO_FLOWS_DIR: flows });
}

test('an unchanged candidate re-runs the run as recorded: every call read from the record, none made', async () => {
  made = [];
  const c = counts();
  const r = await rerunRun(log, 'order-status', { thought, observation, configurationDrift: [], notes: [] }, sources(), c);
  assert.equal(r.diverged, false, r.divergence?.explanation);
  assert.deepEqual(r.changed, []);
  assert.deepEqual(r.today, r.recorded);
  assert.equal(r.recorded.status, 'completed');
  assert.deepEqual(r.calls, { recorded: 4, refused: 0, model: 0, live: 0 });
  assert.deepEqual(made, []);
  assert.deepEqual(c, counts());
});

test('a flow that no longer tracks the shipment: the run diverges at the recorded step it no longer calls, and its answer facts changed', async () => {
  const candidate = await flowCandidate('no-tracking', (flow) => {
    flow.nodes = flow.nodes.filter((n) => n.id !== 'S4');
    flow.edges = flow.edges.filter((e) => (e as { to: string }).to !== 'S4');
    delete flow.output.shipping_state;
  });
  made = [];
  const r = await rerunRun(log, 'order-status', { thought: candidate, observation, configurationDrift: [], notes: [] }, sources(), counts());
  assert.equal(r.diverged, true);
  assert.deepEqual(r.changed, ['tool_calls', 'answer']);
  const d = r.divergence!;
  assert.deepEqual([d.kind, d.wave, d.step, d.tool], ['tool_calls', 3, 'S4', 'shipping.track']);
  assert.match(d.explanation, /the run called shipping\.track here; the candidate makes no further call/);
  // Then its answer: the shipping state it no longer has.
  assert.deepEqual(
    r.also.map((a) => [a.kind, a.diff.map((f) => f.path)]),
    [['answer', ['output.shipping_state']]],
  );
  assert.deepEqual(r.today, { status: 'completed', reason_code: 'completed' });
  assert.deepEqual(made, []);
});

test('a call never recorded is not made: the re-run stops at that step, saying why; a tool declared free of side effects is called with --live-reads', async () => {
  const candidate = await flowCandidate('other-customer', (flow) => {
    flow.nodes = flow.nodes.map((n) => (n.id === 'S3' ? { ...n, input: { customer_id: 'C-999999' } } : n));
  });
  const configs = { thought: candidate, observation, configurationDrift: [], notes: [] };
  made = [];
  const stopped = await rerunRun(log, 'order-status', configs, sources(), counts());
  assert.deepEqual(made, [], 'nothing was called');
  assert.equal(stopped.today, null);
  const d = stopped.divergence!;
  assert.deepEqual([d.kind, d.wave, d.step, d.tool], ['unrecorded_call', 2, 'S3', 'crm.tier']);
  assert.match(
    d.explanation,
    /^crm\.tier \{"customer_id":"C-999999"\} was never recorded, and was not called: the catalog does not declare it free of side effects$/,
  );
  assert.deepEqual(d.today, { customer_id: 'C-999999' });

  // The same candidate with crm.tier declared free of side effects: still not called without --live-reads, called with it.
  const catalog = join(dir, 'catalog');
  cpSync(join(import.meta.dirname, '..', '..', 'tools', 'catalog'), catalog, { recursive: true });
  const file = join(catalog, 'crm.tier.json');
  writeFileSync(file, JSON.stringify({ ...(JSON.parse(readFileSync(file, 'utf8')) as object), side_effects: false }));
  const off = await rerunRun(log, 'order-status', configs, sources({ TAO_TOOL_CATALOG_DIR: catalog }), counts());
  assert.match(off.divergence!.explanation, /was not called: it is free of side effects, but live reads are off \(--live-reads\)$/);
  assert.deepEqual(made, []);
  const c = counts();
  const live = await rerunRun(log, 'order-status', configs, sources({ TAO_TOOL_CATALOG_DIR: catalog }, true), c);
  assert.deepEqual(
    (made as StepCall[]).map((m) => [m.step_id, m.tool, m.input_json]),
    [['S3', 'crm.tier', '{"customer_id":"C-999999"}']],
  );
  assert.deepEqual(c.live, { 'crm.tier': 1 });
  assert.deepEqual(live.calls, { recorded: 3, refused: 0, model: 0, live: 1 });
  // It ran to its end, and its changed call is where it diverged.
  assert.deepEqual(live.today, { status: 'completed', reason_code: 'completed' });
  assert.deepEqual([live.divergence!.kind, live.divergence!.step], ['tool_calls', 'S3']);
  assert.match(live.divergence!.explanation, /the candidate calls crm\.tier with other arguments/);
});

test("a call the candidate's contract refuses is answered invalid_input, as Action would, and sends nothing", async () => {
  const catalog = join(dir, 'strict-catalog');
  cpSync(join(import.meta.dirname, '..', '..', 'tools', 'catalog'), catalog, { recursive: true });
  const file = join(catalog, 'shipping.track.json');
  const entry = JSON.parse(readFileSync(file, 'utf8')) as { parameters: { properties: { order_id: Record<string, unknown> } } };
  entry.parameters.properties.order_id = { ...entry.parameters.properties.order_id, pattern: '^X-' };
  writeFileSync(file, JSON.stringify(entry));
  made = [];
  const r = await rerunRun(
    log,
    'order-status',
    { thought, observation, configurationDrift: [], notes: [] },
    sources({ TAO_TOOL_CATALOG_DIR: catalog }),
    counts(),
  );
  assert.deepEqual(made, []);
  assert.equal(r.calls.refused, 1);
  assert.equal(r.diverged, true);
  assert.ok(r.changed.includes('outcome'), r.changed.join(', '));
});

test("a model turn reads its recorded answer while its request and model are unchanged; otherwise it asks the candidate's model, or stops the re-run without one", async () => {
  const request = { messages: [{ role: 'user', content: 'Where is my order O-12345678?' }] };
  const recordedTurn: StepResult = {
    step_id: 'M1',
    tool: 'model.chat',
    input_json: JSON.stringify(request),
    idempotency_key: 'run:M1:x',
    attempts: 1,
    status_code: 200,
    response_time_ms: 5,
    response_raw: JSON.stringify({ model: 'sim-1', choices: [{ message: { role: 'assistant', content: 'ok' } }] }),
    data_json: null,
    error: null,
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: 5,
  };
  const turnLog: RunLog = {
    ...log,
    records: [
      {
        topic: 'actionResults',
        ref: { topic: 'ns.actionResults', partition: 0, offset: '0' },
        timestamp: 1,
        key: 'run',
        headers: {},
        value: { thought_id: 'run', iteration: 1, run: null, results: [recordedTurn], dead_letter: null } as unknown as Record<string, unknown>,
        decodeError: null,
      },
    ],
  };
  const step = (input: object): StepCall => ({ step_id: 'M1', tool: 'model.chat', input_json: JSON.stringify(input), idempotency_key: 'run:M1:y', attempt: 1 });
  const ask = async (input: object, model: { hasModel: boolean; namedModel: string | null }) => {
    const c = counts();
    const answered = await resolveCall(step(input), 'run', new RecordedCalls(turnLog), { ...sources(), ...model }, c);
    return { source: answered.source, reason: answered.source === 'diverged' ? answered.reason : null, asked: c.model };
  };
  made = [];
  assert.deepEqual(await ask(request, { hasModel: false, namedModel: null }), { source: 'recorded', reason: null, asked: 0 });
  assert.deepEqual(await ask(request, { hasModel: true, namedModel: 'sim-1' }), { source: 'recorded', reason: null, asked: 0 });
  assert.deepEqual(made, []);
  const changed = { messages: [{ role: 'system', content: 'Skill: order-status@2' }, ...request.messages] };
  assert.deepEqual(await ask(changed, { hasModel: false, namedModel: null }), {
    source: 'diverged',
    reason: 'the model request of M1 changed, and the candidate has no model to ask (--base-url, --model)',
    asked: 0,
  });
  assert.deepEqual(await ask(changed, { hasModel: true, namedModel: null }), { source: 'model', reason: null, asked: 1 });
  // Another model named for the candidate: the same request is asked again, of that model.
  assert.deepEqual(await ask(request, { hasModel: true, namedModel: 'sim-2' }), { source: 'model', reason: null, asked: 1 });
  assert.deepEqual(
    (made as StepCall[]).map((m) => m.tool),
    ['model.chat', 'model.chat'],
  );
});
