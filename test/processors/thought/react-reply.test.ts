/**
 * A reply to a run whose model asked the customer (`ask_customer`) continues the same conversation:
 * Thought's core as pure functions, from the records the other stages would write.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import { DEFAULT_SYSTEM_RULES } from '../../../processors/thought/model/prompt.ts';
import { parseModelState, type ModelLoopConfig, type ReactSkill } from '../../../processors/thought/model/state.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import type { Outcome, RunSnapshot, ThoughtRequest, Verdict } from '../../../schemas/types.gen.ts';
import { loadWorld, reply, task, thoughtConfig } from '../fixtures.ts';
import { observed, requestOf as request } from './react-fixtures.ts';

const world = loadWorld();
const skill: ReactSkill = {
  name: 'order-status',
  version: 1,
  ref: 'order-status@1',
  prompt: 'Find the order.',
  allowedTools: ['orders.get', 'shipping.track'],
  maxModelTurns: 6,
  tokenBudget: 5000,
  contextWindow: 8192,
  maxTokens: 512,
  maxReplans: 2,
};
const loop: ModelLoopConfig = {
  tool: 'model.chat',
  skill: (name) => (name === skill.name ? skill : undefined),
  toolSpec: (name) => {
    const spec = world.catalog.get(name)?.spec;
    return spec && { name: spec.name, description: spec.description, parameters: spec.parameters };
  },
  system: DEFAULT_SYSTEM_RULES,
};
/** What the skill planner returns after routing: the facts it found in the run's whole text. */
const planner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: (t) => ({ kind: 'react', planner: 'react(order_status)', skill: 'order-status', facts: factsOf(t.text) }),
};
function factsOf(text: string): Record<string, string> {
  const id = /O-\d{8}/g.exec(text.split('\n').at(-1)!)?.[0] ?? /O-\d{8}/.exec(text)?.[0];
  return id ? { order_id: id } : {};
}
const config: ThoughtConfig = thoughtConfig(world, { planner, model: loop });
const usage = { prompt_tokens: 400, completion_tokens: 40, total_tokens: 440 };
const outcome = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'outcomes')?.value as Outcome | undefined;
const snapshot = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'thoughtRuns')?.value as RunSnapshot;
const verdict = (stepId: string, tool: string, data: unknown): Verdict => ({
  step_id: stepId,
  tool,
  valid: true,
  extracted_data_json: JSON.stringify(data),
  confidence_score: 1,
  error_type: 'ok',
  audit_trail: [],
  status_code: 200,
  response_time_ms: 20,
  attempts: 1,
  fallback_from: null,
});
const answer = (a: ModelAnswer) => (req: ThoughtRequest) => [verdict(req.steps[0]!.step_id, 'model.chat', a)];
type Body = { messages: Array<{ role: string; content: string; tool_calls?: Array<{ function: { name: string } }> }> };

/** Turn 1 looks the order up, turn 2 asks the customer: the run parks awaiting_input. */
function parkedRun(): ThoughtDecision {
  const t1 = onTask(task('My order has not arrived and I want to know why.'), config);
  const w1 = onObservation(
    observed(t1, answer({ kind: 'tool_calls', content: null, calls: [{ id: 'c1', tool: 'orders.get', arguments: { order_id: 'O-11111111' } }], usage })),
    config,
  );
  const t2 = onObservation(
    observed(w1, (req) => [verdict(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-11111111', status: 'placed' })]),
    config,
  );
  return onObservation(observed(t2, answer({ kind: 'ask', question: 'Which order do you mean? That one has not shipped.', usage })), config);
}

test('a reply after ask_customer continues the conversation: the next turn is turn 3, its prompt holds the earlier turns, the question and the reply', () => {
  const parked = parkedRun();
  assert.equal(outcome(parked)!.status, 'awaiting_input');
  const d = onTask(reply('Sorry, it is O-12345678.'), config, snapshot(parked));
  const req = request(d)!;
  assert.deepEqual(
    req.steps.map((s) => s.step_id),
    ['M3'],
    'the conversation goes on at turn 3, not turn 1',
  );
  const body = JSON.parse(req.steps[0]!.input_json) as Body;
  assert.equal(body.messages[1]!.content, 'My order has not arrived and I want to know why.', 'the conversation opens with the original ticket');
  assert.ok(
    body.messages.some((m) => m.role === 'assistant' && m.tool_calls?.[0]?.function.name === 'orders__get'),
    "turn 1's call is in the history",
  );
  assert.ok(
    body.messages.some((m) => m.role === 'tool' && m.content.includes('O-11111111')),
    'and its result',
  );
  const asked = body.messages.findIndex((m) => m.role === 'assistant' && m.content === 'Which order do you mean? That one has not shipped.');
  assert.ok(asked > 0, "the question is the model's turn");
  const replied = body.messages[asked + 1]!;
  assert.equal(replied.role, 'user', "the reply is the customer's message right after it");
  assert.equal(replied.content.split('\n')[0], 'Sorry, it is O-12345678.', "the reply is the customer's message right after it");
  assert.match(replied.content, /Verified values .*\n- orders\.get: order_id "O-11111111", status "placed"/, 'the verified values follow it, last');
  assert.equal(body.messages.at(-1)!.role, 'user');
  // Outputs, token counts and the facts of the whole text are kept.
  const state = parseModelState(req.run);
  assert.deepEqual([state.turns, state.tokens], [3, 880]);
  assert.equal(state.facts.order_id, 'O-12345678');
  assert.ok(JSON.parse(req.run.outputs_json).M1_1, "the first lookup's output is kept");
  assert.equal(req.run.human_involved, true);
  assert.equal(req.run.task_id, 'reply-1-t-1');
});

test('the continued run ends with the turns and tokens of the whole conversation', () => {
  const d = onTask(reply('Sorry, it is O-12345678.'), config, snapshot(parkedRun()));
  const end = onObservation(observed(d, answer({ kind: 'final', content: 'Order O-12345678 is on its way.', usage })), config);
  const out = JSON.parse(outcome(end)!.output_json!) as { turns: number; tokens: number };
  assert.deepEqual([outcome(end)!.status, out.turns, out.tokens], ['completed', 3, 1320]);
});

test('the same reply to the same parked run gives the same records (replay re-decides it)', () => {
  const a = onTask(reply('Sorry, it is O-12345678.'), config, snapshot(parkedRun()));
  const b = onTask(reply('Sorry, it is O-12345678.'), config, snapshot(parkedRun()));
  assert.deepEqual(a, b);
});
