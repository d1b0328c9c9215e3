import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { IntentRoute } from '../../../../processors/thought/planners/intent-model.ts';
import type { Plan } from '../../../../processors/plan.ts';
import { plannerSettingsFromEnv } from '../../../../processors/thought/planners/config.ts';
import { createPlanner } from '../../../../processors/thought/planners/factory.ts';
import type { Planner } from '../../../../processors/thought/planners/planner.ts';
import { PlanValidator } from '../../../../processors/plan.ts';
import { DEFAULT_FLOWS_DIR, loadFlows } from '../../../../processors/thought/planners/flows.ts';
import { loadWorld } from '../../fixtures.ts';

const world = loadWorld();
const flows = loadFlows(DEFAULT_FLOWS_DIR, world.ajv);
const validator = new PlanValidator(world.ajv, 50);
let planner: Planner;

before(() => {
  planner = createPlanner(plannerSettingsFromEnv({ TAO_PLANNER: 'router' }), { flows, tools: world.tools });
});
after(() => undefined);

const task = (text: string) => ({ thought_id: 't-1', text, metadata: {} });
async function decide(text: string) {
  const record = await planner.gather!(task(text));
  return { record, result: planner.plan(task(text), record) };
}

test("a ticket is routed to its intent's flow, with the router's slots as the flow inputs, and the plan validates", async () => {
  const { result } = await decide('请给我发票 INV-2024-0042 的副本');
  assert.equal(result.kind, 'plan');
  if (result.kind !== 'plan') return;
  const plan = result.plan as Plan;
  assert.deepEqual(plan.flow, { id: 'invoice-copy', version: 1 });
  assert.deepEqual(plan.steps[0]!.input, { invoice_id: 'INV-2024-0042' });
  assert.deepEqual(validator.validate(plan, world.tools), []);
  assert.match(result.planner, /^router\(invoice_copy \d\.\d{3}\)$/);
});

test("among an intent's flows the first whose inputs are all present wins: an order id beats an e-mail-only flow", async () => {
  const byId = await decide('where is my order O-12345678');
  const byEmail = await decide('where is my order? ada@example.com');
  assert.equal(byId.result.kind === 'plan' && (byId.result.plan as Plan).flow.id, 'order-lookup');
  assert.equal(byEmail.result.kind === 'plan' && (byEmail.result.plan as Plan).flow.id, 'order-status');
});

test("with neither input the run asks for the preferred flow's inputs", async () => {
  const { result } = await decide('where is my order? it never came');
  assert.equal(result.kind, 'needs_input');
  assert.deepEqual(result.kind === 'needs_input' && result.missing, ['order_id']);
});

test('off-domain tickets are escalated, never guessed', async () => {
  const { result } = await decide('what is the capital of France');
  assert.equal(result.kind, 'escalate');
  assert.match(result.kind === 'escalate' ? result.reason : '', /off-domain/);
});

test('plan() is pure: it decides from the recorded routing and the task text alone, and a low-confidence record escalates', () => {
  const route: IntentRoute = { intent: 'unknown', candidate: 'refund_request', confidence: 0.41, slots: {}, model: 'intent-router@000000000000' };
  const result = planner.plan(task('money back for O-12345678'), JSON.stringify(route));
  assert.equal(result.kind, 'escalate');
  assert.match(result.kind === 'escalate' ? result.reason : '', /refund_request at 0\.410 is below the routing threshold/);
  const confident = planner.plan(task('money back for O-12345678'), JSON.stringify({ ...route, intent: 'refund_request', confidence: 0.99 }));
  assert.equal(confident.kind === 'plan' && (confident.plan as Plan).flow.id, 'refund-request');
  assert.deepEqual(confident.kind === 'plan' && (confident.plan as Plan).steps[0]!.input, { order_id: 'O-12345678' });
  assert.deepEqual(planner.plan(task('x'), JSON.stringify(route)), result, 'same record, same decision');
});

test('an id in a shape the tools do not take still routes to its intent, and the run asks for that field by name', async () => {
  for (const text of ['Where is my order PO-2024-00017-B? It was due last week.', '订单号 4500012345 一直没有发货，到哪了？']) {
    const { record, result } = await decide(text);
    assert.equal(JSON.parse(record).intent, 'order_status', text);
    assert.equal(result.kind, 'needs_input', text);
    if (result.kind !== 'needs_input') continue;
    assert.deepEqual(result.flow, { id: 'order-lookup', version: 1 }, 'the preferred flow asks');
    assert.deepEqual(result.missing, ['order_id']);
    assert.match(result.reason, /^order_id "[^"]+" is not in a form orders\.get accepts/);
  }
});

test('a claim number without its prefix is taken as the claim id; an order ticket with a refused id but an e-mail uses the e-mail flow', async () => {
  const claim = await decide('Hi, what is the status of my expense claim 123456? Submitted two weeks ago.');
  assert.equal(claim.result.kind === 'plan' && JSON.stringify((claim.result.plan as Plan).steps[0]!.input), '{"claim_id":"EC-123456"}');
  const order = await decide('Where is my order SO-88123-X? my e-mail is ada@example.com');
  assert.equal(order.result.kind === 'plan' && (order.result.plan as Plan).flow.id, 'order-status');
});

test('a mixed ticket routes by its marked main ask; the second ask is recorded with the run and named for a person, never planned', async () => {
  const text = 'Where is my order O-12345678? It was due Monday. Also, less urgent: please send me the invoice for it.';
  const { record, result } = await decide(text);
  const route = JSON.parse(record) as IntentRoute;
  assert.equal(route.intent, 'order_status');
  assert.equal(route.secondary?.intent, 'invoice_copy', record);
  assert.equal(result.kind === 'plan' && (result.plan as Plan).flow.id, 'order-lookup');
  assert.match(result.planner, /^router\(order_status \d\.\d{3}, also invoice_copy\)$/);

  const escalated = planner.plan(task('x'), JSON.stringify({ ...route, intent: 'unknown', candidate: 'unknown', confidence: 0.9 }));
  assert.equal(escalated.kind, 'escalate');
  assert.match(escalated.kind === 'escalate' ? escalated.reason : '', /a person takes it; it also asks about invoice_copy \(\d\.\d{3}\)$/);
});
