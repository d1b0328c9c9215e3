/**
 * The bench's independent fact checker (eval/answer-check.ts) and the regression set's scorer
 * (eval/regression-set.ts), on answers of the kinds the 1.5B model writes: each kind of
 * unsupported specific is found, supported ones in the forms a model writes them are not, and a run
 * scores solved, wrong or unsolved as a customer would judge it. No model, no broker.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uncheckedSpecifics, type CheckedResult } from '../../eval/answer-check.ts';
import { datesIn } from '../../eval/answer-text.ts';
import { factStated, scoreRun, type RegressionTicket, type ScoredRun } from '../../eval/regression-set.ts';

const ORDER: CheckedResult = {
  tool: 'orders.get',
  data: { order_id: 'O-55501234', customer_id: 'C-791882', status: 'delivered', total_cents: 458352, placed_at: '2025-08-30T05:31:00+08:00' },
};
const TRACK: CheckedResult = { tool: 'shipping.track', data: { order_id: 'O-55501234', carrier: 'UPS', state: 'delivered', eta: '2025-08-31T16:31:00Z' } };
const ENUMS = {
  'orders.get': { status: ['placed', 'shipped', 'delivered'] },
  'shipping.track': { state: ['pending', 'in_transit', 'delivered'] },
  'expenses.get_claim': { state: ['submitted', 'approved', 'paid', 'rejected'] },
};
const TICKET = 'Where is my order O-55501234?';

const check = (answer: string, results = [ORDER, TRACK], given = [TICKET]) => uncheckedSpecifics({ answer, given, results, enums: ENUMS });
const texts = (answer: string, results?: CheckedResult[], given?: string[]) => check(answer, results, given).map((u) => `${u.kind}:${u.text}`);

test('an answer whose every specific comes from a verified result or the ticket has none unsupported, in the forms a model writes them', () => {
  for (const answer of [
    'Your order O-55501234 was delivered by UPS on 2025-08-31. It was placed on August 30, 2025 and cost 4,583.52.',
    'Order O-55501234 (placed 30 Aug 2025, total $4583.52) has been delivered; ETA was Aug 31 at 16:31 UTC.',
    '您的订单 O-55501234 已送达，承运商 UPS，下单时间 2025年8月30日，金额 4583.52 元。',
    'Your order has been shipped and delivered: it is not in transit any more.',
    'Here is what I found:\n1. Order O-55501234\n2. Status: delivered',
  ])
    assert.deepEqual(texts(answer), [], answer);
});

test('each kind of unsupported specific is found: an id, an e-mail, a date, a time, a number, a state, a name in capitals', () => {
  assert.deepEqual(texts('The order O-12345678 is delivered.'), ['id:O-12345678']);
  assert.deepEqual(texts('We e-mailed ada@example.com about O-55501234.'), ['email:ada@example.com']);
  assert.deepEqual(texts('It was placed on October 5, 2025.'), ['date:October 5, 2025']);
  assert.deepEqual(texts('It arrives at 09:45.'), ['time:09:45']);
  assert.deepEqual(texts('It was shipped by carrier UPS with an ETA of 10 days.'), ['number:10']);
  assert.deepEqual(texts('Your order O-55501234 total is 4583.50.'), ['number:4583.50']);
  const shipped: CheckedResult[] = [
    { tool: 'orders.get', data: { order_id: 'O-20250611', status: 'shipped' } },
    { tool: 'shipping.track', data: { order_id: 'O-20250611', carrier: 'DHL', state: 'in_transit' } },
  ];
  assert.deepEqual(texts('Your order O-20250611 has been delivered.', shipped, ['O-20250611?']), ['state:delivered']);
  assert.deepEqual(texts('您的订单 O-20250611 已签收。', shipped, ['O-20250611?']), ['state:已签收']);
  assert.deepEqual(texts('It went out with USPS.'), ['word:USPS']);
  assert.deepEqual(texts('It went out with DHL.'), ['state:DHL']);
});

test('an action of a write tool the answer says happened needs a verified result of that tool, in English and Chinese', () => {
  const customer: CheckedResult = { tool: 'crm.find_customer', data: { customer_id: 'C-785910', email: 'tom.baker@example.net', name: 'Kofi Okafor' } };
  const given = ['I forgot my password. Email: tom.baker@example.net'];
  const kinds = (answer: string, results: CheckedResult[]) => check(answer, results, given).map((u) => `${u.kind}:${u.text}`);
  // Answers the 1.5B wrote in the loop: the skill's template, with no reset made.
  assert.deepEqual(kinds('A reset link was sent to the e-mail address on file, when it expires (expires_at).', [customer]), ['action:reset link was sent']);
  const reset: CheckedResult = {
    tool: 'identity.password_reset',
    data: { customer_id: 'C-785910', reset_id: 'PWR-22719439', expires_at: '2026-01-01T01:00:00+08:00' },
  };
  assert.deepEqual(kinds('A reset link was sent to your address (PWR-22719439).', [customer, reset]), []);
  const invoice: CheckedResult = {
    tool: 'billing.get_invoice',
    data: { invoice_id: 'INV-2025-0388', amount_cents: 252660, issued_at: '2025-07-30T04:45:58+08:00' },
  };
  assert.deepEqual(
    check('The invoice number is INV-2025-0388. A copy was e-mailed to the address on file.', [invoice], ['copy of INV-2025-0388']).map((u) => u.kind),
    ['action'],
  );
  assert.deepEqual(
    check('已将发票INV-2025-0388的副本发送到您的邮箱。', [invoice], ['发票 INV-2025-0388']).map((u) => u.kind),
    ['action'],
  );
  assert.deepEqual(check('The invoice INV-2025-0388 has not been sent: please check the number.', [invoice], ['copy of INV-2025-0388']), []);
  const order: CheckedResult = { tool: 'orders.get', data: { order_id: 'O-11223344', status: 'placed', total_cents: 158768 } };
  assert.deepEqual(
    check('Your refund for O-11223344 has been processed.', [order], ['refund O-11223344']).map((u) => u.kind),
    ['action'],
  );
  assert.deepEqual(check('The order O-11223344 cannot be refunded because it has not shipped.', [order], ['refund O-11223344']), []);
});

test('a Chinese answer calling a degraded service normal contradicts the status; restoring it to normal does not', () => {
  const search: CheckedResult[] = [{ tool: 'status.service', data: { service: 'search', state: 'degraded', checked_at: '2025-12-31T15:58:30Z' } }];
  const enums = { 'status.service': { state: ['operational', 'degraded', 'outage'] } };
  const given = ['搜索服务现在正常吗？搜出来的结果总是不全'];
  const said = (answer: string) => uncheckedSpecifics({ answer, given, results: search, enums }).map((u) => `${u.kind}:${u.text}`);
  // The 1.5B's answer in the loop (service-zh-2): the gate let it complete.
  assert.deepEqual(said('搜索服务现在正常，但搜出来的结果总是不全。建议您稍后再试。'), ['state:正常']);
  assert.deepEqual(said('搜索服务目前性能下降，我们正在努力恢复正常。'), []);
  assert.deepEqual(said('搜索服务目前不正常：性能下降。'), []);
  // A question asserts nothing: the 1.5B quoted the ticket's question, then stated the state (service-zh-2, 2026-12-05).
  assert.deepEqual(said('搜索服务现在正常吗？搜出来的结果总是不全。搜索服务的状态是 degraded，该事件表明搜索性能下降。'), []);
  assert.deepEqual(said('Is search normal? No: 搜索服务现在正常。'), ['state:正常']);
});

test('a state the ticket names, one negated, or one the verified state comes after is no contradiction', () => {
  const placed: CheckedResult = { tool: 'orders.get', data: { order_id: 'O-10293847', status: 'placed' } };
  assert.deepEqual(texts('Order O-10293847 has not shipped yet; it is placed.', [placed], ['Has O-10293847 shipped?']), []);
  assert.deepEqual(texts('Order O-10293847 has not been shipped yet.', [placed], ['Where is O-10293847?']), []);
  assert.deepEqual(texts('订单 O-10293847 尚未发货。', [placed], ['O-10293847 发货了吗']), []);
  assert.deepEqual(texts('Order O-10293847 was delivered.', [placed], ['Where is O-10293847?']), ['state:delivered']);
  // A later state promised for the future: the expense-claim skill explains `approved` as "will be paid with the next payment run".
  const approved: CheckedResult = { tool: 'expenses.get_claim', data: { claim_id: 'EC-204981', state: 'approved' } };
  assert.deepEqual(texts('Claim EC-204981 is approved and will be paid with the next payment run.', [approved], ['EC-204981?']), []);
  assert.deepEqual(texts('报销单 EC-204981 已批准，将在下一次付款时支付。', [approved], ['EC-204981?']), []);
  assert.deepEqual(texts('Claim EC-204981 was paid.', [approved], ['EC-204981?']), ['state:paid']);
});

test('a date is supported in the result offset or in UTC, and a date without a year by its month and day', () => {
  const r: CheckedResult = { tool: 'x', data: { at: '2025-01-17T00:08:49+08:00' } };
  assert.deepEqual(texts('on January 16, 2025', [r], ['hi']), []); // the same instant in UTC
  assert.deepEqual(texts('on 17 Jan', [r], ['hi']), []);
  assert.deepEqual(texts('on 1月17日', [r], ['hi']), []);
  assert.deepEqual(texts('on January 18', [r], ['hi']), ['date:January 18']);
});

test('dates are read in the common forms, each as the day it names', () => {
  const days = (s: string) => datesIn(s).map((d) => d.day);
  assert.deepEqual(days('2025-01-17T00:08:49+08:00'), ['2025-01-17']);
  assert.deepEqual(days('2025/1/7 and 17/01/2025 and 01/17/2025'), ['2025-01-07', '2025-01-17', '2025-01-17']);
  assert.deepEqual(days('January 17, 2025; 17th of Jan 2025; Sept 3'), ['2025-01-17', '2025-01-17', '*-09-03']);
  assert.deepEqual(days('2025年1月17日，3月4日'), ['2025-01-17', '*-03-04']);
});

const ticket = (over: Partial<RegressionTicket>): RegressionTicket => ({
  id: 't',
  language: 'en',
  intent: 'order_status',
  category: 'order',
  text: TICKET,
  calls: [
    { tool: 'orders.get', args: { order_id: 'O-55501234' } },
    { tool: 'shipping.track', args: { order_id: 'O-55501234' } },
  ],
  facts: [
    { tool: 'orders.get', field: 'order_id', value: 'O-55501234' },
    { tool: 'orders.get', field: 'status', value: 'delivered' },
    { tool: 'shipping.track', field: 'carrier', value: 'UPS' },
  ],
  expect: 'completed',
  ...over,
});
const run = (over: Partial<ScoredRun>): ScoredRun => ({
  status: 'completed',
  reasonCode: 'completed',
  said: '',
  verifiedTools: new Set(['orders.get', 'shipping.track']),
  calledTools: new Set(['orders.get', 'shipping.track']),
  results: [ORDER, TRACK],
  given: [TICKET],
  ...over,
});

test('a completed run is solved with every expected fact, unsolved with one missing, wrong with an unsupported one', () => {
  assert.equal(scoreRun(ticket({}), run({ said: '您的订单 O-55501234 已由 UPS 送达（已签收）。' }), ENUMS).verdict, 'solved');
  const missing = scoreRun(ticket({}), run({ said: 'Your order O-55501234 was delivered.' }), ENUMS);
  assert.equal(missing.verdict, 'unsolved');
  assert.deepEqual(missing.missingFacts, ['shipping.track.carrier=UPS']);
  const wrong = scoreRun(ticket({}), run({ said: 'Order O-55501234 was delivered by UPS on October 5, 2025.' }), ENUMS);
  assert.equal(wrong.verdict, 'wrong');
  assert.deepEqual(
    wrong.unsupported.map((u) => u.text),
    ['October 5, 2025'],
  );
  const unverified = scoreRun(ticket({}), run({ said: 'Order O-55501234 was delivered by UPS.', verifiedTools: new Set(['orders.get']) }), ENUMS);
  assert.equal(unverified.verdict, 'unsolved');
  assert.deepEqual(unverified.missingTools, ['shipping.track']);
});

test('a ticket that must not complete is solved by the expected end, wrong when completed, unsolved otherwise', () => {
  const missingId = ticket({ text: 'Where is my order?', calls: [], facts: [], expect: 'awaiting_input' });
  assert.equal(scoreRun(missingId, run({ status: 'awaiting_input', reasonCode: 'needs_input' })).verdict, 'solved');
  assert.equal(scoreRun(missingId, run({ status: 'completed', said: 'Your order is delivered.' })).verdict, 'wrong');
  assert.equal(scoreRun(missingId, run({ status: 'escalated', reasonCode: 'unroutable' })).verdict, 'unsolved');
});

test('a refund the ticket must not get is not solved even when the answer states its facts', () => {
  const placed = ticket({
    calls: [{ tool: 'orders.get', args: { order_id: 'O-55501234' } }],
    facts: [{ tool: 'orders.get', field: 'order_id', value: 'O-55501234' }],
    forbidden_tools: ['refunds.create'],
  });
  const s = scoreRun(placed, run({ said: 'Order O-55501234 cannot be refunded.', calledTools: new Set(['orders.get', 'refunds.create']) }), ENUMS);
  assert.equal(s.verdict, 'unsolved');
  assert.match(s.why, /called refunds\.create/);
});

test('facts are read in units or cents, in any common date form, and states in Chinese', () => {
  const amount = { tool: 'billing.get_invoice', field: 'amount_cents', value: 252660 };
  for (const said of ['2,526.60', '¥2526.6', '2526.60 元', '252660 cents']) assert.ok(factStated(said, amount), said);
  assert.ok(!factStated('2,526', amount));
  const issued = { tool: 'billing.get_invoice', field: 'issued_at', value: '2025-07-30T04:45:58+08:00' };
  for (const said of ['July 30, 2025', '2025年7月30日', '30/07/2025', 'on July 29, 2025 (UTC)']) assert.ok(factStated(said, issued), said);
  assert.ok(!factStated('July 31, 2025', issued));
  assert.ok(factStated('报销单已批准', { tool: 'expenses.get_claim', field: 'state', value: 'approved' }));
  assert.ok(factStated('由顺丰承运', { tool: 'shipping.track', field: 'carrier', value: 'SF' }));
});

test('an amount in cents written as currency units is unsupported: the real 1.5B\'s Japanese "191964 円" and "64620円"', () => {
  const claim: CheckedResult = { tool: 'expenses.get_claim', data: { claim_id: 'EC-204981', state: 'approved', amount_cents: 191964 } };
  const ticket = ['経費精算 EC-204981 の状況を教えてください。'];
  for (const answer of [
    '経費精算 EC-204981 は承認されました。金額は191964円です。',
    'Claim EC-204981: USD 191964, approved.',
    'Tu reembolso EC-204981 de 191964 dólares está aprobado.',
  ])
    assert.deepEqual(
      check(answer, [claim], ticket).map((u) => [u.kind, u.text, u.why]),
      [['number', '191964', 'an amount in cents written as currency units']],
      answer,
    );
  for (const answer of ['経費精算 EC-204981 は承認されました。金額は1,919.64ドルです。', 'Claim EC-204981 is approved: 191964 cents, that is $1,919.64.'])
    assert.deepEqual(check(answer, [claim], ticket), [], answer);
});

test('"AM" and "PM" of a clock time are no names: the 1.5B\'s "at 7:59:42 AM" (order-en-2)', () => {
  const delivered: CheckedResult = { tool: 'orders.get', data: { order_id: 'O-31415926', status: 'delivered', placed_at: '2025-08-30T07:59:42Z' } };
  assert.deepEqual(
    check('Order O-31415926 was delivered; it was placed on 2025-08-30 at 7:59:42 AM.', [delivered], ['has order O-31415926 been delivered yet??']),
    [],
  );
  assert.deepEqual(
    check('Order O-31415926 was delivered by FDX at 7:59:42 PM.', [delivered], ['has order O-31415926 been delivered yet??']).map((u) => u.text),
    ['FDX'],
  );
});

test('an amount in currency units written as cents is unsupported: the real 1.5B\'s "646.20 cents"', () => {
  const claim: CheckedResult = { tool: 'expenses.get_claim', data: { claim_id: 'EC-123456', state: 'approved', amount_cents: 64620 } };
  assert.deepEqual(texts('Claim EC-123456 is approved, amount 646.20 cents.', [claim], ['EC-123456?']), ['number:646.20']);
  assert.deepEqual(texts('Claim EC-123456 is approved, amount 646.20.', [claim], ['EC-123456?']), []);
});
