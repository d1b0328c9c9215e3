import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import type { Plan } from '../../../processors/plan.ts';
import type { Check, ErrorType, Reflection, ReflectionAspect, ReflectionResult, RunSnapshot, StepCall, Verdict } from '../../../schemas/types.gen.ts';
import {
  DATA,
  allValid,
  failedVerdict,
  fixedPlanner,
  flowPlan,
  keyOf,
  loadWorld,
  observe,
  onlyOutcome,
  onlyRequest,
  onlySnapshot,
  reply,
  stepsOf,
  task,
  thoughtConfig,
  validVerdict,
  withTools,
} from '../fixtures.ts';

const world = loadWorld();
const config = thoughtConfig(world);

/** Every step of the wave fails with `type` (and the audit trail Observation wrote, if any). */
const failing =
  (type: ErrorType, audit: Check[] = []) =>
  (call: StepCall): Verdict =>
    failedVerdict(call.step_id, call.tool, type, audit);

/** Step `id` fails with `type`; the other steps of the wave are valid. */
const failingOnly =
  (id: string, type: ErrorType) =>
  (call: StepCall): Verdict =>
    call.step_id === id ? failedVerdict(call.step_id, call.tool, type) : allValid(call);

function firstWave(text = 'Where is my order? alice@example.com', cfg: ThoughtConfig = config) {
  return onlyRequest(onTask(task(text), cfg));
}

/** A dimension's result, by name: what a person reading the reflection looks at first. */
function results(reflection: Reflection): Record<ReflectionAspect, ReflectionResult> {
  assert.deepEqual(
    reflection.dimensions.map((d) => d.name),
    ['data_completeness', 'logic_consistency', 'policy_compliance', 'uncertainty'],
    'a reflection judges the four dimensions, in order',
  );
  return Object.fromEntries(reflection.dimensions.map((d) => [d.name, d.result])) as Record<ReflectionAspect, ReflectionResult>;
}

function dimension(reflection: Reflection, name: ReflectionAspect) {
  const d = reflection.dimensions.find((x) => x.name === name);
  assert.ok(d, `reflection has dimension ${name}`);
  return d;
}

/** The order-status flow whose S1 declares an alternative tool, and a catalog that knows it. */
const ALT = 'crm.search_customer';
function fallbackWorld(): { plan: Plan; cfg: ThoughtConfig } {
  const plan = flowPlan(world);
  plan.steps[0]!.fallback = ALT;
  const tools = withTools(world.tools, { [ALT]: world.tools.responseFields('crm.find_customer') });
  const cfg = thoughtConfig(world, { planner: fixedPlanner(plan), tools });
  assert.deepEqual(cfg.validator.validate(plan, tools), [], 'the fallback plan is valid');
  return { plan, cfg };
}

function snapshotOf(decision: ThoughtDecision): RunSnapshot {
  return onlySnapshot(decision);
}

describe('onTask', () => {
  test('a task with an e-mail starts wave 1 with only S1, its input resolved, and an idempotency key of the run, the step and the call', () => {
    const wave = firstWave();
    assert.equal(wave.thought_id, 't-1');
    assert.equal(wave.iteration, 1);
    assert.deepEqual(wave.steps, [
      {
        step_id: 'S1',
        tool: 'crm.find_customer',
        input_json: JSON.stringify({ email: 'alice@example.com' }),
        idempotency_key: keyOf('t-1', 'S1', 'crm.find_customer', { email: 'alice@example.com' }),
        attempt: 1,
      },
    ]);
    assert.deepEqual(wave.run.step_attempts, { S1: 1 });
    assert.equal(wave.run.outputs_json, '{}');
    assert.equal(wave.run.max_iterations, 10);
    assert.deepEqual([wave.run.flow_id, wave.run.flow_version, wave.run.planner], ['order-status', 1, 'graph']);
    assert.deepEqual(JSON.parse(wave.run.plan_json), flowPlan(world), 'the run carries the validated plan');
    assert.deepEqual(wave.run.reflections, []);
    assert.equal(wave.run.cost_spent, 1, 'one call of a tool without a catalog cost costs 1 unit');
  });

  test('starting a run writes a running snapshot of it (so a redelivered task can be recognised)', () => {
    const decision = onTask(task('Where is my order? alice@example.com'), config);
    assert.deepEqual(snapshotOf(decision), {
      thought_id: 't-1',
      status: 'running',
      iteration: 1,
      task_id: 'task-t-1',
      task_text: 'Where is my order? alice@example.com',
      missing_fields: [],
      run: null,
      outcome_status: null,
      approval: null,
      parked_steps: [],
      dead_letter: null,
      parked_ttl_ms: null,
      manifest: null,
    });
  });

  test('a task without an e-mail ends awaiting_input with missing_fields [email], reason_code needs_input and no tool call', () => {
    const decision = onTask(task('Where is my order? I forgot my details'), config);
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'awaiting_input');
    assert.equal(outcome.reason_code, 'needs_input');
    assert.deepEqual(outcome.missing_fields, ['email']);
    assert.match(outcome.reason, /email/);
    assert.equal(outcome.output_json, null);
    assert.equal(outcome.steps_executed, 0);
    assert.equal(outcome.iterations, 0);
    assert.deepEqual([outcome.task_id, outcome.flow_id, outcome.flow_version], ['task-t-1', 'order-status', 1]);
    const snapshot = snapshotOf(decision);
    assert.equal(snapshot.status, 'awaiting_input');
    assert.deepEqual(snapshot.missing_fields, ['email']);
    assert.ok(snapshot.run, 'the parked run is kept in the snapshot');
  });

  test('a planner returning a plan with a cycle ends the run as failed with reason "invalid plan: ..."', () => {
    const plan = flowPlan(world);
    plan.steps[0]!.depends_on = ['S4'];
    const outcome = onlyOutcome(onTask(task('alice@example.com'), thoughtConfig(world, { planner: fixedPlanner(plan) })));
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.reason_code, 'invalid_plan');
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
    assert.equal(outcome.reason_code, 'invalid_plan');
    assert.match(outcome.reason, /step S3: unknown tool crm\.teleport/);
  });

  test('a planner returning a plan whose fallback tool is unknown ends the run as invalid_plan', () => {
    const plan = flowPlan(world);
    plan.steps[0]!.fallback = 'crm.teleport';
    const outcome = onlyOutcome(onTask(task('alice@example.com'), thoughtConfig(world, { planner: fixedPlanner(plan) })));
    assert.equal(outcome.reason_code, 'invalid_plan');
    assert.match(outcome.reason, /step S1: unknown fallback tool crm\.teleport/);
  });

  test('a planner returning garbage (not a plan object) fails the run instead of throwing', () => {
    for (const garbage of [null, 'plan', { steps: 'nope' }]) {
      const outcome = onlyOutcome(onTask(task('alice@example.com'), thoughtConfig(world, { planner: fixedPlanner(garbage) })));
      assert.equal(outcome.status, 'failed');
      assert.equal(outcome.reason_code, 'invalid_plan');
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
    assert.deepEqual(
      stepsOf(wave2).map(({ step_id, tool, input, idempotency_key, attempt }) => ({ step_id, tool, input, idempotency_key, attempt })),
      [
        {
          step_id: 'S2',
          tool: 'orders.latest',
          input: { customer_id: 'C-123456' },
          idempotency_key: keyOf('t-1', 'S2', 'orders.latest', { customer_id: 'C-123456' }),
          attempt: 1,
        },
        {
          step_id: 'S3',
          tool: 'crm.tier',
          input: { customer_id: 'C-123456' },
          idempotency_key: keyOf('t-1', 'S3', 'crm.tier', { customer_id: 'C-123456' }),
          attempt: 1,
        },
      ],
    );
    assert.deepEqual(JSON.parse(wave2.run.outputs_json), { S1: DATA.S1 });
    assert.deepEqual(wave2.run.step_attempts, { S1: 1, S2: 1, S3: 1 });
  });

  test('after S2 and S3 are valid, wave 3 is S4 alone, given S2.order_id', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const wave3 = onlyRequest(onObservation(observe(wave2, allValid), config));
    assert.equal(wave3.iteration, 3);
    assert.deepEqual(
      stepsOf(wave3).map(({ step_id, input, idempotency_key }) => ({ step_id, input, idempotency_key })),
      [{ step_id: 'S4', input: { order_id: 'O-12345678' }, idempotency_key: keyOf('t-1', 'S4', 'shipping.track', { order_id: 'O-12345678' }) }],
    );
  });

  test('after S4 is valid the run completes (reason_code completed) with every output field resolved from the step data', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const wave3 = onlyRequest(onObservation(observe(wave2, allValid), config));
    const decision = onObservation(observe(wave3, allValid), config);
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'completed');
    assert.equal(outcome.reason_code, 'completed');
    assert.deepEqual(JSON.parse(outcome.output_json!), {
      customer_id: 'C-123456',
      order_id: 'O-12345678',
      order_status: 'shipped',
      tier: 'gold',
      shipping_state: 'in_transit',
    });
    assert.equal(outcome.iterations, 3);
    assert.equal(outcome.steps_executed, 4);
    assert.deepEqual(outcome.missing_fields, []);
    assert.deepEqual(outcome.reflections, []);
    assert.equal(outcome.reason, 'all 4 step(s) verified');
    const snapshot = snapshotOf(decision);
    assert.deepEqual([snapshot.status, snapshot.outcome_status, snapshot.run, snapshot.iteration], ['ended', 'completed', null, 3]);
  });

  test('a timeout is retried in the next wave with attempt 2 and the same idempotency key (the same call), same input, no reflection yet', () => {
    const wave1 = firstWave();
    const wave2 = onlyRequest(onObservation(observe(wave1, failing('timeout')), config));
    assert.equal(wave2.iteration, 2);
    assert.deepEqual(wave2.steps, [
      { step_id: 'S1', tool: 'crm.find_customer', input_json: wave1.steps[0]!.input_json, idempotency_key: wave1.steps[0]!.idempotency_key, attempt: 2 },
    ]);
    // A third attempt, after a second timeout: still the one call, still its key.
    const wave3 = onlyRequest(onObservation(observe(wave2, failing('server_error')), thoughtConfig(world, { reflectAfter: 3 })));
    assert.deepEqual(
      wave3.steps.map((s) => [s.step_id, s.attempt, s.idempotency_key]),
      [['S1', 3, wave1.steps[0]!.idempotency_key]],
    );
    assert.deepEqual(wave2.run.step_attempts, { S1: 2 });
    assert.deepEqual(wave2.run.failure_streaks, { S1: 1 });
    assert.deepEqual(wave2.run.reflections, []);
  });

  for (const errorType of ['rate_limited', 'server_error', 'network_issue', 'malformed', 'circuit_open'] as const) {
    test(`${errorType} is retryable: the step runs again in the next wave`, () => {
      const wave2 = onlyRequest(onObservation(observe(firstWave(), failing(errorType)), config));
      assert.deepEqual(
        wave2.steps.map((s) => [s.step_id, s.tool, s.attempt]),
        [['S1', 'crm.find_customer', 2]],
      );
      assert.deepEqual(wave2.run.reflections, []);
    });
  }

  test('in a parallel wave, a retried step is re-sent alongside the newly ready step', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const wave3 = onlyRequest(onObservation(observe(wave2, failingOnly('S3', 'server_error')), config));
    assert.deepEqual(
      stepsOf(wave3).map(({ step_id, input, idempotency_key, attempt }) => ({ step_id, input, idempotency_key, attempt })),
      [
        { step_id: 'S3', input: { customer_id: 'C-123456' }, idempotency_key: wave2.steps.find((x) => x.step_id === 'S3')!.idempotency_key, attempt: 2 },
        { step_id: 'S4', input: { order_id: 'O-12345678' }, idempotency_key: keyOf('t-1', 'S4', 'shipping.track', { order_id: 'O-12345678' }), attempt: 1 },
      ],
    );
    assert.deepEqual(Object.keys(JSON.parse(wave3.run.outputs_json) as object).sort(), ['S1', 'S2']);
  });

  test('a valid verdict whose data lacks a field a later step needs fails the run (output_unresolved) naming the step and the reference', () => {
    const outcome = onlyOutcome(
      onObservation(
        observe(firstWave(), (c) => validVerdict(c.step_id, c.tool, { email: 'alice@example.com', name: 'Alice' })),
        config,
      ),
    );
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.reason_code, 'output_unresolved');
    assert.match(outcome.reason, /S2: input reference S1\.customer_id has no value/);
  });

  test('a custom planner plan is carried through the run (plan_json is the validated plan)', () => {
    const plan: Plan = {
      flow: { id: 'lookup', version: 2 },
      steps: [{ id: 'A', tool: 'crm.find_customer', input: { email: 'bob@example.com' }, depends_on: [] }],
      output: { id: '{{A.customer_id}}' },
    };
    const custom = thoughtConfig(world, { planner: fixedPlanner(plan) });
    const wave1 = onlyRequest(onTask(task('anything'), custom));
    assert.deepEqual([wave1.run.flow_id, wave1.run.flow_version, wave1.run.planner], ['lookup', 2, 'fixed']);
    const outcome = onlyOutcome(
      onObservation(
        observe(wave1, () => validVerdict('A', 'crm.find_customer', { customer_id: 'C-000042', email: 'bob@example.com', name: 'Bob' })),
        custom,
      ),
    );
    assert.equal(outcome.status, 'completed');
    assert.deepEqual(JSON.parse(outcome.output_json!), { id: 'C-000042' });
  });

  test('the same observation twice gives deep-equal records', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const obs = observe(wave2, failingOnly('S3', 'timeout'));
    const a = onObservation(structuredClone(obs), config);
    const b = onObservation(structuredClone(obs), config);
    assert.deepEqual(a, b);
    assert.deepEqual(onObservation(obs, config), a, 'folding does not depend on earlier calls');
  });
});

describe('reflection', () => {
  test('two consecutive timeouts of S1 with no fallback: reflection (uncertainty MISSING, action fail) and the run fails with reason_code step_failed', () => {
    const audit: Check[] = [{ name: 'transport', passed: false, evidence: 'no response within 2000 ms' }];
    const wave2 = onlyRequest(onObservation(observe(firstWave(), failing('timeout', audit)), config));
    const decision = onObservation(observe(wave2, failing('timeout', audit)), config);
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.reason_code, 'step_failed');
    assert.match(outcome.reason, /^step S1 \(crm\.find_customer\) failed: timeout after 2 attempt\(s\)/);
    assert.equal(outcome.iterations, 2);
    assert.equal(outcome.steps_executed, 2);
    assert.equal(outcome.output_json, null);

    assert.equal(outcome.reflections.length, 1);
    const [reflection] = outcome.reflections;
    assert.deepEqual([reflection!.step_id, reflection!.tool, reflection!.iteration, reflection!.action], ['S1', 'crm.find_customer', 2, 'fail']);
    assert.deepEqual(reflection!.error_types, ['timeout', 'timeout']);
    assert.deepEqual(results(reflection!), { data_completeness: 'PASS', logic_consistency: 'PASS', policy_compliance: 'PASS', uncertainty: 'MISSING' });
    const uncertainty = dimension(reflection!, 'uncertainty');
    assert.match(uncertainty.evidence, /2 consecutive failure\(s\) \(timeout\)/);
    assert.match(uncertainty.evidence, /transport: no response within 2000 ms/, "the evidence quotes Observation's failed checks");
    assert.match(uncertainty.recommendation, /no fallback/);
    const snapshot = snapshotOf(decision);
    assert.deepEqual([snapshot.status, snapshot.outcome_status, snapshot.run], ['ended', 'failed', null]);
  });

  test('two consecutive timeouts of S1 that declares a fallback tool: action fallback, and the next wave calls the fallback for S1 with attempt 3 and the same input', () => {
    const { cfg } = fallbackWorld();
    const wave1 = onlyRequest(onTask(task('Where is my order? alice@example.com'), cfg));
    const wave2 = onlyRequest(onObservation(observe(wave1, failing('timeout')), cfg));
    const wave3 = onlyRequest(onObservation(observe(wave2, failing('timeout')), cfg));
    assert.equal(wave3.iteration, 3);
    assert.deepEqual(wave3.steps, [
      {
        step_id: 'S1',
        tool: ALT,
        input_json: wave1.steps[0]!.input_json,
        idempotency_key: keyOf('t-1', 'S1', ALT, { email: 'alice@example.com' }),
        attempt: 3,
      },
    ]);
    assert.notEqual(wave3.steps[0]!.idempotency_key, wave1.steps[0]!.idempotency_key, 'another tool is another call, with another key');

    assert.equal(wave3.run.reflections.length, 1);
    const [reflection] = wave3.run.reflections;
    assert.deepEqual([reflection!.step_id, reflection!.tool, reflection!.iteration, reflection!.action], ['S1', 'crm.find_customer', 2, 'fallback']);
    assert.deepEqual(results(reflection!), { data_completeness: 'PASS', logic_consistency: 'PASS', policy_compliance: 'PASS', uncertainty: 'MISSING' });
    assert.equal(dimension(reflection!, 'uncertainty').recommendation, `fall back to ${ALT}`);

    const plan = JSON.parse(wave3.run.plan_json) as Plan;
    assert.equal(plan.steps[0]!.tool, ALT, 'the run carries the changed plan');
    assert.equal(plan.steps[0]!.fallback, undefined, 'a fallback is used once');
    assert.equal(wave3.run.failure_streaks.S1, 0, 'the fallback starts with a clean failure streak');
  });

  test("after a fallback the run goes on with the fallback's data and completes, keeping the reflection in the outcome", () => {
    const { cfg } = fallbackWorld();
    let wave = onlyRequest(onTask(task('Where is my order? alice@example.com'), cfg));
    wave = onlyRequest(onObservation(observe(wave, failing('timeout')), cfg));
    wave = onlyRequest(onObservation(observe(wave, failing('timeout')), cfg));
    wave = onlyRequest(onObservation(observe(wave, allValid), cfg));
    assert.deepEqual(
      stepsOf(wave).map((s) => [s.step_id, s.input]),
      [
        ['S2', { customer_id: 'C-123456' }],
        ['S3', { customer_id: 'C-123456' }],
      ],
    );
    wave = onlyRequest(onObservation(observe(wave, allValid), cfg));
    const outcome = onlyOutcome(onObservation(observe(wave, allValid), cfg));
    assert.equal(outcome.status, 'completed');
    assert.equal(outcome.reason_code, 'completed');
    assert.equal(JSON.parse(outcome.output_json!).customer_id, 'C-123456');
    assert.deepEqual(
      outcome.reflections.map((r) => [r.step_id, r.action]),
      [['S1', 'fallback']],
    );
    assert.equal(outcome.steps_executed, 6);
  });

  test('a fallback that fails as well has no further alternative: a second reflection fails the run', () => {
    const { cfg: base } = fallbackWorld();
    const cfg = { ...base, noveltyWaves: 10 };
    let wave = onlyRequest(onTask(task('Where is my order? alice@example.com'), cfg));
    wave = onlyRequest(onObservation(observe(wave, failing('server_error')), cfg));
    wave = onlyRequest(onObservation(observe(wave, failing('server_error')), cfg));
    assert.equal(wave.steps[0]!.tool, ALT);
    wave = onlyRequest(onObservation(observe(wave, failing('server_error')), cfg));
    assert.deepEqual(
      wave.steps.map((s) => [s.tool, s.attempt]),
      [[ALT, 4]],
      'the fallback is retried before reflecting again',
    );
    const outcome = onlyOutcome(onObservation(observe(wave, failing('server_error')), cfg));
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.reason_code, 'step_failed');
    assert.deepEqual(
      outcome.reflections.map((r) => [r.tool, r.iteration, r.action]),
      [
        ['crm.find_customer', 2, 'fallback'],
        [ALT, 4, 'fail'],
      ],
    );
  });

  test('a success resets the failure streak: the failed step is retried and nothing is reflected on', () => {
    // S3 fails in wave 3 and succeeds in wave 4 (its streak back to 0) while S4 fails once: no reflection.
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const wave3 = onlyRequest(onObservation(observe(wave2, failingOnly('S3', 'timeout')), config));
    assert.equal(wave3.run.failure_streaks.S3, 1);
    const wave4 = onlyRequest(onObservation(observe(wave3, failingOnly('S4', 'timeout')), config));
    assert.deepEqual([wave4.run.failure_streaks.S3, wave4.run.failure_streaks.S4], [0, 1]);
    assert.deepEqual(wave4.run.reflections, []);
    assert.deepEqual(
      wave4.steps.map((s) => [s.step_id, s.attempt]),
      [['S4', 2]],
    );
  });

  test('with reflectAfter 3 a step gets two retries before reflection', () => {
    const cfg = thoughtConfig(world, { reflectAfter: 3, noveltyWaves: 10 });
    let wave = firstWave(undefined, cfg);
    wave = onlyRequest(onObservation(observe(wave, failing('timeout')), cfg));
    wave = onlyRequest(onObservation(observe(wave, failing('timeout')), cfg));
    assert.deepEqual(
      wave.steps.map((s) => [s.step_id, s.attempt]),
      [['S1', 3]],
    );
    const outcome = onlyOutcome(onObservation(observe(wave, failing('timeout')), cfg));
    assert.equal(outcome.reason_code, 'step_failed');
    assert.deepEqual(outcome.reflections[0]!.error_types, ['timeout', 'timeout', 'timeout']);
  });

  test('the reflection lists the error types of the consecutive failures oldest first (timeout, then server_error)', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), failing('timeout')), config));
    const outcome = onlyOutcome(onObservation(observe(wave2, failing('server_error')), config));
    assert.equal(outcome.reason_code, 'step_failed');
    // Reflection.error_types: "The error types of the consecutive failures, oldest first."
    assert.deepEqual(outcome.reflections[0]!.error_types, ['timeout', 'server_error']);
  });

  test("not_found reflects at once and asks a person: awaiting_input with the step's input fields, reason_code reflection, the run parked in the snapshot", () => {
    const decision = onObservation(observe(firstWave(), failing('not_found', [{ name: 'status', passed: false, evidence: 'HTTP 404' }])), config);
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'awaiting_input');
    assert.equal(outcome.reason_code, 'reflection');
    assert.deepEqual(outcome.missing_fields, ['email']);
    assert.match(outcome.reason, /step S1 \(crm\.find_customer\) found nothing/);
    assert.equal(outcome.iterations, 1);
    assert.equal(outcome.output_json, null);

    assert.equal(outcome.reflections.length, 1);
    const [reflection] = outcome.reflections;
    assert.equal(reflection!.action, 'ask_human');
    assert.deepEqual(reflection!.error_types, ['not_found']);
    assert.deepEqual(results(reflection!), { data_completeness: 'MISSING', logic_consistency: 'PASS', policy_compliance: 'PASS', uncertainty: 'PASS' });
    const completeness = dimension(reflection!, 'data_completeness');
    assert.match(completeness.evidence, /alice@example\.com/, 'the evidence names the input that found nothing');
    assert.match(completeness.evidence, /status: HTTP 404/);

    const snapshot = snapshotOf(decision);
    assert.equal(snapshot.status, 'awaiting_input');
    assert.equal(snapshot.outcome_status, null);
    assert.deepEqual(snapshot.missing_fields, ['email']);
    assert.equal(snapshot.iteration, 1);
    assert.ok(snapshot.run, 'the snapshot holds the parked run');
    assert.deepEqual(snapshot.run.reflections, outcome.reflections);
    assert.deepEqual(snapshot.run.step_attempts, { S1: 1 });
  });

  for (const errorType of ['invalid_input', 'client_error'] as const) {
    test(`${errorType} also asks a person at once (data_completeness MISSING)`, () => {
      const outcome = onlyOutcome(onObservation(observe(firstWave(), failing(errorType)), config));
      assert.deepEqual([outcome.status, outcome.reason_code, outcome.reflections[0]!.action], ['awaiting_input', 'reflection', 'ask_human']);
      assert.equal(results(outcome.reflections[0]!).data_completeness, 'MISSING');
    });
  }

  test('auth_failed reflects at once and escalates: status escalated, reason_code reflection, policy_compliance INCONSISTENT', () => {
    const decision = onObservation(observe(firstWave(), failing('auth_failed', [{ name: 'status', passed: false, evidence: 'HTTP 401' }])), config);
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'escalated');
    assert.equal(outcome.reason_code, 'reflection');
    assert.match(outcome.reason, /step S1 \(crm\.find_customer\) was refused \(auth_failed\)/);
    assert.equal(outcome.steps_executed, 1);
    const [reflection] = outcome.reflections;
    assert.equal(reflection!.action, 'escalate');
    assert.deepEqual(results(reflection!), { data_completeness: 'PASS', logic_consistency: 'PASS', policy_compliance: 'INCONSISTENT', uncertainty: 'PASS' });
    assert.match(dimension(reflection!, 'policy_compliance').evidence, /status: HTTP 401/);
    assert.deepEqual([snapshotOf(decision).status, snapshotOf(decision).outcome_status], ['ended', 'escalated']);
  });

  test('auth_failed escalates even when the step declares a fallback (a person must fix credentials)', () => {
    const { cfg } = fallbackWorld();
    const outcome = onlyOutcome(onObservation(observe(onlyRequest(onTask(task('alice@example.com'), cfg)), failing('auth_failed')), cfg));
    assert.equal(outcome.status, 'escalated');
    assert.equal(outcome.reflections[0]!.action, 'escalate');
  });

  for (const errorType of ['schema_mismatch', 'inconsistent', 'data_corrupted', 'response_too_large'] as const) {
    test(`${errorType} without a fallback reflects at once and fails: logic_consistency INCONSISTENT, reason_code step_failed`, () => {
      const outcome = onlyOutcome(
        onObservation(
          observe(firstWave(), failing(errorType, [{ name: 'contract', passed: false, evidence: 'customer_id does not match ^C-[0-9]{6}$' }])),
          config,
        ),
      );
      assert.equal(outcome.status, 'failed');
      assert.equal(outcome.reason_code, 'step_failed');
      assert.match(outcome.reason, new RegExp(`^step S1 \\(crm\\.find_customer\\) failed: ${errorType} after 1 attempt\\(s\\)`));
      assert.equal(outcome.steps_executed, 1);
      const [reflection] = outcome.reflections;
      assert.equal(reflection!.action, 'fail');
      assert.deepEqual(results(reflection!), { data_completeness: 'PASS', logic_consistency: 'INCONSISTENT', policy_compliance: 'PASS', uncertainty: 'PASS' });
      const logic = dimension(reflection!, 'logic_consistency');
      assert.match(logic.evidence, /contract: customer_id does not match/);
      assert.match(logic.recommendation, /no alternative tool/);
    });
  }

  test('schema_mismatch with a fallback changes the plan: action change_plan, and the next wave calls the fallback tool for S1', () => {
    const { cfg } = fallbackWorld();
    const wave1 = onlyRequest(onTask(task('Where is my order? alice@example.com'), cfg));
    const wave2 = onlyRequest(onObservation(observe(wave1, failing('schema_mismatch')), cfg));
    assert.deepEqual(wave2.steps, [
      {
        step_id: 'S1',
        tool: ALT,
        input_json: wave1.steps[0]!.input_json,
        idempotency_key: keyOf('t-1', 'S1', ALT, { email: 'alice@example.com' }),
        attempt: 2,
      },
    ]);
    const [reflection] = wave2.run.reflections;
    assert.deepEqual([reflection!.step_id, reflection!.tool, reflection!.iteration, reflection!.action], ['S1', 'crm.find_customer', 1, 'change_plan']);
    assert.equal(results(reflection!).logic_consistency, 'INCONSISTENT');
    assert.equal(dimension(reflection!, 'logic_consistency').recommendation, `switch to ${ALT}`);
  });

  test('malformed is retried once, then reflected on as inconsistent', () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), failing('malformed')), config));
    assert.deepEqual(wave2.run.reflections, []);
    const outcome = onlyOutcome(onObservation(observe(wave2, failing('malformed')), config));
    assert.equal(outcome.reason_code, 'step_failed');
    assert.equal(results(outcome.reflections[0]!).logic_consistency, 'INCONSISTENT');
  });

  test("a step failing in a parallel wave is reflected on by name and asks for that step's input fields", () => {
    const wave2 = onlyRequest(onObservation(observe(firstWave(), allValid), config));
    const outcome = onlyOutcome(onObservation(observe(wave2, failingOnly('S3', 'not_found')), config));
    assert.equal(outcome.status, 'awaiting_input');
    assert.deepEqual(outcome.missing_fields, ['customer_id']);
    assert.deepEqual(
      outcome.reflections.map((r) => [r.step_id, r.tool, r.iteration]),
      [['S3', 'crm.tier', 2]],
    );
  });
});

describe('redelivery and replies', () => {
  /** A run parked by reflection: S1 found no customer for alice@example.com. */
  function parkedByReflection(): RunSnapshot {
    return snapshotOf(onObservation(observe(firstWave(), failing('not_found')), config));
  }

  test('a NEW task for a run that already has a snapshot is a redelivery: no outputs, ignored says so', () => {
    const running = snapshotOf(onTask(task('Where is my order? alice@example.com'), config));
    for (const snapshot of [running, parkedByReflection()]) {
      const decision = onTask(task('Where is my order? alice@example.com'), config, snapshot);
      assert.deepEqual(decision.outputs, []);
      assert.match(decision.ignored ?? '', /redelivery/);
      assert.match(decision.ignored ?? '', new RegExp(snapshot.status));
    }
  });

  test('a REPLY to a run parked by reflection resumes it with the combined text (the last e-mail wins), keeping reflections and call counts (attempts restart with the new plan)', () => {
    const parked = parkedByReflection();
    const before = parked.run!;
    const decision = onTask(reply('Sorry, my address is bob@example.com'), config, parked);
    const wave = onlyRequest(decision);
    assert.equal(wave.iteration, 2, 'the resumed run continues its wave numbering');
    assert.deepEqual(
      stepsOf(wave).map(({ step_id, tool, input, idempotency_key }) => ({ step_id, tool, input, idempotency_key })),
      [
        {
          step_id: 'S1',
          tool: 'crm.find_customer',
          input: { email: 'bob@example.com' },
          idempotency_key: keyOf('t-1', 'S1', 'crm.find_customer', { email: 'bob@example.com' }),
        },
      ],
    );
    assert.notEqual(wave.steps[0]!.idempotency_key, firstWave().steps[0]!.idempotency_key, 'a changed input is another call, with another key');
    assert.equal(wave.steps[0]!.attempt, 1, 'the resumed run starts its new plan afresh: attempts count from one again');
    assert.equal(wave.run.task_text, 'Where is my order? alice@example.com\nSorry, my address is bob@example.com');
    assert.equal(wave.run.task_id, 'reply-1-t-1');
    assert.deepEqual(wave.run.reflections, before.reflections);
    for (const [key, n] of Object.entries(before.call_counts)) assert.equal(wave.run.call_counts[key], n, 'earlier calls still count');
    assert.equal(Object.keys(wave.run.call_counts).length, Object.keys(before.call_counts).length + 1, 'the call with the new e-mail is counted');
    const snapshot = snapshotOf(decision);
    assert.deepEqual([snapshot.status, snapshot.task_id, snapshot.iteration], ['running', 'reply-1-t-1', 2]);
  });

  test('a REPLY to a run parked for a missing e-mail resumes it; of several e-mails the last one wins', () => {
    const parked = snapshotOf(onTask(task('Where is my order? I forgot my details'), config));
    const decision = onTask(reply('It was carol@example.com, no wait: dave@example.com'), config, parked);
    const wave = onlyRequest(decision);
    assert.equal(wave.iteration, 1);
    assert.deepEqual(
      stepsOf(wave).map((s) => [s.step_id, s.input, s.attempt]),
      [['S1', { email: 'dave@example.com' }, 1]],
    );
    assert.equal(wave.run.task_text, 'Where is my order? I forgot my details\nIt was carol@example.com, no wait: dave@example.com');
    assert.equal(snapshotOf(decision).status, 'running');
  });

  test('a REPLY that still lacks the e-mail parks the run again, awaiting the e-mail, with the text so far', () => {
    const parked = snapshotOf(onTask(task('Where is my order?'), config));
    const decision = onTask(reply('I do not remember it'), config, parked);
    const outcome = onlyOutcome(decision);
    assert.deepEqual(
      [outcome.status, outcome.reason_code, outcome.missing_fields, outcome.task_id],
      ['awaiting_input', 'needs_input', ['email'], 'reply-1-t-1'],
    );
    const again = snapshotOf(decision);
    assert.equal(again.status, 'awaiting_input');
    assert.equal(again.task_text, 'Where is my order?\nI do not remember it');
    const resumed = onlyRequest(onTask(reply('frank@example.com', 't-1', 2), config, again));
    assert.equal(resumed.run.task_text, 'Where is my order?\nI do not remember it\nfrank@example.com');
    assert.deepEqual(
      stepsOf(resumed).map((s) => s.input),
      [{ email: 'frank@example.com' }],
    );
  });

  test('a REPLY to a run that is running or has ended is ignored, naming the run status', () => {
    const running = snapshotOf(onTask(task('Where is my order? alice@example.com'), config));
    const wave2 = onlyRequest(onObservation(observe(firstWave(), failing('timeout')), config));
    const ended = snapshotOf(onObservation(observe(wave2, failing('timeout')), config));
    assert.equal(ended.status, 'ended');
    for (const snapshot of [running, ended]) {
      const decision = onTask(reply('bob@example.com'), config, snapshot);
      assert.deepEqual(decision.outputs, []);
      assert.match(decision.ignored ?? '', new RegExp(`while run t-1 is ${snapshot.status}, not awaiting input`));
    }
  });

  test('a REPLY for a run Thought has never seen starts it', () => {
    const wave = onlyRequest(onTask(reply('Where is my order? erin@example.com', 't-9'), config));
    assert.deepEqual([wave.thought_id, wave.iteration, wave.run.task_id], ['t-9', 1, 'reply-1-t-9']);
    assert.deepEqual(
      stepsOf(wave).map((s) => s.input),
      [{ email: 'erin@example.com' }],
    );
  });

  test('an observation for a run that has ended (or is parked) is ignored', () => {
    const wave1 = firstWave();
    const wave2 = onlyRequest(onObservation(observe(wave1, failing('timeout')), config));
    const ended = snapshotOf(onObservation(observe(wave2, failing('timeout')), config));
    const late = onObservation(observe(wave2, allValid), config, ended);
    assert.deepEqual(late.outputs, []);
    assert.match(late.ignored ?? '', /observation of wave 2 arrived for run t-1, which is ended/);
    const parked = parkedByReflection();
    const stray = onObservation(observe(wave1, allValid), config, parked);
    assert.deepEqual(stray.outputs, []);
    assert.match(stray.ignored ?? '', /awaiting_input/);
  });

  test('an observation for a running run is folded as usual', () => {
    const running = snapshotOf(onTask(task('Where is my order? alice@example.com'), config));
    const decision = onObservation(observe(firstWave(), allValid), config, running);
    assert.equal(decision.ignored, undefined);
    assert.equal(onlyRequest(decision).iteration, 2);
  });

  test('every dispatched wave updates the running snapshot, and a second observation of an earlier wave is ignored instead of dispatching the next wave twice', () => {
    const wave1 = firstWave();
    const afterWave1 = onObservation(observe(wave1, allValid), config, snapshotOf(onTask(task('Where is my order? alice@example.com'), config)));
    assert.deepEqual([onlyRequest(afterWave1).iteration, onlySnapshot(afterWave1).status, onlySnapshot(afterWave1).iteration], [2, 'running', 2]);
    const again = onObservation(observe(wave1, allValid), config, onlySnapshot(afterWave1));
    assert.deepEqual(again.outputs, []);
    assert.match(again.ignored ?? '', /observation of wave 1 arrived for run t-1, which has dispatched wave 2/);
  });
});

describe('determinism', () => {
  /** Drives a whole run (reflection, fallback, parallel wave, completion) and returns every decision. */
  function drive(): ThoughtDecision[] {
    const { cfg } = fallbackWorld();
    const decisions: ThoughtDecision[] = [onTask(task('Where is my order? alice@example.com'), cfg)];
    const verdicts: Array<(c: StepCall) => Verdict> = [failing('timeout'), failing('timeout'), allValid, failingOnly('S3', 'rate_limited'), allValid];
    for (const verdictFor of verdicts) decisions.push(onObservation(observe(onlyRequest(decisions.at(-1)!), verdictFor), cfg));
    return decisions;
  }

  test('the same inputs give deep-equal decisions, wave by wave, through reflection and fallback', () => {
    const a = drive();
    const b = drive();
    assert.deepEqual(a, b);
    assert.equal(onlyOutcome(a.at(-1)!).status, 'completed');
    assert.deepEqual(
      onlyOutcome(a.at(-1)!).reflections.map((r) => r.action),
      ['fallback'],
    );
  });

  test("replaying a parked run's reply gives deep-equal decisions", () => {
    const parked = () => snapshotOf(onObservation(observe(firstWave(), failing('not_found')), config));
    assert.deepEqual(onTask(reply('bob@example.com'), config, parked()), onTask(reply('bob@example.com'), config, parked()));
  });
});
