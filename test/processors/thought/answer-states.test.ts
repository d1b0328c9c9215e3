/**
 * A skill's answer contract (`metadata.answer-states`): once a tool it names has a verified result,
 * a final answer must state that field's value, in any of the ways an answer writes it; one that
 * leaves it out goes back to the model naming what is missing (Qwen2.5-Coder-1.5B answered invoice
 * tickets with "a copy was e-mailed", without the invoice's date and amount the skill asks for).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import { omittedStates } from '../../../processors/thought/reading.ts';
import type { ReactSkill } from '../../../processors/thought/model/state.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { USAGE, answered, calling, observed, outcomeOf, reactLoop, requestOf, resulted } from './react-fixtures.ts';

const INVOICE = { invoice_id: 'INV-2025-0388', customer_id: 'C-100200', amount_cents: 252660, issued_at: '2025-07-30T04:45:58+08:00' };
const FIELDS = ['billing.get_invoice.invoice_id', 'billing.get_invoice.issued_at', 'billing.get_invoice.amount_cents'];
const results = [{ tool: 'billing.get_invoice', data: INVOICE }];

test('each value counts in the forms answers write it: ids in any case, cents as units, a date in its offset or UTC, in English or Chinese', () => {
  const missing = (answer: string) => omittedStates(answer, results, FIELDS).map((o) => o.field);
  assert.deepEqual(missing('Invoice INV-2025-0388, issued July 30, 2025, for 2,526.60 USD, was e-mailed to you.'), []);
  assert.deepEqual(missing('inv-2025-0388 (2025-07-29, 252660 cents) is on its way.'), [], 'the UTC day, and cents');
  assert.deepEqual(missing('发票 INV-2025-0388 于2025年7月30日开具，金额 2526.60 元，已发送到您的邮箱。'), []);
  assert.deepEqual(missing('A copy of INV-2025-0388 was e-mailed to the address on file.'), ['issued_at', 'amount_cents']);
  assert.deepEqual(missing('Your invoice was sent: 2025-08-01, 2526.00.'), ['invoice_id', 'issued_at', 'amount_cents']);
  assert.deepEqual(omittedStates('Sent.', [], FIELDS), [], 'a tool the run did not call asks nothing');
  assert.deepEqual(
    omittedStates('Sent.', [{ tool: 'shipping.track', data: { carrier: 'DHL', eta: null } }], ['shipping.track.eta']),
    [],
    'a null value asks nothing',
  );
  assert.deepEqual(
    omittedStates('It ships with dhl.', [{ tool: 'shipping.track', data: { carrier: 'DHL' } }], ['shipping.track.carrier']),
    [],
    'a word in any case',
  );
});

const skill: ReactSkill = {
  name: 'invoice-copy',
  version: 1,
  ref: 'invoice-copy@1',
  prompt: 'Look the invoice up, then answer with its number, date and amount.',
  allowedTools: ['billing.get_invoice'],
  maxModelTurns: 6,
  tokenBudget: 50000,
  contextWindow: 8192,
  maxTokens: 512,
  maxReplans: 2,
  groundedBy: ['billing.get_invoice'],
  answerStates: FIELDS,
};
const planner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react', planner: 'react(invoice_copy 0.990 invoice-copy@1)', skill: 'invoice-copy', facts: {} }),
};
const world = loadWorld();
const c = thoughtConfig(world, { planner, model: reactLoop(world, skill), reflectAfter: 2 });
const final = (content: string): ModelAnswer => ({ kind: 'final', content, usage: USAGE });

test('an answer that leaves out what the skill says it states goes back to the model naming it; the full answer completes; one that never does escalates', () => {
  const first = onTask(task('Can I get a copy of invoice INV-2025-0388?'), c);
  const called = onObservation(observed(first, answered(calling(['billing.get_invoice', { invoice_id: 'INV-2025-0388' }]))), c);
  const looked = onObservation(observed(called, resulted('billing.get_invoice', INVOICE)), c);
  const short = onObservation(observed(looked, answered(final('Here is your invoice INV-2025-0388.'))), c);
  assert.equal(outcomeOf(short), undefined);
  const told = (JSON.parse(requestOf(short)!.steps[0]!.input_json) as { messages: Array<{ content: string }> }).messages.at(-1)!.content;
  assert.match(
    told,
    /incomplete_answer.*leaves out billing\.get_invoice's issued_at \(2025-07-30T04:45:58\+08:00\), billing\.get_invoice's amount_cents \(252660\): state them/s,
  );
  const full = onObservation(observed(short, answered(final('Invoice INV-2025-0388 of July 30, 2025, 2,526.60: here it is.'))), c);
  assert.deepEqual([outcomeOf(full)?.status, outcomeOf(full)?.reason_code], ['completed', 'completed']);
  let d = short;
  for (let i = 0; i < 3 && !outcomeOf(d); i++) d = onObservation(observed(d, answered(final('Here is your invoice INV-2025-0388.'))), c);
  assert.deepEqual([outcomeOf(d)?.status, outcomeOf(d)?.reason_code], ['escalated', 'model_invalid']);
});

test('a state asked for is found in its Chinese forms too (the gate reads them: state-words.ts)', () => {
  const claim = [{ tool: 'expenses.get_claim', data: { claim_id: 'EC-488210', state: 'approved', amount_cents: 189080 } }];
  const fields = ['expenses.get_claim.claim_id', 'expenses.get_claim.state'];
  assert.deepEqual(omittedStates('您的报销单 EC-488210 已经被批准，金额为 1890.80 元。', claim, fields), []);
  assert.deepEqual(
    omittedStates('报销 EC-488210 的钱已经打过来了。', claim, fields).map((o) => o.value),
    ['approved'],
  );
  const order = [{ tool: 'orders.get', data: { order_id: 'O-90817263', status: 'placed' } }];
  assert.deepEqual(omittedStates('订单 O-90817263 还没发货。', order, ['orders.get.status']), []);
  assert.deepEqual(omittedStates('Order O-90817263 has not shipped yet.', order, ['orders.get.status']), []);
});
