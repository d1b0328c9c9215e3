/**
 * Answer facts: a final answer completes a run only when its ids, e-mails, dates, times, numbers and
 * states are supported by the run's verified results or the ticket. The answers here are the kinds
 * real small models wrote through the loop (invented carriers and ETAs, another order's date, a
 * state the tool did not return), beside the answers the simulator's scenarios write.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerFactProblems, factsEvidence, type VerifiedResult } from '../../../processors/thought/reading.ts';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import { parseModelState, type ReactSkill } from '../../../processors/thought/model/state.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { USAGE, answered, calling, observed, resulted, outcomeOf, reactLoop, requestOf } from './react-fixtures.ts';

const world = loadWorld();
const response = (tool: string) => world.catalog.get(tool)!.spec.response;
const order = (status: string, id = 'O-55501234'): VerifiedResult => ({
  tool: 'orders.get',
  data: { order_id: id, customer_id: 'C-100001', status, total_cents: 4999, placed_at: '2025-10-05T09:30:00Z' },
  response: response('orders.get'),
});
const track: VerifiedResult = {
  tool: 'shipping.track',
  data: { order_id: 'O-55501234', carrier: 'DHL', state: 'in_transit', eta: '2025-10-12' },
  response: response('shipping.track'),
};
const problems = (answer: string, results: VerifiedResult[], ticket = 'Where is my order O-55501234?') =>
  answerFactProblems(answer, { texts: [ticket] }, results);

test("the real model's embroidered answer is refused: a state the tool did not return contradicts it, an invented ETA is unsupported", () => {
  const p = problems('The order O-55501234 is delivered. It was shipped by carrier X to state Y with an ETA of 10 days.', [order('delivered')]);
  assert.deepEqual(p, [
    { kind: 'unsupported', text: '10' },
    { kind: 'contradicts', text: 'shipped', verified: 'orders.get\'s status "delivered"' },
  ]);
  assert.match(factsEvidence(p), /"shipped" contradicts orders\.get's status "delivered"/);
});

test('a carrier the results never named is unsupported: the real 1.5B model\'s "being delivered by UPS" when nothing was tracked', () => {
  assert.deepEqual(
    problems('The order O-55501234 is placed on 2025-10-05. It is currently being delivered by UPS in the state of New York.', [order('delivered')]),
    [{ kind: 'unsupported', text: 'UPS' }],
  );
  assert.deepEqual(problems('Order O-55501234 is delivered; DHL has it, ETA 2025-10-12, total 49.99 USD.', [order('delivered'), track]), []);
});

test("another customer's data is unsupported: an id, a date and an amount no result of this run holds", () => {
  const p = problems('Your order O-12345678 was placed on October 5, 2024 and cost $12.50.', [order('placed')], 'Where is my order O-55501234?');
  assert.deepEqual(
    p.map((x) => x.text),
    ['O-12345678', 'October 5, 2024', '12.50'],
  );
});

test('answers that state only what the results say pass, in the forms models write them', () => {
  const results = [order('shipped'), track];
  for (const answer of [
    'Order O-55501234 is shipped. The shipment with DHL is in_transit, ETA 2025-10-12.',
    'Your order O-55501234 was placed on October 5, 2025 at 09:30 and has shipped; DHL has it in transit, arriving Oct 12.',
    'Order O-55501234 (total $49.99) is shipped, expected on 12 October.',
    '您的订单O-55501234已发货，承运商DHL，预计2025年10月12日送达。',
    '1. Order O-55501234: shipped\n2. Carrier: DHL',
  ])
    assert.deepEqual(problems(answer, results), [], answer);
});

test('a negated state is not a claim: "placed but has not shipped yet" with status placed passes; "placed on" names placed_at', () => {
  assert.deepEqual(problems('Order O-55501234 has been placed but has not shipped yet, so there is no shipment to track.', [order('placed')]), []);
  assert.deepEqual(problems('Order O-55501234 was placed on 2025-10-05 and is delivered.', [order('delivered')]), []);
  assert.equal(problems('Order O-55501234 was delivered yesterday and shipped.', [order('placed')]).length, 2);
});

test('the ticket supports what the customer wrote: their e-mail, their numbers, a state in their words', () => {
  const ticket = 'I am bob@example.com. My order O-55501234 of 3 items says delivered but I have nothing.';
  assert.deepEqual(
    problems('bob@example.com: your 3 items of order O-55501234 are in transit with DHL; the order says delivered.', [order('shipped'), track], ticket),
    [],
  );
  assert.deepEqual(
    problems('We e-mailed eve@example.com.', [order('shipped')], ticket).map((x) => x.text),
    ['eve@example.com'],
  );
});

test("every scenario answer of the simulator, filled from the demo tool server's data, passes", () => {
  const claim: VerifiedResult = {
    tool: 'expenses.get_claim',
    data: { claim_id: 'EC-123456', amount_cents: 12000, state: 'approved', updated_at: '2025-10-01T08:00:00Z' },
    response: response('expenses.get_claim'),
  };
  assert.deepEqual(problems('Expense claim EC-123456 (12000 cents) is approved, last updated 2025-10-01T08:00:00Z.', [claim], 'claim EC-123456?'), []);
  assert.deepEqual(
    problems('Expense claim EC-123456 is approved and will be paid in 5 days.', [claim], 'claim EC-123456?').map((x) => x.text),
    ['5'],
    'what an approved claim will become is no contradiction (the skill explains approved so); the invented 5 days are unsupported',
  );
  assert.deepEqual(
    problems('Expense claim EC-123456 is paid.', [claim], 'claim EC-123456?').map((x) => x.text),
    ['paid'],
  );
});

// Through Thought's core: the answer goes back to the model, and a run never completes on it.
const skill: ReactSkill = {
  name: 'order-status',
  version: 1,
  ref: 'order-status@1',
  prompt: 'Find the order.',
  allowedTools: ['orders.get', 'shipping.track'],
  maxModelTurns: 8,
  tokenBudget: 50000,
  contextWindow: 8192,
  maxTokens: 512,
  maxReplans: 2,
  groundedBy: ['orders.get'],
};
const planner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react', planner: 'react(order_status)', skill: 'order-status', facts: {} }),
};
const config: ThoughtConfig = thoughtConfig(world, { planner, model: reactLoop(world, skill) });

/** Turn 1 looks the order up; its result comes back delivered. */
function lookedUp(): ThoughtDecision {
  const t1 = onTask(task('Where is my order O-55501234?'), config);
  const w1 = onObservation(observed(t1, answered(calling(['orders.get', { order_id: 'O-55501234' }]))), config);
  return onObservation(observed(w1, resulted('orders.get', order('delivered').data)), config);
}

test('a final answer with an unsupported fact goes back to the model naming it; a supported one then completes the run', () => {
  const bad = onObservation(
    observed(lookedUp(), answered({ kind: 'final', content: 'Order O-55501234 was shipped and arrives in 3 days.', usage: USAGE })),
    config,
  );
  assert.equal(outcomeOf(bad), undefined, 'the run is not completed');
  const state = parseModelState(requestOf(bad)!.run);
  assert.equal(state.rejected.at(-1)!.error, 'unsupported_fact');
  assert.match(state.rejected.at(-1)!.evidence, /"3" is in no verified result or the ticket; "shipped" contradicts orders\.get's status "delivered"/);
  // The model is told why, in the user's turn, and is not shown its refused answer again: shown it,
  // the 1.5B wrote it again word for word.
  const messages = (JSON.parse(requestOf(bad)!.steps[0]!.input_json) as { messages: Array<{ role: string; content: string }> }).messages;
  assert.equal(messages.at(-1)!.role, 'user');
  assert.match(messages.at(-1)!.content, /^Your last answer was rejected before anything ran \(unsupported_fact\): "3" is in no verified result/m);
  assert.ok(!messages.some((m) => m.content.includes('arrives in 3 days')), 'the refused answer is not shown again');
  const good = onObservation(observed(bad, answered({ kind: 'final', content: 'Order O-55501234 is delivered.', usage: USAGE })), config);
  assert.equal(outcomeOf(good)!.status, 'completed');
});

test('a model that keeps inventing never completes: the run is escalated to a person with the reason', () => {
  let d = lookedUp();
  for (let turn = 0; turn < 5 && !outcomeOf(d); turn++)
    d = onObservation(observed(d, answered({ kind: 'final', content: `Order O-55501234 arrives in ${turn + 2} days.`, usage: USAGE })), config);
  assert.deepEqual([outcomeOf(d)!.status, outcomeOf(d)!.reason_code], ['escalated', 'ungrounded']);
  assert.match(outcomeOf(d)!.reason, /is in no verified result or the ticket/);
});

test('an amount in cents written as currency units is a contradiction naming the field: the real 1.5B\'s "191964 円"', () => {
  const claim: VerifiedResult = { tool: 'expenses.get_claim', data: { claim_id: 'EC-204981', state: 'approved', amount_cents: 191964 } };
  const ticket = '経費精算 EC-204981 の状況を教えてください。';
  for (const answer of [
    '経費精算 EC-204981 は承認済みです。金額は 191964 円です。',
    'Claim EC-204981 is approved for $191964.',
    'El reembolso EC-204981 por 191964 euros está aprobado.',
  ])
    assert.deepEqual(
      problems(answer, [claim], ticket).map((p) => [p.kind, p.kind === 'contradicts' ? p.verified : '']),
      [['contradicts', "expenses.get_claim's amount_cents 191964 (in cents: 1919.64 in currency units)"]],
      answer,
    );
  assert.match(factsEvidence(problems('金額は 191964 円です。', [claim], ticket)), /"191964 円" contradicts expenses\.get_claim's amount_cents/);
  for (const answer of [
    '経費精算 EC-204981 は承認済みです。金額は 1,919.64 ドルです。',
    'Claim EC-204981 is approved: 191964 cents ($1,919.64).',
    'Das Geld, 1919.64 EUR, ist genehmigt.',
  ])
    assert.deepEqual(problems(answer, [claim], ticket), [], answer);
  // The customer's own figure is theirs to repeat.
  assert.deepEqual(problems('We received your request for 191964 yen.', [claim], 'Please pay my claim of 191964 yen, EC-204981.'), []);
});

test('an amount in currency units called cents contradicts the cents field: the real 1.5B\'s "646.20 cents"', () => {
  const claim: VerifiedResult = { tool: 'expenses.get_claim', data: { claim_id: 'EC-123456', state: 'approved', amount_cents: 64620 } };
  assert.deepEqual(
    problems('The claim EC-123456 is approved with an amount of 646.20 cents.', [claim], 'claim EC-123456?').map((p) => [p.kind, p.text]),
    [['contradicts', '646.20 cents']],
  );
  assert.deepEqual(problems('The claim EC-123456 is approved with an amount of 64620 cents (646.20).', [claim], 'claim EC-123456?'), []);
});

test("a state written in Chinese is read: the real 1.5B's 已经发货 for a placed order and 已发货 for a delivered one contradict them, naming the verified state", () => {
  const ticket = '我的订单 O-55501234 到哪了？';
  assert.deepEqual(problems('订单 O-55501234 已经发货。', [order('placed')], ticket), [
    { kind: 'contradicts', text: '已经发货', verified: 'orders.get\'s status "placed"' },
  ]);
  assert.deepEqual(problems('已发货，订单号为 O-55501234。', [order('delivered')], ticket), [
    { kind: 'contradicts', text: '已发货', verified: 'orders.get\'s status "delivered"' },
  ]);
  assert.deepEqual(problems('您的订单 O-55501234 尚未发货。', [order('delivered')], ticket), [
    { kind: 'contradicts', text: '未发货', verified: 'orders.get\'s status "delivered"' },
  ]);
  for (const right of ['订单 O-55501234 已送达。', '订单 O-55501234 已下单，尚未发货。'])
    assert.deepEqual(problems(right, [order(right.includes('已送达') ? 'delivered' : 'placed')], ticket), [], right);
  assert.deepEqual(problems('订单 O-55501234 已发货，DHL 运输中。', [order('shipped'), track], ticket), [], 'shipped and in transit, both verified');
  assert.deepEqual(problems('订单还没发货吗？O-55501234 已送达。', [order('delivered')], '我的订单 O-55501234 还没发货吗？'), [], "the ticket's own words");
});
