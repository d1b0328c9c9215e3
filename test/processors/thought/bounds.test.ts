/** Thought's loop bounds (max_iterations, cost_budget, repeat_cap, no_novelty), polling steps and conditional edges. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig } from '../../../processors/thought/core.ts';
import type { Plan, PlanStep } from '../../../processors/plan.ts';
import type { StepCall, ThoughtRequest, Verdict } from '../../../schemas/types.gen.ts';
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
  stepsOf,
  task,
  thoughtConfig,
  validVerdict,
  withTools,
} from '../fixtures.ts';

const world = loadWorld();

/** A config whose planner always returns `plan`, after checking the plan is valid for the real catalog. */
function planned(plan: Plan, overrides: Partial<ThoughtConfig> = {}): ThoughtConfig {
  const cfg = thoughtConfig(world, { planner: fixedPlanner(plan), ...overrides });
  assert.deepEqual(cfg.validator.validate(plan, cfg.tools), [], 'the hand-built plan is valid');
  return cfg;
}

const start = (cfg: ThoughtConfig, text = 'Where is my order? alice@example.com') => onlyRequest(onTask(task(text), cfg));

/** The order with a given status, as orders.latest returns it. */
const order = (status: 'placed' | 'shipped' | 'delivered') => ({ ...DATA.S2, status });

/** A plan with one polling step: the latest order, asked again each wave until it is delivered. */
function pollingPlan(extra: Partial<PlanStep> = {}): Plan {
  return {
    flow: { id: 'await-delivery', version: 1 },
    steps: [{ id: 'P', tool: 'orders.latest', input: { customer_id: 'C-123456' }, depends_on: [], until: { path: '/status', equals: 'delivered' }, ...extra }],
    output: { order_id: '{{P.order_id}}', status: '{{P.status}}' },
  };
}

const orderIs =
  (status: 'placed' | 'shipped' | 'delivered') =>
  (call: StepCall): Verdict =>
    validVerdict(call.step_id, call.tool, order(status));

/** Feeds the same answer to successive waves; returns the last wave dispatched and the decision after `waves` answers. */
function poll(cfg: ThoughtConfig, answers: Array<(call: StepCall) => Verdict>) {
  let wave = start(cfg);
  const waves: ThoughtRequest[] = [wave];
  for (let i = 0; i < answers.length - 1; i++) {
    wave = onlyRequest(onObservation(observe(wave, answers[i]!), cfg));
    waves.push(wave);
  }
  return { waves, last: onObservation(observe(wave, answers.at(-1)!), cfg) };
}

describe('max_iterations', () => {
  test('reaching the iteration limit with steps unfinished ends the run as budget_exhausted / max_iterations', () => {
    const tight = thoughtConfig(world, { maxIterations: 2 });
    const wave1 = start(tight);
    assert.equal(wave1.run.max_iterations, 2);
    const wave2 = onlyRequest(onObservation(observe(wave1, allValid), tight));
    const decision = onObservation(observe(wave2, allValid), tight);
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'budget_exhausted');
    assert.equal(outcome.reason_code, 'max_iterations');
    assert.match(outcome.reason, /iteration limit 2 reached with 1 step\(s\) unfinished/);
    assert.equal(outcome.iterations, 2);
    assert.equal(outcome.steps_executed, 3);
    assert.equal(outcome.output_json, null);
    assert.deepEqual([onlySnapshot(decision).status, onlySnapshot(decision).outcome_status], ['ended', 'budget_exhausted']);
  });

  test('the run finishing exactly on the last allowed wave completes rather than exhausting its budget', () => {
    const exact = thoughtConfig(world, { maxIterations: 3 });
    let wave = start(exact);
    wave = onlyRequest(onObservation(observe(wave, allValid), exact));
    wave = onlyRequest(onObservation(observe(wave, allValid), exact));
    const outcome = onlyOutcome(onObservation(observe(wave, allValid), exact));
    assert.deepEqual([outcome.status, outcome.reason_code], ['completed', 'completed']);
  });

  test('a polling step that is never satisfied is stopped by the iteration limit when it comes first', () => {
    const cfg = planned(pollingPlan({ max_calls: 10 }), { maxIterations: 2, noveltyWaves: 10 });
    const { last } = poll(cfg, [orderIs('placed'), orderIs('shipped')]);
    const outcome = onlyOutcome(last);
    assert.deepEqual([outcome.status, outcome.reason_code, outcome.iterations], ['budget_exhausted', 'max_iterations', 2]);
  });
});

describe('cost_budget', () => {
  test('budget 2 with tools of cost 1: wave 1 (one step) runs, wave 2 (two steps) would exceed it: budget_exhausted / cost_budget', () => {
    const cfg = thoughtConfig(world, { costBudget: 2 });
    assert.equal(world.tools.cost('orders.latest'), 1, 'catalog tools without a cost cost 1 unit');
    const wave1 = start(cfg);
    assert.deepEqual([wave1.run.cost_spent, wave1.run.cost_budget], [1, 2]);
    const decision = onObservation(observe(wave1, allValid), cfg);
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'budget_exhausted');
    assert.equal(outcome.reason_code, 'cost_budget');
    assert.equal(outcome.reason, 'the next wave costs 2 unit(s); 1 of the budget 2 is spent');
    assert.equal(outcome.iterations, 1);
    assert.equal(outcome.steps_executed, 1, 'the wave that would exceed the budget is not dispatched');
    assert.equal(outcome.output_json, null);
  });

  test('a run that spends exactly its budget completes', () => {
    const cfg = thoughtConfig(world, { costBudget: 4 });
    let wave = start(cfg);
    wave = onlyRequest(onObservation(observe(wave, allValid), cfg));
    wave = onlyRequest(onObservation(observe(wave, allValid), cfg));
    assert.equal(wave.run.cost_spent, 4);
    assert.equal(onlyOutcome(onObservation(observe(wave, allValid), cfg)).status, 'completed');
  });

  test('budget 0 is unlimited: the cost is still counted', () => {
    const cfg = thoughtConfig(world, { costBudget: 0 });
    let wave = start(cfg);
    wave = onlyRequest(onObservation(observe(wave, allValid), cfg));
    wave = onlyRequest(onObservation(observe(wave, allValid), cfg));
    assert.deepEqual([wave.run.cost_spent, wave.run.cost_budget], [4, 0]);
    assert.equal(onlyOutcome(onObservation(observe(wave, allValid), cfg)).status, 'completed');
  });

  test("a tool's own cost counts: one orders.latest call of cost 5 exceeds a budget of 5 after S1 spent 1", () => {
    const tools = withTools(world.tools, {}, { 'orders.latest': 5 });
    const cfg = thoughtConfig(world, { tools, costBudget: 5 });
    const outcome = onlyOutcome(onObservation(observe(start(cfg), allValid), cfg));
    assert.equal(outcome.reason_code, 'cost_budget');
    assert.equal(outcome.reason, 'the next wave costs 6 unit(s); 1 of the budget 5 is spent');
  });

  test('planner tokens count against the budget: 1,500 recorded tokens (1.5 units) leave no room for wave 1 in a budget of 2', () => {
    const cfg = thoughtConfig(world, { costBudget: 2 });
    const record = JSON.stringify({ usage: { total_tokens: 1500 } });
    const decision = onTask(task('Where is my order? alice@example.com'), cfg, undefined, record);
    const outcome = onlyOutcome(decision);
    assert.deepEqual([outcome.status, outcome.reason_code, outcome.iterations, outcome.steps_executed], ['budget_exhausted', 'cost_budget', 0, 0]);
    assert.equal(outcome.reason, 'the next wave costs 1 unit(s); 1.5 of the budget 2 is spent');
    const roomy = onlyRequest(onTask(task('Where is my order? alice@example.com'), thoughtConfig(world, { costBudget: 3 }), undefined, record));
    assert.equal(roomy.run.cost_spent, 2.5);
    assert.equal(roomy.run.planner_record, record);
  });
});

describe('polling steps (until)', () => {
  test('a polling step whose data does not yet satisfy its condition is dispatched again next wave, same input, next attempt, as a new call (its own key)', () => {
    const cfg = planned(pollingPlan(), { repeatCap: 5 });
    const wave1 = start(cfg, 'anything');
    const input = { customer_id: 'C-123456' };
    assert.equal(wave1.steps[0]!.idempotency_key, keyOf('t-1', 'P', 'orders.latest', input));
    const wave2 = onlyRequest(onObservation(observe(wave1, orderIs('shipped')), cfg));
    assert.deepEqual(wave2.steps, [
      {
        step_id: 'P',
        tool: 'orders.latest',
        input_json: wave1.steps[0]!.input_json,
        idempotency_key: keyOf('t-1', 'P', 'orders.latest', input, 2),
        attempt: 2,
      },
    ]);
    // The second round times out: its retry is the same call as that round, with its key.
    const wave3 = onlyRequest(
      onObservation(
        observe(wave2, (c) => failedVerdict(c.step_id, c.tool, 'timeout')),
        cfg,
      ),
    );
    assert.deepEqual(
      wave3.steps.map((c) => [c.step_id, c.attempt, c.idempotency_key]),
      [['P', 3, wave2.steps[0]!.idempotency_key]],
    );
    // Its answer does not satisfy the condition either: the third call is a new round.
    const wave4 = onlyRequest(onObservation(observe(wave3, orderIs('shipped')), cfg));
    assert.deepEqual(
      wave4.steps.map((c) => [c.step_id, c.attempt, c.idempotency_key]),
      [['P', 4, keyOf('t-1', 'P', 'orders.latest', input, 4)]],
    );
    assert.equal(wave2.run.outputs_json, '{}', "unsatisfying data is not the step's output");
    assert.deepEqual(wave2.run.reflections, [], 'polling is not failing');
  });

  test('once the data satisfies the condition the step is done and the run completes with that data', () => {
    const cfg = planned(pollingPlan());
    const { last } = poll(cfg, [orderIs('placed'), orderIs('shipped'), orderIs('delivered')]);
    const outcome = onlyOutcome(last);
    assert.deepEqual([outcome.status, outcome.reason_code, outcome.iterations, outcome.steps_executed], ['completed', 'completed', 3, 3]);
    assert.deepEqual(JSON.parse(outcome.output_json!), { order_id: 'O-12345678', status: 'delivered' });
  });

  test('repeat cap: identical polling calls end budget_exhausted / repeat_cap on the 4th call with cap 3', () => {
    const cfg = planned(pollingPlan());
    assert.equal(cfg.repeatCap, 3);
    const { waves, last } = poll(cfg, [orderIs('shipped'), orderIs('shipped'), orderIs('shipped')]);
    assert.deepEqual(
      waves.map((w) => w.steps.map((s) => s.attempt)),
      [[1], [2], [3]],
      'three identical calls are allowed',
    );
    const outcome = onlyOutcome(last);
    assert.equal(outcome.status, 'budget_exhausted');
    assert.equal(outcome.reason_code, 'repeat_cap');
    assert.equal(outcome.reason, 'step P would call orders.latest with the same input a 4th time (cap 3)');
    assert.equal(outcome.iterations, 3);
    assert.equal(outcome.steps_executed, 3, 'the 4th call is not made');
  });

  test("a step's max_calls overrides the run's cap downwards: max_calls 1 stops at the 2nd identical call", () => {
    const cfg = planned(pollingPlan({ max_calls: 1 }));
    const outcome = onlyOutcome(onObservation(observe(start(cfg), orderIs('shipped')), cfg));
    assert.equal(outcome.reason_code, 'repeat_cap');
    assert.equal(outcome.reason, 'step P would call orders.latest with the same input a 2nd time (cap 1)');
  });

  test('with max_calls 10 the novelty bound ends it first: 3 waves of identical data end budget_exhausted / no_novelty', () => {
    const cfg = planned(pollingPlan({ max_calls: 10 }));
    const { waves, last } = poll(cfg, [orderIs('shipped'), orderIs('shipped'), orderIs('shipped'), orderIs('shipped')]);
    assert.deepEqual(
      waves.map((w) => w.run.stale_waves),
      [0, 0, 1, 2],
      'the first answer is new, each repeat is stale',
    );
    const outcome = onlyOutcome(last);
    assert.equal(outcome.status, 'budget_exhausted');
    assert.equal(outcome.reason_code, 'no_novelty');
    assert.equal(outcome.reason, 'no new information for 3 waves');
    assert.equal(outcome.iterations, 4);
    assert.equal(outcome.steps_executed, 4);
  });

  test('data that changes between polls is new information: the novelty count starts over', () => {
    const cfg = planned(pollingPlan({ max_calls: 10 }));
    const answers = [orderIs('placed'), orderIs('placed'), orderIs('placed'), orderIs('shipped'), orderIs('shipped'), orderIs('shipped'), orderIs('delivered')];
    const { waves, last } = poll(cfg, answers);
    assert.deepEqual(
      waves.map((w) => w.run.stale_waves),
      [0, 0, 1, 2, 0, 1, 2],
    );
    const outcome = onlyOutcome(last);
    assert.deepEqual([outcome.status, outcome.iterations], ['completed', 7]);
  });

  test('noveltyWaves is configurable: with 2, two repeats of the same data end the run', () => {
    const cfg = planned(pollingPlan({ max_calls: 10 }), { noveltyWaves: 2 });
    const { last } = poll(cfg, [orderIs('shipped'), orderIs('shipped'), orderIs('shipped')]);
    const outcome = onlyOutcome(last);
    assert.deepEqual([outcome.reason_code, outcome.iterations, outcome.reason], ['no_novelty', 3, 'no new information for 2 waves']);
  });

  test('failures of a polling step separated by a poll are not consecutive: retried, no reflection', () => {
    const cfg = planned(pollingPlan({ max_calls: 10 }), { noveltyWaves: 10 });
    const timeout = (c: StepCall) => failedVerdict(c.step_id, c.tool, 'timeout');
    const { waves, last } = poll(cfg, [timeout, orderIs('shipped'), timeout]);
    assert.deepEqual(
      waves.map((w) => w.run.failure_streaks.P ?? 0),
      [0, 1, 0],
    );
    const wave4 = onlyRequest(last);
    assert.deepEqual(
      wave4.steps.map((s) => [s.step_id, s.attempt]),
      [['P', 4]],
    );
    assert.deepEqual(wave4.run.reflections, []);
    assert.equal(wave4.run.failure_streaks.P, 1);
  });
});

describe('conditional edges (when)', () => {
  /**
   * S1 finds the customer, S2 their latest order; S3 tracks the shipment only when S2 says the order
   * was delivered (a proof of delivery), and S4 (the tier, for a follow-up offer) depends on S3.
   */
  function conditionalPlan(): Plan {
    const base = flowPlan(world);
    return {
      flow: { id: 'delivery-follow-up', version: 1 },
      steps: [
        base.steps[0]!,
        { id: 'S2', tool: 'orders.latest', input: { customer_id: '{{S1.customer_id}}' }, depends_on: ['S1'] },
        {
          id: 'S3',
          tool: 'shipping.track',
          input: { order_id: '{{S2.order_id}}' },
          depends_on: ['S2'],
          when: { step: 'S2', path: '/status', equals: 'delivered' },
        },
        { id: 'S4', tool: 'crm.tier', input: { customer_id: '{{S1.customer_id}}' }, depends_on: ['S3'] },
      ],
      output: { order_status: '{{S2.status}}', shipping_state: '{{S3.state}}', tier: '{{S4.tier}}' },
    };
  }

  /** S1 finds Alice, S2 her order with `status`, S3 the delivered shipment, S4 her tier. */
  const withStatus = (status: 'shipped' | 'delivered') => {
    const data: Record<string, unknown> = { S1: DATA.S1, S2: order(status), S3: { ...DATA.S4, state: 'delivered' }, S4: DATA.S3 };
    return (call: StepCall): Verdict => validVerdict(call.step_id, call.tool, data[call.step_id]);
  };

  test('S3 is skipped when S2 says shipped, and so is S4 that depends on it: the run completes, the reason says so, fields of skipped steps are null', () => {
    const cfg = planned(conditionalPlan());
    const wave1 = start(cfg);
    const wave2 = onlyRequest(onObservation(observe(wave1, withStatus('shipped')), cfg));
    assert.deepEqual(
      wave2.steps.map((s) => s.step_id),
      ['S2'],
    );
    const outcome = onlyOutcome(onObservation(observe(wave2, withStatus('shipped')), cfg));
    assert.equal(outcome.status, 'completed');
    assert.equal(outcome.reason_code, 'completed');
    assert.equal(outcome.reason, 'all 2 step(s) verified, 2 skipped by conditions');
    assert.match(outcome.reason, /skipped/);
    assert.deepEqual(JSON.parse(outcome.output_json!), { order_status: 'shipped', shipping_state: null, tier: null });
    assert.equal(outcome.iterations, 2);
    assert.equal(outcome.steps_executed, 2, 'skipped steps are never called');
  });

  test('S3 runs when S2 says delivered, then S4: all four steps verified', () => {
    const cfg = planned(conditionalPlan());
    let wave = start(cfg);
    wave = onlyRequest(onObservation(observe(wave, withStatus('delivered')), cfg));
    wave = onlyRequest(onObservation(observe(wave, withStatus('delivered')), cfg));
    assert.deepEqual(
      stepsOf(wave).map((s) => [s.step_id, s.input]),
      [['S3', { order_id: 'O-12345678' }]],
    );
    assert.deepEqual(wave.run.skipped, []);
    wave = onlyRequest(onObservation(observe(wave, withStatus('delivered')), cfg));
    assert.deepEqual(
      stepsOf(wave).map((s) => [s.step_id, s.input]),
      [['S4', { customer_id: 'C-123456' }]],
    );
    const outcome = onlyOutcome(onObservation(observe(wave, withStatus('delivered')), cfg));
    assert.equal(outcome.status, 'completed');
    assert.equal(outcome.reason, 'all 4 step(s) verified');
    assert.deepEqual(JSON.parse(outcome.output_json!), { order_status: 'delivered', shipping_state: 'delivered', tier: 'gold' });
  });

  test('a skipped step stays skipped while a sibling branch runs on (the run state lists it)', () => {
    const plan = conditionalPlan();
    plan.steps.push({ id: 'S5', tool: 'crm.tier', input: { customer_id: '{{S2.customer_id}}' }, depends_on: ['S2'] });
    plan.output.tier2 = '{{S5.tier}}';
    const cfg = planned(plan);
    let wave = start(cfg);
    wave = onlyRequest(onObservation(observe(wave, withStatus('shipped')), cfg));
    wave = onlyRequest(onObservation(observe(wave, withStatus('shipped')), cfg));
    assert.deepEqual(
      wave.steps.map((s) => s.step_id),
      ['S5'],
    );
    assert.deepEqual([...wave.run.skipped].sort(), ['S3', 'S4']);
    const outcome = onlyOutcome(
      onObservation(
        observe(wave, (c) => validVerdict(c.step_id, c.tool, DATA.S3)),
        cfg,
      ),
    );
    assert.deepEqual(JSON.parse(outcome.output_json!), { order_status: 'shipped', shipping_state: null, tier: null, tier2: 'gold' });
    assert.equal(outcome.reason, 'all 3 step(s) verified, 2 skipped by conditions');
  });
});
