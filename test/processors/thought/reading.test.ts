/**
 * The customer reads the answer: a ticket's language is told from its text (processors/thought/reading.ts),
 * named in the model's prompt, and a final answer in another language is refused with why, then
 * escalated when the model keeps writing it (Qwen2.5-Coder-1.5B answered most Spanish and German
 * tickets in English, and some Chinese ones).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { onObservation, onTask, type ThoughtDecision } from '../../../processors/thought/core.ts';
import { languageOf } from '../../../processors/thought/language.ts';
import { answerSheet } from '../../../processors/thought/answer-sheet.ts';
import { onlyValues } from '../../../processors/thought/reading.ts';
import type { ReactSkill } from '../../../processors/thought/model/state.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import { PACKAGE_ROOT } from '../../../runtime/paths.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { USAGE, answered, calling, observed, outcomeOf, reactLoop, requestOf, resulted } from './react-fixtures.ts';

test('every ticket of the regression and multilingual sets is read in its language; short or mixed text is not judged', () => {
  const tickets = (file: string) =>
    (JSON.parse(readFileSync(join(PACKAGE_ROOT, file), 'utf8')) as { tickets: Array<{ text: string; language?: string }> }).tickets;
  for (const t of tickets('eval/regression-tickets.json')) assert.equal(languageOf(t.text), t.language, t.text);
  const multilingual = tickets('bench/data/multilingual-tickets.json').map((t) => languageOf(t.text));
  assert.deepEqual(multilingual, [...Array(7).fill('ja'), ...Array(7).fill('es'), ...Array(7).fill('de')]);
  assert.equal(languageOf('Su pedido O-12345678 fue enviado por DHL y llegará el 12 de octubre.'), 'es');
  assert.equal(languageOf('Ihre Bestellung O-12345678 wurde mit DHL verschickt und ist noch unterwegs.'), 'de');
  assert.equal(languageOf('Your order O-12345678 has been shipped with DHL.'), 'en');
  assert.equal(languageOf('您的订单 O-12345678 已由顺丰发货。'), 'zh');
  assert.equal(languageOf('O-12345678'), null);
  assert.equal(languageOf('OK, DHL'), null);
});

const skill: ReactSkill = {
  name: 'order-status',
  version: 1,
  ref: 'order-status@1',
  prompt: 'Find the order, then answer with its status.',
  allowedTools: ['orders.get'],
  maxModelTurns: 6,
  tokenBudget: 50000,
  contextWindow: 8192,
  maxTokens: 512,
  maxReplans: 2,
  groundedBy: ['orders.get'],
};
const planner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react', planner: 'react(order_status 0.990 order-status@1)', skill: 'order-status', facts: { order_id: 'O-12345678' } }),
};
const world = loadWorld();
const c = thoughtConfig(world, { planner, model: reactLoop(world, skill), reflectAfter: 2 });
const final = (content: string): ModelAnswer => ({ kind: 'final', content, usage: USAGE });
const SPANISH = '¿Dónde está mi pedido O-12345678? Todavía no ha llegado.';

/** A Spanish ticket up to the turn after orders.get answered. */
function lookedUp(): ThoughtDecision {
  const first = onTask(task(SPANISH), c);
  const called = onObservation(observed(first, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), c);
  return onObservation(observed(called, resulted('orders.get', { order_id: 'O-12345678', status: 'shipped' })), c);
}
const system = (d: ThoughtDecision) => (JSON.parse(requestOf(d)!.steps[0]!.input_json) as { messages: Array<{ content: string }> }).messages[0]!.content;

test("the prompt names the ticket's language; an English ticket's prompt does not", () => {
  assert.match(system(onTask(task(SPANISH), c)), /The ticket is written in Spanish: write the final answer and any question to the customer in Spanish\./);
  assert.doesNotMatch(system(onTask(task('Where is my order O-12345678?'), c)), /The ticket is written in/);
});

test("an answer in another language goes back to the model with why; one in the ticket's language completes", () => {
  const refused = onObservation(observed(lookedUp(), answered(final('Your order O-12345678 has been shipped.'))), c);
  assert.equal(outcomeOf(refused), undefined, 'not completed');
  const messages = (JSON.parse(requestOf(refused)!.steps[0]!.input_json) as { messages: Array<{ content: string }> }).messages;
  assert.match(messages.at(-1)!.content, /the ticket is in Spanish and the answer in English: write the final answer in Spanish/);
  const done = onObservation(observed(refused, answered(final('Su pedido O-12345678 ya fue enviado.'))), c);
  assert.deepEqual([outcomeOf(done)?.status, outcomeOf(done)?.reason_code], ['completed', 'completed']);
});

test('a model that keeps answering in another language escalates the run: a person writes to the customer', () => {
  let d = lookedUp();
  for (let i = 0; i < 3 && !outcomeOf(d); i++) d = onObservation(observed(d, answered(final('Your order O-12345678 has been shipped.'))), c);
  assert.deepEqual([outcomeOf(d)?.status, outcomeOf(d)?.reason_code], ['escalated', 'model_invalid']);
  assert.match(outcomeOf(d)!.reason, /not in the ticket's language/);
});

test('an answer rewritten after a wrong-language refusal that states nothing from the results (the refusal, translated) is refused too', () => {
  const refused = onObservation(observed(lookedUp(), answered(final('Your order O-12345678 has been shipped.'))), c);
  const echoed = onObservation(observed(refused, answered(final('Lo siento, esta respuesta no está en español. Por favor, ayúdeme otra vez.'))), c);
  assert.equal(outcomeOf(echoed), undefined, 'not completed');
  const told = (JSON.parse(requestOf(echoed)!.steps[0]!.input_json) as { messages: Array<{ content: string }> }).messages.at(-1)!.content;
  assert.match(told, /the answer states nothing the tool results hold/);
  const done = onObservation(observed(echoed, answered(final('Su pedido O-12345678 ya fue enviado.'))), c);
  assert.equal(outcomeOf(done)?.status, 'completed');
});

test('the verified values a final answer may state: the latest result per tool, cents also in currency units, then what the answer must state', () => {
  const sheet = answerSheet(
    [
      {
        tool: 'billing.get_invoice',
        data: { invoice_id: 'INV-2024-0042', amount_cents: 191964, issued_at: '2024-09-21T11:57:59+08:00', lines: [{ sku: 'A' }] },
      },
      { tool: 'orders.get', data: { order_id: 'O-1', status: 'placed' } },
      { tool: 'orders.get', data: { order_id: 'O-2', status: 'shipped', paid: true } },
    ],
    ['billing.get_invoice.invoice_id', 'billing.get_invoice.amount_cents', 'billing.get_invoice.issued_at', 'shipping.track.carrier'],
  );
  assert.equal(
    sheet,
    [
      'Verified values (write them exactly as given here; an amount as the number in currency units, never the cents):',
      '- billing.get_invoice: invoice_id "INV-2024-0042", amount 1919.64 (amount_cents 191964), issued_at "2024-09-21T11:57:59+08:00"',
      '- orders.get: order_id "O-2", status "shipped", paid true',
      'Reply to the customer in one or two full sentences that state the status shipped, the invoice id INV-2024-0042, the amount 1919.64, the issued at 2024-09-21T11:57:59+08:00.',
      // Nothing tracked: the 1.5B, asked for the carrier "when tracked", named UPS for a placed order.
      'No verified result gives the carrier: do not state one.',
    ].join('\n'),
  );
  assert.equal(answerSheet([]), null, 'nothing verified yet: no sheet');
  // A Chinese ticket is also given the state in the Chinese the checks read: the 1.5B wrote 已发货 for a delivered order.
  const zh = answerSheet([{ tool: 'orders.get', data: { order_id: 'O-2', status: 'delivered' } }], ['orders.get.order_id'], 'zh');
  assert.match(zh!, /state the status delivered \(in Chinese: 已送达\), the order id O-2\.$/);
});

test('an answer that is only values is no reply: the real 1.5B answered a Chinese ticket "O-12345678, SF"', () => {
  const results = [
    { tool: 'orders.get', data: { order_id: 'O-12345678', status: 'delivered' } },
    { tool: 'shipping.track', data: { carrier: 'SF', state: 'delivered', eta: '2025-10-07T15:56:33Z' } },
  ];
  for (const bare of ['O-12345678, SF', 'O-12345678 delivered SF 2025-10-07T15:56:33Z', '订单 O-12345678, SF'])
    assert.equal(onlyValues(bare, results), true, bare);
  for (const reply of ['Order O-12345678 is delivered.', '您的订单 O-12345678 已由 SF 送达。', 'Su pedido O-12345678 fue entregado por SF.'])
    assert.equal(onlyValues(reply, results), false, reply);
});
