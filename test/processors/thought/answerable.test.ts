/**
 * A model turn offers a final answer only once one could stand: before any of the skill's
 * grounded-by tools has returned a verified result, the turn offers tool calls and a question only
 * (constrained: no final-answer branch in the schema; native: no final_answer tool, and never
 * `tool_choice: "required"`: llama.cpp 0.94's grammar under it lets Qwen2.5-Coder write its call as
 * text and then newlines up to max_tokens).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import type { ReactSkill } from '../../../processors/thought/model/state.ts';
import { parseAnswerAfter } from '../../../processors/thought/skills.ts';
import type { ThoughtRequest, Verdict } from '../../../schemas/types.gen.ts';
import { turnSchemaTools } from '../../../processors/model-wire.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { answered, calling, observed, reactLoop, requestOf, resulted } from './react-fixtures.ts';

const world = loadWorld();

const OUTPUT = { type: 'object', required: ['reply'], properties: { reply: { type: 'string' } } };

function skill(groundedBy: string[] | undefined, toolCalls: 'native' | 'json_schema', output = false): ReactSkill {
  return {
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
    toolCalls,
    ...(groundedBy ? { groundedBy } : {}),
    ...(output ? { outputSchema: OUTPUT } : {}),
  };
}

const planner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react', planner: 'react(order_status 0.990 order-status@1)', skill: 'order-status', facts: { order_id: 'O-12345678' } }),
};

type Body = {
  tools?: Array<{ function: { name: string } }>;
  tool_choice?: string;
  response_format?: { json_schema: { schema: { anyOf: Array<{ required: string[] }> } } };
};

/** The first two turns' requests: before any tool result, and after orders.get returned one. */
function firstTwoTurns(s: ReactSkill): [Body, Body] {
  const c = thoughtConfig(world, { planner, model: reactLoop(world, s) });
  const first = onTask(task('Where is my order O-12345678?'), c);
  const afterCall = onObservation(observed(first, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), c);
  const second = onObservation(observed(afterCall, resulted('orders.get', { order_id: 'O-12345678', status: 'shipped' })), c);
  const body = (d: typeof first) => JSON.parse(requestOf(d)!.steps[0]!.input_json) as Body;
  return [body(first), body(second)];
}

/** The verdict of a tool call that failed after Action's retries (no data), as Observation writes it. */
const failedCall =
  (tool: string, errorType: 'server_error' | 'timeout' | 'not_found', status: number | null) =>
  (req: ThoughtRequest): Verdict[] => [
    {
      step_id: req.steps[0]!.step_id,
      tool,
      valid: false,
      extracted_data_json: null,
      confidence_score: 0,
      error_type: errorType,
      audit_trail: [{ name: 'status_class', passed: false, evidence: status ? `HTTP ${status}` : errorType }],
      status_code: status,
      response_time_ms: 20,
      attempts: 3,
      fallback_from: null,
    },
  ];

const branches = (b: Body) => b.response_format!.json_schema.schema.anyOf.map((x) => x.required[0]);
const toolNames = (b: Body) => (b.tools ?? []).map((t) => t.function.name);

// The ticket gives the order id orders.get takes: the first turn offers that call only (the next test).
test('constrained: no final-answer branch until a grounded-by tool has answered, then one', () => {
  const [before, after] = firstTwoTurns(skill(['orders.get'], 'json_schema'));
  assert.deepEqual(branches(before), ['tool']);
  assert.deepEqual(branches(after), ['tool', 'final_answer', 'ask_customer']);
});

test('native: no final_answer tool until a grounded-by tool has answered, and tool_choice auto throughout', () => {
  const [before, after] = firstTwoTurns(skill(['orders.get'], 'native', true));
  assert.equal(before.tool_choice, 'auto');
  assert.deepEqual(toolNames(before), ['orders__get']);
  assert.equal(after.tool_choice, 'auto');
  assert.deepEqual(toolNames(after), ['orders__get', 'ask_customer', 'final_answer']);
});

test('a ticket that gives the id a call takes: the first turn offers calls only and names the call last; without a well-formed id it may ask', () => {
  // The 1.5B, offered a question too, asked for the order id (or the e-mail address) the ticket gave.
  const first = (text: string, toolCalls: 'native' | 'json_schema') => {
    const c = thoughtConfig(world, { planner, model: reactLoop(world, skill(['orders.get'], toolCalls)) });
    const body = JSON.parse(requestOf(onTask(task(text), c))!.steps[0]!.input_json) as Body & { messages: Array<{ content: string }> };
    return { body, last: body.messages.at(-1)!.content };
  };
  const given = first('Checking on O-12345678. Never got a shipping e-mail.', 'json_schema');
  assert.deepEqual(branches(given.body), ['tool']);
  assert.match(given.last, /\(Calls you can make now with values the ticket or the results gave: orders__get \{"order_id":"O-12345678"\}\.\)$/);
  assert.deepEqual(toolNames(first('Checking on O-12345678.', 'native').body), ['orders__get']);
  for (const text of ['Where is my order? It has been two weeks.', 'Where is my order O-1234?', 'Where is my order O-123456789?']) {
    const asked = first(text, 'json_schema');
    assert.deepEqual(branches(asked.body), ['tool', 'ask_customer'], text);
    assert.doesNotMatch(asked.last, /Calls you can make now/, text);
  }
});

test('a skill that names no grounded-by tool may answer from its first turn', () => {
  const [constrained] = firstTwoTurns(skill(undefined, 'json_schema'));
  assert.deepEqual(branches(constrained), ['tool', 'final_answer', 'ask_customer']);
  const [native] = firstTwoTurns(skill(undefined, 'native'));
  assert.equal(native.tool_choice, 'auto');
});

test("answer-after: a shipped order's answer waits until shipping.track was called (the 1.5B answered without tracking); a placed order's does not", () => {
  const tracked: ReactSkill = {
    ...skill(['orders.get'], 'json_schema'),
    allowedTools: ['orders.get', 'shipping.track'],
    answerAfter: [{ tool: 'shipping.track', when: { tool: 'orders.get', field: 'status', values: ['shipped', 'delivered'] } }],
  };
  const c = thoughtConfig(world, { planner, model: reactLoop(world, tracked) });
  const first = onTask(task('Where is my order O-12345678?'), c);
  const afterCall = onObservation(observed(first, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), c);
  const body = (d: typeof first) => JSON.parse(requestOf(d)!.steps[0]!.input_json) as Body;
  const shipped = onObservation(observed(afterCall, resulted('orders.get', { order_id: 'O-12345678', status: 'shipped' })), c);
  const offersAnswer = (d: typeof first) => branches(body(d)).includes('final_answer');
  assert.equal(offersAnswer(shipped), false, 'no final answer before the tracking');
  const placed = onObservation(observed(afterCall, resulted('orders.get', { order_id: 'O-12345678', status: 'placed' })), c);
  assert.equal(offersAnswer(placed), true, 'a placed order is not tracked: it may answer');
  // Once the tracking was called (it failed: the answer may say so), the answer is offered.
  const trackCall = onObservation(observed(shipped, answered(calling(['shipping.track', { order_id: 'O-12345678' }]))), c);
  const failed = onObservation(observed(trackCall, failedCall('shipping.track', 'server_error', 503)), c);
  assert.equal(offersAnswer(failed), true);
});

test('answer-after in SKILL.md: parsed with its conditions; a tool outside allowed-tools or a malformed entry is a configuration error naming it', () => {
  const fail = (why: string): never => {
    throw new Error(why);
  };
  assert.deepEqual(
    parseAnswerAfter(
      'shipping.track if orders.get.status=shipped|delivered; billing.get_invoice',
      ['orders.get', 'shipping.track', 'billing.get_invoice'],
      fail,
    ),
    [{ tool: 'shipping.track', when: { tool: 'orders.get', field: 'status', values: ['shipped', 'delivered'] } }, { tool: 'billing.get_invoice' }],
  );
  assert.deepEqual(parseAnswerAfter('identity.password_reset if crm.find_customer.customer_id', ['crm.find_customer', 'identity.password_reset'], fail), [
    { tool: 'identity.password_reset', when: { tool: 'crm.find_customer', field: 'customer_id' } },
  ]);
  assert.throws(
    () => parseAnswerAfter('refunds.create if orders.get.status=shipped', ['orders.get'], fail),
    /"refunds\.create", which is not in allowed-tools/,
  );
  assert.throws(() => parseAnswerAfter('shipping.track when orders.get.status', ['orders.get', 'shipping.track'], fail), /is not "<tool>" or "<tool> if/);
});

test('a write the answer waits for (answer-after) is due once the results give its arguments: the turn offers calls only and names it', () => {
  // The 1.5B, with the customer_id a password reset takes, asked the customer to check their e-mail (account-en-2).
  const reset: ReactSkill = {
    ...skill(['crm.find_customer'], 'json_schema'),
    name: 'account-access',
    ref: 'account-access@1',
    allowedTools: ['crm.find_customer', 'identity.password_reset'],
    answerAfter: [{ tool: 'identity.password_reset', when: { tool: 'crm.find_customer', field: 'customer_id' } }],
  };
  const access: Planner = {
    ...planner,
    plan: () => ({ kind: 'react', planner: 'react(account_access 0.990 account-access@1)', skill: 'account-access', facts: {} }),
  };
  const c = thoughtConfig(world, { planner: access, model: reactLoop(world, reset) });
  const first = onTask(task("I'm locked out. I sign in with maria.santos@example.com, please help"), c);
  const body = (d: typeof first) => JSON.parse(requestOf(d)!.steps[0]!.input_json) as Body & { messages: Array<{ content: string }> };
  const callsOnly = (d: typeof first) => branches(body(d)).every((b) => b === 'tool');
  assert.ok(callsOnly(first), 'the ticket gives the e-mail: no question');
  assert.match(body(first).messages.at(-1)!.content, /crm__find_customer \{"email":"maria\.santos@example\.com"\}\.\)$/);
  const called = onObservation(observed(first, answered(calling(['crm.find_customer', { email: 'maria.santos@example.com' }]))), c);
  const found = onObservation(
    observed(called, resulted('crm.find_customer', { customer_id: 'C-100001', email: 'maria.santos@example.com', name: 'Maria' })),
    c,
  );
  assert.ok(callsOnly(found), 'no question while the reset is due');
  // The schema offers the due tools only (the prompt still lists every tool: its prefix stays the same).
  const schemaTools = (d: typeof first) => turnSchemaTools(body(d).response_format!.json_schema.schema);
  assert.deepEqual(schemaTools(first), ['crm__find_customer']);
  assert.deepEqual(schemaTools(found), ['identity__password_reset']);
  assert.match(body(found).messages[0]!.content, /- crm__find_customer: [^]*- identity__password_reset: /);
  assert.match(body(found).messages.at(-1)!.content, /identity__password_reset \{"customer_id":"C-100001"\}\.\)$/);
});

test('a call that failed for a passing reason (a timeout) is due again; one that failed for good (a 404) is not', () => {
  // The Reflexion pattern on the 1.5B: the order lookup timed out once; with shipping.track alone the answer could not stand.
  const c = thoughtConfig(world, { planner, model: reactLoop(world, skill(['orders.get'], 'json_schema')) });
  const first = onTask(task('Where is my order O-12345678?'), c);
  const called = onObservation(observed(first, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), c);
  const failing = (errorType: 'timeout' | 'not_found', status: number | null) =>
    onObservation(observed(called, failedCall('orders.get', errorType, status)), c);
  const body = (d: typeof first) => JSON.parse(requestOf(d)!.steps[0]!.input_json) as Body & { messages: Array<{ content: string }> };
  const timedOut = body(failing('timeout', null));
  assert.deepEqual(branches(timedOut), ['tool'], 'the lookup is due again: calls only');
  assert.match(timedOut.messages.at(-1)!.content, /orders__get \{"order_id":"O-12345678"\}\.\)$/);
  const missing = body(failing('not_found', 404));
  assert.deepEqual(branches(missing), ['tool', 'ask_customer'], 'a 404 is not tried again: the model may ask');
});

test("of the due calls, the one the answer waits for (answer-after) is offered alone: not orders.latest with the order's customer_id", () => {
  // The 0.5B, offered orders.latest beside shipping.track after orders.get, looked up another order.
  const tracked: ReactSkill = {
    ...skill(['orders.get', 'orders.latest'], 'json_schema'),
    allowedTools: ['orders.get', 'shipping.track', 'orders.latest'],
    answerAfter: [{ tool: 'shipping.track', when: { tool: 'orders.get', field: 'status', values: ['shipped', 'delivered'] } }],
  };
  const c = thoughtConfig(world, { planner, model: reactLoop(world, tracked) });
  const first = onTask(task('Where is my order O-12345678?'), c);
  const called = onObservation(observed(first, answered(calling(['orders.get', { order_id: 'O-12345678' }]))), c);
  const order = { order_id: 'O-12345678', customer_id: 'C-100001', status: 'shipped', total_cents: 4999, placed_at: '2025-10-05T09:30:00Z' };
  const shipped = onObservation(observed(called, resulted('orders.get', order)), c);
  const body = JSON.parse(requestOf(shipped)!.steps[0]!.input_json) as Body & { messages: Array<{ content: string }> };
  assert.deepEqual(turnSchemaTools(body.response_format!.json_schema.schema), ['shipping__track']);
  assert.match(body.messages.at(-1)!.content, /gave: shipping__track \{"order_id":"O-12345678"\}\.\)$/);
});
