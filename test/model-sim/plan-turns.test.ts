/**
 * The simulator's plan turns (`Turn: plan`, plan-replan runs): the scenario's `plan` rules answer
 * with a whole plan whose own references (`{{S1.order_id}}`) are kept as text, and `{{ref:<tool>.<field>}}`
 * names an earlier call's result by its call id.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readConversation } from '../../model-sim/conversation.ts';
import { decide, loadScenarios } from '../../model-sim/scenarios.ts';
import { packagePath } from '../../runtime/paths.ts';

const scenarios = loadScenarios(packagePath('model-sim/scenarios'));
const tools = ['orders.get', 'shipping.track', 'crm.find_customer', 'orders.latest', 'crm.tier'].map((name) => ({
  type: 'function',
  function: { name: name.replace('.', '__'), parameters: {} },
}));
const system = 'Skill: order-status@1\nTurn: plan\n\nrules';

test("a first plan turn answers the scenario's plan: look the order up, then track it; plan references stay as written", () => {
  const d = decide(
    scenarios,
    readConversation({
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'Where is my order O-78711382?' },
      ],
      tools,
      tool_choice: 'none',
    }),
    { noTools: true },
  );
  assert.equal(d.rule, 'plan: look the order up, then track it once shipped');
  assert.equal(d.answer.kind, 'json');
  const plan = (d.answer as unknown as { value: { steps: Array<{ tool: string; input: Record<string, string> }> } }).value;
  assert.deepEqual(
    plan.steps.map((s) => [s.tool, s.input]),
    [
      ['orders.get', { order_id: 'O-78711382' }],
      ['shipping.track', { order_id: '{{S1.order_id}}' }],
    ],
  );
});

test('a re-plan turn reads the failure: a failed lookup goes through the account; a failed tracking references the earlier lookup by its call id', () => {
  const ran = (tool: string, result: unknown) => [
    {
      role: 'assistant',
      content: '{"steps":[]}',
      tool_calls: [
        { id: 'M1_S1', type: 'function', function: { name: 'orders__get', arguments: '{"order_id":"O-78711382"}' } },
        ...(tool === 'shipping.track'
          ? [{ id: 'M1_S2', type: 'function', function: { name: 'shipping__track', arguments: '{"order_id":"O-78711382"}' } }]
          : []),
      ],
    },
    {
      role: 'tool',
      tool_call_id: 'M1_S1',
      content: tool === 'orders.get' ? JSON.stringify(result) : '{"order_id":"O-78711382","customer_id":"C-463260","status":"shipped"}',
    },
    ...(tool === 'shipping.track' ? [{ role: 'tool', tool_call_id: 'M1_S2', content: JSON.stringify(result) }] : []),
  ];
  const user = { role: 'user', content: 'Where is my order O-78711382? The account is maria@example.com.' };
  const viaAccount = decide(
    scenarios,
    readConversation({ messages: [{ role: 'system', content: system }, user, ...ran('orders.get', { error: 'server_error' })], tools }),
    { noTools: true },
  );
  assert.equal(viaAccount.rule, 're-plan through the account: the order lookup failed');
  assert.deepEqual((viaAccount.answer as unknown as { value: { steps: Array<{ input: unknown }> } }).value.steps[0]!.input, { email: 'maria@example.com' });

  const tier = decide(
    scenarios,
    readConversation({ messages: [{ role: 'system', content: system }, user, ...ran('shipping.track', { error: 'server_error' })], tools }),
    { noTools: true },
  );
  assert.equal(tier.rule, 're-plan: the tracking failed, answer with the order as looked up');
  const value = (tier.answer as unknown as { value: { steps: Array<{ input: unknown }>; output: unknown } }).value;
  assert.deepEqual(value.steps[0]!.input, { customer_id: 'C-463260' });
  assert.deepEqual(value.output, { order_id: '{{M1_S1.order_id}}', status: '{{M1_S1.status}}', tier: '{{S1.tier}}' });
});
