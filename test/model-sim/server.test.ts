import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { Ajv } from 'ajv';
import { Agent, request } from 'undici';

import { TAO_BIN } from '../../cli/processes.ts';
import { HALLUCINATED_TOOL, OWNED_BY, ScenarioError, startModelSim, type ModelSim, type ModelSimOptions } from '../../model-sim/server.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: ToolCall[];
}

interface Completion {
  id: string;
  object: string;
  model: string;
  system_fingerprint: string;
  choices: Array<{ index: number; message: AssistantMessage; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

type Message = Record<string, unknown>;

const PARAMS = {
  'orders.get': { type: 'object', additionalProperties: false, required: ['order_id'], properties: { order_id: { type: 'string', pattern: '^O-[0-9]{8}$' } } },
  'shipping.track': {
    type: 'object',
    additionalProperties: false,
    required: ['order_id'],
    properties: { order_id: { type: 'string', pattern: '^O-[0-9]{8}$' } },
  },
} as const;

/** The request's `tools`, as Thought builds them (wire names with `__`). */
const TOOLS = Object.entries(PARAMS).map(([name, parameters]) => ({
  type: 'function',
  function: { name: name.replaceAll('.', '__'), description: `the ${name} tool`, parameters },
}));

/** Fake tool results, as the demo tool server would answer. */
const FAKE_RESULTS: Record<string, unknown> = {
  orders__get: { order_id: 'O-12345678', customer_id: 'C-100200', status: 'delivered', total_cents: 38312, placed_at: '2025-03-14T09:26:53+08:00' },
  shipping__track: { order_id: 'O-12345678', carrier: 'SF', state: 'delivered', eta: '2025-03-17T04:00:00Z' },
};

function opening(text: string, skill = 'order-status@1'): Message[] {
  return [
    { role: 'system', content: `Skill: ${skill}\nYou are a customer-service agent.` },
    { role: 'user', content: text },
  ];
}

function body(messages: Message[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model: 'gpt-test', messages, tools: TOOLS, tool_choice: 'auto', temperature: 0, ...extra });
}

interface Ctx {
  sim: ModelSim;
  post: (text: string, headers?: Record<string, string>, signal?: AbortSignal) => Promise<Reply>;
  get: (path: string, headers?: Record<string, string>) => Promise<Reply>;
  /** Sends a chat completion and parses it (asserting 200). */
  chat: (messages: Message[], extra?: Record<string, unknown>) => Promise<Completion>;
  fault: (spec: Record<string, unknown> | unknown[]) => Promise<Reply>;
}

async function withSim(fn: (ctx: Ctx) => Promise<void>, opts: Partial<ModelSimOptions> = {}): Promise<void> {
  const sim = await startModelSim({ port: 0, ...opts });
  const agent = new Agent();
  const call = async (
    path: string,
    method: 'GET' | 'POST' | 'DELETE',
    text?: string,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Reply> => {
    const res = await request(`${sim.url}${path}`, {
      method,
      body: text,
      headers: { 'content-type': 'application/json', ...headers },
      dispatcher: agent,
      signal,
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };
  const ctx: Ctx = {
    sim,
    post: (text, headers, signal) => call('/v1/chat/completions', 'POST', text, headers, signal),
    get: (path, headers) => call(path, 'GET', undefined, headers),
    chat: async (messages, extra) => {
      const r = await call('/v1/chat/completions', 'POST', body(messages, extra));
      assert.equal(r.status, 200, r.text);
      return JSON.parse(r.text) as Completion;
    },
    fault: (spec) => call('/__control/faults', 'POST', JSON.stringify(spec)),
  };
  try {
    await fn(ctx);
  } finally {
    await sim.close();
    await agent.close();
  }
}

/** Appends the assistant message and, for each tool call, a fake `tool` result. */
function answerTools(messages: Message[], m: AssistantMessage): void {
  messages.push(m as unknown as Message);
  for (const c of m.tool_calls ?? []) {
    messages.push({ role: 'tool', tool_call_id: c.id, content: JSON.stringify(FAKE_RESULTS[c.function.name] ?? { error: 'unknown tool' }) });
  }
}

function only<T>(xs: readonly T[] | undefined): T {
  assert.equal(xs?.length, 1, `exactly one element expected, got ${JSON.stringify(xs)}`);
  return (xs as readonly T[])[0] as T;
}

function errorBody(r: Reply): { message: string; type: string; param: string | null; code: string | null } {
  const parsed = JSON.parse(r.text) as { error: { message: string; type: string; param: string | null; code: string | null } };
  assert.deepEqual(Object.keys(parsed.error).sort(), ['code', 'message', 'param', 'type'], 'OpenAI error shape');
  return parsed.error;
}

test('a 3-turn order-status conversation, driven like a client, ends with a final answer quoting status and ETA', async () => {
  await withSim(async ({ sim, chat }) => {
    const messages = opening('Where is my order O-12345678?');

    const t1 = await chat(messages);
    const c1 = only(t1.choices[0]?.message.tool_calls);
    assert.equal(t1.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(c1.function.name, 'orders__get');
    assert.deepEqual(JSON.parse(c1.function.arguments), { order_id: 'O-12345678' });
    assert.equal(t1.system_fingerprint, 'tao-model-sim', 'the answer says it comes from the simulator');
    assert.equal(t1.model, 'gpt-test', 'the requested model is echoed');
    answerTools(messages, t1.choices[0]!.message);

    const t2 = await chat(messages);
    const c2 = only(t2.choices[0]?.message.tool_calls);
    assert.equal(c2.function.name, 'shipping__track');
    assert.deepEqual(JSON.parse(c2.function.arguments), { order_id: 'O-12345678' }, 'the order id comes from the orders.get result');
    assert.notEqual(c2.id, c1.id, 'tool call ids are unique in a conversation');
    answerTools(messages, t2.choices[0]!.message);

    const t3 = await chat(messages);
    assert.equal(t3.choices[0]?.finish_reason, 'stop');
    assert.equal(t3.choices[0]?.message.tool_calls, undefined);
    assert.equal(t3.choices[0]?.message.content, 'Order O-12345678 is delivered. The shipment with SF is delivered, ETA 2025-03-17T04:00:00Z.');

    for (const t of [t1, t2, t3]) {
      const { prompt_tokens, completion_tokens, total_tokens } = t.usage;
      assert.ok(prompt_tokens > 0 && completion_tokens > 0, 'usage is estimated on every answer');
      assert.equal(total_tokens, prompt_tokens + completion_tokens);
    }
    assert.ok(t3.usage.prompt_tokens > t1.usage.prompt_tokens, 'prompt tokens grow with the conversation');

    const stats = sim.stats();
    assert.equal(stats.total, 3);
    assert.deepEqual(stats.bySkill, { 'order-status': 3 });
    assert.deepEqual(stats.byOutcome, { tool_calls: 2, content: 1 });
    assert.deepEqual(
      stats.requests.map((r) => [r.turn, r.rule]),
      [
        [1, 'look the order up'],
        [2, 'track the shipment'],
        [3, 'answer with status and ETA'],
      ],
    );
  });
});

test('the same request gets the same answer (deterministic), created from the injected clock', async () => {
  await withSim(
    async ({ post }) => {
      const text = body(opening('Where is my order O-12345678?'));
      const a = await post(text);
      const b = await post(text);
      assert.equal(a.text, b.text);
      assert.equal((JSON.parse(a.text) as { created: number }).created, 1_700_000_000);
    },
    { clock: () => 1_700_000_000_000 },
  );
});

test('an order only placed ends after 2 turns without tracking; a text without an order id is asked for one', async () => {
  await withSim(async ({ chat }) => {
    const messages = opening('Has O-20250003 shipped?');
    const t1 = await chat(messages);
    const c1 = only(t1.choices[0]?.message.tool_calls);
    messages.push(t1.choices[0]!.message as unknown as Message);
    messages.push({
      role: 'tool',
      tool_call_id: c1.id,
      content: JSON.stringify({ ...(FAKE_RESULTS['orders__get'] as object), order_id: 'O-20250003', status: 'placed' }),
    });
    const t2 = await chat(messages);
    assert.match(t2.choices[0]?.message.content ?? '', /O-20250003 has been placed but has not shipped yet/);

    const ask = await chat(opening('Where is my parcel?'));
    assert.match(ask.choices[0]?.message.content ?? '', /order number/);
  });
});

test('a skill prompt that says to answer without tools is obeyed: a direct answer at turn 1, no tool call; the usual prompt still calls', async () => {
  await withSim(async ({ chat, sim }) => {
    const told: Message[] = [
      { role: 'system', content: 'Skill: order-status@1\nYou are a customer-service agent. Answer directly without calling any tools.' },
      { role: 'user', content: 'Where is O-20250001?' },
    ];
    const direct = await chat(told);
    assert.equal(direct.choices[0]?.message.tool_calls, undefined);
    assert.match(direct.choices[0]?.message.content ?? '', /on its way/);
    assert.equal(sim.stats().requests.at(-1)?.rule, 'the skill says to answer without tools: answer directly, as a model would');
    const usual = await chat(opening('Where is O-20250001?'));
    assert.equal(only(usual.choices[0]?.message.tool_calls).function.name, 'orders__get');
  });
});

test('GET /v1/models and /health say plainly that this is a simulator', async () => {
  await withSim(async ({ get }) => {
    const models = await get('/v1/models');
    assert.equal(models.status, 200);
    assert.deepEqual(JSON.parse(models.text), { object: 'list', data: [{ id: 'tao-model-sim', object: 'model', created: 0, owned_by: OWNED_BY }] });
    assert.equal(OWNED_BY, 'tao-model-sim (simulator)');
    const health = JSON.parse((await get('/health')).text) as { ok: boolean; simulator: boolean; scenarios: string[] };
    assert.equal(health.simulator, true);
    assert.deepEqual(health.scenarios.sort(), [
      'account-access',
      'default',
      'expense-claim-status',
      'invoice-copy',
      'order-status',
      'outage-report',
      'refund-request',
    ]);
  });
});

test('stream: true is refused with an OpenAI error saying streaming is not simulated', async () => {
  await withSim(async ({ sim, post }) => {
    const r = await post(body(opening('Where is my order O-12345678?'), { stream: true }));
    assert.equal(r.status, 400);
    const e = errorBody(r);
    assert.equal(e.param, 'stream');
    assert.equal(e.type, 'invalid_request_error');
    assert.match(e.message, /streaming is not simulated/);
    assert.deepEqual(sim.stats().byOutcome, { invalid_request: 1 });
  });
});

test('malformed requests get a 400 naming the field', async () => {
  await withSim(async ({ post }) => {
    const notJson = await post('{"model": ');
    assert.equal(notJson.status, 400);
    assert.match(errorBody(notJson).message, /could not parse the JSON body/);

    const noModel = await post(JSON.stringify({ messages: opening('hi') }));
    assert.equal(errorBody(noModel).param, 'model');

    const noMessages = await post(JSON.stringify({ model: 'm', messages: [] }));
    assert.equal(noMessages.status, 400);
    assert.equal(errorBody(noMessages).param, 'messages');

    const badRole = await post(JSON.stringify({ model: 'm', messages: [{ role: 'wizard', content: 'x' }] }));
    assert.equal(errorBody(badRole).param, 'messages[0].role');

    const badTools = await post(JSON.stringify({ model: 'm', messages: opening('x'), tools: [{ type: 'function' }] }));
    assert.equal(errorBody(badTools).param, 'tools[0]');
  });
});

test('with an apiKey, /v1 requires the Bearer key (401 otherwise) and the key never appears in stats', async () => {
  const apiKey = 'sk-sim-secret-0123456789';
  await withSim(
    async ({ sim, post, get }) => {
      const text = body(opening('Where is my order O-12345678?'));
      const none = await post(text);
      assert.equal(none.status, 401);
      assert.equal(errorBody(none).code, 'invalid_api_key');
      assert.doesNotMatch(none.text, /sk-sim-secret/);
      assert.equal((await post(text, { authorization: 'Bearer sk-sim-wrong' })).status, 401);
      assert.equal((await post(text, { authorization: `Bearer ${apiKey}` })).status, 200);
      assert.equal((await get('/v1/models')).status, 401);
      assert.equal((await get('/v1/models', { authorization: `Bearer ${apiKey}` })).status, 200);
      assert.equal((await get('/health')).status, 200, 'health needs no key');
      assert.deepEqual(sim.stats().byOutcome, { unauthorized: 2, tool_calls: 1 });
      assert.doesNotMatch(JSON.stringify(sim.stats()), /sk-sim/);
    },
    { apiKey },
  );
});

test('an unknown skill (and a request without a Skill: line) gets the default scenario: a final answer saying it has none', async () => {
  await withSim(async ({ sim, chat }) => {
    const unknown = await chat(opening('Book me a flight', 'travel-booking@2'));
    assert.equal(unknown.choices[0]?.finish_reason, 'stop');
    assert.match(unknown.choices[0]?.message.content ?? '', /simulator, not a model\) has no scenario for skill "travel-booking"/);
    const bare = await chat([{ role: 'user', content: 'hello' }]);
    assert.match(bare.choices[0]?.message.content ?? '', /no scenario for skill "default"/);
    assert.deepEqual(sim.stats().bySkill, { 'travel-booking': 1, '(none)': 1 });
  });
});

test('a reflection turn gets a JSON answer with the four dimensions and an action', async () => {
  await withSim(async ({ chat }) => {
    const messages: Message[] = [
      { role: 'system', content: 'Skill: order-status@1\nTurn: reflection\nJudge the run.' },
      { role: 'user', content: 'Where is my order O-12345678?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'orders__get', arguments: '{"order_id":"O-12345678"}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: JSON.stringify({ error: { status: 503, message: 'unavailable' } }) },
    ];
    const rf = { type: 'json_schema', json_schema: { name: 'reflection', schema: { type: 'object' } } };
    const own = await chat(messages, { response_format: rf });
    const verdict = JSON.parse(own.choices[0]?.message.content ?? '') as Record<string, { verdict: string } | string>;
    assert.deepEqual(Object.keys(verdict).sort(), ['action', 'data_completeness', 'logic_consistency', 'policy_compliance', 'reason', 'uncertainty']);
    assert.equal(verdict['action'], 'ask_person', "order-status's own reflection rule");
    assert.equal((verdict['data_completeness'] as { verdict: string }).verdict, 'MISSING');

    // invoice-copy has no reflection rules: the default scenario's apply.
    messages[0] = { role: 'system', content: 'Skill: invoice-copy@1\nTurn: reflection' };
    const fallback = JSON.parse((await chat(messages, { response_format: rf })).choices[0]?.message.content ?? '') as Record<string, unknown>;
    assert.equal(fallback['action'], 'escalate');
  });
});

test('latencyMs delays every answer', async () => {
  await withSim(
    async ({ chat }) => {
      const t0 = performance.now();
      await chat(opening('Where is my order O-12345678?'));
      assert.ok(performance.now() - t0 >= 190, 'the answer took at least the configured latency');
    },
    { latencyMs: 200 },
  );
});

// ---------------------------------------------------------------------------
// Faults through the control API
// ---------------------------------------------------------------------------

test('rate_limit: 429 with Retry-After and an OpenAI error; the retry is answered, and stats count both requests', async () => {
  await withSim(async ({ sim, post, fault }) => {
    assert.equal((await fault({ kind: 'rate_limit', times: 1, retryAfterSeconds: 2 })).status, 201);
    const text = body(opening('Where is my order O-12345678?'));
    const first = await post(text);
    assert.equal(first.status, 429);
    assert.equal(first.headers['retry-after'], '2');
    assert.equal(errorBody(first).code, 'rate_limit_exceeded');
    const retry = await post(text);
    assert.equal(retry.status, 200);
    const s = sim.stats();
    assert.equal(s.requests.filter((r) => r.skill === 'order-status' && r.turn === 1).length, 2, 'the retried 429 was requested twice');
    assert.deepEqual(s.byFault, { rate_limit: 1 });
    assert.deepEqual(
      s.requests.map((r) => r.status),
      [429, 200],
    );
  });
});

test('server_error: 500 with an OpenAI error body', async () => {
  await withSim(async ({ post, fault }) => {
    await fault({ kind: 'server_error' });
    const r = await post(body(opening('Where is my order O-12345678?')));
    assert.equal(r.status, 500);
    assert.equal(errorBody(r).type, 'server_error');
  });
});

test('not_json: 200 application/json whose body does not parse', async () => {
  await withSim(async ({ post, fault }) => {
    await fault({ kind: 'not_json', times: 1 });
    const r = await post(body(opening('Where is my order O-12345678?')));
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.throws(() => JSON.parse(r.text), SyntaxError);
  });
});

test('timeout: the request is held without an answer until the client gives up; with delayMs it is answered late', async () => {
  await withSim(async ({ sim, post, fault }) => {
    await fault({ kind: 'timeout', times: 1 });
    const controller = new AbortController();
    const pending = post(body(opening('Where is my order O-12345678?')), {}, controller.signal);
    // Wait until the simulator has taken the request in, then give up as a client with a timeout would.
    while (sim.stats().total === 0) await new Promise((r) => setImmediate(r));
    const held = only(sim.stats().requests);
    assert.equal(held.fault, 'timeout');
    assert.equal(held.status, null, 'nothing was sent');
    controller.abort();
    await assert.rejects(pending, { name: 'AbortError' });

    await fault({ kind: 'timeout', times: 1, delayMs: 150 });
    const t0 = performance.now();
    const late = await post(body(opening('Where is my order O-12345678?')));
    assert.ok(performance.now() - t0 >= 140);
    assert.equal(late.status, 200, 'answered normally once the hold is over');
  });
});

test('hallucinated_tool: a tool call naming a tool the request does not offer', async () => {
  await withSim(async ({ chat, fault }) => {
    await fault({ kind: 'hallucinated_tool', times: 1 });
    const t = await chat(opening('Where is my order O-12345678?'));
    const c = only(t.choices[0]?.message.tool_calls);
    assert.equal(c.function.name, HALLUCINATED_TOOL);
    assert.ok(!TOOLS.some((tool) => tool.function.name === c.function.name));
  });
});

test('bad_arguments: the tool call breaks the tool parameter schema', async () => {
  await withSim(async ({ chat, fault }) => {
    await fault({ kind: 'bad_arguments', times: 1 });
    const t = await chat(opening('Where is my order O-12345678?'));
    const c = only(t.choices[0]?.message.tool_calls);
    assert.equal(c.function.name, 'orders__get');
    const validate = new Ajv({ strict: false }).compile(PARAMS['orders.get']);
    assert.equal(validate(JSON.parse(c.function.arguments)), false, `arguments ${c.function.arguments} must break the schema`);
  });
});

test('endless_repeat: every turn repeats the previous tool call with the same arguments', async () => {
  await withSim(async ({ sim, chat, fault }) => {
    await fault({ kind: 'endless_repeat', match: { skill: 'order-status' } });
    const messages = opening('Where is my order O-12345678?');
    const t1 = await chat(messages);
    assert.equal(only(t1.choices[0]?.message.tool_calls).function.name, 'orders__get', 'turn 1 has nothing to repeat: the normal call');
    answerTools(messages, t1.choices[0]!.message);
    for (let turn = 2; turn <= 4; turn += 1) {
      const t = await chat(messages);
      const c = only(t.choices[0]?.message.tool_calls);
      assert.equal(c.function.name, 'orders__get', `turn ${turn} repeats instead of tracking`);
      assert.deepEqual(JSON.parse(c.function.arguments), { order_id: 'O-12345678' });
      answerTools(messages, t.choices[0]!.message);
    }
    assert.deepEqual(sim.stats().byFault, { endless_repeat: 3 });
  });
});

test('a fault applies only to requests its match selects, and DELETE /__control/faults removes it', async () => {
  await withSim(async ({ sim, post, chat, fault }) => {
    await fault({ kind: 'server_error', match: { skill: 'refund-request' } });
    await fault({ kind: 'rate_limit', match: { userText: 'O-99999999', turn: 2 } });
    assert.equal((await post(body(opening('Where is my order O-12345678?')))).status, 200, 'other skill');
    assert.equal((await post(body(opening('Refund O-12345678', 'refund-request@1')))).status, 500);
    const messages = opening('Where is my order O-99999999?');
    const t1 = await chat(messages);
    answerTools(messages, t1.choices[0]!.message);
    assert.equal((await post(body(messages))).status, 429, 'turn 2 of that text');
    const list = JSON.parse(await (await fetch(`${sim.url}/__control/faults`)).text()) as { faults: Array<{ applied: number }> };
    assert.deepEqual(
      list.faults.map((f) => f.applied),
      [1, 1],
    );
    const cleared = await fetch(`${sim.url}/__control/faults`, { method: 'DELETE' });
    assert.deepEqual(await cleared.json(), { cleared: 2 });
    assert.equal((await post(body(opening('Refund O-12345678', 'refund-request@1')))).status, 200);
  });
});

test('an invalid fault spec is refused with a 400 naming the field', async () => {
  await withSim(async ({ fault }) => {
    const cases: Array<[Record<string, unknown> | unknown[], string]> = [
      [{ kind: 'meltdown' }, 'kind'],
      [{}, 'kind'],
      [[], 'body'],
      [{ kind: 'rate_limit', times: 0 }, 'times'],
      [{ kind: 'rate_limit', delayMs: 10 }, 'delayMs'],
      [{ kind: 'timeout', retryAfterSeconds: 1 }, 'retryAfterSeconds'],
      [{ kind: 'timeout', match: { turn: 'two' } }, 'match.turn'],
      [{ kind: 'timeout', colour: 'red' }, 'colour'],
    ];
    for (const [spec, field] of cases) {
      const r = await fault(spec);
      assert.equal(r.status, 400, JSON.stringify(spec));
      const e = errorBody(r);
      assert.equal(e.param, field, JSON.stringify(spec));
      assert.equal(e.code, 'invalid_fault_spec');
    }
  });
});

// ---------------------------------------------------------------------------
// Faults chosen by [sim:...] markers in the user text
// ---------------------------------------------------------------------------

test('[sim:rate_limit] faults the first attempt of each distinct request; the identical retry is answered', async () => {
  await withSim(async ({ sim, post }) => {
    const messages = opening('Where is my order O-12345678? [sim:rate_limit]');
    const text = body(messages);
    assert.equal((await post(text)).status, 429);
    const retry = await post(text);
    assert.equal(retry.status, 200);
    answerTools(messages, (JSON.parse(retry.text) as Completion).choices[0]!.message);
    assert.equal((await post(body(messages))).status, 429, 'turn 2 is a new request: faulted once again');
    assert.deepEqual(
      sim.stats().requests.map((r) => [r.turn, r.status, r.faultId]),
      [
        [1, 429, 'marker'],
        [1, 200, null],
        [2, 429, 'marker'],
      ],
    );
  });
});

test('[sim:hallucinated_tool@2] applies at model turn 2 only; [sim:server_error*2] faults two attempts', async () => {
  await withSim(async ({ post, chat }) => {
    const messages = opening('Where is my order O-12345678? [sim:hallucinated_tool@2]');
    const t1 = await chat(messages);
    assert.equal(only(t1.choices[0]?.message.tool_calls).function.name, 'orders__get');
    answerTools(messages, t1.choices[0]!.message);
    const t2 = await chat(messages);
    assert.equal(only(t2.choices[0]?.message.tool_calls).function.name, HALLUCINATED_TOOL);

    const text = body(opening('Where is my order O-12345678? [sim:server_error*2]'));
    assert.deepEqual([(await post(text)).status, (await post(text)).status, (await post(text)).status], [500, 500, 200]);
  });
});

// ---------------------------------------------------------------------------
// Scenario validation at start-up
// ---------------------------------------------------------------------------

test('invalid scenario files stop start-up with a one-line error naming the file and the JSON path', async () => {
  const good = { rules: [{ name: 'r', answer: { content: 'ok' } }] };
  const cases: Array<[string, string, RegExp]> = [
    [
      'two-answers.json',
      JSON.stringify({ rules: [{ name: 'r', answer: { content: 'a', json: {} } }] }),
      /two-answers\.json: \/rules\/0\/answer: an answer has exactly one of tool_calls, content, json$/,
    ],
    [
      'bad-regex.json',
      JSON.stringify({ rules: [{ name: 'r', when: { user: 'O-(' }, answer: { content: 'a' } }] }),
      /bad-regex\.json: \/rules\/0\/when\/user: invalid regular expression/,
    ],
    [
      'bad-template.json',
      JSON.stringify({ rules: [{ name: 'r', answer: { tool_calls: [{ tool: 'orders.get', arguments: { order_id: '{{order}}' } }] } }] }),
      /bad-template\.json: \/rules\/0\/answer\/tool_calls\/0\/arguments\/order_id: malformed template/,
    ],
    [
      'unknown-field.json',
      JSON.stringify({ rules: [{ name: 'r', when: { calld: ['x.y'] }, answer: { content: 'a' } }] }),
      /unknown-field\.json: \/rules\/0\/when: unknown field "calld"/,
    ],
    [
      'no-operator.json',
      JSON.stringify({ rules: [{ name: 'r', when: { result: { tool: 'orders.get', path: 'status' } }, answer: { content: 'a' } }] }),
      /no-operator\.json: \/rules\/0\/when\/result: needs at least one of equals, in, notIn, exists/,
    ],
    ['broken.json', '{"rules": [', /broken\.json: \/: not valid JSON/],
    ['Bad_Name.json', JSON.stringify(good), /Bad_Name\.json: \/: a scenario file is named <skill-name>\.json/],
  ];
  for (const [file, text, expected] of cases) {
    const dir = mkdtempSync(join(tmpdir(), 'model-sim-'));
    try {
      writeFileSync(join(dir, 'default.json'), JSON.stringify(good));
      writeFileSync(join(dir, file), text);
      await assert.rejects(startModelSim({ port: 0, scenariosDir: dir }), (err: unknown) => {
        assert.ok(err instanceof ScenarioError, String(err));
        assert.match(err.message, expected);
        assert.doesNotMatch(err.message, /\n/, 'one line');
        return true;
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test('a scenario folder of its own: rules in order, templates from the user text and earlier results, typed values', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'model-sim-'));
  try {
    writeFileSync(
      join(dir, 'order-status.json'),
      JSON.stringify({
        rules: [
          {
            name: 'both at once',
            when: { notCalled: ['orders.get'] },
            answer: {
              tool_calls: [
                { tool: 'orders.get', arguments: { order_id: '{{user:/order (O-\\d{8})/i}}' } },
                { tool: 'shipping.track', arguments: { order_id: '{{user:/O-\\d{8}/}}' } },
              ],
            },
          },
          { name: 'only at turn 3', when: { turn: 3 }, answer: { content: 'third' } },
          { name: 'typed', answer: { json: { total: '{{tool:orders.get.total_cents}}', text: 'total {{tool:orders.get.total_cents}} for {{skill}}' } } },
        ],
      }),
    );
    await withSim(
      async ({ sim, chat }) => {
        const messages = opening('ORDER O-11111111, no wait, order O-22222222');
        const t1 = await chat(messages);
        const calls = t1.choices[0]?.message.tool_calls ?? [];
        assert.deepEqual(
          calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
          [
            ['orders__get', { order_id: 'O-22222222' }],
            ['shipping__track', { order_id: 'O-22222222' }],
          ],
          'parallel calls; the last match of the user text wins; a capture group gives its value',
        );
        answerTools(messages, t1.choices[0]!.message);
        const t2 = await chat(messages);
        assert.deepEqual(
          JSON.parse(t2.choices[0]?.message.content ?? ''),
          { total: 38312, text: 'total 38312 for order-status' },
          'a turn condition holds only at its turn',
        );
        messages.push({ role: 'assistant', content: t2.choices[0]!.message.content });
        assert.equal((await chat(messages)).choices[0]?.message.content, 'third');
        assert.deepEqual(sim.scenarios, ['order-status']);
        // No default.json in this folder: an unknown skill gets the built-in answer.
        const unknown = await chat(opening('x', 'other@1'));
        assert.match(unknown.choices[0]?.message.content ?? '', /no scenario for skill "other" and no default scenario/);
      },
      { scenariosDir: dir },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------

test('`tao run model-sim --help` prints the usage and exits 0', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [TAO_BIN, 'run', 'model-sim', '--help'], { timeout: 30_000 });
  assert.match(stdout, /^usage: tao run model-sim \[--port 7071\]/);
  assert.match(stdout, /--latency-ms/);
  assert.match(stdout, /--scenarios/);
  assert.match(stdout, /SIMULATED OpenAI-compatible API/);
});

test('`tao run model-sim --port 0` prints a banner saying SIMULATOR, serves, and stops on SIGTERM', async () => {
  const child = spawn(process.execPath, [TAO_BIN, 'run', 'model-sim', '--port', '0', '--latency-ms', '5'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [banner] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
    assert.match(banner, /^tao-model-sim: a scripted SIMULATOR, not a model, listening on http:\/\/127\.0\.0\.1:\d+\/v1 /);
    const url = /(http:\/\/\S+)\/v1/.exec(banner)?.[1];
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ owned_by: string }> };
    assert.equal(models.data[0]?.owned_by, 'tao-model-sim (simulator)');
  } finally {
    child.kill('SIGTERM');
  }
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0);
});

test('`tao run model-sim --scenarios <bad folder>` exits 1 with a one-line error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'model-sim-'));
  try {
    writeFileSync(join(dir, 'order-status.json'), JSON.stringify({ rules: [{ answer: { content: 'x' } }] }));
    const run = promisify(execFile)(process.execPath, [TAO_BIN, 'run', 'model-sim', '--port', '0', '--scenarios', dir], { timeout: 30_000 });
    await assert.rejects(run, (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr.trim(), /^tao: .*order-status\.json: \/rules\/0: must have required property 'name'$/);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
