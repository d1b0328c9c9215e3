/**
 * When the router does not know, the model may: a ticket the router calls `unknown` below
 * TAO_ROUTE_MODEL_BELOW gets one constrained model turn offering the runnable skills (each with its
 * description) and `none`. The gate checks the answer against the offered list; an offered skill
 * starts that skill's run (its turn and tokens counted), `none` or anything else escalates as the
 * router would have. Decided from the records, so a replay re-decides it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import { SkillPlanner, type RoutableSkill } from '../../../processors/thought/planners/skill.ts';
import type { RouterPlanner } from '../../../processors/thought/planners/router.ts';
import type { IntentRoute } from '../../../processors/thought/planners/intent-model.ts';
import { verifyModelAnswer } from '../../../processors/observation/model-gate.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import type { ReactSkill } from '../../../processors/thought/model/state.ts';
import { createContractAjv } from '../../../tools/catalog.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { answered, observed, outcomeOf, reactLoop, requestOf, USAGE } from './react-fixtures.ts';

const world = loadWorld();
const skill: ReactSkill = {
  name: 'order-status',
  description: 'Tells a customer where their order is.',
  version: 1,
  ref: 'order-status@1',
  prompt: 'Look the order up.',
  allowedTools: ['orders.get'],
  maxModelTurns: 4,
  tokenBudget: 50000,
  contextWindow: 8192,
  maxTokens: 256,
  maxReplans: 0,
};
const routable: RoutableSkill[] = [
  { name: 'order-status', ref: 'order-status@1', runnable: true },
  { name: 'invoice-copy', ref: 'invoice-copy@1', runnable: true, planner: 'plan' },
];
const route = (r: Partial<IntentRoute>): string =>
  JSON.stringify({ intent: 'unknown', candidate: 'unknown', confidence: 0.6, slots: { order_id: 'O-20250002' }, model: 'm', ...r });
const router = { plan: () => ({ kind: 'escalate', planner: 'router(m)', reason: 'the ticket is off-domain; a person takes it' }), config: 'routes@1' };
const planner = (below: number) => new SkillPlanner(router as unknown as RouterPlanner, { forIntent: () => undefined, list: () => routable }, 'react', below);
const tt = { thought_id: 't-1', text: '注文O-20250002はどこですか', metadata: {} };

test('an unknown route below the threshold asks the model to choose among the runnable skills a model takes; at or above it, or at 0, it escalates', () => {
  const chosen = planner(0.9).plan(tt, route({ confidence: 0.6 }));
  assert.deepEqual(chosen.kind === 'choose_skill' && [chosen.skills, chosen.facts], [['order-status'], { order_id: 'O-20250002' }]);
  assert.equal(planner(0.9).plan(tt, route({ confidence: 0.95 })).kind, 'escalate', 'a confident unknown (off-domain) is not asked about');
  assert.equal(planner(0).plan(tt, route({ confidence: 0.1 })).kind, 'escalate', 'TAO_ROUTE_MODEL_BELOW=0: never');
});

const config = thoughtConfig(world, {
  planner: { name: 'react', config: 'routes@1', plan: () => planner(0.9).plan(tt, route({})) },
  model: reactLoop(world, skill),
});
const routeAnswer = (skillName: string | null, reason = 'the customer asks where the order is'): ModelAnswer => ({
  kind: 'route',
  skill: skillName,
  reason,
  usage: USAGE,
});

test('the routing turn is one constrained model step: the skills with their descriptions, and a schema of them and none', () => {
  const wave = requestOf(onTask(task(tt.text), config))!;
  assert.deepEqual(
    wave.steps.map((s) => [s.step_id, s.tool]),
    [['M1', 'model.chat']],
  );
  const req = JSON.parse(wave.steps[0]!.input_json) as {
    messages: Array<{ content: string }>;
    response_format: { json_schema: { name: string; schema: unknown } };
  };
  assert.equal(req.response_format.json_schema.name, 'route');
  assert.deepEqual((req.response_format.json_schema.schema as { properties: { skill: { enum: string[] } } }).properties.skill.enum, ['order-status', 'none']);
  assert.match(req.messages[0]!.content, /- order-status: Tells a customer where their order is\./);
  assert.equal(req.messages[1]!.content, tt.text);
});

test("an offered skill starts that skill's run: its first turn is M2, the routing turn's tokens counted", () => {
  const started = onTask(task(tt.text), config);
  const next = onObservation(observed(started, answered(routeAnswer('order-status'))), config);
  const wave = requestOf(next)!;
  assert.deepEqual(
    wave.steps.map((s) => s.step_id),
    ['M2'],
  );
  const state = JSON.parse(wave.run.model_state_json!) as { skill: string; turns: number; tokens: number; routing?: unknown };
  assert.deepEqual([state.skill, state.turns, state.tokens, state.routing], ['order-status@1', 2, 440, undefined]);
  assert.match(JSON.parse(wave.steps[0]!.input_json).messages[0].content, /Skill: order-status@1/);
});

test('none, an unknown skill, or a failed routing turn escalates as the router would have (unroutable)', () => {
  const started = onTask(task(tt.text), config);
  const none = outcomeOf(onObservation(observed(started, answered(routeAnswer(null, 'the ticket asks for a poem'))), config))!;
  assert.deepEqual([none.status, none.reason_code], ['escalated', 'unroutable']);
  assert.match(none.reason, /the model chose no skill \(the ticket asks for a poem\)/);
  const other = outcomeOf(onObservation(observed(started, answered(routeAnswer('refund-request'))), config))!;
  assert.match(other.reason, /chose refund-request, which was not offered/);
});

test('the gate reads a routing answer against the skills the request offered', () => {
  const ajv = createContractAjv();
  const request = JSON.stringify({
    messages: [{ role: 'user', content: 'x' }],
    response_format: {
      type: 'json_schema',
      json_schema: { name: 'route', schema: { type: 'object', properties: { skill: { enum: ['order-status', 'none'] } } } },
    },
  });
  const answer = (content: string) =>
    verifyModelAnswer({ choices: [{ message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: USAGE }, request, () => undefined, ajv);
  const ok = answer('{"skill": "order-status", "reason": "where is my order"}');
  assert.deepEqual(ok.ok && ok.answer.kind === 'route' && [ok.answer.skill, ok.answer.reason], ['order-status', 'where is my order']);
  const none = answer('```json\n{"skill": "none"}\n```');
  assert.deepEqual(none.ok && none.answer.kind === 'route' && none.answer.skill, null);
  const invented = answer('{"skill": "refund-request"}');
  assert.deepEqual(!invented.ok && invented.errorType, 'hallucinated_tool');
  const prose = answer('It is about an order.');
  assert.deepEqual(!prose.ok && prose.errorType, 'malformed');
});
