/**
 * Plan-and-replan runs as pure functions: the model writes the whole plan in one turn, Thought runs
 * it in waves without asking the model again, and only a reflection that calls for a new plan asks
 * it again (with the failure and the reflection in the prompt). No broker, no model: the answers are
 * written here as Observation's gate extracts them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import { DEFAULT_SYSTEM_RULES } from '../../../processors/thought/model/prompt.ts';
import { parseModelState, type ModelLoopConfig, type ReactSkill } from '../../../processors/thought/model/state.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
import { mergePlan } from '../../../processors/thought/replan.ts';
import type { Plan } from '../../../processors/plan.ts';
import type { Planner } from '../../../processors/thought/planners/planner.ts';
import type { ErrorType, Outcome, ThoughtRequest, Verdict } from '../../../schemas/types.gen.ts';
import { loadWorld, task, thoughtConfig } from '../fixtures.ts';
import { observed, requestOf as request } from './react-fixtures.ts';

const world = loadWorld();

const skill: ReactSkill = {
  name: 'order-status',
  version: 1,
  ref: 'order-status@1',
  prompt: 'Find the order, then its shipment.',
  allowedTools: ['orders.get', 'shipping.track', 'crm.find_customer', 'orders.latest', 'crm.tier'],
  maxModelTurns: 6,
  tokenBudget: 50000,
  contextWindow: 8192,
  maxTokens: 512,
  maxReplans: 1,
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
  name: 'plan-replan',
  config: 'routes@1',
  plan: () => ({
    kind: 'react',
    planner: 'plan-replan(order_status 0.990 order-status@1)',
    skill: 'order-status',
    facts: { order_id: 'O-78711382' },
    mode: 'plan-replan',
  }),
};
const config = (overrides: Partial<ThoughtConfig> = {}): ThoughtConfig => thoughtConfig(world, { planner, model: loop, ...overrides });

const usage = { prompt_tokens: 600, completion_tokens: 80, total_tokens: 680 };
const outcome = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'outcomes')?.value as Outcome | undefined;

function verdict(stepId: string, tool: string, data: unknown, errorType: ErrorType = 'ok'): Verdict {
  const valid = errorType === 'ok';
  return {
    step_id: stepId,
    tool,
    valid,
    extracted_data_json: valid ? JSON.stringify(data) : null,
    confidence_score: valid ? 1 : 0,
    error_type: errorType,
    audit_trail: valid ? [] : [{ name: 'status_class', passed: false, evidence: 'HTTP 503 {"error":"unavailable"}' }],
    status_code: valid ? 200 : 503,
    response_time_ms: 20,
    attempts: valid ? 1 : 3,
    fallback_from: null,
  };
}

const planAnswer = (plan: Pick<Plan, 'steps' | 'output'>): ModelAnswer => ({ kind: 'plan', content: JSON.stringify(plan), plan, usage });
const answer = (a: ModelAnswer) => (req: ThoughtRequest) => [verdict(req.steps[0]!.step_id, 'model.chat', a)];
const byTool =
  (data: Record<string, unknown>, failing: string[] = []) =>
  (req: ThoughtRequest) =>
    req.steps.map((s) => (failing.includes(s.tool) ? verdict(s.step_id, s.tool, null, 'server_error') : verdict(s.step_id, s.tool, data[s.tool])));

const lookUpThenTrack = {
  steps: [
    { id: 'S1', tool: 'orders.get', input: { order_id: 'O-78711382' }, depends_on: [] },
    {
      id: 'S2',
      tool: 'shipping.track',
      input: { order_id: '{{S1.order_id}}' },
      depends_on: ['S1'],
      when: { step: 'S1', path: '/status', in: ['shipped', 'delivered'] },
    },
  ],
  output: { order_id: '{{S1.order_id}}', status: '{{S1.status}}', eta: '{{S2.eta}}' },
};
const throughTheAccount = {
  steps: [
    { id: 'S1', tool: 'crm.find_customer', input: { email: 'maria@example.com' }, depends_on: [] },
    { id: 'S2', tool: 'orders.latest', input: { customer_id: '{{S1.customer_id}}' }, depends_on: ['S1'] },
  ],
  output: { order_id: '{{S2.order_id}}', status: '{{S2.status}}' },
};
const data = {
  'orders.get': { order_id: 'O-78711382', customer_id: 'C-463260', status: 'shipped', total_cents: 148641, placed_at: '2025-09-25T04:04:54+08:00' },
  'shipping.track': { order_id: 'O-78711382', carrier: 'SF', state: 'in_transit', eta: '2025-10-01' },
  'crm.find_customer': { customer_id: 'C-463260', email: 'maria@example.com', name: 'Maria' },
  'orders.latest': { order_id: 'O-78711382', customer_id: 'C-463260', status: 'shipped', total_cents: 148641, placed_at: '2025-09-25T04:04:54+08:00' },
  'crm.tier': { customer_id: 'C-463260', tier: 'gold' },
};
const ticket = 'Where is my order O-78711382? The account is maria@example.com.';

describe('plan-replan runs', () => {
  test('turn 1 asks for the whole plan: Turn: plan, the tools listed with tool_choice none, a plan json_schema response format', () => {
    const req = request(onTask(task(ticket), config()))!;
    assert.deepEqual(
      req.steps.map((s) => [s.step_id, s.tool]),
      [['M1', 'model.chat']],
    );
    const body = JSON.parse(req.steps[0]!.input_json) as {
      messages: Array<{ content: string }>;
      tools: unknown[];
      tool_choice: string;
      response_format: { type: string; json_schema: { name: string; schema: { required: string[] } } };
    };
    assert.match(body.messages[0]!.content, /^Skill: order-status@1\nTurn: plan\n/);
    assert.match(body.messages[0]!.content, /whole plan as one JSON object/);
    assert.equal(body.tools.length, skill.allowedTools.length);
    assert.equal(body.tool_choice, 'none');
    assert.equal(body.response_format.type, 'json_schema');
    assert.equal(body.response_format.json_schema.name, 'plan');
    assert.deepEqual(body.response_format.json_schema.schema.required, ['steps', 'output']);
    assert.equal(parseModelState(req.run).mode, 'plan-replan');
  });

  test('a plan runs in waves without another model turn, and its output completes the run', () => {
    const c = config();
    let d = onTask(task(ticket), c);
    d = onObservation(observed(d, answer(planAnswer(lookUpThenTrack))), c);
    assert.deepEqual(
      request(d)!.steps.map((s) => [s.step_id, s.tool]),
      [['M1_S1', 'orders.get']],
    );
    d = onObservation(observed(d, byTool(data)), c);
    assert.deepEqual(
      request(d)!.steps.map((s) => [s.step_id, s.tool, s.input_json]),
      [['M1_S2', 'shipping.track', '{"order_id":"O-78711382"}']],
    );
    const last = request(d)!.run;
    d = onObservation(observed(d, byTool(data)), c);
    const o = outcome(d)!;
    assert.deepEqual([o.status, o.reason_code], ['completed', 'completed'], o.reason);
    assert.deepEqual(JSON.parse(o.output_json!), { order_id: 'O-78711382', status: 'shipped', eta: '2025-10-01' });
    assert.equal(parseModelState(last).turns, 1, 'one model turn: the plan');
  });

  test('a step that keeps failing gets a reflection that calls for a new plan; the model sees the failure and the reflection, and the new plan replaces the rest', () => {
    const c = config();
    let d = onTask(task(ticket), c);
    d = onObservation(observed(d, answer(planAnswer(lookUpThenTrack))), c);
    d = onObservation(observed(d, byTool(data, ['orders.get'])), c);
    assert.deepEqual(
      request(d)!.steps.map((s) => [s.step_id, s.attempt]),
      [['M1_S1', 2]],
      'a retryable failure is tried again first',
    );
    d = onObservation(observed(d, byTool(data, ['orders.get'])), c);

    const replan = request(d)!;
    assert.deepEqual(
      replan.steps.map((s) => [s.step_id, s.tool]),
      [['M2', 'model.chat']],
    );
    const reflection = replan.run.reflections.at(-1)!;
    assert.deepEqual([reflection.step_id, reflection.action, reflection.author], ['M1_S1', 'change_plan', 'rules']);
    const body = JSON.parse(replan.steps[0]!.input_json) as {
      messages: Array<{ role: string; content: string | null; tool_call_id?: string; tool_calls?: Array<{ id: string }> }>;
    };
    assert.match(body.messages[0]!.content!, /^Skill: order-status@1\nTurn: plan\n/);
    const assistant = body.messages.find((m) => m.role === 'assistant')!;
    assert.deepEqual(JSON.parse(assistant.content!), lookUpThenTrack, 'the first plan, as the model wrote it');
    assert.deepEqual(
      assistant.tool_calls!.map((t) => t.id),
      ['M1_S1'],
      'only the step that ran',
    );
    assert.deepEqual(
      body.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content]),
      [['M1_S1', '{"error":"server_error"}']],
    );
    assert.ok(
      body.messages.some(
        (m) => m.role === 'system' && /rule-based reflection on M1_S1 \(orders\.get, change_plan\): uncertainty MISSING/.test(m.content ?? ''),
      ),
    );

    d = onObservation(observed(d, answer(planAnswer(throughTheAccount))), c);
    assert.deepEqual(
      request(d)!.steps.map((s) => [s.step_id, s.tool]),
      [['M2_S1', 'crm.find_customer']],
    );
    assert.ok(request(d)!.run.skipped.includes('M1_S1') && request(d)!.run.skipped.includes('M1_S2'), "the old plan's unfinished steps are replaced");
    d = onObservation(observed(d, byTool(data)), c);
    assert.deepEqual(
      request(d)!.steps.map((s) => [s.step_id, s.input_json]),
      [['M2_S2', '{"customer_id":"C-463260"}']],
    );
    const last = request(d)!.run;
    d = onObservation(observed(d, byTool(data)), c);
    const o = outcome(d)!;
    assert.deepEqual([o.status, o.reason_code], ['completed', 'completed'], o.reason);
    assert.deepEqual(JSON.parse(o.output_json!), { order_id: 'O-78711382', status: 'shipped' });
    const state = parseModelState(last);
    assert.deepEqual([state.turns, state.replans], [2, 1], 'exactly the plan and one re-plan');
  });

  test("a new plan may use an earlier plan's finished step by its run id: it becomes a dependency, and is not called again", () => {
    const c = config();
    let d = onTask(task(ticket), c);
    d = onObservation(observed(d, answer(planAnswer(lookUpThenTrack))), c);
    d = onObservation(observed(d, byTool(data)), c);
    d = onObservation(observed(d, byTool(data, ['shipping.track'])), c);
    d = onObservation(observed(d, byTool(data, ['shipping.track'])), c);
    assert.equal(request(d)!.steps[0]!.step_id, 'M2');
    const tier = {
      steps: [{ id: 'S1', tool: 'crm.tier', input: { customer_id: '{{M1_S1.customer_id}}' }, depends_on: [] }],
      output: { order_id: '{{M1_S1.order_id}}', tier: '{{S1.tier}}' },
    };
    d = onObservation(observed(d, answer(planAnswer(tier))), c);
    assert.deepEqual(
      request(d)!.steps.map((s) => [s.step_id, s.input_json]),
      [['M2_S1', '{"customer_id":"C-463260"}']],
    );
    d = onObservation(observed(d, byTool(data)), c);
    assert.deepEqual(JSON.parse(outcome(d)!.output_json!), { order_id: 'O-78711382', tier: 'gold' });
  });

  test('the run records who drives it (plan-replan); a run recorded before the field (driver null) is decided exactly as before', () => {
    const c = config();
    const first = onTask(task(ticket), c);
    assert.equal(request(first)!.run.driver, 'plan-replan');
    /** The run to its end, each observation's run state as `old` makes it; the decisions without the driver field. */
    const decisions = (old: (run: ThoughtRequest['run']) => ThoughtRequest['run']) => {
      const seen: unknown[] = [];
      let d = first;
      for (const verdicts of [answer(planAnswer(lookUpThenTrack)), byTool(data), byTool(data)]) {
        const obs = observed(d, verdicts);
        d = onObservation({ ...obs, run: old(obs.run) }, c);
        seen.push(JSON.parse(JSON.stringify(d.outputs, (k, v: unknown) => (k === 'driver' ? undefined : v))));
      }
      assert.deepEqual([outcome(d)?.status, outcome(d)?.reason_code], ['completed', 'completed']);
      return seen;
    };
    assert.deepEqual(
      decisions((run) => ({ ...run, driver: null })),
      decisions((run) => run),
    );
  });

  test('a plan with a cycle, a duplicate step id or a reference to a field its tool does not return reaches no tool: the model is asked again with the reason', () => {
    const c = config();
    const look = { id: 'S1', tool: 'orders.get', input: { order_id: 'O-78711382' }, depends_on: [] as string[] };
    const track = { id: 'S2', tool: 'shipping.track', input: { order_id: '{{S1.order_id}}' }, depends_on: ['S1'] };
    const broken: Array<[unknown, RegExp]> = [
      [{ steps: [{ ...look, depends_on: ['S2'] }, track], output: { eta: '{{S2.eta}}' } }, /cycle/],
      [{ steps: [look, { ...track, id: 'S1' }], output: { eta: '{{S1.order_id}}' } }, /step id M1_S1 is used twice/],
      [{ steps: [look, { ...track, input: { order_id: '{{S1.nonexistent}}' } }], output: { eta: '{{S2.eta}}' } }, /returns no field nonexistent/],
    ];
    for (const [plan, reason] of broken) {
      const d = onObservation(observed(onTask(task(ticket), c), answer(planAnswer(plan as typeof lookUpThenTrack))), c);
      const again = request(d)!;
      assert.deepEqual(
        again.steps.map((s) => [s.step_id, s.tool]),
        [['M2', 'model.chat']],
        `${reason}: no step of the plan was dispatched`,
      );
      const body = JSON.parse(again.steps[0]!.input_json) as { messages: Array<{ role: string; content: string | null }> };
      assert.match(body.messages.at(-1)!.content!, /rejected before anything ran \(invalid_plan\): invalid plan: /);
      assert.match(body.messages.at(-1)!.content!, reason);
    }
  });

  test("bounds: an invalid plan is shown to the model and asked for again; re-plans past the skill's max-replans end the run as replan_cap", () => {
    const c = config({ repeatCap: 10 });
    let d = onTask(task(ticket), c);
    const broken = {
      steps: [{ id: 'S1', tool: 'orders.get', input: { order_id: 'O-78711382' }, depends_on: ['S9'] }],
      output: { order_id: '{{S1.order_id}}' },
    };
    d = onObservation(observed(d, answer(planAnswer(broken))), c);
    const again = request(d)!;
    assert.equal(again.steps[0]!.step_id, 'M2');
    const body = JSON.parse(again.steps[0]!.input_json) as { messages: Array<{ role: string; content: string | null }> };
    assert.equal(body.messages.at(-1)!.role, 'user');
    assert.match(body.messages.at(-1)!.content!, /rejected before anything ran \(invalid_plan\): invalid plan: step M1_S1: depends on unknown step S9/);

    d = onObservation(observed(d, answer(planAnswer(lookUpThenTrack))), c);
    const failing = byTool(data, ['orders.get']);
    d = onObservation(observed(d, failing), c);
    d = onObservation(observed(d, failing), c);
    assert.equal(request(d)!.steps[0]!.tool, 'model.chat', 'the first re-plan (max-replans 1)');
    d = onObservation(observed(d, answer(planAnswer(lookUpThenTrack))), c);
    d = onObservation(observed(d, failing), c);
    d = onObservation(observed(d, failing), c);
    const o = outcome(d)!;
    assert.deepEqual([o.status, o.reason_code], ['budget_exhausted', 'replan_cap'], o.reason);
    assert.match(o.reason, /re-plan\(s\) are used up: step M3_S1 \(orders\.get\) failed: server_error/);
  });

  test("mergePlan renames a plan's steps by its turn and refuses uses of an earlier step that did not finish", () => {
    const current: Plan = {
      flow: { id: 'plan-replan:order-status', version: 1 },
      steps: [{ id: 'M1', tool: 'model.chat', input: {}, depends_on: [] }, ...lookUpThenTrack.steps],
      output: {},
    };
    current.steps = current.steps.map((s) => (s.id === 'M1' ? s : { ...s, id: `M1_${s.id}`, depends_on: s.depends_on.map((x) => `M1_${x}`) }));
    const merged = mergePlan(
      current,
      { steps: [{ id: 'A', tool: 'shipping.track', input: { order_id: '{{M1_S2.order_id}}' }, depends_on: [] }], output: { x: '{{A.eta}}' } },
      2,
      new Set(['M1_S1']),
      new Set(),
    );
    assert.deepEqual(merged.replaced, ['M1_S2']);
    assert.deepEqual(merged.problems, ['step A: uses M1_S2, an earlier step that did not finish (this plan replaces it)']);
    assert.deepEqual(merged.plan.output, { x: '{{M2_A.eta}}' });
  });
});
