/**
 * Thought's react core as pure functions: a run driven by a model, turn by turn, from the records
 * Observation would write. No broker, no model: the answers are written here as the gate extracts them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../../processors/thought/core.ts';
import { DEFAULT_SYSTEM_RULES } from '../../../processors/thought/model/prompt.ts';
import { parseModelState, type ModelLoopConfig, type ReactSkill } from '../../../processors/thought/model/state.ts';
import type { ModelAnswer } from '../../../processors/model-wire.ts';
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

/** A planner that hands every task to the model with the order id as a fact (what the skill planner does after routing). */
const reactPlanner: Planner = {
  name: 'react',
  config: 'routes@1',
  plan: () => ({ kind: 'react', planner: 'react(order_status 0.990 order-status@1)', skill: 'order-status', facts: { order_id: 'O-12345678' } }),
};

function config(overrides: Partial<ThoughtConfig> = {}): ThoughtConfig {
  return thoughtConfig(world, { planner: reactPlanner, model: loop, ...overrides });
}

const usage = { prompt_tokens: 400, completion_tokens: 40, total_tokens: 440 };
const outcome = (d: ThoughtDecision) => d.outputs.find((o) => o.topic === 'outcomes')?.value as Outcome | undefined;

function verdict(stepId: string, tool: string, data: unknown, errorType: ErrorType = 'ok', evidence = ''): Verdict {
  const valid = errorType === 'ok';
  return {
    step_id: stepId,
    tool,
    valid,
    extracted_data_json: valid ? JSON.stringify(data) : null,
    confidence_score: valid ? 1 : 0,
    error_type: errorType,
    audit_trail: valid ? [] : [{ name: tool === 'model.chat' ? 'model_answer' : 'status_class', passed: false, evidence }],
    status_code: valid ? 200 : 500,
    response_time_ms: 20,
    attempts: 1,
    fallback_from: null,
  };
}

/** Observation's result for the wave `d` dispatched. */

/** The last message of the model request `d` dispatched. */
const lastMessage = (d: ThoughtDecision) => (JSON.parse(request(d)!.steps[0]!.input_json) as { messages: Array<{ content: string }> }).messages.at(-1)!.content;

/** Observation's verdict on a native call of orders.get while the run withholds it: not offered. */
const notOffered = (req: ThoughtRequest) => [
  verdict(
    req.steps[0]!.step_id,
    'model.chat',
    null,
    'hallucinated_tool',
    'tool call 1 names "orders__get", which this skill does not offer (offered: shipping__track, ask_customer)',
  ),
];

const answer = (a: ModelAnswer) => (req: ThoughtRequest) => [verdict(req.steps[0]!.step_id, 'model.chat', a)];
const calls = (...cs: Array<[string, Record<string, unknown>]>): ModelAnswer => ({
  kind: 'tool_calls',
  content: null,
  calls: cs.map(([tool, args], i) => ({ id: `call_${i}`, tool, arguments: args })),
  usage,
});

describe('react runs', () => {
  test('a task handed to a model dispatches turn 1: one model step whose input is the whole chat request', () => {
    const d = onTask(task('Where is my order O-12345678?'), config());
    const req = request(d)!;
    assert.deepEqual(
      req.steps.map((s) => [s.step_id, s.tool]),
      [['M1', 'model.chat']],
    );
    assert.equal(req.run.driver, 'react', 'the run records that a model drives it');
    const body = JSON.parse(req.steps[0]!.input_json) as {
      messages: Array<{ role: string; content: string }>;
      tools: Array<{ function: { name: string } }>;
      temperature: number;
    };
    assert.match(body.messages[0]!.content, /^Skill: order-status@1\n/);
    assert.match(body.messages[0]!.content, /- order_id: O-12345678/);
    assert.deepEqual(body.messages[1], { role: 'user', content: 'Where is my order O-12345678?' });
    assert.deepEqual(
      body.tools.map((t) => t.function.name),
      ['orders__get', 'shipping__track', 'ask_customer'],
    );
    assert.equal(body.temperature, 0);
    const state = parseModelState(req.run);
    assert.equal(state.turns, 1);
    assert.equal(state.turn_tokens[0]!.turn, 1);
    assert.ok(state.turn_tokens[0]!.prompt > 0);
  });

  test('tool calls become one wave, their results go into the next prompt, and a final answer completes the run', () => {
    const c = config();
    const t1 = onTask(task('Where is my order O-12345678?'), c);
    const w2 = onObservation(observed(t1, answer(calls(['orders.get', { order_id: 'O-12345678' }], ['shipping.track', { order_id: 'O-12345678' }]))), c);
    assert.deepEqual(
      request(w2)!.steps.map((s) => [s.step_id, s.tool, s.input_json]),
      [
        ['M1_1', 'orders.get', '{"order_id":"O-12345678"}'],
        ['M1_2', 'shipping.track', '{"order_id":"O-12345678"}'],
      ],
    );
    const t2 = onObservation(
      observed(w2, (req) => [
        verdict(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-12345678', status: 'shipped' }),
        verdict(req.steps[1]!.step_id, 'shipping.track', { state: 'in_transit', eta: '2026-12-03' }),
      ]),
      c,
    );
    const body = JSON.parse(request(t2)!.steps[0]!.input_json) as { messages: Array<{ role: string; content: string | null; tool_call_id?: string }> };
    assert.equal(request(t2)!.steps[0]!.step_id, 'M2');
    assert.deepEqual(
      body.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(m.content!)]),
      [
        ['call_0', { order_id: 'O-12345678', status: 'shipped' }],
        ['call_1', { state: 'in_transit', eta: '2026-12-03' }],
      ],
    );
    const end = onObservation(observed(t2, answer({ kind: 'final', content: 'Order O-12345678 is in transit, ETA 3 December.', usage })), c);
    const o = outcome(end)!;
    assert.deepEqual([o.status, o.reason_code], ['completed', 'completed']);
    assert.deepEqual(JSON.parse(o.output_json!), {
      answer: 'Order O-12345678 is in transit, ETA 3 December.',
      skill: 'order-status@1',
      turns: 2,
      tokens: 880,
      model: 'unknown',
    });
  });

  test('a rejected answer is shown to the model in its next turn; three in a row end the run as model_invalid', () => {
    const c = config();
    let d = onTask(task('Where is my order O-12345678?'), c);
    const rejected = (req: ThoughtRequest) => [
      verdict(req.steps[0]!.step_id, 'model.chat', null, 'hallucinated_tool', 'tool call 1 names "orders__delete", which this skill does not offer'),
    ];
    const first = JSON.parse(request(d)!.steps[0]!.input_json) as { temperature?: number; seed?: number };
    assert.deepEqual([first.temperature, first.seed], [0, undefined], 'a turn samples greedily');
    d = onObservation(observed(d, rejected), c);
    const body = JSON.parse(request(d)!.steps[0]!.input_json) as {
      messages: Array<{ role: string; content: string | null }>;
      temperature?: number;
      seed?: number;
    };
    assert.equal(request(d)!.steps[0]!.step_id, 'M2');
    // Greedy, the 1.5B wrote the same refused answer three times: the turn after a refusal samples, seeded by the turn (replay rebuilds the same request).
    assert.deepEqual([body.temperature, body.seed], [0.7, 2]);
    // The gate refused the answer, so the record holds no text of it: the rejection joins the user's
    // turn, and no stand-in assistant text is shown (the 1.5B copied "[answer rejected: …]" as its answer).
    assert.deepEqual(
      body.messages.map((m) => m.role),
      ['system', 'user'],
    );
    assert.match(
      body.messages.at(-1)!.content!,
      /^Where is my order O-12345678\?\n\nYour last answer was rejected before anything ran \(hallucinated_tool\).*orders__delete/,
    );
    assert.ok(!body.messages.some((m) => /\[answer rejected/.test(m.content ?? '')), 'no stand-in text for the model to copy');
    d = onObservation(observed(d, rejected), c);
    d = onObservation(observed(d, rejected), c);
    assert.deepEqual([outcome(d)!.status, outcome(d)!.reason_code], ['failed', 'model_invalid']);
  });

  test("an endpoint that keeps failing after Action's retries is retried once as the same turn, then ends the run as model_unavailable", () => {
    const c = config();
    const t1 = onTask(task('Where is my order O-12345678?'), c);
    const down = (req: ThoughtRequest) => [verdict(req.steps[0]!.step_id, 'model.chat', null, 'server_error', 'status 500')];
    const again = onObservation(observed(t1, down), c);
    assert.equal(request(again)!.steps[0]!.step_id, 'M1');
    assert.equal(request(again)!.steps[0]!.attempt, 2);
    assert.equal(request(again)!.steps[0]!.input_json, request(t1)!.steps[0]!.input_json, 'the same turn is the same request');
    assert.equal(request(again)!.steps[0]!.idempotency_key, request(t1)!.steps[0]!.idempotency_key, 'the same request keeps its idempotency key');
    const end = onObservation(observed(again, down), c);
    assert.deepEqual([outcome(end)!.status, outcome(end)!.reason_code], ['failed', 'model_unavailable']);
  });

  test('the same tool and arguments asked for again after the call failed are two calls, with two idempotency keys', () => {
    const c = config();
    const lookup = answer(calls(['orders.get', { order_id: 'O-12345678' }]));
    const w1 = onObservation(observed(onTask(task('Where is my order O-12345678?'), c), lookup), c);
    const t2 = onObservation(
      observed(w1, (req) => [verdict(req.steps[0]!.step_id, 'orders.get', null, 'timeout', 'no answer in 2000 ms')]),
      c,
    );
    const w2 = onObservation(observed(t2, lookup), c);
    const [first, second] = [request(w1)!.steps[0]!, request(w2)!.steps[0]!];
    assert.deepEqual([first.step_id, second.step_id, first.input_json === second.input_json], ['M1_1', 'M2_1', true]);
    assert.notEqual(first.idempotency_key, second.idempotency_key, 'the model asked again: a new call, not a retry');
  });

  test('a call asked for again after its verified result goes back to the model with why, is no longer offered, and a model that keeps asking ends model_repeat', () => {
    const c = config({ reflectAfter: 2 });
    const lookup = answer(calls(['orders.get', { order_id: 'O-12345678' }]));
    const offered = (x: ThoughtDecision) =>
      ((JSON.parse(request(x)!.steps[0]!.input_json) as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((t) => t.function.name);
    const t0 = onTask(task('Where is my order O-12345678?'), c);
    const w1 = onObservation(observed(t0, lookup), c);
    const looked = onObservation(
      observed(w1, (req) => [verdict(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-12345678', status: 'placed' })]),
      c,
    );
    assert.deepEqual(offered(looked), ['orders__get', 'shipping__track', 'ask_customer']);
    let d = onObservation(observed(looked, lookup), c);
    const next = request(d)!.steps;
    assert.deepEqual(
      next.map((st) => st.tool),
      ['model.chat'],
      'no second orders.get: the model is asked again',
    );
    const said = (JSON.parse(next[0]!.input_json) as { messages: Array<{ content: string }> }).messages.at(-1)!.content;
    assert.match(said, /repeated_call.*orders\.get \{"order_id":"O-12345678"\} was already called in this run and its result is above/);
    assert.deepEqual(offered(d), ['shipping__track', 'ask_customer'], 'the tool asked for again is withheld: its result is above');
    let more = 0;
    for (; more < 5 && !outcome(d); more++) d = onObservation(observed(d, lookup), c);
    assert.deepEqual([outcome(d)!.status, outcome(d)!.reason_code], ['budget_exhausted', 'model_repeat']);
    assert.equal(more, 3, 'the repeat that withheld the tool did not count: three more refusals in a row end the run (TAO_REFLECT_AFTER 2)');

    // A native call of the withheld tool is refused by Observation's gate as not offered: Thought counts it as the repeat it is.
    let n = onObservation(observed(onObservation(observed(looked, lookup), c), notOffered), c);
    assert.match(lastMessage(n), /repeated_call.*orders\.get was already called in this run and its result is above/);
    for (let i = 0; i < 3 && !outcome(n); i++) n = onObservation(observed(n, notOffered), c);
    assert.deepEqual([outcome(n)!.status, outcome(n)!.reason_code], ['budget_exhausted', 'model_repeat']);
  });

  test('a call asked for again while no final answer could stand yet is told to call the next tool, not to answer', () => {
    // The 1.5B, told to "use it to give the final answer" after repeating crm.find_customer, guessed an order id.
    const grounded: ReactSkill = { ...skill, groundedBy: ['shipping.track'] };
    const c = config({ model: { ...loop, skill: (name) => (name === skill.name ? grounded : undefined) } });
    const lookup = answer(calls(['orders.get', { order_id: 'O-12345678' }]));
    const w1 = onObservation(observed(onTask(task('Where is my order O-12345678?'), c), lookup), c);
    const looked = onObservation(
      observed(w1, (req) => [verdict(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-12345678', status: 'shipped' })]),
      c,
    );
    // A call the results allow is due: the turn offers calls only (offered a question too, the 1.5B asked "Is there anything else …?").
    const tools = (JSON.parse(request(looked)!.steps[0]!.input_json) as { tools: Array<{ function: { name: string } }> }).tools.map((t) => t.function.name);
    assert.deepEqual(tools, ['orders__get', 'shipping__track']);
    // What the results already give every required argument of is named last (the 1.5B called crm.find_customer again instead of orders.latest).
    assert.match(lastMessage(looked), /\(Calls you can make now with values the ticket or the results gave: shipping__track \{"order_id":"O-12345678"\}\.\)/);
    const again = onObservation(observed(looked, lookup), c);
    const said = lastMessage(again);
    assert.match(
      said,
      /was already called in this run and its result is above: use the values it returned to call the next tool \(a final answer needs a verified result of shipping\.track first/,
    );
    assert.doesNotMatch(said, /give the final answer/);
    // The withheld tool named again natively (the gate refuses it as not offered): the same telling.
    const told = lastMessage(onObservation(observed(again, notOffered), c));
    assert.match(
      told,
      /orders\.get was already called in this run and its result is above: use the values it returned to call the next tool \(a final answer needs a verified result of shipping\.track first/,
    );
  });

  test('two failed tool waves in a row: the model is asked for a reflection; its answer is kept in the run and acted on', () => {
    const c = config();
    const lookup = answer(calls(['orders.get', { order_id: 'O-12345678' }]));
    const failed = (req: ThoughtRequest) => [verdict(req.steps[0]!.step_id, 'orders.get', null, 'timeout', 'no answer in 2000 ms')];
    let d = onTask(task('Where is my order O-12345678?'), c);
    d = onObservation(observed(d, lookup), c);
    d = onObservation(observed(d, failed), c);
    d = onObservation(observed(d, answer(calls(['orders.get', { order_id: 'O-12345678' }]))), c);
    d = onObservation(observed(d, failed), c);
    const body = JSON.parse(request(d)!.steps[0]!.input_json) as {
      messages: Array<{ content: string | null }>;
      response_format: { json_schema: { name: string } };
      tools?: unknown;
    };
    assert.match(body.messages[0]!.content!, /^Skill: order-status@1\nTurn: reflection\n/);
    assert.match(
      body.messages[0]!.content!,
      /reflection turn: .*\n- retry_with_changed_input: call the failed tool again .*a timeout or a server error \(5xx\) is often passing/,
      'the rules say what each action makes the run do',
    );
    assert.equal(body.response_format.json_schema.name, 'reflection');
    assert.equal(body.tools, undefined);
    const reflection = {
      data_completeness: { verdict: 'MISSING', reason: 'the order could not be read' },
      logic_consistency: { verdict: 'PASS', reason: 'looking the order up is right' },
      policy_compliance: { verdict: 'PASS', reason: 'read-only tools' },
      uncertainty: { verdict: 'MISSING', reason: 'the order service times out' },
      action: 'ask_person',
      reason: 'the order service keeps timing out; a person should check the order',
    } as const;
    const end = onObservation(observed(d, answer({ kind: 'reflection', reflection, usage })), c);
    const o = outcome(end)!;
    assert.deepEqual([o.status, o.reason_code], ['awaiting_input', 'reflection']);
    const kept = o.reflections.at(-1)!;
    assert.equal(kept.author, 'model:order-status@1');
    assert.equal(kept.summary, reflection.reason);
    assert.equal(kept.action, 'ask_human');
    assert.deepEqual(
      kept.dimensions.map((x) => x.result),
      ['MISSING', 'PASS', 'PASS', 'MISSING'],
    );
  });

  test('a reflection that retries puts the reflection in every later prompt', () => {
    const c = config({ reflectAfter: 1 });
    const failed = (req: ThoughtRequest) => [verdict(req.steps[0]!.step_id, 'orders.get', null, 'not_found', '404')];
    let d = onTask(task('Where is my order O-12345678?'), c);
    d = onObservation(observed(d, answer(calls(['orders.get', { order_id: 'O-12345678' }]))), c);
    d = onObservation(observed(d, failed), c);
    const retry = {
      data_completeness: { verdict: 'MISSING', reason: 'no such order' },
      logic_consistency: { verdict: 'PASS', reason: '' },
      policy_compliance: { verdict: 'PASS', reason: '' },
      uncertainty: { verdict: 'PASS', reason: '' },
      action: 'retry_with_changed_input',
      reason: 'try the order id without its prefix',
    } as const;
    d = onObservation(observed(d, answer({ kind: 'reflection', reflection: retry, usage })), c);
    const body = JSON.parse(request(d)!.steps[0]!.input_json) as {
      messages: Array<{ role: string; content: string | null }>;
      tools?: Array<{ function: { name: string } }>;
    };
    assert.ok(
      body.messages.some((m) => m.role === 'system' && /reflection \(retry_with_changed_input\): try the order id without its prefix/.test(m.content ?? '')),
    );
    // The model decided to act: the turn right after offers calls only (no question to the customer), as the real 1.5B asked one instead.
    assert.deepEqual(
      body.tools?.map((t) => t.function.name),
      ['orders__get', 'shipping__track'],
    );
    d = onObservation(observed(d, answer(calls(['orders.get', { order_id: '12345678' }]))), c);
    d = onObservation(
      observed(d, (req) => [verdict(req.steps[0]!.step_id, 'orders.get', { order_id: 'O-12345678', status: 'placed' })]),
      c,
    );
    const after = JSON.parse(request(d)!.steps[0]!.input_json) as { tools?: Array<{ function: { name: string } }> };
    assert.deepEqual(
      after.tools?.map((t) => t.function.name),
      ['orders__get', 'shipping__track', 'ask_customer'],
      'one turn only',
    );
  });

  test("bounds: the skill's turns, its token budget, and the repeated-call cap each end the run with their own reason", () => {
    const turns = config({ model: { ...loop, skill: () => ({ ...skill, maxModelTurns: 1 }) } });
    let d = onTask(task('Where is my order O-12345678?'), turns);
    d = onObservation(observed(d, answer(calls(['orders.get', { order_id: 'O-12345678' }]))), turns);
    d = onObservation(
      observed(d, (req) => [verdict(req.steps[0]!.step_id, 'orders.get', { status: 'shipped' })]),
      turns,
    );
    assert.equal(outcome(d)!.reason_code, 'model_turns');

    const tokens = config({ model: { ...loop, skill: () => ({ ...skill, tokenBudget: 500 }) } });
    d = onTask(task('Where is my order O-12345678?'), tokens);
    d = onObservation(
      observed(d, answer({ ...calls(['orders.get', { order_id: 'O-12345678' }]), usage: { prompt_tokens: 500, completion_tokens: 100, total_tokens: 600 } })),
      tokens,
    );
    assert.equal(outcome(d)!.reason_code, 'token_budget');

    // The cap counts calls made again after they failed (one asked again after a verified result is refused before it runs).
    const c = config({ repeatCap: 1, noveltyWaves: 5 });
    d = onTask(task('Where is my order O-12345678?'), c);
    const same = answer(calls(['orders.get', { order_id: 'O-12345678' }]));
    d = onObservation(observed(d, same), c);
    d = onObservation(
      observed(d, (req) => [verdict(req.steps[0]!.step_id, 'orders.get', null, 'timeout', 'no answer in 2000 ms')]),
      c,
    );
    d = onObservation(observed(d, same), c);
    assert.equal(outcome(d)!.reason_code, 'model_repeat');
  });

  test('a skill whose facts alone exceed its context window ends as context_overflow, never a truncated fact', () => {
    const tiny = config({ model: { ...loop, skill: () => ({ ...skill, contextWindow: 64 }) } });
    const d = onTask(task(`Where is my order O-12345678? ${'please '.repeat(100)}`), tiny);
    assert.equal(outcome(d)!.reason_code, 'context_overflow');
  });

  test('the same records give the same decisions (a replay re-decides without the model)', () => {
    const c = config();
    const a = onTask(task('Where is my order O-12345678?'), c);
    const b = onTask(task('Where is my order O-12345678?'), c);
    assert.equal(JSON.stringify(a), JSON.stringify(b));
    const wa = onObservation(observed(a, answer(calls(['orders.get', { order_id: 'O-12345678' }]))), c);
    const wb = onObservation(observed(b, answer(calls(['orders.get', { order_id: 'O-12345678' }]))), c);
    assert.equal(JSON.stringify(wa), JSON.stringify(wb));
  });
});
