/**
 * A model turn offers a final answer only once one could stand: before any of the skill's
 * grounded-by tools has returned a verified result, the turn offers tool calls and a question only
 * (constrained: no final-answer branch in the schema; native: no final_answer tool, and
 * `tool_choice: "required"`, which llama.cpp's grammar enforces). Qwen2.5-Coder-1.5B otherwise
 * answers the first turn in invented prose, which costs a refused turn and often the run.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import type { ReactSkill } from '../../../processors/thought/model/state.ts';
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

const branches = (b: Body) => b.response_format!.json_schema.schema.anyOf.map((x) => x.required[0]);
const toolNames = (b: Body) => (b.tools ?? []).map((t) => t.function.name);

test('constrained: no final-answer branch until a grounded-by tool has answered, then one', () => {
  const [before, after] = firstTwoTurns(skill(['orders.get'], 'json_schema'));
  assert.deepEqual(branches(before), ['tool', 'ask_customer']);
  assert.deepEqual(branches(after), ['tool', 'final_answer', 'ask_customer']);
});

test('native: tool_choice required and no final_answer tool until a grounded-by tool has answered', () => {
  const [before, after] = firstTwoTurns(skill(['orders.get'], 'native', true));
  assert.equal(before.tool_choice, 'required');
  assert.deepEqual(toolNames(before), ['orders__get', 'ask_customer']);
  assert.equal(after.tool_choice, 'auto');
  assert.deepEqual(toolNames(after), ['orders__get', 'ask_customer', 'final_answer']);
});

test('a skill that names no grounded-by tool may answer from its first turn', () => {
  const [constrained] = firstTwoTurns(skill(undefined, 'json_schema'));
  assert.deepEqual(branches(constrained), ['tool', 'final_answer', 'ask_customer']);
  const [native] = firstTwoTurns(skill(undefined, 'native'));
  assert.equal(native.tool_choice, 'auto');
});
