/**
 * A final answer that says something was done (a reset link sent, a refund made, a copy e-mailed)
 * completes a run only when a tool that changes something returned a verified result in it: the
 * 1.5B model copied its skill's answer template ("A reset link was sent ...") after looking the
 * customer up only, and that was accepted. A negated claim ("no refund has been issued") is not one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import { claimedAction } from '../../../processors/thought/reading.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import type { ReactSkill } from '../../../processors/thought/model/state.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { answered, calling, observed, outcomeOf, reactLoop, requestOf, resulted, USAGE } from './react-fixtures.ts';

test('claims of a deed are found in English and Chinese; negated ones are not', () => {
  assert.equal(claimedAction('A password reset link has been sent to li.lei@example.com.'), 'has been sent');
  assert.equal(claimedAction("We've refunded order O-12345678."), "We've refunded");
  assert.equal(claimedAction('重置链接已发送到您的邮箱。'), '已发送');
  assert.equal(claimedAction('Your order has not shipped yet, so no refund has been issued.'), null);
  assert.equal(claimedAction('The reset link was not sent: no account uses that address.'), null);
  assert.equal(claimedAction('尚未退款，订单还没有发货。'), null);
  assert.equal(claimedAction('Your order O-12345678 was delivered on 2025-10-05.'), null);
});

const world = loadWorld();
const skill: ReactSkill = {
  name: 'account-access',
  version: 1,
  ref: 'account-access@1',
  prompt: 'Start a password reset.',
  allowedTools: ['crm.find_customer', 'identity.password_reset'],
  maxModelTurns: 6,
  tokenBudget: 50000,
  contextWindow: 8192,
  maxTokens: 256,
  maxReplans: 0,
  groundedBy: ['crm.find_customer', 'identity.password_reset'],
};
const planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react' as const, planner: 'react(account_access)', skill: 'account-access', facts: { email: 'li.lei@example.com' } }),
};
const config = thoughtConfig(world, { planner, model: reactLoop(world, skill) });
const final = (content: string): ModelAnswer => ({ kind: 'final', content, usage: USAGE });

test('"a reset link has been sent" after the lookup alone goes back to the model; after the reset it completes', () => {
  const t1 = onTask(task("I can't log in, my email is li.lei@example.com"), config);
  const w1 = onObservation(observed(t1, answered(calling(['crm.find_customer', { email: 'li.lei@example.com' }]))), config);
  const t2 = onObservation(observed(w1, resulted('crm.find_customer', { customer_id: 'C-100200', name: 'Li Lei' })), config);
  const claimed = onObservation(observed(t2, answered(final('A password reset link has been sent to li.lei@example.com.'))), config);
  assert.equal(outcomeOf(claimed), undefined, 'not completed');
  const state = JSON.parse(requestOf(claimed)!.run.model_state_json!) as { rejected: Array<{ error: string; evidence: string }> };
  assert.equal(state.rejected.at(-1)!.error, 'unsupported_fact');
  assert.match(state.rejected.at(-1)!.evidence, /the answer says "has been sent", but no tool that changes anything returned a verified result/);
  // The model makes the call: the same words now complete the run.
  const w3 = onObservation(observed(claimed, answered(calling(['identity.password_reset', { customer_id: 'C-100200' }]))), config);
  const t4 = onObservation(observed(w3, resulted('identity.password_reset', { reset_id: 'PWR-12345678', expires_at: '2025-10-05T12:00:00Z' })), config);
  const done = outcomeOf(onObservation(observed(t4, answered(final('A password reset link has been sent to li.lei@example.com.'))), config))!;
  assert.equal(done.status, 'completed');
});

test("an answer that repeats the runtime's feedback is refused, not completed", () => {
  // Qwen2.5-Coder-1.5B, told that a date was in no verified result, answered a German claim ticket
  // with "The claim id EC-123456 is in no verified result or the ticket." and the run completed.
  const t1 = onTask(task("I can't log in, my email is li.lei@example.com"), config);
  const w1 = onObservation(observed(t1, answered(calling(['crm.find_customer', { email: 'li.lei@example.com' }]))), config);
  const t2 = onObservation(observed(w1, resulted('crm.find_customer', { customer_id: 'C-100200', name: 'Li Lei' })), config);
  const echoed = onObservation(observed(t2, answered(final('The e-mail li.lei@example.com is in no verified result or the ticket.'))), config);
  assert.equal(outcomeOf(echoed), undefined, 'not completed');
  const state = JSON.parse(requestOf(echoed)!.run.model_state_json!) as { rejected: Array<{ error: string; evidence: string }> };
  assert.match(state.rejected.at(-1)!.evidence, /repeats the runtime's feedback \("is in no verified result or the ticket"\)/);
});

test('a final answer after a write that failed (the refund refused with 409) escalates with the answer as a draft: the 1.5B explained a refund that was not made with a reason no tool gave', () => {
  const t1 = onTask(task("I can't log in, my email is li.lei@example.com"), config);
  const w1 = onObservation(observed(t1, answered(calling(['crm.find_customer', { email: 'li.lei@example.com' }]))), config);
  const t2 = onObservation(observed(w1, resulted('crm.find_customer', { customer_id: 'C-100200', name: 'Li Lei' })), config);
  const w3 = onObservation(observed(t2, answered(calling(['identity.password_reset', { customer_id: 'C-100200' }]))), config);
  const refused = (req: Parameters<Parameters<typeof observed>[1]>[0]) => [
    {
      step_id: req.steps[0]!.step_id,
      tool: 'identity.password_reset',
      valid: false,
      extracted_data_json: null,
      confidence_score: 0,
      error_type: 'rate_limited' as const,
      audit_trail: [{ name: 'status_class', passed: false, evidence: 'HTTP 429' }],
      status_code: 429,
      response_time_ms: 20,
      attempts: 3,
      fallback_from: null,
    },
  ];
  const t4 = onObservation(observed(w3, refused), config);
  const o = outcomeOf(onObservation(observed(t4, answered(final('The reset could not be started just now; please try again later.'))), config))!;
  assert.deepEqual([o.status, o.reason_code], ['escalated', 'step_failed']);
  assert.match(o.reason, /^identity\.password_reset failed \(rate_limited\) and was not made; the model's answer is kept as a draft/);
  assert.equal((JSON.parse(o.output_json!) as { draft: string }).draft, 'The reset could not be started just now; please try again later.');
});

test('claims of a deed in Japanese, Spanish and German are found; negated ones are not', () => {
  assert.equal(claimedAction('リセットリンクが送られており、有効期限はexpires_atです。'), 'リンクが送られ');
  assert.equal(claimedAction('返金しました。'), '返金しました');
  assert.equal(claimedAction('Se ha enviado una copia de la factura.'), 'Se ha enviado una copia');
  assert.equal(claimedAction('Eine Kopie der Rechnung wurde an Ihre Adresse gesendet.'), 'Kopie der Rechnung wurde an Ihre Adresse gesendet');
  assert.equal(claimedAction('Ihr Geld wurde bereits erstattet.'), 'wurde bereits erstattet');
  // An order's shipping, in words that also mean "sent": a state, not a deed.
  assert.equal(claimedAction('Su pedido O-12345678 ya fue enviado.'), null);
  assert.equal(claimedAction('Ihre Bestellung wurde versendet.'), null);
  assert.equal(claimedAction('商品は送られました。'), null);
  assert.equal(claimedAction('Der Betrag wurde nicht erstattet.'), null);
  assert.equal(claimedAction('No se ha enviado nada todavía.'), null);
  assert.equal(claimedAction('送信しませんでした。'), null);
});

test('a question to the customer that says a deed was done is sent back: the 1.5B\'s Japanese "a reset link was sent" before any reset', () => {
  const t1 = onTask(task('ログインできません。登録メールはli.lei@example.comです。'), config);
  const w1 = onObservation(observed(t1, answered(calling(['crm.find_customer', { email: 'li.lei@example.com' }]))), config);
  const t2 = onObservation(observed(w1, resulted('crm.find_customer', { customer_id: 'C-100200', name: 'Li Lei' })), config);
  const asked = onObservation(
    observed(t2, answered({ kind: 'ask', question: 'リセットリンクが送られており、有効期限はexpires_atで、リセットの参考はreset_idです。', usage: USAGE })),
    config,
  );
  assert.equal(outcomeOf(asked), undefined, 'not parked on that question');
  const state = JSON.parse(requestOf(asked)!.run.model_state_json!) as { rejected: Array<{ error: string; evidence: string }> };
  assert.match(state.rejected.at(-1)!.evidence, /the question says "リンクが送られ", but no tool that changes anything returned a verified result/);
  // A plain question is asked.
  const plain = onObservation(observed(t2, answered({ kind: 'ask', question: '登録メールをもう一度確認していただけますか？', usage: USAGE })), config);
  assert.equal(outcomeOf(plain)!.status, 'awaiting_input');
});
