import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import { approvalNeed, parseApprovalRules, type ApprovalConfig } from '../../../processors/thought/approval-rules.ts';
import { DEFAULT_FLOWS_DIR, loadFlows } from '../../../processors/thought/planners/flows.ts';
import { GraphPlanner } from '../../../processors/thought/planners/graph.ts';
import type { ApprovalDecision, RunSnapshot, Task } from '../../../schemas/types.gen.ts';
import { gateWave, interruptId } from '../../../processors/thought/approval.ts';
import { failedVerdict, keyOf, loadWorld, observe, onlyOutcome, onlyRequest, onlySnapshot, task, thoughtConfig, validVerdict } from '../fixtures.ts';

const world = loadWorld();
const sideEffects = (tool: string) => (world.catalog.get(tool) ? world.catalog.get(tool)!.spec.side_effects === true : undefined);
const refundFlow = loadFlows(DEFAULT_FLOWS_DIR, world.ajv).get('refund-request@1')!;

function approvals(rules: string, timeoutMs = 3_600_000): ApprovalConfig {
  return { deployment: parseApprovalRules(rules, 'TAO_APPROVAL_RULES', sideEffects), skill: () => undefined, timeoutMs };
}

function refundConfig(rules = 'refunds.create:amount_cents>5000'): ThoughtConfig {
  return thoughtConfig(world, { planner: new GraphPlanner(refundFlow, world.tools), approvals: approvals(rules) });
}

const ORDER = { order_id: 'O-20250002', customer_id: 'C-100200', status: 'shipped', total_cents: 12_788, placed_at: '2025-03-14T09:26:53+08:00' };

/** The refund flow up to Thought's decision on its orders.get verdict (wave 1 answered). */
function afterOrderLookup(cfg: ThoughtConfig, order = ORDER): { decision: ThoughtDecision; snapshot: RunSnapshot } {
  const wave1 = onlyRequest(onTask(task(`Please refund my order ${order.order_id}`), cfg));
  assert.deepEqual(
    wave1.steps.map((s) => s.tool),
    ['orders.get'],
  );
  const decision = onObservation(
    observe(wave1, (c) => validVerdict(c.step_id, c.tool, order)),
    cfg,
    { ...onlySnapshot(onTask(task(`Please refund my order ${order.order_id}`), cfg)) },
  );
  return { decision, snapshot: onlySnapshot(decision) };
}

function decide(verdict: ApprovalDecision['verdict'], extra: Partial<ApprovalDecision> = {}, n = 1): Task {
  return {
    ...task('', 't-1'),
    task_id: `decision-${n}`,
    kind: 'DECISION',
    text: `${verdict}`,
    decision: {
      verdict,
      step_id: null,
      wave: null,
      reason: null,
      decided_by: 'alice',
      decided_at_ms: 1_700_000_100_000 + n,
      interrupt_id: null,
      edited_input_json: null,
      ...extra,
    },
  };
}

describe('approval rules', () => {
  test('parse always, never and thresholds; refuse tools without side effects, unknown tools and bad entries with one line naming the origin', () => {
    const rules = parseApprovalRules(
      'refunds.create:amount_cents>5000, identity.password_reset:always billing.send_invoice_copy:never',
      'TAO_APPROVAL_RULES',
      sideEffects,
    );
    assert.deepEqual(
      rules.map((r) => r.when.kind),
      ['threshold', 'always', 'never'],
    );
    assert.throws(
      () => parseApprovalRules('orders.get:always', 'TAO_APPROVAL_RULES', sideEffects),
      /TAO_APPROVAL_RULES: "orders.get:always" names orders.get, which has no side effects/,
    );
    assert.throws(
      () => parseApprovalRules('refunds.nope:always', 'X', sideEffects),
      /X: "refunds.nope:always" names refunds.nope, which is not a tool of the catalog/,
    );
    assert.throws(() => parseApprovalRules('refunds.create:amount_cents=5', 'X', sideEffects), /is not TOOL:always, TOOL:never, TOOL:ARG>N or TOOL:ARG>=N/);
    assert.throws(() => parseApprovalRules('refunds.create:always refunds.create:never', 'X', sideEffects), /two rules/);
  });

  test('a threshold holds above it, not at or below; a missing or non-numeric argument needs approval', () => {
    const cfg = approvals('refunds.create:amount_cents>5000');
    assert.equal(approvalNeed(cfg, null, 'refunds.create', { amount_cents: 5000 }), null);
    assert.deepEqual(approvalNeed(cfg, null, 'refunds.create', { amount_cents: 5001 }), {
      rule: 'refunds.create:amount_cents>5000 (TAO_APPROVAL_RULES)',
      why: 'amount_cents 5001 > 5000',
    });
    assert.match(approvalNeed(cfg, null, 'refunds.create', { amount_cents: '9000' })!.why, /not a number/);
    assert.equal(approvalNeed(cfg, null, 'orders.get', { order_id: 'O-1' }), null, 'a tool without a rule never waits');
  });

  test("a skill's rule for a tool replaces the deployment's in that skill's runs", () => {
    const cfg: ApprovalConfig = {
      ...approvals('refunds.create:always'),
      skill: (name) =>
        name === 'goodwill' ? { rules: parseApprovalRules('refunds.create:never', 'skill goodwill metadata.approval', sideEffects) } : undefined,
    };
    assert.equal(approvalNeed(cfg, 'goodwill', 'refunds.create', { amount_cents: 99999 }), null);
    assert.ok(approvalNeed(cfg, 'other', 'refunds.create', { amount_cents: 1 }));
    assert.ok(approvalNeed(cfg, null, 'refunds.create', { amount_cents: 1 }));
  });
});

describe('a call that needs approval parks the run', () => {
  test('a refund above the threshold parks the run awaiting_approval with the call, its arguments, the rule and why; no wave is dispatched', () => {
    const { decision, snapshot } = afterOrderLookup(refundConfig());
    assert.equal(
      decision.outputs.some((o) => o.topic === 'thoughtRequests'),
      false,
      'nothing reaches Action',
    );
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'awaiting_approval');
    assert.equal(outcome.reason_code, 'approval_required');
    assert.equal(outcome.iterations, 1);
    assert.equal(outcome.steps_executed, 1, 'the parked refund is not counted as executed');
    assert.deepEqual(outcome.approval, {
      wave: 2,
      timeout_ms: 3_600_000,
      calls: [
        {
          step_id: 'S2',
          tool: 'refunds.create',
          input_json: JSON.stringify({ order_id: 'O-20250002', amount_cents: 12_788 }),
          rule: 'refunds.create:amount_cents>5000 (TAO_APPROVAL_RULES)',
          why: 'amount_cents 12788 > 5000',
          decision: null,
          decided_by: null,
          decided_at_ms: null,
          decision_reason: null,
          interrupt_id: interruptId(2, keyOf('t-1', 'S2', 'refunds.create', { order_id: 'O-20250002', amount_cents: 12_788 })),
          edited_input_json: null,
        },
      ],
    });
    assert.match(outcome.approval!.calls[0]!.interrupt_id!, /^i-[0-9a-f]{16}$/);
    assert.match(outcome.reason, /refunds\.create \(S2\) needs approval: amount_cents 12788 > 5000/);
    assert.equal(snapshot.status, 'awaiting_approval');
    assert.deepEqual(
      snapshot.parked_steps.map((s) => s.idempotency_key),
      [keyOf('t-1', 'S2', 'refunds.create', { order_id: 'O-20250002', amount_cents: 12_788 })],
    );
    assert.ok(snapshot.run, 'the parked run state is kept');
  });

  test('a refund at or below the threshold, or with no rule, is dispatched as before', () => {
    const small = afterOrderLookup(refundConfig('refunds.create:amount_cents>100000'));
    assert.deepEqual(
      onlyRequest(small.decision).steps.map((s) => s.tool),
      ['refunds.create'],
    );
    const none = afterOrderLookup(thoughtConfig(world, { planner: new GraphPlanner(refundFlow, world.tools) }));
    assert.deepEqual(
      onlyRequest(none.decision).steps.map((s) => s.tool),
      ['refunds.create'],
    );
  });

  test('the same inputs park the same way (deterministic)', () => {
    assert.deepEqual(afterOrderLookup(refundConfig()).decision, afterOrderLookup(refundConfig()).decision);
  });
});

describe('a decision resumes or ends the parked run', () => {
  const cfg = refundConfig();
  const { snapshot } = afterOrderLookup(cfg);

  test('approve dispatches the parked wave unchanged: same wave number, step and idempotency key', () => {
    const decision = onTask(decide('approve'), cfg, snapshot);
    const wave = onlyRequest(decision);
    assert.equal(wave.iteration, 2);
    assert.deepEqual(wave.steps, snapshot.parked_steps);
    assert.equal(onlySnapshot(decision).status, 'running');
    assert.equal(onlySnapshot(decision).approval, null);
    assert.equal(wave.run.human_involved, true, 'a person decided: the run does not count as recovered without one');
    assert.equal(onlyOutcome(onTask(decide('timeout', { decided_by: 'scheduler' }), cfg, snapshot)).reason_code, 'approval_timeout');
  });

  test('an approved call keeps its approval across a retry: a timed-out refund is sent again with the same key, without parking again', () => {
    const approved = onlyRequest(onTask(decide('approve'), cfg, snapshot));
    const key = keyOf('t-1', 'S2', 'refunds.create', { order_id: 'O-20250002', amount_cents: 12_788 });
    assert.deepEqual(approved.run.approved_calls, [key], 'the approval is bound to the call: its idempotency key');
    // The refund times out (the upstream may have applied it): Thought retries the same call.
    const retry = onObservation(
      observe(approved, (c) => failedVerdict(c.step_id, c.tool, 'timeout')),
      cfg,
    );
    const wave = onlyRequest(retry);
    assert.deepEqual(
      wave.steps.map((s) => [s.step_id, s.tool, s.attempt, s.idempotency_key]),
      [['S2', 'refunds.create', 2, key]],
    );
    assert.equal(onlySnapshot(retry).status, 'running');
    assert.equal(
      retry.outputs.some((o) => o.topic === 'outcomes'),
      false,
      'no awaiting_approval outcome: nobody is asked twice',
    );

    // Another call (another amount: another key) in the same run is not covered by that approval.
    const other = { order_id: 'O-20250002', amount_cents: 20_000 };
    const changed = {
      ...wave,
      steps: [{ ...wave.steps[0]!, input_json: JSON.stringify(other), idempotency_key: keyOf('t-1', 'S2', 'refunds.create', other) }],
    };
    const gated = gateWave({ outputs: [{ topic: 'thoughtRequests', value: changed }] }, cfg);
    assert.equal(onlyOutcome(gated).status, 'awaiting_approval');
    assert.match(onlyOutcome(gated).reason, /amount_cents 20000 > 5000/);
  });

  test('a second decision on a run no longer awaiting approval is ignored and writes nothing', () => {
    const running = onlySnapshot(onTask(decide('approve'), cfg, snapshot));
    const again = onTask(decide('approve', {}, 2), cfg, running);
    assert.deepEqual(again.outputs, []);
    assert.match(again.ignored!, /approve by alice arrived for run t-1, which is running, not awaiting approval/);
    assert.deepEqual(onTask(decide('deny', {}, 3), cfg, running).outputs, []);
    assert.deepEqual(onTask(decide('approve'), cfg, undefined).outputs, [], 'a decision for an unknown run starts nothing');
  });

  test('deny ends a flow run failed (approval_denied) with who and why, and no call', () => {
    const decision = onTask(decide('deny', { reason: 'over the goodwill limit' }), cfg, snapshot);
    assert.equal(
      decision.outputs.some((o) => o.topic === 'thoughtRequests'),
      false,
    );
    const outcome = onlyOutcome(decision);
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.reason_code, 'approval_denied');
    assert.match(outcome.reason, /refunds\.create \(S2\) was denied by alice: over the goodwill limit/);
    assert.equal(outcome.approval!.calls[0]!.decision, 'deny');
    assert.equal(outcome.approval!.calls[0]!.decided_by, 'alice');
    assert.equal(onlySnapshot(decision).status, 'ended');
  });

  test('a time-out ends it like a denial, with reason approval_timeout', () => {
    const outcome = onlyOutcome(onTask(decide('timeout', { decided_by: 'scheduler', wave: 2 }), cfg, snapshot));
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.reason_code, 'approval_timeout');
    assert.match(outcome.reason, /was not approved in time/);
  });

  test('a time-out for another wave than the parked one is ignored (a late timer of an earlier parking)', () => {
    const d = onTask(decide('timeout', { decided_by: 'scheduler', wave: 7 }), cfg, snapshot);
    assert.deepEqual(d.outputs, []);
    assert.match(d.ignored!, /is for wave 7 of run t-1, which awaits approval of wave 2/);
  });

  test('a decision for one step of several leaves the others pending; the wave goes once all are approved', () => {
    // Both calls of one wave need approval: a wave of two refunds.
    const two = {
      ...snapshot,
      parked_steps: [...snapshot.parked_steps, { ...snapshot.parked_steps[0]!, step_id: 'S3', idempotency_key: 't-1:2:S3' }],
      approval: { ...snapshot.approval!, calls: [...snapshot.approval!.calls, { ...snapshot.approval!.calls[0]!, step_id: 'S3' }] },
    };
    const first = onTask(decide('approve', { step_id: 'S2' }), cfg, two);
    const parked = onlyOutcome(first);
    assert.equal(parked.status, 'awaiting_approval');
    assert.deepEqual(
      parked.approval!.calls.map((c) => c.decision),
      ['approve', null],
    );
    assert.match(parked.reason, /1 of 2 call\(s\) decided/);
    const unknownStep = onTask(decide('approve', { step_id: 'S2' }, 2), cfg, onlySnapshot(first));
    assert.deepEqual(unknownStep.outputs, [], 'a step already decided is not decided again');
    const wave = onlyRequest(onTask(decide('approve', { step_id: 'S3' }, 3), cfg, onlySnapshot(first)));
    assert.deepEqual(
      wave.steps.map((s) => s.step_id),
      ['S2', 'S3'],
    );
  });

  test('an observation or a reply while the run is parked is ignored; a NEW copy of the task is a redelivery', () => {
    assert.deepEqual(onTask({ ...task('refund O-20250002'), kind: 'REPLY' }, cfg, snapshot).outputs, []);
    assert.deepEqual(onTask(task('refund O-20250002'), cfg, snapshot).outputs, []);
  });
});

describe('interrupts: a decision names the parked call it decides, and may edit its arguments', () => {
  const cfg = refundConfig();
  const { snapshot } = afterOrderLookup(cfg);
  const interrupt = snapshot.approval!.calls[0]!.interrupt_id!;
  const edited = { order_id: 'O-20250002', amount_cents: 4_000 };

  test("an approval with edited arguments runs the call with them, under the edited call's key, and records both", () => {
    const decision = onTask(decide('approve', { interrupt_id: interrupt, edited_input_json: JSON.stringify(edited) }), cfg, snapshot);
    const wave = onlyRequest(decision);
    const key = keyOf('t-1', 'S2', 'refunds.create', edited);
    assert.deepEqual(
      wave.steps.map((s) => [s.step_id, JSON.parse(s.input_json), s.idempotency_key]),
      [['S2', edited, key]],
    );
    assert.deepEqual(wave.run.approved_calls, [key], 'a retry of the edited call is not parked again');
    assert.deepEqual(
      (JSON.parse(wave.run.plan_json) as { steps: Array<{ id: string; input: unknown }> }).steps.find((s) => s.id === 'S2')!.input,
      edited,
      "the plan's step takes the edit, so a retry sends the edited arguments",
    );
    // The original stays in the parked record; the decision carries the edit.
    assert.deepEqual(JSON.parse(snapshot.approval!.calls[0]!.input_json), { order_id: 'O-20250002', amount_cents: 12_788 });
  });

  test("an edit the tool's input contract refuses is refused with the rule, and nothing is dispatched", () => {
    const decision = onTask(
      decide('approve', { interrupt_id: interrupt, edited_input_json: JSON.stringify({ order_id: 'O-1', amount_cents: 4_000 }) }),
      cfg,
      snapshot,
    );
    assert.deepEqual(decision.outputs, []);
    assert.match(decision.refused!, /refunds\.create's input contract refuses the edited arguments: \/order_id must match pattern/);
    const notObject = onTask(decide('approve', { interrupt_id: interrupt, edited_input_json: '[1]' }), cfg, snapshot);
    assert.match(notObject.refused!, /must be a JSON object/);
  });

  test('only an approval of one interrupt may edit: a denial or a step-wide approval with arguments is refused', () => {
    assert.match(
      onTask(decide('deny', { interrupt_id: interrupt, edited_input_json: JSON.stringify(edited) }), cfg, snapshot).refused!,
      /only an approval of one interrupt/,
    );
    assert.match(onTask(decide('approve', { edited_input_json: JSON.stringify(edited) }), cfg, snapshot).refused!, /only an approval of one interrupt/);
  });

  test('a decision for an interrupt that is no longer pending is refused, not ignored: decided already, or the run moved on', () => {
    const approved = onTask(decide('approve', { interrupt_id: interrupt }), cfg, snapshot);
    const running = onlySnapshot(approved);
    const late = onTask(decide('deny', { interrupt_id: interrupt }, 2), cfg, running);
    assert.deepEqual(late.outputs, []);
    assert.match(late.refused!, new RegExp(`deny by alice names interrupt ${interrupt} of run t-1, which is not pending: the run is running`));
    const unknown = onTask(decide('approve', { interrupt_id: 'i-0000000000000000' }), cfg, snapshot);
    assert.match(unknown.refused!, new RegExp(`not pending: the run is awaiting_approval \\(pending: ${interrupt}\\)`));
  });
});
