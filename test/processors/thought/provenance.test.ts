/**
 * Argument provenance: a model's call whose order, claim or invoice id, e-mail address or customer id
 * the run was never given (the ticket, a customer's reply, a verified result) is refused before any
 * tool runs, and the model is told to ask the customer. Thought's core as pure functions, with the
 * real catalog's `identity_parameters`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import { parseModelState, type ReactSkill } from '../../../processors/thought/model/state.ts';
import { unsupportedIdentities } from '../../../processors/thought/model/checks.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import { loadWorld, reply, task, thoughtConfig } from '../fixtures.ts';
import { USAGE, answered, calling, observed, outcomeOf, reactLoop, requestOf, resulted, snapshotOf } from './react-fixtures.ts';

const world = loadWorld();
const skill: ReactSkill = {
  name: 'order-status',
  version: 1,
  ref: 'order-status@1',
  prompt: 'Find the order. An order id looks like O-12345678.',
  allowedTools: ['orders.get', 'shipping.track', 'crm.find_customer', 'orders.latest'],
  maxModelTurns: 8,
  tokenBudget: 50000,
  contextWindow: 8192,
  maxTokens: 512,
  maxReplans: 2,
};
const loop = reactLoop(world, skill);
const planner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react', planner: 'react(order_status)', skill: 'order-status', facts: {} }),
};
const config: ThoughtConfig = thoughtConfig(world, { planner, model: loop });
/** The tools the decision sends to Action (model turns aside). */
const toolsCalled = (d: ThoughtDecision) => (requestOf(d)?.steps ?? []).filter((s) => s.tool !== 'model.chat').map((s) => [s.tool, JSON.parse(s.input_json)]);

test("a call with an order id the ticket never gave (the prompt's example) is refused before any tool runs; the model hears why and to ask", () => {
  const t1 = onTask(task('Where is my order? It has been two weeks.'), config);
  const d = onObservation(observed(t1, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), config);
  assert.deepEqual(toolsCalled(d), [], 'no tool call is dispatched');
  const next = requestOf(d)!;
  assert.deepEqual(
    next.steps.map((s) => s.step_id),
    ['M2'],
    "the model's next turn instead",
  );
  const state = parseModelState(next.run);
  assert.equal(state.rejected.at(-1)!.error, 'unsupported_argument');
  assert.match(state.rejected.at(-1)!.evidence, /orders\.get's order_id "O-12345678": not in the ticket, a customer's reply or a verified tool result/);
  const body = JSON.parse(next.steps[0]!.input_json) as { messages: Array<{ role: string; content: string }> };
  assert.match(body.messages.at(-1)!.content, /unsupported_argument.*ask the customer/s, 'the prompt tells the model to ask the customer');
});

test('the model that keeps guessing ids never completes: after the streak its next turn may only ask, and no tool ran', () => {
  let d = onTask(task('Where is my order? It has been two weeks.'), config);
  const dispatched: unknown[] = [];
  for (let turn = 0; turn < 3 && !outcomeOf(d); turn++) {
    d = onObservation(observed(d, answered(calling(['orders.get', { order_id: `O-1234567${turn}` }]))), config);
    dispatched.push(...toolsCalled(d));
  }
  assert.deepEqual(dispatched, []);
  assert.equal(outcomeOf(d), undefined, 'not ended: one more turn');
  // The turn after the streak offers no tool but ask_customer, and says why.
  const body = JSON.parse(requestOf(d)!.steps[0]!.input_json) as {
    messages: Array<{ content: string }>;
    tools: Array<{ function: { name: string } }>;
    tool_choice: string;
  };
  assert.deepEqual(
    body.tools.map((t) => t.function.name),
    ['ask_customer'],
  );
  assert.equal(body.tool_choice, 'auto', 'never required: llama.cpp 0.94 then writes the call as text and newlines (infra/README.md)');
  assert.match(body.messages[0]!.content, /Do not guess one: ask the customer for it/);
  const asked = onObservation(observed(d, answered({ kind: 'ask', question: 'What is your order id?', usage: USAGE })), config);
  assert.deepEqual([outcomeOf(asked)!.status, outcomeOf(asked)!.reason_code], ['awaiting_input', 'needs_input']);
  // The customer's reply gives the id: every tool is offered again.
  const resumed = onTask(reply('It is O-24680135.'), config, snapshotOf(asked));
  const after = JSON.parse(requestOf(resumed)!.steps[0]!.input_json) as { tools: Array<{ function: { name: string } }> };
  assert.ok(
    after.tools.some((t) => t.function.name === 'orders__get'),
    'orders.get offered again after the reply',
  );
  // A model that calls anyway (a server that does not enforce tool_choice) ends the run; nothing ran.
  const again = onObservation(observed(d, answered(calling(['orders.get', { order_id: 'O-99999999' }]))), config);
  assert.deepEqual(toolsCalled(again), []);
  assert.deepEqual([outcomeOf(again)!.status, outcomeOf(again)!.reason_code], ['failed', 'model_invalid']);
});

test('ids the ticket gives pass, in English and in Chinese written against the id', () => {
  for (const text of ['Where is order O-12345678?', '我的订单O-12345678到哪了？', 'order o-12345678 please']) {
    const t1 = onTask(task(text), config);
    const d = onObservation(observed(t1, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), config);
    assert.deepEqual(toolsCalled(d), [['orders.get', { order_id: 'O-12345678' }]], text);
  }
});

test('an id that only appears inside a longer one is not given: O-12345678 in a ticket that says O-123456789', () => {
  const t1 = onTask(task('Where is O-123456789?'), config);
  const d = onObservation(observed(t1, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), config);
  assert.deepEqual(toolsCalled(d), []);
});

test("a customer id from a verified result passes; another customer's id in the same turn refuses the whole turn", () => {
  const t1 = onTask(task('Where is my latest order? I am alice@example.com'), config);
  const w1 = onObservation(observed(t1, answered(calling(['crm.find_customer', { email: 'alice@example.com' }]))), config);
  assert.deepEqual(toolsCalled(w1), [['crm.find_customer', { email: 'alice@example.com' }]], 'the e-mail is in the ticket');
  const t2 = onObservation(observed(w1, resulted('crm.find_customer', { customer_id: 'C-100001', email: 'alice@example.com' })), config);
  const ok = onObservation(observed(t2, answered(calling(['orders.latest', { customer_id: 'C-100001' }]))), config);
  assert.deepEqual(toolsCalled(ok), [['orders.latest', { customer_id: 'C-100001' }]]);
  const mixed = onObservation(
    observed(t2, answered(calling(['orders.latest', { customer_id: 'C-100001' }], ['orders.latest', { customer_id: 'C-200002' }]))),
    config,
  );
  assert.deepEqual(toolsCalled(mixed), []);
  assert.match(parseModelState(requestOf(mixed)!.run).rejected.at(-1)!.evidence, /C-200002/);
});

test("a model's own earlier answer does not make an id given: only tool results, the ticket and replies count", () => {
  const t1 = onTask(task('Where is my order?'), config);
  const asked = onObservation(observed(t1, answered({ kind: 'ask', question: 'Is it O-12345678?', usage: USAGE })), config);
  assert.equal(outcomeOf(asked)!.status, 'awaiting_input');
  const replied = onTask(reply('It is O-87654321.'), config, snapshotOf(asked));
  const guessed = onObservation(observed(replied, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), config);
  assert.deepEqual(toolsCalled(guessed), [], "the id in the model's own question is not the customer's");
  const fromReply = onObservation(observed(replied, answered(calling(['orders.get', { order_id: 'O-87654321' }]))), config);
  assert.deepEqual(toolsCalled(fromReply), [['orders.get', { order_id: 'O-87654321' }]], "the reply's id is given");
});

test('the same refused answer gives the same records (replay re-decides provenance from the records)', () => {
  const t1 = onTask(task('Where is my order?'), config);
  const a = onObservation(observed(t1, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), config);
  const b = onObservation(observed(t1, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), config);
  assert.deepEqual(a, b);
});

test('unsupportedIdentities: e-mails match whatever their case, numbers in results count, tools without identity parameters are not checked', () => {
  const ids = (tool: string) => ({ 'crm.find_customer': ['email'], 'x.by_number': ['n'] })[tool] ?? [];
  const given = { texts: ['Mail me at Alice@Example.com.'], results: [{ nested: [{ n: 42 }] }] };
  assert.deepEqual(
    unsupportedIdentities(
      [
        { tool: 'crm.find_customer', arguments: { email: 'alice@example.com' } },
        { tool: 'x.by_number', arguments: { n: 42 } },
        { tool: 'x.by_number', arguments: { n: 43 } },
        { tool: 'status.service', arguments: { service: 'anything' } },
      ],
      given,
      ids,
    ),
    [{ tool: 'x.by_number', parameter: 'n', value: '43' }],
  );
});
