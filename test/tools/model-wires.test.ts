/**
 * The model wires (TAO_LLM_API=chat|responses|messages): the tools the settings build, and Action's
 * executor through each wire against real model SIMULATORs (model-sim/) whose `openai-responses`
 * and `anthropic` profiles refuse what those APIs refuse: a whole tool round trip passes their
 * rules, the answer Observation's gate reads is the same chat completion on every wire (saying
 * which wire answered), reasoning is kept apart, truncation and refusals read as on chat, and
 * errors arrive in the wire's shape.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startModelSim, type ModelSim, type ProfileName } from '../../model-sim/server.ts';
import { ToolExecutor } from '../../processors/action/executor.ts';
import { createToolDispatcher, type HttpDeps } from '../../processors/action/invoke.ts';
import { verifyModelAnswer } from '../../processors/observation/model-gate.ts';
import { realRetryDeps } from '../../runtime/retry.ts';
import { traceparentFor } from '../../runtime/tracing/ids.ts';
import { ConfigError } from '../../runtime/errors.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog, createContractAjv } from '../../tools/catalog.ts';
import { MODEL_FALLBACK_TOOL, MODEL_TOOL } from '../../tools/model.ts';
import { modelToolSpecs } from '../../tools/model-config.ts';
import { envSecrets } from '../../tools/secrets.ts';
import type { ModelWire } from '../../tools/wires/index.ts';
import { DEFAULT_MAX_TOKENS, fromMessagesAnswer, toMessagesRequest } from '../../tools/wires/messages.ts';
import { fromResponsesAnswer, toResponsesRequest } from '../../tools/wires/responses.ts';

const KEY = `wk-${Math.random().toString(36).slice(2)}`;

describe('TAO_LLM_API builds the model tools for the wire', () => {
  const base = { TAO_LLM_BASE_URL: 'http://m.example:8000/v1', TAO_LLM_MODEL: 'big', TAO_LLM_API_KEY: 'k1' };
  const specs = (env: Record<string, string>) => modelToolSpecs({ ...base, ...env }).map((t) => t.spec);

  test('unset: chat completions, as before (no wire field, Bearer key)', () => {
    const [primary] = specs({});
    assert.equal(primary!.path, '/v1/chat/completions');
    assert.equal(primary!.wire, undefined);
    assert.deepEqual(primary!.headers, { authorization: 'Bearer ${TAO_LLM_API_KEY}' });
  });

  test('responses and messages: their paths; the Messages API gets the key as x-api-key', () => {
    const [r] = specs({ TAO_LLM_API: 'responses' });
    assert.deepEqual([r!.path, r!.wire, r!.headers], ['/v1/responses', 'responses', { authorization: 'Bearer ${TAO_LLM_API_KEY}' }]);
    const [m] = specs({ TAO_LLM_API: 'messages' });
    assert.deepEqual([m!.path, m!.wire, m!.headers], ['/v1/messages', 'messages', { 'x-api-key': '${TAO_LLM_API_KEY}' }]);
    assert.match(m!.description, /^Messages API of big/);
  });

  test("the fallback speaks the primary's API unless TAO_LLM_FALLBACK_API says another", () => {
    const [, same] = specs({ TAO_LLM_API: 'messages', TAO_LLM_FALLBACK_MODEL: 'small' });
    assert.deepEqual([same!.name, same!.path, same!.wire], [MODEL_FALLBACK_TOOL, '/v1/messages', 'messages']);
    const [p, other] = specs({ TAO_LLM_API: 'messages', TAO_LLM_FALLBACK_MODEL: 'small', TAO_LLM_FALLBACK_API: 'chat' });
    assert.deepEqual(
      [p!.wire, other!.path, other!.wire, other!.headers],
      ['messages', '/v1/chat/completions', undefined, { authorization: 'Bearer ${TAO_LLM_API_KEY}' }],
    );
    const [, away] = specs({ TAO_LLM_FALLBACK_BASE_URL: 'http://b.example/api', TAO_LLM_FALLBACK_API: 'responses' });
    assert.deepEqual([away!.origin, away!.path, away!.wire], ['http://b.example', '/api/responses', 'responses']);
  });

  test('an unknown API is a one-line config error naming the variable', () => {
    assert.throws(
      () => specs({ TAO_LLM_API: 'completions' }),
      (e: Error) => e instanceof ConfigError && /^TAO_LLM_API must be/.test(e.message) && !e.message.includes('\n'),
    );
    assert.throws(
      () => specs({ TAO_LLM_FALLBACK_MODEL: 'small', TAO_LLM_FALLBACK_API: 'anthropic' }),
      (e: Error) => e instanceof ConfigError && /^TAO_LLM_FALLBACK_API must be/.test(e.message),
    );
  });
});

const SYSTEM = { role: 'system', content: 'Skill: order-status@1\nYou are a support agent.' };
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'orders__get',
      description: 'Look an order up',
      parameters: { type: 'object', required: ['order_id'], properties: { order_id: { type: 'string' } } },
    },
  },
  {
    type: 'function',
    function: {
      name: 'shipping__track',
      description: 'Track a shipment',
      parameters: { type: 'object', required: ['order_id'], properties: { order_id: { type: 'string' } } },
    },
  },
];
const TURN1 = {
  messages: [SYSTEM, { role: 'user', content: 'Where is my order O-12345678?' }],
  tools: TOOLS,
  tool_choice: 'auto',
  temperature: 0,
  max_tokens: 256,
};
/** Turn 2 as Thought writes it: the assistant's call (empty text), its result, then a user note (two user-side messages in a row). */
const turn2 = (callId: string) => ({
  ...TURN1,
  messages: [
    ...TURN1.messages,
    {
      role: 'assistant',
      content: '',
      tool_calls: [{ id: callId, type: 'function', function: { name: 'orders__get', arguments: '{"order_id":"O-12345678"}' } }],
    },
    { role: 'tool', tool_call_id: callId, content: '{"order_id":"O-12345678","status":"shipped"}' },
    { role: 'user', content: 'Continue.' },
  ],
});

for (const [wire, profile] of [
  ['responses', 'openai-responses'],
  ['messages', 'anthropic'],
] as Array<[ModelWire, ProfileName]>) {
  describe(`Action through the ${wire} wire against the simulator's ${profile} profile`, () => {
    let sim: ModelSim;
    let deps: HttpDeps;
    const ajv = createContractAjv();
    before(async () => {
      sim = await startModelSim({ port: 0, profile, apiKey: KEY });
      deps = { dispatcher: createToolDispatcher(), retry: { ...realRetryDeps, sleep: async () => {} }, now: () => Date.now() };
    });
    after(async () => {
      await deps?.dispatcher.close();
      await sim?.close();
    });
    const env = () => ({ TAO_LLM_BASE_URL: `${sim.url}/v1`, TAO_LLM_MODEL: 'sim-model', TAO_LLM_API: wire, TAO_LLM_API_KEY: KEY });
    const call = async (input: unknown, key: string, extra: Record<string, string> = {}) => {
      const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, { ...env(), ...extra }, ajv, modelToolSpecs({ ...env(), ...extra }));
      const r = await new ToolExecutor(catalog, deps).execute(catalog.get(MODEL_TOOL)!, 'M1', input, {
        idempotencyKey: key,
        traceparent: traceparentFor('t', 'action:1'),
        secrets: envSecrets({ ...env(), ...extra }),
      });
      return { r, catalog };
    };

    test('a tool round trip: the strict profile accepts every turn; the gate reads the same chat completion, marked with the wire', async () => {
      const first = await call(TURN1, `${wire}-1`);
      assert.equal(first.r.error, null, `${first.r.response_raw}`);
      assert.equal(first.r.input_json, JSON.stringify(TURN1), 'the step records the chat request Thought emitted');
      const data = JSON.parse(first.r.data_json!) as {
        wire: string;
        object: string;
        choices: Array<{ message: { tool_calls: Array<{ id: string }> }; finish_reason: string }>;
      };
      assert.deepEqual([data.wire, data.object, data.choices[0]!.finish_reason], [wire, 'chat.completion', 'tool_calls']);
      const raw = JSON.parse(first.r.response_raw!) as Record<string, unknown>;
      assert.equal(wire === 'responses' ? raw.object : raw.type, wire === 'responses' ? 'response' : 'message', 'response_raw is the wire answer as received');
      const gate = verifyModelAnswer(data, first.r.input_json, (t) => first.catalog.get(t)?.validateInput, ajv, 1);
      assert.ok(gate.ok, JSON.stringify(gate));
      assert.equal(gate.answer.kind, 'tool_calls');
      assert.ok(gate.answer.usage.prompt_tokens > 0 && gate.answer.usage.completion_tokens > 0, 'usage read from the wire');

      const second = await call(turn2(data.choices[0]!.message.tool_calls[0]!.id), `${wire}-2`);
      assert.equal(second.r.error, null, `turn 2 refused: ${second.r.response_raw}`);
      assert.equal(sim.stats().byOutcome.invalid_request ?? 0, 0, 'no request broke the profile');
    });

    test('the answer cut at the token limit reads as truncated, so the gate rejects it as on chat', async () => {
      sim.setFault({ kind: 'length', times: 1 });
      const { r, catalog } = await call(TURN1, `${wire}-len`);
      const data = JSON.parse(r.data_json!) as { choices: Array<{ finish_reason: string }> };
      assert.equal(data.choices[0]!.finish_reason, 'length');
      const gate = verifyModelAnswer(data, r.input_json, (t) => catalog.get(t)?.validateInput, ajv, 1);
      assert.deepEqual([gate.ok, !gate.ok && gate.errorType], [false, 'malformed']);
    });

    test("reasoning is kept apart: recorded as the answer's reasoning, never as its text", async () => {
      sim.setFault({ kind: 'reasoning_field', times: 1 });
      const { r, catalog } = await call(TURN1, `${wire}-think`);
      const gate = verifyModelAnswer(JSON.parse(r.data_json!), r.input_json, (t) => catalog.get(t)?.validateInput, ajv, 1);
      assert.ok(gate.ok, JSON.stringify(gate));
      assert.ok(gate.answer.reasoning && gate.answer.reasoning.length > 0, 'reasoning recorded');
      if (wire === 'responses')
        assert.ok(Array.isArray((JSON.parse(r.data_json!) as { reasoning_items?: unknown[] }).reasoning_items), 'the reasoning items recorded');
    });

    test('a refusal reads as a refusal (Messages: stop_reason refusal; Responses: a refusal part), never as an answer', async () => {
      sim.setFault({ kind: 'refusal', times: 1 });
      const { r, catalog } = await call(TURN1, `${wire}-refusal`);
      const gate = verifyModelAnswer(JSON.parse(r.data_json!), r.input_json, (t) => catalog.get(t)?.validateInput, ajv, 1);
      assert.ok(gate.ok, JSON.stringify(gate));
      assert.equal(gate.answer.kind, 'refusal');
    });

    test("a 404 model_not_found in the wire's error shape still sends the call to the fallback", async () => {
      sim.setFault({ kind: 'model_not_found', times: 1 });
      const { r } = await call(TURN1, `${wire}-404`, { TAO_LLM_FALLBACK_MODEL: 'sim-small' });
      assert.deepEqual([r.error, r.tool, r.fallback_from], [null, MODEL_FALLBACK_TOOL, MODEL_TOOL]);
      assert.match(r.fallback_reason!, /HTTP 404/);
    });
  });
}

describe('the translations at the wire (pure)', () => {
  const chat = {
    model: 'm',
    messages: [
      { role: 'system' as const, content: 'Skill: x@1' },
      { role: 'user' as const, content: 'Where is O-1?' },
      {
        role: 'assistant' as const,
        content: 'Looking.',
        tool_calls: [{ id: 'c0001n001', type: 'function', function: { name: 'orders__get', arguments: '{"order_id":"O-1"}' } }],
      },
      { role: 'tool' as const, tool_call_id: 'c0001n001', content: '{"status":"shipped"}' },
      { role: 'user' as const, content: 'Your answer was rejected: say more.' },
    ],
    tools: TOOLS,
    tool_choice: 'auto',
    parallel_tool_calls: false,
    temperature: 0,
    max_tokens: 96,
    response_format: { type: 'json_schema', json_schema: { name: 'turn', schema: { type: 'object' }, strict: true } },
  };

  test('Responses: instructions, typed assistant items, paired function calls, text.format, max_output_tokens, store false', () => {
    const r = toResponsesRequest(chat);
    assert.equal(r.instructions, 'Skill: x@1');
    assert.deepEqual(r.input, [
      { type: 'message', role: 'user', content: 'Where is O-1?' },
      { type: 'message', role: 'assistant', content: 'Looking.' },
      { type: 'function_call', call_id: 'c0001n001', name: 'orders__get', arguments: '{"order_id":"O-1"}' },
      { type: 'function_call_output', call_id: 'c0001n001', output: '{"status":"shipped"}' },
      { type: 'message', role: 'user', content: 'Your answer was rejected: say more.' },
    ]);
    assert.deepEqual([r.store, r.max_output_tokens, r.parallel_tool_calls, 'messages' in r], [false, 96, false, false]);
    assert.deepEqual(r.text, { format: { type: 'json_schema', name: 'turn', schema: { type: 'object' }, strict: true } });
    assert.deepEqual((r.tools as unknown[])[0], {
      type: 'function',
      name: 'orders__get',
      description: 'Look an order up',
      parameters: TOOLS[0]!.function.parameters,
      strict: false,
    });
  });

  test('Messages: top-level system, tool_use / tool_result in alternating roles (results first), required max_tokens, tool_choice', () => {
    const m = toMessagesRequest(chat);
    assert.equal(m.system, 'Skill: x@1');
    assert.deepEqual(m.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Where is O-1?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          { type: 'tool_use', id: 'c0001n001', name: 'orders__get', input: { order_id: 'O-1' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'c0001n001', content: '{"status":"shipped"}' },
          { type: 'text', text: 'Your answer was rejected: say more.' },
        ],
      },
    ]);
    assert.deepEqual(m.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
    assert.equal(m.max_tokens, 96);
    assert.equal(toMessagesRequest({ messages: [{ role: 'user', content: 'hi' }], temperature: 1.5 }).max_tokens, DEFAULT_MAX_TOKENS);
    assert.equal(toMessagesRequest({ messages: [{ role: 'user', content: 'hi' }], temperature: 1.5 }).temperature, 1);
    assert.deepEqual(toMessagesRequest({ ...chat, tool_choice: 'required', parallel_tool_calls: true }).tool_choice, { type: 'any' });
    assert.deepEqual(toMessagesRequest({ ...chat, tool_choice: 'none' }).tool_choice, { type: 'none' });
  });

  test("Responses answers: llama.cpp's 'completed' at the token limit is a truncation; failed is an error; reasoning kept apart", () => {
    const out = {
      id: 'resp_1',
      object: 'response',
      model: 'm',
      status: 'completed',
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'The status is' }] }],
    };
    const cut = fromResponsesAnswer({ ...out, usage: { input_tokens: 10, output_tokens: 20 } }, { max_output_tokens: 20 });
    assert.equal(cut.choices[0]!.finish_reason, 'length');
    const whole = fromResponsesAnswer(
      { ...out, usage: { input_tokens: 10, output_tokens: 5, input_tokens_details: { cached_tokens: 4 } } },
      { max_output_tokens: 20 },
    );
    assert.deepEqual(
      [whole.choices[0]!.finish_reason, whole.usage],
      ['stop', { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 4 } }],
    );
    assert.throws(() => fromResponsesAnswer({ ...out, status: 'failed', error: { code: 'server_error', message: 'boom' } }, {}), /failed: server_error: boom/);
    const thought = fromResponsesAnswer(
      {
        ...out,
        output: [{ type: 'reasoning', id: 'rs_1', encrypted_content: 'opaque', summary: [{ type: 'summary_text', text: 'check the order' }] }, ...out.output],
      },
      {},
    );
    assert.equal(thought.choices[0]!.message.reasoning_content, 'check the order');
    assert.deepEqual(thought.reasoning_items, [{ type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'check the order' }] }]);
  });

  test('Messages answers: stop reasons, thinking apart, cache tokens counted in the prompt', () => {
    const a = fromMessagesAnswer({
      id: 'msg_1',
      type: 'message',
      model: 'm',
      content: [
        { type: 'thinking', thinking: 'look it up' },
        { type: 'tool_use', id: 'toolu_1', name: 'orders__get', input: { order_id: 'O-1' } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 1, cache_read_input_tokens: 20, cache_creation_input_tokens: 3, output_tokens: 7 },
    });
    assert.deepEqual(a.choices[0]!.message.tool_calls, [
      { id: 'toolu_1', type: 'function', function: { name: 'orders__get', arguments: '{"order_id":"O-1"}' } },
    ]);
    assert.deepEqual([a.choices[0]!.finish_reason, a.choices[0]!.message.reasoning_content, a.choices[0]!.message.content], ['tool_calls', 'look it up', null]);
    assert.deepEqual(a.usage, { prompt_tokens: 24, completion_tokens: 7, total_tokens: 31, prompt_tokens_details: { cached_tokens: 20 } });
    for (const [stop, finish] of [
      ['end_turn', 'stop'],
      ['max_tokens', 'length'],
      ['refusal', 'content_filter'],
    ])
      assert.equal(fromMessagesAnswer({ type: 'message', content: [{ type: 'text', text: 'x' }], stop_reason: stop }).choices[0]!.finish_reason, finish);
    assert.throws(() => fromMessagesAnswer({ object: 'chat.completion', choices: [] }), /not a Messages API message/);
  });
});
