/**
 * Every shipped flow (flows/*.json) loads, instantiates with the graph planner on example ticket
 * texts (English and Chinese), validates against the real catalog, and runs end to end against the
 * demo tool server: each step's input passes its tool's contract, each answer passes the tool's
 * response schema, conditional edges skip exactly the steps they should, and the output resolves.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { createToolDispatcher, invokeTool, type HttpDeps } from '../../processors/action/invoke.ts';
import { PlanValidator, holds, resolveReferences, type Plan } from '../../processors/plan.ts';
import { DEFAULT_FLOWS_DIR, loadFlows, type Flow } from '../../processors/thought/planners/flows.ts';
import { GraphPlanner } from '../../processors/thought/planners/graph.ts';
import { toolContracts } from '../../processors/wiring/index.ts';
import { realRetryDeps } from '../../runtime/retry.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog, createContractAjv } from '../../tools/catalog.ts';
import { envSecrets } from '../../tools/secrets.ts';

const ajv = createContractAjv();
const flows = loadFlows(DEFAULT_FLOWS_DIR, ajv);
const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, {}, ajv);
const tools = toolContracts(catalog);
const validator = new PlanValidator(ajv, 50);

interface Example {
  text: string;
  /** Inputs the planner must extract. */
  inputs: Record<string, string>;
  /** Steps a conditional edge must skip on the demo data. */
  skipped: string[];
  /** Some output fields and their values on the demo data. */
  output?: Record<string, unknown>;
}

/** Example tickets per flow (the ones docs/DEMO-DOMAIN.md shows, and a few for the other branches). */
const EXAMPLES: Record<string, Example[]> = {
  'order-status@1': [{ text: 'Where is my order? alice@example.com', inputs: { email: 'alice@example.com' }, skipped: [] }],
  'order-lookup@1': [
    { text: 'Where is my order O-12345678?', inputs: { order_id: 'O-12345678' }, skipped: [], output: { status: 'delivered', shipping_state: 'delivered' } },
    { text: '我的订单 O-12345678 到哪了', inputs: { order_id: 'O-12345678' }, skipped: [], output: { status: 'delivered', shipping_state: 'delivered' } },
    { text: '订单O-20250002还没到', inputs: { order_id: 'O-20250002' }, skipped: [], output: { status: 'shipped', shipping_state: 'in_transit' } },
    // Not shipped yet: nothing to track.
    { text: 'Has O-20250003 shipped?', inputs: { order_id: 'O-20250003' }, skipped: ['S2'], output: { status: 'placed', shipping_state: null } },
    { text: '订单 O-20250003 发货了吗', inputs: { order_id: 'O-20250003' }, skipped: ['S2'], output: { status: 'placed', shipping_state: null } },
  ],
  'refund-request@1': [
    {
      text: 'I want a refund for order O-12345678',
      inputs: { order_id: 'O-12345678' },
      skipped: [],
      output: { status: 'delivered', refund_id: 'R-74947434', refund_amount_cents: 38312, refund_state: 'pending' },
    },
    { text: '我要退款，订单 O-12345678', inputs: { order_id: 'O-12345678' }, skipped: [], output: { refund_state: 'pending' } },
    // A placed order is not refunded (it would be a 409 not_refundable).
    { text: '请退款 O-20250003', inputs: { order_id: 'O-20250003' }, skipped: ['S2'], output: { status: 'placed', refund_id: null } },
    { text: 'Please refund O-20250003', inputs: { order_id: 'O-20250003' }, skipped: ['S2'], output: { status: 'placed', refund_id: null } },
  ],
  'invoice-copy@1': [
    { text: 'Please send me a copy of invoice INV-2024-0042', inputs: { invoice_id: 'INV-2024-0042' }, skipped: [], output: { sent: true, channel: 'email' } },
    { text: '请给我发票 INV-2024-0042 的副本', inputs: { invoice_id: 'INV-2024-0042' }, skipped: [], output: { invoice_id: 'INV-2024-0042' } },
  ],
  'account-access@1': [
    {
      text: "I can't log in, my email is li.lei@example.com",
      inputs: { email: 'li.lei@example.com' },
      skipped: [],
      output: { customer_id: 'C-705429', reset_id: 'PWR-28335885', expires_at: '2026-01-01T01:00:00+08:00' },
    },
    { text: '我登录不了，邮箱 li.lei@example.com', inputs: { email: 'li.lei@example.com' }, skipped: [] },
  ],
  'outage-report@1': [
    {
      text: 'Is payments down?',
      inputs: { service: 'payments' },
      skipped: [],
      output: { state: 'outage', incident_id: 'INC-227729', incident_state: 'investigating' },
    },
    { text: 'payments 服务是不是挂了', inputs: { service: 'payments' }, skipped: [], output: { state: 'outage' } },
    { text: 'search 很慢', inputs: { service: 'search' }, skipped: [], output: { state: 'degraded', incident_state: 'monitoring' } },
    // Operational: no incident to report.
    { text: 'Is checkout broken?', inputs: { service: 'checkout' }, skipped: ['S2'], output: { state: 'operational', incident_id: null } },
    { text: 'checkout 是不是坏了', inputs: { service: 'checkout' }, skipped: ['S2'], output: { state: 'operational', incident_id: null } },
  ],
  'expense-claim-status@1': [
    { text: "What's the status of expense claim EC-123456?", inputs: { claim_id: 'EC-123456' }, skipped: [], output: { state: 'approved' } },
    { text: '报销单 EC-123456 的状态', inputs: { claim_id: 'EC-123456' }, skipped: [] },
  ],
};

function planFor(flow: Flow, text: string): Plan {
  const result = new GraphPlanner(flow, tools).plan({ thought_id: 't-flows', text, metadata: {} });
  assert.equal(result.kind, 'plan', `${flow.id}: ${JSON.stringify(result)}`);
  if (result.kind !== 'plan') throw new Error('unreachable');
  return result.plan as Plan;
}

describe('flows', () => {
  test('the six demo flows and order-status load', () => {
    for (const key of Object.keys(EXAMPLES)) assert.ok(flows.has(key), `${key} loaded (have ${[...flows.keys()].join(', ')})`);
  });

  test('every loaded flow names only catalog tools', () => {
    for (const [key, flow] of flows) {
      for (const node of flow.nodes) assert.ok(catalog.get(node.tool), `${key}: tool ${node.tool}`);
      for (const node of flow.nodes) if (node.fallback) assert.ok(catalog.get(node.fallback), `${key}: fallback ${node.fallback}`);
    }
  });

  for (const [key, examples] of Object.entries(EXAMPLES)) {
    test(`${key}: the plan validates against the catalog for each example`, () => {
      const flow = flows.get(key);
      assert.ok(flow, `${key} loaded`);
      for (const ex of examples) {
        const plan = planFor(flow, ex.text);
        assert.deepEqual(validator.validate(plan, tools), [], `${key} on ${JSON.stringify(ex.text)}`);
        assert.deepEqual(plan.flow, { id: flow.id, version: 1 });
        // The extracted inputs land in the steps.
        const json = JSON.stringify(plan.steps);
        for (const value of Object.values(ex.inputs)) assert.ok(json.includes(JSON.stringify(value)), `${key}: ${value} in ${json}`);
        assert.ok(!json.includes('{{input.'), `${key}: every input substituted`);
      }
    });

    test(`${key}: a text without the input needs input`, () => {
      const flow = flows.get(key)!;
      const result = new GraphPlanner(flow, tools).plan({ thought_id: 't', text: 'hello, can you help me?', metadata: {} });
      assert.equal(result.kind, 'needs_input');
      if (result.kind === 'needs_input') assert.deepEqual(result.missing, Object.keys(flow.inputs));
    });
  }

  test('input patterns are generous about how ids are written; only values the tools accept are planned, the rest is asked for by name', () => {
    const decide = (key: string, text: string) => new GraphPlanner(flows.get(key)!, tools).plan({ thought_id: 't', text, metadata: {} });
    const input = (key: string, text: string): string | null => {
      const result = decide(key, text);
      return result.kind === 'plan' ? JSON.stringify((result.plan as Plan).steps[0]!.input) : null;
    };
    const asked = (key: string, text: string): string[] | null => {
      const result = decide(key, text);
      return result.kind === 'needs_input' ? result.missing : null;
    };
    // Variants of the accepted shape are rewritten to it.
    assert.equal(input('order-lookup@1', 'where is order o12345678?'), '{"order_id":"O-12345678"}');
    assert.equal(input('order-lookup@1', 'order number: 12345678 never came'), '{"order_id":"O-12345678"}');
    assert.equal(input('refund-request@1', 'refund ｏ－１２３４５６７８ please'), '{"order_id":"O-12345678"}', 'full-width');
    assert.equal(input('invoice-copy@1', 'copy of invoice inv20240042'), '{"invoice_id":"INV-2024-0042"}');
    assert.equal(input('expense-claim-status@1', 'claim no. 123456, any news?'), '{"claim_id":"EC-123456"}', 'claim number without its prefix');
    assert.equal(input('outage-report@1', 'Is Payments down?'), '{"service":"payments"}');
    assert.equal(input('outage-report@1', '支付服务挂了'), '{"service":"payments"}');
    assert.equal(input('outage-report@1', 'the payments API is down'), '{"service":"payments"}', 'api counts only when no service is named before it');
    assert.equal(input('outage-report@1', 'login 和 api 都挂了'), '{"service":"api"}', 'last match wins');
    assert.equal(input('order-lookup@1', 'O-11111111, sorry, I meant O-12345678'), '{"order_id":"O-12345678"}', 'last match wins');
    // Mentioned, but in a shape the tool refuses: asked for, never sent.
    for (const text of ['O-123456789', 'where is PO-2024-00017-B', 'my order 4500012345 is late', '订单号：4500012345 还没到', 'SO#88123 not delivered']) {
      assert.deepEqual(asked('order-lookup@1', text), ['order_id'], text);
    }
    const refused = decide('order-lookup@1', 'where is PO-2024-00017-B');
    assert.match(
      refused.kind === 'needs_input' ? refused.reason : '',
      /^order_id "PO-2024-00017-B" is not in a form orders\.get accepts \(must match pattern "\^O-\[0-9\]\{8\}\$"; wanted: Order id/,
    );
    assert.deepEqual(asked('invoice-copy@1', 'INV-2024-00421'), ['invoice_id']);
    assert.deepEqual(asked('expense-claim-status@1', 'expense claim 88812345'), ['claim_id']);
    // Not mentioned at all.
    assert.deepEqual(asked('order-lookup@1', 'XO-12345678'), ['order_id'], 'no id inside a longer token');
    assert.deepEqual(asked('order-lookup@1', 'my order from 2026-11-29 never came'), ['order_id'], 'a date after a word is no order id');
    assert.deepEqual(asked('outage-report@1', 'apis'), ['service'], 'whole words only');
  });
});

describe('flows run end to end against the tool server', () => {
  let deps: HttpDeps;

  before(() => {
    deps = { dispatcher: createToolDispatcher(), retry: realRetryDeps, now: () => Date.now() };
  });

  after(async () => {
    await deps?.dispatcher.close();
  });

  /** Runs a plan wave by wave the way Thought does (conditional edges, skipped references read null). */
  async function run(live: ToolCatalog, plan: Plan, thoughtId: string): Promise<{ output: Record<string, unknown>; skipped: string[] }> {
    const outputs: Record<string, Record<string, unknown>> = {};
    const skipped = new Set<string>();
    for (let wave = 0; wave < plan.steps.length + 1; wave++) {
      const pending = plan.steps.filter((s) => !outputs[s.id] && !skipped.has(s.id));
      if (pending.length === 0) break;
      for (const s of pending) {
        if (s.depends_on.some((d) => skipped.has(d)) || (s.when && outputs[s.when.step] && !holds(s.when, outputs[s.when.step]))) skipped.add(s.id);
      }
      const ready = pending.filter((s) => !skipped.has(s.id) && s.depends_on.every((d) => outputs[d]));
      await Promise.all(
        ready.map(async (s) => {
          const input = resolveReferences(s.input, outputs, skipped);
          assert.ok('value' in input, `${s.id}: unresolved ${JSON.stringify(input)}`);
          const tool = live.get(s.tool)!;
          const ctx = {
            idempotencyKey: `${thoughtId}:${wave}:${s.id}`,
            traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
            secrets: envSecrets({}),
          };
          const r = await invokeTool(tool, s.id, input.value, ctx, deps);
          assert.equal(r.error, null, `${s.id} ${s.tool}: ${JSON.stringify(r.error)} ${r.response_raw}`);
          const data = JSON.parse(r.data_json!) as Record<string, unknown>;
          assert.ok(tool.validateResponse(data), `${s.tool} answer breaks its schema: ${JSON.stringify(tool.validateResponse.errors)}`);
          outputs[s.id] = data;
        }),
      );
    }
    const out = resolveReferences(plan.output, outputs, skipped);
    assert.ok('value' in out, `output unresolved: ${JSON.stringify(out)}`);
    return { output: out.value as Record<string, unknown>, skipped: [...skipped].sort() };
  }

  for (const [key, examples] of Object.entries(EXAMPLES)) {
    test(key, async () => {
      let n = 0;
      for (const ex of examples) {
        // A fresh server per example: a refund of an order's total can be made only once per server.
        const server: ToolServer = await startToolServer({ port: 0 });
        try {
          const live = ToolCatalog.load(DEFAULT_CATALOG_DIR, { TAO_DEMO_TOOL_ORIGIN: server.url }, ajv);
          const plan = planFor(flows.get(key)!, ex.text);
          const where = `${key} on ${JSON.stringify(ex.text)}`;
          const { output, skipped } = await run(live, plan, `t-${n++}`);
          assert.deepEqual(skipped, ex.skipped, `${where}: skipped steps`);
          for (const [field, value] of Object.entries(ex.output ?? {})) assert.deepEqual(output[field], value, `${where}: output ${field}`);
          for (const [field, value] of Object.entries(output)) {
            if (value === null) assert.ok(ex.skipped.length > 0, `${where}: output ${field} is null though nothing was skipped`);
          }
          // Every step that ran made exactly one request; POST steps had their effect once, with their key.
          const st = server.stats();
          const ran = plan.steps.filter((s) => !skipped.includes(s.id));
          assert.equal(st.total, ran.length, `${where}: requests`);
          for (const s of ran) assert.equal(st.byRoute[s.tool], 1, `${where}: one call of ${s.tool}`);
          const posts = ran.filter((s) => live.get(s.tool)!.spec.method === 'POST');
          assert.equal(
            Object.values(st.effects).reduce((a, b) => a + b, 0),
            posts.length,
            `${where}: effects`,
          );
          for (const r of st.requests.filter((x) => x.method === 'POST')) assert.match(r.headers['idempotency-key'] ?? '', /^t-\d+:\d+:S\d+$/);
        } finally {
          await server.close();
        }
      }
    });
  }
});
