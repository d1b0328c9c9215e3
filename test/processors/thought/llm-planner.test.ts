import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { onTask } from '../../../processors/thought/core.ts';
import { LlmPlanner, MAX_PLANNER_NAME, extractJsonObject, type LlmRecord } from '../../../processors/thought/planners/llm.ts';
import { PlanValidator } from '../../../processors/plan.ts';
import { createPlanner } from '../../../processors/thought/planners/factory.ts';
import { loadFlows, DEFAULT_FLOWS_DIR } from '../../../processors/thought/planners/flows.ts';
import { GraphPlanner } from '../../../processors/thought/planners/graph.ts';
import type { PlannerTask } from '../../../processors/thought/planners/planner.ts';
import { ConfigError } from '../../../runtime/errors.ts';
import { startLlmServer, type LlmServer } from '../../helpers/llm-server.ts';
import { flowPlan, loadWorld, onlyRequest, task as taskRecord, thoughtConfig } from '../fixtures.ts';

const world = loadWorld();
const validator = new PlanValidator(world.ajv, 50);
const KEY = 'sk-test-0123456789abcdef';
const TASK: PlannerTask = { thought_id: 't-1', text: 'Where is my order? alice@example.com', metadata: {} };

/** A valid plan over the demo tools, different from the flow's (other step ids, other output names). */
function llmPlan(email = 'alice@example.com') {
  return {
    flow: { id: 'llm', version: 1 },
    steps: [
      { id: 'find', tool: 'crm.find_customer', input: { email }, depends_on: [] },
      { id: 'order', tool: 'orders.latest', input: { customer_id: '{{find.customer_id}}' }, depends_on: ['find'] },
      { id: 'tier', tool: 'crm.tier', input: { customer_id: '{{find.customer_id}}' }, depends_on: ['find'] },
      { id: 'ship', tool: 'shipping.track', input: { order_id: '{{order.order_id}}' }, depends_on: ['order'] },
    ],
    output: { customer: '{{find.customer_id}}', status: '{{order.status}}', tier: '{{tier.tier}}', shipping: '{{ship.state}}' },
  };
}

let server: LlmServer;
let planner: LlmPlanner;

function newPlanner(overrides: { timeoutMs?: number; apiKey?: string } = {}): LlmPlanner {
  return new LlmPlanner({
    baseUrl: server.baseUrl,
    model: 'test-model',
    apiKey: KEY,
    maxSteps: 50,
    fallback: new GraphPlanner(world.flow, world.tools),
    validator,
    tools: world.tools,
    catalog: world.catalog,
    ...overrides,
  });
}

/** gather then plan, the way Thought's shell and core do it. */
async function run(p: LlmPlanner = planner, t: PlannerTask = TASK) {
  const record = await p.gather(t);
  return { record, parsed: JSON.parse(record) as LlmRecord, result: p.plan(t, record) };
}

function assertFallback(result: ReturnType<LlmPlanner['plan']>, reason: RegExp) {
  assert.equal(result.kind, 'plan');
  assert.ok(result.planner.startsWith('llm->graph('), result.planner);
  assert.match(result.planner, reason);
  assert.ok(result.planner.length <= MAX_PLANNER_NAME, `${result.planner.length} chars`);
  assert.deepEqual((result as { plan: unknown }).plan, flowPlan(world), 'the graph planner made the plan');
}

before(async () => {
  server = await startLlmServer();
});
after(async () => {
  await server.close();
});
beforeEach(() => {
  planner = newPlanner();
});

describe('LlmPlanner.gather', () => {
  test('sends model, messages (system prompt with schema, rules and tools; the task as user message) and the Bearer key to /v1/chat/completions', async () => {
    server.enqueue({ content: JSON.stringify(llmPlan()) });
    const before = server.count;
    await planner.gather(TASK);
    assert.equal(server.count, before + 1);
    const req = server.requests.at(-1)!;
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/v1/chat/completions');
    assert.equal(req.headers.authorization, `Bearer ${KEY}`);
    assert.match(String(req.headers['content-type']), /application\/json/);
    assert.equal(req.body?.model, 'test-model');
    assert.equal(req.body?.temperature, 0);
    assert.equal(req.body?.max_tokens, 2048);
    assert.equal(req.body?.response_format, undefined, 'response_format is not required of the server');
    const [system, user] = req.body!.messages!;
    assert.deepEqual([system!.role, user!.role], ['system', 'user']);
    assert.equal(user!.content, TASK.text);
    for (const tool of ['crm.find_customer', 'orders.latest', 'crm.tier', 'shipping.track'])
      assert.ok(system!.content.includes(`- ${tool}: `), `prompt describes ${tool}`);
    assert.match(system!.content, /returns fields: order_id, customer_id, status, total_cents, placed_at/);
    assert.match(system!.content, /"depends_on"/);
    assert.match(system!.content, /\{\{S1\.field\}\}/);
    assert.match(system!.content, /At most 50 steps/);
    assert.ok(system!.content.includes('"pattern":"^[A-Za-z][A-Za-z0-9_]{0,31}$"'), 'the plan JSON Schema is in the prompt');
  });

  test('without a key no Authorization header is sent', async () => {
    server.enqueue({ content: '{}' });
    await newPlanner({ apiKey: '' }).gather(TASK);
    assert.equal(server.requests.at(-1)!.headers.authorization, undefined);
  });

  test('records the answer verbatim with model and usage, and never the API key', async () => {
    const content = `Here you go:\n${JSON.stringify(llmPlan())}`;
    server.enqueue({ content, model: 'served-model' });
    const { record, parsed } = await run();
    assert.equal(parsed.ok, true);
    assert.ok(parsed.ok);
    assert.equal(parsed.content, content);
    assert.equal(parsed.model, 'served-model');
    assert.equal(parsed.finish_reason, 'stop');
    assert.ok(parsed.usage.total_tokens! > 0);
    assert.ok(!record.includes(KEY));
  });

  test('an endpoint that echoes the key in an error body does not get it recorded', async () => {
    server.enqueue({ status: 401, body: `invalid key Bearer ${KEY}` });
    const { record, parsed } = await run();
    assert.deepEqual([parsed.ok, !parsed.ok && parsed.error], [false, 'http_401']);
    assert.ok(!record.includes(KEY), record);
    assert.match(record, /\[redacted\]/);
  });

  test('the planner does not show its key when inspected (as a logger or a crash report would)', async () => {
    const { inspect } = await import('node:util');
    const shown = inspect(planner, { depth: 8 });
    assert.ok(shown.includes('test-model') && !shown.includes(KEY));
  });
});

describe('LlmPlanner.plan', () => {
  test('a valid plan is the plan, named llm, and passes the validator', async () => {
    server.enqueue({ content: JSON.stringify(llmPlan()) });
    const { result } = await run();
    assert.deepEqual(result, { kind: 'plan', planner: 'llm', plan: llmPlan() });
    assert.deepEqual(validator.validate((result as { plan: unknown }).plan, world.tools), []);
  });

  test('a plan in a ```json fence with prose around it is extracted', async () => {
    server.enqueue({ content: `Sure! Here is the plan:\n\n\`\`\`json\n${JSON.stringify(llmPlan(), null, 2)}\n\`\`\`\n\nLet me know {if} you need more.` });
    const { result } = await run();
    assert.deepEqual(result, { kind: 'plan', planner: 'llm', plan: llmPlan() });
  });

  test('a plan in a plain ``` fence is extracted', async () => {
    server.enqueue({ content: `\`\`\`\n${JSON.stringify(llmPlan())}\n\`\`\`` });
    assert.equal((await run()).result.planner, 'llm');
  });

  test('a plan inside prose (no fence, braces in its strings) is extracted', async () => {
    const plan = llmPlan();
    plan.steps[0]!.input = { email: 'alice@example.com' };
    server.enqueue({ content: `<think>the user wants {order} status</think>I will look up the customer first ${JSON.stringify(plan)} and that is all.` });
    const { result } = await run();
    assert.deepEqual(result, { kind: 'plan', planner: 'llm', plan });
  });

  test('a plan without "flow" gets the llm flow', async () => {
    const { flow: _, ...rest } = llmPlan();
    server.enqueue({ content: JSON.stringify(rest) });
    const { result } = await run();
    assert.equal(result.planner, 'llm');
    assert.deepEqual((result as { plan: { flow: unknown } }).plan.flow, { id: 'llm', version: 1 });
  });

  test('an answer that is not JSON falls back to the graph plan', async () => {
    server.enqueue({ content: 'I am sorry, I cannot help with { that request.' });
    assertFallback((await run()).result, /no JSON object in the answer/);
  });

  test('a cyclic plan falls back, and the planner name gives the cycle', async () => {
    const plan = llmPlan();
    plan.steps[0]!.depends_on = ['ship'];
    server.enqueue({ content: JSON.stringify(plan) });
    assertFallback((await run()).result, /invalid plan: steps form a cycle: find -> ship -> order -> find/);
  });

  test('a plan with an unknown tool falls back', async () => {
    const plan = llmPlan();
    plan.steps[2]!.tool = 'crm.delete_customer';
    server.enqueue({ content: JSON.stringify(plan) });
    assertFallback((await run()).result, /unknown tool crm\.delete_customer/);
  });

  test('a reference to a field the tool does not return falls back', async () => {
    const plan = llmPlan();
    plan.output.tier = '{{tier.level}}';
    server.enqueue({ content: JSON.stringify(plan) });
    assertFallback((await run()).result, /crm\.tier returns no field level/);
  });

  test('a long reason is cut so that the planner name fits 200 characters', async () => {
    const plan = { ...llmPlan(), steps: llmPlan().steps.map((s) => ({ ...s, tool: `nope.${'x'.repeat(40)}_${s.id}` })) };
    server.enqueue({ content: JSON.stringify(plan) });
    const { result } = await run();
    assertFallback(result, /unknown tool/);
    assert.equal(result.planner.length, MAX_PLANNER_NAME);
    assert.ok(result.planner.endsWith('…)'));
  });

  test('no answer within timeoutMs (a hanging server) records a timeout and falls back', async () => {
    server.enqueue({ hang: true });
    const started = Date.now();
    const { parsed, result } = await run(newPlanner({ timeoutMs: 300 }));
    const took = Date.now() - started;
    assert.ok(took >= 250 && took < 3000, `gave up after ${took} ms`);
    assert.deepEqual([parsed.ok, !parsed.ok && parsed.error], [false, 'timeout']);
    assertFallback(result, /timeout: no complete answer within 300 ms/);
  });

  test('HTTP 500 records http_500 and falls back', async () => {
    server.enqueue({ status: 500, body: '{"error":{"message":"model overloaded"}}' });
    const { parsed, result } = await run();
    assert.deepEqual([parsed.ok, !parsed.ok && parsed.error], [false, 'http_500']);
    assertFallback(result, /http_500: HTTP 500: .*model overloaded/);
  });

  test('a 200 that is no chat completion records bad_response and falls back', async () => {
    server.enqueue({ status: 200, body: '<html>gateway</html>', contentType: 'text/html' });
    const { parsed, result } = await run();
    assert.deepEqual([parsed.ok, !parsed.ok && parsed.error], [false, 'bad_response']);
    assertFallback(result, /bad_response/);
  });

  test('a refused connection records network and falls back', async () => {
    const gone = await startLlmServer();
    const url = gone.baseUrl;
    await gone.close();
    const p = new LlmPlanner({
      baseUrl: url,
      model: 'm',
      maxSteps: 50,
      fallback: new GraphPlanner(world.flow, world.tools),
      validator,
      tools: world.tools,
      catalog: world.catalog,
      timeoutMs: 2000,
    });
    const { parsed, result } = await run(p);
    assert.deepEqual([parsed.ok, !parsed.ok && parsed.error], [false, 'network']);
    assertFallback(result, /network: ECONNREFUSED/);
  });

  test('no record (or an unreadable one) falls back; when the fallback needs input, so does the result', () => {
    assertFallback(planner.plan(TASK, null), /no LLM answer recorded/);
    assertFallback(planner.plan(TASK, 'not json'), /unreadable LLM record/);
    const parked = planner.plan({ ...TASK, text: 'Where is my order?' }, null);
    assert.equal(parked.kind, 'needs_input');
    assert.ok(parked.planner.startsWith('llm->graph('));
  });

  test('plan is pure: the same (task, record) gives deep-equal results, and plan never calls the server', async () => {
    for (const answer of [{ content: JSON.stringify(llmPlan()) }, { content: 'garbage' }, { status: 503 }]) {
      server.enqueue(answer);
      const record = await planner.gather(TASK);
      const count = server.count;
      const first = planner.plan(TASK, record);
      const second = newPlanner().plan(structuredClone(TASK), `${record}`);
      assert.deepEqual(second, first);
      assert.deepEqual(planner.plan(TASK, record), first);
      assert.equal(server.count, count, 'plan made no request');
    }
  });

  test('through Thought: the LLM plan starts the run with its first wave, and the answer is in the run record', async () => {
    server.enqueue({ content: JSON.stringify(llmPlan()) });
    const record = await planner.gather(TASK);
    const wave = onlyRequest(onTask(taskRecord(TASK.text), thoughtConfig(world, { planner }), undefined, record));
    assert.equal(wave.run.planner, 'llm');
    assert.equal(wave.run.planner_record, record);
    assert.deepEqual([wave.run.flow_id, wave.run.flow_version], ['llm', 1]);
    assert.deepEqual(
      wave.steps.map((s) => s.step_id),
      ['find'],
    );
  });
});

describe('extractJsonObject', () => {
  test('prefers a json fence, then any fence, then the whole text, then the first balanced object that parses', () => {
    assert.deepEqual(extractJsonObject('```\n{"a":1}\n```\n```json\n{"b":2}\n```'), { b: 2 });
    assert.deepEqual(extractJsonObject('  {"a":1}  '), { a: 1 });
    assert.deepEqual(extractJsonObject('x {not json} then {"a":"}{"} end'), { a: '}{' });
    assert.equal(extractJsonObject('[1,2]'), null);
    assert.equal(extractJsonObject('{"a":'), null);
  });
});

describe('createPlanner with TAO_PLANNER=llm', () => {
  const deps = { flows: loadFlows(DEFAULT_FLOWS_DIR, world.ajv), catalog: world.catalog, tools: world.tools, validator };
  const env = { TAO_PLANNER: 'llm', TAO_LLM_BASE_URL: 'http://127.0.0.1:1/v1', TAO_LLM_MODEL: 'm' };

  test('builds an LlmPlanner with the graph fallback', () => {
    const p = createPlanner(env, deps);
    assert.ok(p instanceof LlmPlanner);
    assert.equal(p.name, 'llm');
    assertFallback(p.plan(TASK, null), /no LLM answer/);
  });

  test('a missing or bad setting is a ConfigError naming the variable', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ TAO_LLM_BASE_URL: '' }, /TAO_LLM_BASE_URL is required/],
      [{ TAO_LLM_MODEL: '' }, /TAO_LLM_MODEL is required/],
      [{ TAO_LLM_BASE_URL: 'ftp://x/v1' }, /TAO_LLM_BASE_URL must be an http\(s\) URL, got "ftp:\/\/x\/v1"/],
      [{ TAO_LLM_TIMEOUT_MS: '0' }, /TAO_LLM_TIMEOUT_MS must be a duration from 1ms to 10m/],
      [{ TAO_LLM_API_KEY_ENV: 'not a name' }, /TAO_LLM_API_KEY_ENV/],
      [{ TAO_FLOW: 'nope@1' }, /TAO_FLOW=nope@1/],
      [{ TAO_PLANNER: 'oracle' }, /TAO_PLANNER must be one of router, graph, llm, react, plan-replan, got "oracle"/],
    ];
    for (const [override, message] of cases)
      assert.throws(
        () => createPlanner({ ...env, ...override }, deps),
        (err: unknown) => err instanceof ConfigError && message.test(err.message),
      );
  });

  test('the key comes from the variable TAO_LLM_API_KEY_ENV names (TAO_LLM_API_KEY by default)', async () => {
    const p1 = createPlanner({ ...env, TAO_LLM_BASE_URL: server.baseUrl, TAO_LLM_API_KEY: 'k-default' }, deps);
    const p2 = createPlanner({ ...env, TAO_LLM_BASE_URL: server.baseUrl, TAO_LLM_API_KEY_ENV: 'MY_KEY', MY_KEY: 'k-mine', TAO_LLM_API_KEY: 'k-default' }, deps);
    server.enqueue({ content: '{}' }, { content: '{}' });
    await p1.gather!(TASK);
    assert.equal(server.requests.at(-1)!.headers.authorization, 'Bearer k-default');
    await p2.gather!(TASK);
    assert.equal(server.requests.at(-1)!.headers.authorization, 'Bearer k-mine');
  });
});
