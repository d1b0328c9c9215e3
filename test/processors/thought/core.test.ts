import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import type { Plan } from '../../../processors/thought/plan.ts';
import type { ObservationResult, ThoughtRequest, Verdict } from '../../../schemas/types.gen.ts';
import { DATA, failedVerdict, fixedPlanner, flowPlan, loadWorld, onlyOutcome, onlyRequest, task, thoughtConfig, validVerdict } from '../fixtures.ts';

const world = loadWorld();
const config = thoughtConfig(world);
const TOOL = { S1: 'crm.find_customer', S2: 'orders.latest', S3: 'crm.tier', S4: 'shipping.track' } as const;

/** What Observation would answer to a wave: one verdict per step, chosen by `verdictFor`. */
function observe(request: ThoughtRequest, verdictFor: (stepId: keyof typeof DATA) => Verdict): ObservationResult {
  return { thought_id: request.thought_id, iteration: request.iteration, run: request.run, verdicts: request.steps.map((s) => verdictFor(s.step_id as keyof typeof DATA)) };
}

const allValid = (id: keyof typeof DATA) => validVerdict(id, TOOL[id], DATA[id]);

function stepsOf(request: ThoughtRequest) {
  return request.steps.map((s) => ({ ...s, input: JSON.parse(s.input_json) as unknown }));
}

function firstWave(text = 'Where is my order? alice@example.com') {
  return onlyRequest(onTask(task(text), config));
}

describe('onTask', () => {
  test('a task with an e-mail starts wave 1 with only S1, its input resolved and idempotency key thought_id:1:S1', () => {
    const wave = firstWave();
    assert.equal(wave.thought_id, 't-1');
    assert.equal(wave.iteration, 1);
    assert.deepEqual(wave.steps, [{ step_id: 'S1', tool: 'crm.find_customer', input_json: JSON.stringify({ email: 'alice@example.com' }), idempotency_key: 't-1:1:S1', attempt: 1 }]);
    assert.deepEqual(wave.run.step_attempts, { S1: 1 });
    assert.equal(wave.run.outputs_json, '{}');
    assert.equal(wave.run.max_iterations, 10);
    assert.deepEqual([wave.run.flow_id, wave.run.flow_version, wave.run.planner], ['order-status', 1, 'graph']);
    assert.deepEqual(JSON.parse(wave.run.plan_json), flowPlan(world), 'the run carries the validated plan');
  });

  test('a task without an e-mail ends awaiting_input with missing_fields [email] and no tool call', () => {
    const outcome = onlyOutcome(onTask(task('Where is my order? I forgot my details'), config));
    assert.equal(outcome.status, 'awaiting_input');
    assert.deepEqual(outcome.missing_fields, ['email']);
    assert.match(outcome.reason, /email/);
    assert.equal(outcome.output_json, null);
    assert.equal(outcome.steps_executed, 0);
    assert.equal(outcome.iterations, 0);
    assert.deepEqual([outcome.task_id, outcome.flow_id, outcome.flow_version], ['task-t-1', 'order-status', 1]);
  });

  test('a planner returning a plan with a cycle ends the run as failed with reason "invalid plan: ..."', () => {
    const plan = flowPlan(world);
    plan.steps[0]!.depends_on = ['S4'];
    const outcome = onlyOutcome(onTask(task('alice@example.com'), thoughtConfig(world, { planner: fixedPlanner(plan) })));
    assert.equal(outcome.status, 'failed');
    assert.ok(outcome.reason.startsWith('invalid plan'), outcome.reason);
    assert.match(outcome.reason, /cycle: S1 -> S4 -> S2 -> S1/);
    assert.equal(outcome.steps_executed, 0);
    assert.equal(outcome.planner, 'fixed');
  });

  test('a planner returning a plan with an unknown tool ends the run as failed naming the tool', () => {
    const plan = flowPlan(world);
    plan.steps[2]!.tool = 'crm.teleport';
    const outcome = onlyOutcome(onTask(task('alice@example.com'), thoughtConfig(world, { planner: fixedPlanner(plan) })));
    assert.equal(outcome.status, 'failed');
    assert.ok(outcome.reason.startsWith('invalid plan'), outcome.reason);
    assert.match(outcome.reason, /step S3: unknown tool crm\.teleport/);
  });

  test('a planner returning garbage (not a plan object) fails the run instead of throwing', () => {
    for (const garbage of [null, 'plan', { steps: 'nope' }]) {
      const outcome = onlyOutcome(onTask(task('alice@example.com'), thoughtConfig(world, { planner: fixedPlanner(garbage) })));
      assert.equal(outcome.status, 'failed');
      assert.ok(outcome.reason.startsWith('invalid plan'), outcome.reason);
    }
  });

  test('the same task twice gives deep-equal records (no clock, no randomness)', () => {
    assert.deepEqual(onTask(task('alice@example.com'), config), onTask(task('alice@example.com'), config));
    assert.deepEqual(onTask(task('no address here'), config), onTask(task('no address here'), config));
  });
});

describe('onObservation', () => {
  test('a valid S1 verdict yields wave 2 with S2 and S3 in parallel, both given S1.customer_id', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    assert.equal(wave2.iteration, 2);
    assert.deepEqual(stepsOf(wave2).map(({ step_id, tool, input, idempotency_key, attempt }) => ({ step_id, tool, input, idempotency_key, attempt })), [
      { step_id: 'S2', tool: 'orders.latest', input: { customer_id: 'C-123456' }, idempotency_key: 't-1:2:S2', attempt: 1 },
      { step_id: 'S3', tool: 'crm.tier', input: { customer_id: 'C-123456' }, idempotency_key: 't-1:2:S3', attempt: 1 },
    ]);
    assert.deepEqual(JSON.parse(wave2.run.outputs_json), { S1: DATA.S1 });
    assert.deepEqual(wave2.run.step_attempts, { S1: 1, S2: 1, S3: 1 });
  });

  test('after S2 and S3 are valid, wave 3 is S4 alone, given S2.order_id', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const wave3 = onlyRequest(onObservation(observe(wave2, allValid), config));
    assert.equal(wave3.iteration, 3);
    assert.deepEqual(stepsOf(wave3).map(({ step_id, input, idempotency_key }) => ({ step_id, input, idempotency_key })), [{ step_id: 'S4', input: { order_id: 'O-12345678' }, idempotency_key: 't-1:3:S4' }]);
  });

  test('after S4 is valid the run completes with every output field resolved from the step data', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const wave3 = onlyRequest(onObservation(observe(wave2, allValid), config));
    const outcome = onlyOutcome(onObservation(observe(wave3, allValid), config));
    assert.equal(outcome.status, 'completed');
    assert.deepEqual(JSON.parse(outcome.output_json!), { customer_id: 'C-123456', order_id: 'O-12345678', order_status: 'shipped', tier: 'gold', shipping_state: 'in_transit' });
    assert.equal(outcome.iterations, 3);
    assert.equal(outcome.steps_executed, 4);
    assert.deepEqual(outcome.missing_fields, []);
    assert.equal(outcome.reason, 'all 4 steps verified');
  });

  test('a timeout is retried in the next wave with attempt 2 and a new idempotency key, same input', () => {
    const wave1 = firstWave();
    const wave2 = onlyRequest(onObservation(observe(wave1, (id) => failedVerdict(id, TOOL[id], 'timeout')), config));
    assert.equal(wave2.iteration, 2);
    assert.deepEqual(wave2.steps, [{ step_id: 'S1', tool: 'crm.find_customer', input_json: wave1.steps[0]!.input_json, idempotency_key: 't-1:2:S1', attempt: 2 }]);
    assert.notEqual(wave2.steps[0]!.idempotency_key, wave1.steps[0]!.idempotency_key);
    assert.deepEqual(wave2.run.step_attempts, { S1: 2 });
  });

  for (const errorType of ['rate_limited', 'server_error', 'network_issue', 'malformed'] as const) {
    test(`${errorType} is retryable: the step runs again in the next wave`, () => {
      const wave2 = onlyRequest(onObservation(observe(firstWave(), (id) => failedVerdict(id, TOOL[id], errorType)), config));
      assert.deepEqual(wave2.steps.map((s) => [s.step_id, s.attempt]), [['S1', 2]]);
    });
  }

  test('a second retryable failure of the same step fails the run naming the step, error type and attempt limit', () => {
    const timeout = (id: keyof typeof DATA) => failedVerdict(id, TOOL[id], 'timeout');
    const wave2 = onlyRequest(onObservation(observe(firstWave(), timeout), config));
    const outcome = onlyOutcome(onObservation(observe(wave2, timeout), config));
    assert.equal(outcome.status, 'failed');
    assert.match(outcome.reason, /step S1 \(crm\.find_customer\)/);
    assert.match(outcome.reason, /timeout/);
    assert.match(outcome.reason, /after 2 attempt\(s\)/);
    assert.match(outcome.reason, /attempt limit 2 reached/);
    assert.equal(outcome.iterations, 2);
    assert.equal(outcome.steps_executed, 2);
    assert.equal(outcome.output_json, null);
  });

  for (const errorType of ['schema_mismatch', 'not_found', 'auth_failed', 'invalid_input', 'inconsistent'] as const) {
    test(`${errorType} is not retryable: the run fails at once naming the step and the error type`, () => {
      const outcome = onlyOutcome(onObservation(observe(firstWave(), (id) => failedVerdict(id, TOOL[id], errorType)), config));
      assert.equal(outcome.status, 'failed');
      assert.match(outcome.reason, /^step S1 \(crm\.find_customer\) failed/);
      assert.ok(outcome.reason.includes(`${errorType} is not retryable`), outcome.reason);
      assert.equal(outcome.steps_executed, 1);
    });
  }

  test('in a parallel wave, a retried step is re-sent alongside the newly ready step', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const wave3 = onlyRequest(onObservation(observe(wave2, (id) => (id === 'S3' ? failedVerdict(id, TOOL[id], 'server_error') : allValid(id))), config));
    assert.deepEqual(stepsOf(wave3).map(({ step_id, input, idempotency_key, attempt }) => ({ step_id, input, idempotency_key, attempt })), [
      { step_id: 'S3', input: { customer_id: 'C-123456' }, idempotency_key: 't-1:3:S3', attempt: 2 },
      { step_id: 'S4', input: { order_id: 'O-12345678' }, idempotency_key: 't-1:3:S4', attempt: 1 },
    ]);
    assert.deepEqual(Object.keys(JSON.parse(wave3.run.outputs_json) as object).sort(), ['S1', 'S2']);
  });

  test('reaching the iteration limit with steps unfinished ends the run as budget_exhausted', () => {
    const tight = thoughtConfig(world, { maxIterations: 2 });
    const wave1 = onlyRequest(onTask(task('alice@example.com'), tight));
    assert.equal(wave1.run.max_iterations, 2);
    const wave2 = onlyRequest(onObservation(observe(wave1, allValid), tight));
    const outcome = onlyOutcome(onObservation(observe(wave2, allValid), tight));
    assert.equal(outcome.status, 'budget_exhausted');
    assert.match(outcome.reason, /iteration limit 2 reached with 1 step\(s\) unfinished/);
    assert.equal(outcome.iterations, 2);
    assert.equal(outcome.output_json, null);
  });

  test('the run finishing exactly on the last allowed wave completes rather than exhausting its budget', () => {
    const exact = thoughtConfig(world, { maxIterations: 3 });
    let wave = onlyRequest(onTask(task('alice@example.com'), exact));
    wave = onlyRequest(onObservation(observe(wave, allValid), exact));
    wave = onlyRequest(onObservation(observe(wave, allValid), exact));
    assert.equal(onlyOutcome(onObservation(observe(wave, allValid), exact)).status, 'completed');
  });

  test('a valid verdict whose data lacks a field a later step needs fails the run naming the step and the reference', () => {
    const outcome = onlyOutcome(onObservation(observe(firstWave(), (id) => validVerdict(id, TOOL[id], { email: 'alice@example.com', name: 'Alice' })), config));
    assert.equal(outcome.status, 'failed');
    assert.match(outcome.reason, /S2: input reference S1\.customer_id has no value/);
  });

  test('the same observation twice gives deep-equal records', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const obs = observe(wave2, (id) => (id === 'S3' ? failedVerdict(id, TOOL[id], 'timeout') : allValid(id)));
    const a = onObservation(structuredClone(obs), config);
    const b = onObservation(structuredClone(obs), config);
    assert.deepEqual(a, b);
    assert.deepEqual(onObservation(obs, config), a, 'folding does not depend on earlier calls');
  });

  test('a custom planner plan is carried through the run (plan_json is the validated plan)', () => {
    const plan: Plan = { flow: { id: 'lookup', version: 2 }, steps: [{ id: 'A', tool: 'crm.find_customer', input: { email: 'bob@example.com' }, depends_on: [] }], output: { id: '{{A.customer_id}}' } };
    const custom = thoughtConfig(world, { planner: fixedPlanner(plan) });
    const wave1 = onlyRequest(onTask(task('anything'), custom));
    assert.deepEqual([wave1.run.flow_id, wave1.run.flow_version, wave1.run.planner], ['lookup', 2, 'fixed']);
    const outcome = onlyOutcome(onObservation(observe(wave1, () => validVerdict('A', 'crm.find_customer', { customer_id: 'C-000042', email: 'bob@example.com', name: 'Bob' })), custom));
    assert.equal(outcome.status, 'completed');
    assert.deepEqual(JSON.parse(outcome.output_json!), { id: 'C-000042' });
  });
});
