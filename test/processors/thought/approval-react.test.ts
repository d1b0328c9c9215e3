/**
 * Approval in a run a model drives: the skill's rule parks a refund the model proposed; a denial is
 * what the model sees next, as the failed result of that very call (its next prompt says who denied
 * it and why); an approval sends the call on unchanged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import { parseApprovalRules, type ApprovalConfig } from '../../../processors/thought/approval-rules.ts';
import { DEFAULT_SYSTEM_RULES } from '../../../processors/thought/model/prompt.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import type { ModelLoopConfig, ReactSkill } from '../../../processors/thought/model/state.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import type { ApprovalDecision, Outcome, RunSnapshot, Task, ThoughtRequest, Verdict } from '../../../schemas/types.gen.ts';
import { createPolicyAjv } from '../../../processors/guardrails/load.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { observed, requestOf as request } from './react-fixtures.ts';

const world = loadWorld();
const skill: ReactSkill = {
  name: 'refund-request',
  version: 1,
  ref: 'refund-request@1',
  prompt: 'Refund the order.',
  allowedTools: ['orders.get', 'refunds.create'],
  maxModelTurns: 6,
  tokenBudget: 50000,
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
const planner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react', planner: 'react(refund_request 0.990 refund-request@1)', skill: 'refund-request', facts: { order_id: 'O-20250002' } }),
};
const sideEffects = (tool: string) => (world.catalog.get(tool) ? world.catalog.get(tool)!.spec.side_effects === true : undefined);
// The deployment asks for nothing; the skill's own rule catches refunds over 50.00.
const approvals: ApprovalConfig = {
  deployment: [],
  skill: (name) =>
    name === 'refund-request'
      ? { rules: parseApprovalRules('refunds.create:amount_cents>5000', 'skill refund-request metadata.approval', sideEffects), timeoutMs: 600_000 }
      : undefined,
  timeoutMs: 0,
};
const config: ThoughtConfig = thoughtConfig(world, { planner, model: loop, approvals });

const usage = { prompt_tokens: 400, completion_tokens: 40, total_tokens: 440 };
const outcome = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'outcomes')?.value as Outcome | undefined;
const snapshot = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'thoughtRuns')!.value as RunSnapshot;
const ok = (stepId: string, tool: string, data: unknown): Verdict => ({
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
const answer = (a: ModelAnswer) => (req: ThoughtRequest) => [ok(req.steps[0]!.step_id, 'model.chat', a)];
const calls = (...cs: Array<[string, Record<string, unknown>]>): ModelAnswer => ({
  kind: 'tool_calls',
  content: null,
  calls: cs.map(([tool, args], i) => ({ id: `call_${i}`, tool, arguments: args })),
  usage,
});
const decide = (verdict: 'approve' | 'deny', reason: string | null = null, extra: Partial<ApprovalDecision> = {}): Task => ({
  ...task(''),
  task_id: `d-${verdict}`,
  kind: 'DECISION',
  decision: { verdict, step_id: null, wave: null, reason, decided_by: 'alice', decided_at_ms: 1, interrupt_id: null, edited_input_json: null, ...extra },
});
const toolMessages = (d: ThoughtDecision) =>
  (JSON.parse(request(d)!.steps[0]!.input_json) as { messages: Array<{ role: string; content: string | null; tool_call_id?: string }> }).messages.filter(
    (m) => m.role === 'tool',
  );

/** Turn 1 looked the order up; turn 2 proposes the refund (and, with `alsoLookup`, a second lookup in the same turn). */
function proposeRefund(alsoLookup = false): ThoughtDecision {
  const t1 = onTask(task('Please refund order O-20250002'), config);
  const w1 = onObservation(observed(t1, answer(calls(['orders.get', { order_id: 'O-20250002' }]))), config);
  const t2 = onObservation(
    observed(w1, (req) => [ok(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-20250002', status: 'shipped', total_cents: 12788 })]),
    config,
  );
  const refund: [string, Record<string, unknown>] = ['refunds.create', { order_id: 'O-20250002', amount_cents: 12788 }];
  return onObservation(observed(t2, answer(alsoLookup ? calls(['orders.get', { order_id: 'O-20250003' }], refund) : calls(refund))), config);
}

test("the skill's rule parks the model's refund: awaiting_approval with the call and why; nothing dispatched", () => {
  const parked = proposeRefund();
  assert.equal(request(parked), undefined);
  const o = outcome(parked)!;
  assert.equal(o.status, 'awaiting_approval');
  assert.deepEqual(
    o.approval!.calls.map((c) => [c.step_id, c.tool, c.rule, c.why]),
    [['M2_1', 'refunds.create', 'refunds.create:amount_cents>5000 (skill refund-request)', 'amount_cents 12788 > 5000']],
  );
  assert.equal(o.approval!.timeout_ms, 600_000, "the skill's time-out");
});

test('deny: the model takes its next turn and sees the refund call failed, denied by whom and why; no refund is dispatched', () => {
  const denied = onTask(decide('deny', 'the customer already got a voucher'), config, snapshot(proposeRefund()));
  const next = request(denied)!;
  assert.deepEqual(
    next.steps.map((s) => s.tool),
    ['model.chat'],
    'the next wave is a model turn, not the refund',
  );
  const [, refund] = toolMessages(denied);
  assert.match(refund!.content!, /approval_denied/);
  assert.match(refund!.content!, /denied by alice: the customer already got a voucher/);
});

test('approve: the refund call is dispatched as the model proposed it', () => {
  const approved = request(onTask(decide('approve'), config, snapshot(proposeRefund())))!;
  assert.deepEqual(
    approved.steps.map((s) => [s.step_id, s.tool, s.input_json]),
    [['M2_1', 'refunds.create', '{"order_id":"O-20250002","amount_cents":12788}']],
  );
});

test('a denial in a wave with other calls: the others run, and the next prompt shows the denied call as failed', () => {
  const denied = onTask(decide('deny', 'no'), config, snapshot(proposeRefund(true)));
  const wave = request(denied)!;
  assert.deepEqual(
    wave.steps.map((s) => [s.step_id, s.tool]),
    [['M2_1', 'orders.get']],
  );
  const t3 = onObservation(
    observed(denied, (req) => [ok(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-20250003', status: 'placed', total_cents: 1 })]),
    config,
  );
  const messages = toolMessages(t3);
  assert.match(messages.at(-1)!.content!, /denied by alice: no/);
});

test('a late decision for an earlier parked call is refused, and does not decide the call parked after it', () => {
  const first = snapshot(proposeRefund());
  const earlier = first.approval!.calls[0]!.interrupt_id!;
  // Denied: the model proposes the same refund again in its next turn, which parks as another interrupt.
  const denied = onTask(decide('deny', 'not yet', { interrupt_id: earlier }), config, first);
  const again = onObservation(observed(denied, answer(calls(['refunds.create', { order_id: 'O-20250002', amount_cents: 12788 }]))), config);
  const parked = snapshot(again);
  const later = parked.approval!.calls[0]!;
  assert.equal(later.step_id, 'M3_1');
  assert.notEqual(later.interrupt_id, earlier);
  const late = onTask(decide('approve', null, { interrupt_id: earlier }), config, parked);
  assert.deepEqual(late.outputs, [], 'nothing dispatched: the refund parked in turn 3 is still pending');
  assert.match(
    late.refused!,
    new RegExp(`interrupt ${earlier} of run t-1, which is not pending: the run is awaiting_approval \\(pending: ${later.interrupt_id}\\)`),
  );
});

test("an edit that breaks the skill's policy is refused with the policy's name; one that keeps it runs", () => {
  const ajv = createPolicyAjv();
  const schema = {
    type: 'object',
    properties: { call: { properties: { args: { properties: { amount_cents: { maximum: { $data: '/results/orders.get/total_cents' } } } } } } },
  };
  const policy = {
    name: 'refund_within_order_total',
    description: 'a refund never exceeds the order total',
    tools: ['refunds.create'],
    schema,
    validate: ajv.compile(schema),
  };
  const guarded: ThoughtConfig = thoughtConfig(world, {
    planner,
    model: loop,
    approvals: { ...approvals, policies: (s) => (s === 'refund-request' ? [policy] : []) },
  });
  const parked = snapshot(proposeRefund());
  const interrupt = parked.approval!.calls[0]!.interrupt_id!;
  const over = onTask(
    decide('approve', null, { interrupt_id: interrupt, edited_input_json: '{"order_id":"O-20250002","amount_cents":20000}' }),
    guarded,
    parked,
  );
  assert.deepEqual(over.outputs, []);
  assert.match(over.refused!, /policy "refund_within_order_total" \(a refund never exceeds the order total\) refuses the edited call/);
  const within = request(
    onTask(decide('approve', null, { interrupt_id: interrupt, edited_input_json: '{"order_id":"O-20250002","amount_cents":5000}' }), guarded, parked),
  )!;
  assert.deepEqual(
    within.steps.map((s) => [s.step_id, s.input_json]),
    [['M2_1', '{"order_id":"O-20250002","amount_cents":5000}']],
  );
});

test('an edited refund is the run\'s one refund: "at most one refund per run" does not count the proposed call it replaces', () => {
  const ajv = createPolicyAjv();
  const schema = { type: 'object', properties: { calls: { type: 'object', properties: { 'refunds.create': { maximum: 1 } } } } };
  const policy = {
    name: 'one_refund_per_run',
    description: 'at most one refunds.create per run',
    tools: ['refunds.create'],
    schema,
    validate: ajv.compile(schema),
  };
  const guarded: ThoughtConfig = thoughtConfig(world, {
    planner,
    model: loop,
    approvals: { ...approvals, policies: (s) => (s === 'refund-request' ? [policy] : []) },
  });
  const parked = snapshot(proposeRefund());
  const interrupt = parked.approval!.calls[0]!.interrupt_id!;
  const decision = onTask(
    decide('approve', null, { interrupt_id: interrupt, edited_input_json: '{"order_id":"O-20250002","amount_cents":5000}' }),
    guarded,
    parked,
  );
  assert.equal(decision.refused, undefined, decision.refused);
  assert.deepEqual(
    request(decision)!.steps.map((s) => [s.step_id, s.input_json]),
    [['M2_1', '{"order_id":"O-20250002","amount_cents":5000}']],
  );
});
