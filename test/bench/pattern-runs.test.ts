/**
 * How `npm run models:patterns` decides from a run's log that a pattern happened
 * (bench/lib/pattern-runs.ts): a `completed` status is not enough. A Reflexion run that completed
 * with the model's "a tool failed" answer and no reflection of its own, a plan-replan run that never
 * re-planned, a run of another planner, each is not shown. No broker, no model.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PATTERNS, patternProblems, timelineExcerpt, turnKind, type PatternId, type PatternRun } from '../../bench/lib/pattern-runs.ts';
import type { Reflection } from '../../schemas/types.gen.ts';

const pattern = (id: PatternId) => PATTERNS.find((p) => p.id === id)!;
const call = (step: string, iteration: number, tool: string, valid: boolean) => ({ step, iteration, tool, valid, error: valid ? null : 'server_error' });
const reflection = (author: string, action: Reflection['action']): Reflection => ({
  step_id: 'M3',
  tool: 'model.chat',
  iteration: 5,
  error_types: ['server_error'],
  dimensions: [],
  action,
  author,
  summary: '',
});
const run = (over: Partial<PatternRun>): PatternRun => ({
  thoughtId: 't',
  status: 'completed',
  reasonCode: 'completed',
  reason: 'the model answered',
  answer: 'Order O-31415926 is delivered.',
  plannerKind: 'react',
  turns: [],
  calls: [],
  reflections: [],
  ...over,
});
const turns = (...kinds: string[]) => kinds.map((kind, i) => ({ step: `M${i + 1}`, iteration: 2 * i + 1, kind }));

test("a model turn's kind is its system message's Turn line, react without one", () => {
  const body = (system: string) =>
    JSON.stringify({
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'Turn: plan' },
      ],
    });
  assert.equal(turnKind(body('Skill: order-status@1\nTurn: plan\nrules')), 'plan');
  assert.equal(turnKind(body('Skill: order-status@1\nTurn: reflection')), 'reflection');
  assert.equal(turnKind(body('Skill: order-status@1\nYou are a support agent.\nTurn: plan')), 'react', 'only the second line counts');
});

test('Reflexion: shown only with a reflection turn, a model-written reflection, and a tool answering after it', () => {
  const recovered = run({
    turns: turns('react', 'reflection', 'react', 'react'),
    calls: [call('M1_1', 2, 'orders.get', false), call('M3_1', 5, 'orders.get', true)],
    reflections: [reflection('model:order-status@1', 'retry_with_changed_input')],
  });
  assert.deepEqual(patternProblems(pattern('reflexion'), recovered, true), []);
  // The real 1.5B, after its retry reflection, tracked the order instead of looking it up again, and answered: the reflection changed what the run did.
  const tracked = run({ ...recovered, calls: [call('M1_1', 2, 'orders.get', false), call('M3_1', 5, 'shipping.track', true)] });
  assert.deepEqual(patternProblems(pattern('reflexion'), tracked, true), []);
  // Completed, but with "I could not look your order up … A colleague will follow up" after the failure: no Reflexion.
  const gaveUp = run({ turns: turns('react', 'reflection', 'react'), calls: recovered.calls.slice(0, 1) });
  assert.deepEqual(patternProblems(pattern('reflexion'), gaveUp, true), [
    'no model-written reflection in the outcome',
    "no tool answered after the model's reflection on the failed orders.get",
  ]);
  assert.deepEqual(patternProblems(pattern('reflexion'), { ...recovered, plannerKind: 'plan-replan' }, true), ['planned by plan-replan, not react']);
});

test('plan-replan: shown only with a plan turn, and a re-plan after a rule-based change_plan once the fault hit', () => {
  const replanned = run({
    plannerKind: 'plan-replan',
    turns: turns('plan', 'plan'),
    calls: [call('M1_S1', 2, 'orders.get', true), call('M1_S2', 3, 'shipping.track', false), call('M2_S1', 6, 'crm.tier', true)],
    reflections: [reflection('rules', 'change_plan')],
  });
  assert.deepEqual(patternProblems(pattern('plan-replan'), replanned, true), []);
  assert.deepEqual(patternProblems(pattern('plan-replan'), { ...replanned, turns: turns('plan'), reflections: [] }, true), [
    '1 plan turn(s): no re-plan after shipping.track failed',
    'no reflection in the outcome called for a new plan (change_plan)',
  ]);
  assert.deepEqual(patternProblems(pattern('plan-replan'), { ...replanned, turns: turns('plan') }, false), [
    'the plan never called shipping.track, so no step failed and nothing called for a re-plan',
  ]);
  assert.deepEqual(patternProblems(pattern('plan-replan'), { ...replanned, turns: turns('react', 'react') }, true), [
    'no plan turn (Turn: plan) in the log',
    '0 plan turn(s): no re-plan after shipping.track failed',
  ]);
});

test('ReAct: a run that did not complete, or answered without acting, is not shown; no outcome is not shown', () => {
  const ok = run({ turns: turns('react', 'react', 'react'), calls: [call('M1_1', 2, 'orders.get', true), call('M2_1', 4, 'shipping.track', true)] });
  assert.deepEqual(patternProblems(pattern('react'), ok, false), []);
  assert.deepEqual(patternProblems(pattern('react'), { ...ok, status: 'budget_exhausted', reasonCode: 'model_repeat', reason: 'repeated' }, false), [
    'ended budget_exhausted (model_repeat): repeated',
  ]);
  const quoted = patternProblems(
    pattern('react'),
    { ...ok, status: 'failed', reasonCode: 'model_invalid', reason: `it read: ${'\n'.repeat(80)}x`.repeat(20) },
    false,
  );
  assert.equal(quoted.length, 1);
  assert.ok(!quoted[0]!.includes('\n') && quoted[0]!.length < 340, 'a reason quoting a model answer stays one short line');
  assert.deepEqual(patternProblems(pattern('react'), { ...ok, turns: turns('react'), calls: [] }, false), [
    '1 react turn(s): a ReAct run reasons, acts and answers in at least two',
    'no tool call was verified: the answer did not act on anything',
  ]);
  assert.deepEqual(patternProblems(pattern('react'), null, false), ['no outcome within the wait']);
});

test("the timeline excerpt keeps the waves' step rows, reflections and outcome, and drops the bookkeeping lines", () => {
  const terminal = [
    'Run t  COMPLETED (completed) after 1 wave(s)',
    '  STEP  TOOL        STATUS',
    '  M1    model.chat  verified',
    '    M1: result.attempt_time_ms: 13',
    '    M1: error: http_status: HTTP 503',
    '  result.dead_letter: null',
    '  observation.rules_version: "1#bb56c5f1e9b6"',
    'Outcome  COMPLETED',
  ].join('\n');
  assert.equal(
    timelineExcerpt(terminal),
    [
      'Run t  COMPLETED (completed) after 1 wave(s)',
      '  STEP  TOOL        STATUS',
      '  M1    model.chat  verified',
      '    M1: error: http_status: HTTP 503',
      'Outcome  COMPLETED',
    ].join('\n'),
  );
});
