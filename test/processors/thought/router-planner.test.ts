import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { IntentRoute } from '../../../processors/thought/intent-router.ts';
import type { Plan } from '../../../processors/thought/plan.ts';
import { createPlanner } from '../../../processors/thought/planner-config.ts';
import type { Planner } from '../../../processors/thought/planner.ts';
import { PlanValidator } from '../../../processors/thought/plan.ts';
import { DEFAULT_FLOWS_DIR, loadFlows } from '../../../processors/thought/planner.ts';
import { loadWorld } from '../fixtures.ts';

const world = loadWorld();
const flows = loadFlows(DEFAULT_FLOWS_DIR, world.ajv);
const validator = new PlanValidator(world.ajv, 50);
let planner: Planner;

before(() => {
  planner = createPlanner({ TAO_PLANNER: 'router' }, { flows, catalog: world.catalog, tools: world.tools, validator });
});
after(() => undefined);

const task = (text: string) => ({ thought_id: 't-1', text, metadata: {} });
async function decide(text: string) {
  const record = await planner.gather!(task(text));
  return { record, result: planner.plan(task(text), record) };
}

test('a ticket is routed to its intent\'s flow, with the router\'s slots as the flow inputs, and the plan validates', async () => {
  const { result } = await decide('请给我发票 INV-2024-0042 的副本');
  assert.equal(result.kind, 'plan');
  if (result.kind !== 'plan') return;
  const plan = result.plan as Plan;
  assert.deepEqual(plan.flow, { id: 'invoice-copy', version: 1 });
  assert.deepEqual(plan.steps[0]!.input, { invoice_id: 'INV-2024-0042' });
  assert.deepEqual(validator.validate(plan, world.tools), []);
  assert.match(result.planner, /^router\(invoice_copy \d\.\d{3}\)$/);
});

test('among an intent\'s flows the first whose inputs are all present wins: an order id beats an e-mail-only flow', async () => {
  const byId = await decide('where is my order O-12345678');
  const byEmail = await decide('where is my order? ada@example.com');
  assert.equal(byId.result.kind === 'plan' && (byId.result.plan as Plan).flow.id, 'order-lookup');
  assert.equal(byEmail.result.kind === 'plan' && (byEmail.result.plan as Plan).flow.id, 'order-status');
});

test('with neither input the run asks for the preferred flow\'s inputs', async () => {
  const { result } = await decide('where is my order? it never came');
  assert.equal(result.kind, 'needs_input');
  assert.deepEqual(result.kind === 'needs_input' && result.missing, ['order_id']);
});

test('off-domain tickets are escalated, never guessed', async () => {
  const { result } = await decide('what is the capital of France');
  assert.equal(result.kind, 'escalate');
  assert.match(result.kind === 'escalate' ? result.reason : '', /off-domain/);
});

test('plan() is pure: it decides from the recorded routing alone, and a low-confidence record escalates', () => {
  const route: IntentRoute = { intent: 'unknown', candidate: 'refund_request', confidence: 0.41, slots: { order_id: 'O-12345678' }, model: 'intent-router@000000000000' };
  const result = planner.plan(task('anything at all'), JSON.stringify(route));
  assert.equal(result.kind, 'escalate');
  assert.match(result.kind === 'escalate' ? result.reason : '', /refund_request at 0\.410 is below the routing threshold/);
  const confident = planner.plan(task('anything at all'), JSON.stringify({ ...route, intent: 'refund_request', confidence: 0.99 }));
  assert.equal(confident.kind === 'plan' && (confident.plan as Plan).flow.id, 'refund-request');
  assert.deepEqual(planner.plan(task('x'), JSON.stringify(route)), result, 'same record, same decision');
});
