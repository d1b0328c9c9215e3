/**
 * The simulator's order-status reflection (a Reflexion run, `TAO_REFLECT_AFTER=1`): a failed
 * tracking gets a reflection that calls for a retry, and the next turn, whose system message shows
 * that reflection (the `system` condition), tracks again; without it, a failed tool still gets the
 * scenario's "a tool failed" answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readConversation } from '../../model-sim/conversation.ts';
import { decide, loadScenarios } from '../../model-sim/scenarios.ts';
import { packagePath } from '../../runtime/paths.ts';

const scenarios = loadScenarios(packagePath('model-sim/scenarios'));
const tools = ['orders.get', 'shipping.track'].map((name) => ({ type: 'function', function: { name: name.replace('.', '__'), parameters: {} } }));
const ran = [
  { role: 'user', content: 'Where is my order O-31415926?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'orders__get', arguments: '{"order_id":"O-31415926"}' } }] },
  { role: 'tool', tool_call_id: 'c1', content: '{"order_id":"O-31415926","customer_id":"C-746197","status":"delivered"}' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c2', type: 'function', function: { name: 'shipping__track', arguments: '{"order_id":"O-31415926"}' } }],
  },
  { role: 'tool', tool_call_id: 'c2', content: '{"error":"http_status: HTTP 503"}' },
];
const turn = (system: string) => decide(scenarios, readConversation({ messages: [{ role: 'system', content: system }, ...ran], tools }));

test('a failed tracking: the reflection calls for a retry, and the turn after it tracks the order again', () => {
  const reflection = turn('Skill: order-status@1\nTurn: reflection\nrules');
  assert.equal(reflection.rule, 'the tracking failed');
  assert.equal((reflection.answer as unknown as { value: { action: string } }).value.action, 'retry_with_changed_input');

  const after = turn(
    'Skill: order-status@1\nrules\n\nReflections so far:\n1. turn 3 reflection (retry_with_changed_input): the tracking service failed once (HTTP 503)',
  );
  assert.equal(after.rule, 'track again after a reflection that calls for a retry');
  assert.deepEqual(after.answer, { kind: 'tool_calls', calls: [{ tool: 'shipping.track', arguments: { order_id: 'O-31415926' } }] });
});

test('without that reflection in the system message, a failed tool gets the "a tool failed" answer as before', () => {
  for (const system of ['Skill: order-status@1\nrules', 'Skill: order-status@1\nrules\n\nReflections so far:\n1. turn 3 reflection (escalate): down'])
    assert.equal(turn(system).rule, 'a tool failed', system);
});
