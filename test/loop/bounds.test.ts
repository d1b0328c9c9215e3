// test-needs: kafka
/**
 * Loop bounds and plan validation on the real loop. Each scenario is a flow of its own (in a flows
 * folder the test writes), and the router planner picks it by the e-mail address in the task (each
 * flow's one input matches its own address), so one Thought process can be handed any plan without
 * a model: each bound ends its run with its own reason code, and each kind of invalid plan ends its
 * run failed (invalid_plan) with its reason, without any of its steps reaching a tool.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { Outcome } from '../../schemas/types.gen.ts';
import type { ToolServer } from '../../tool-server/server.ts';
import { followOutcomes, startLoop, type RunningLoop, type TestCluster } from '../helpers/cluster.ts';

type Step = { id: string; tool: string; input: Record<string, unknown>; depends_on: string[]; until?: unknown; max_calls?: number; fallback?: string };
const plan = (steps: Step[], output: Record<string, string> = {}) => ({ steps, output });
const tier = (id: string, customer: string, deps: string[] = [], extra: Partial<Step> = {}): Step => ({
  id,
  tool: 'crm.tier',
  input: { customer_id: customer },
  depends_on: deps,
  ...extra,
});
const track = (id: string, order: string, extra: Partial<Step> = {}): Step => ({
  id,
  tool: 'shipping.track',
  input: { order_id: order },
  depends_on: [],
  ...extra,
});

/** Each scenario's task names an e-mail; the flow whose input matches it is planned. */
const BOUNDS: Record<string, { plan: unknown; status: Outcome['status']; code: Outcome['reason_code'] }> = {
  'novelty@example.com': {
    plan: plan([track('S1', 'O-00000001', { until: { path: '/state', equals: 'never' }, max_calls: 10 })]),
    status: 'budget_exhausted',
    code: 'no_novelty',
  },
  'repeat@example.com': {
    plan: plan([track('S1', 'O-00000002', { until: { path: '/state', equals: 'never' } })]),
    status: 'budget_exhausted',
    code: 'repeat_cap',
  },
  'alwaysfails@example.com': { plan: plan([tier('S1', 'C-999001', [], { fallback: 'orders.latest' })]), status: 'failed', code: 'step_failed' },
  'iterations@example.com': {
    plan: plan(Array.from({ length: 7 }, (_, i) => tier(`S${i + 1}`, `C-10000${i}`, i ? [`S${i}`] : []))),
    status: 'budget_exhausted',
    code: 'max_iterations',
  },
  'budget@example.com': {
    plan: plan([...[1, 2, 3, 4].map((i) => tier(`A${i}`, `C-20000${i}`)), ...[1, 2, 3, 4].map((i) => tier(`B${i}`, `C-30000${i}`, ['A1', 'A2', 'A3', 'A4']))]),
    status: 'budget_exhausted',
    code: 'cost_budget',
  },
};

const bad = (customer: string) => tier('S1', customer);
const INVALID: Record<string, { plan: unknown; reason: RegExp }> = {
  'dup@example.com': { plan: plan([bad('C-666001'), { ...bad('C-666001'), id: 'S1' }]), reason: /step id S1 is used twice/ },
  'baddep@example.com': { plan: plan([{ ...bad('C-666002'), depends_on: ['S9'] }]), reason: /depends on unknown step S9/ },
  'cycle@example.com': { plan: plan([{ ...bad('C-666003'), depends_on: ['S2'] }, tier('S2', 'C-666003', ['S1'])]), reason: /cycle/ },
  'badtool@example.com': { plan: plan([{ ...bad('C-666004'), tool: 'billing.refund_everything' }]), reason: /unknown tool billing\.refund_everything/ },
  'badref@example.com': { plan: plan([bad('C-666005'), tier('S2', '{{S1.nonexistent}}', ['S1'])]), reason: /returns no field nonexistent/ },
  'toomany@example.com': { plan: plan(Array.from({ length: 9 }, (_, i) => tier(`S${i + 1}`, 'C-666006'))), reason: /9 steps, more than the limit of 8/ },
};

/**
 * A flows folder with one flow per scenario, each found by its e-mail address, and a routing table
 * that sends order-status tickets to all of them: the router plans the flow whose input is present.
 */
function scenarioFlows(dir: string): void {
  const scenarios = Object.entries({ ...BOUNDS, ...INVALID });
  const keys = scenarios.map(([email], i) => {
    const { steps, output } = scenarios[i]![1].plan as { steps: Step[]; output: Record<string, string> };
    const id = `bounds-${i + 1}`;
    const flow = {
      id,
      version: 1,
      description: `the plan of ${email}`,
      inputs: { email: { pattern: email.replace(/\./g, '\\.'), description: `the address ${email}` } },
      nodes: steps.map(({ depends_on: _deps, ...node }) => node),
      edges: steps.flatMap((step) => step.depends_on.map((from) => ({ from, to: step.id }))),
      output,
    };
    writeFileSync(join(dir, `${id}.v1.json`), JSON.stringify(flow));
    return `${id}@1`;
  });
  writeFileSync(join(dir, 'routes.json'), JSON.stringify({ version: 1, intents: { order_status: keys } }));
}

let flowsDir: string;
let loop: RunningLoop;
let tools: ToolServer;
let cluster: TestCluster;

before(async () => {
  flowsDir = mkdtempSync(join(tmpdir(), 'tao-bounds-flows-'));
  scenarioFlows(flowsDir);
  loop = await startLoop({
    TAO_PLANNER: 'router',
    TAO_FLOWS_DIR: flowsDir,
    TAO_ROUTES: join(flowsDir, 'routes.json'),
    TAO_MAX_ITERATIONS: '6',
    TAO_COST_BUDGET: '7', // tool calls cost 1 each
    TAO_MAX_PLAN_STEPS: '8',
  });
  ({ cluster, tools } = loop);
  // The failing scenario's tool and its fallback both fail, every time.
  tools.setFault({ route: 'crm.tier', mode: 'server_error', match: 'C-999001' });
  tools.setFault({ route: 'orders.latest', mode: 'server_error', match: 'C-999001' });
});
after(async () => {
  await loop?.stop();
  if (flowsDir) rmSync(flowsDir, { recursive: true, force: true });
});

test(
  'each loop bound ends its run with its own reason, and each invalid plan is rejected with its reason before any tool sees it',
  { timeout: 180000 },
  async () => {
    const follower = await followOutcomes(cluster);
    const emails = [...Object.keys(BOUNDS), ...Object.keys(INVALID)];
    const tasks = emails.map((email) =>
      buildTask({ text: `Where is my order? It has not arrived. (${email})`, source: 'bounds', external_id: `${cluster.namespace}-${email}` }),
    );
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, tasks);
    await producer.disconnect();
    await follower.waitFor(tasks.length, 150000);
    await follower.stop();
    const outcomeOf = (email: string) => follower.outcomes.get(tasks[emails.indexOf(email)]!.thought_id)!.value as unknown as Outcome;

    for (const [email, expected] of Object.entries(BOUNDS)) {
      const o = outcomeOf(email);
      assert.deepEqual([o.status, o.reason_code], [expected.status, expected.code], `${email}: ${o.reason}`);
    }
    const failing = outcomeOf('alwaysfails@example.com');
    assert.deepEqual(
      failing.reflections.map((r) => r.action),
      ['fallback', 'fail'],
      'reflection switched to the fallback, then gave up',
    );
    assert.deepEqual(
      failing.reflections[0]!.dimensions.map((d) => `${d.name}:${d.result}`),
      ['data_completeness:PASS', 'logic_consistency:PASS', 'policy_compliance:PASS', 'uncertainty:MISSING'],
    );
    assert.equal(failing.reflections[1]!.tool, 'orders.latest', 'the second reflection is about the fallback tool');

    for (const [email, expected] of Object.entries(INVALID)) {
      const o = outcomeOf(email);
      assert.match(o.planner, /^router\(order_status /, `${email}: routed to its flow`);
      assert.deepEqual([o.status, o.reason_code], ['failed', 'invalid_plan'], `${email}: ${o.reason}`);
      assert.match(o.reason, /^invalid plan: /);
      assert.match(o.reason, expected.reason, `${email}: ${o.reason}`);
    }
    assert.deepEqual(
      tools
        .stats()
        .requests.filter((r) => r.path.includes('C-666'))
        .map((r) => r.path),
      [],
      'no step of an invalid plan reached a tool',
    );
  },
);
