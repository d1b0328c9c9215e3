/**
 * The simulator's other wires over HTTP: `/v1/responses` and `/v1/messages` under the profiles of
 * their providers (`openai-responses`, `anthropic`) refuse what those APIs refuse, each refusal in
 * the API's own error shape and counted by rule; under `llamacpp` they are as lenient (and as
 * particular) as llama.cpp 0.94's llama-server (infra/README.md); and a provider's profile serves
 * only its own routes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startModelSim, type ModelSim, type ProfileName } from '../../model-sim/server.ts';

const sims = new Map<ProfileName, ModelSim>();
before(async () => {
  for (const p of ['openai-responses', 'anthropic', 'llamacpp'] as const) sims.set(p, await startModelSim({ port: 0, profile: p }));
});
after(async () => {
  for (const s of sims.values()) await s.close();
});

async function post(
  profile: ProfileName,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sims.get(profile)!.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const SYSTEM = 'Skill: order-status@1';
const V = { 'anthropic-version': '2023-06-01' };

describe('the Responses API (openai-responses profile)', () => {
  const ok = { model: 'm', instructions: SYSTEM, input: [{ role: 'user', content: 'Where is O-12345678?' }], store: false };

  test('answers a valid request as a response: output items, usage in input/output tokens', async () => {
    const r = await post('openai-responses', '/v1/responses', ok);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.object, 'response');
    assert.equal(r.body.status, 'completed');
    assert.ok(Array.isArray(r.body.output));
    assert.ok((r.body.usage as { input_tokens: number }).input_tokens > 0);
  });

  const refusals: Array<[string, unknown, string, RegExp]> = [
    ['`messages` instead of `input`', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, 'responses_input_missing', /moved to 'input'/],
    ['no input at all', { model: 'm' }, 'responses_input_missing', /Missing required parameter: 'input'/],
    ['an item of an unknown type', { ...ok, input: [{ type: 'bogus' }] }, 'responses_unknown_item', /Invalid value: 'bogus'/],
    [
      'a function_call_output without its function_call',
      { ...ok, input: [...ok.input, { type: 'function_call_output', call_id: 'call_x', output: '{}' }] },
      'responses_output_without_call',
      /No tool call found for function call output with call_id call_x/,
    ],
    [
      'a function_call left without output while more input follows',
      { ...ok, input: [...ok.input, { type: 'function_call', call_id: 'call_y', name: 'orders__get', arguments: '{}' }, { role: 'user', content: 'and?' }] },
      'responses_call_unanswered',
      /No tool output found for function call call_y/,
    ],
  ];
  for (const [what, body, rule, message] of refusals)
    test(`refuses ${what} (400, OpenAI's error shape, rule ${rule})`, async () => {
      const before = sims.get('openai-responses')!.stats().byRefused[rule] ?? 0;
      const r = await post('openai-responses', '/v1/responses', body);
      assert.equal(r.status, 400);
      const error = r.body.error as { message: string; type: string };
      assert.equal(error.type, 'invalid_request_error');
      assert.match(error.message, message);
      assert.equal(sims.get('openai-responses')!.stats().byRefused[rule], before + 1);
    });

  test('the Messages route does not exist under an OpenAI profile', async () => {
    assert.equal((await post('openai-responses', '/v1/messages', { model: 'm', max_tokens: 5, messages: [] }, V)).status, 404);
  });
});

describe('the Messages API (anthropic profile)', () => {
  const use = { type: 'tool_use', id: 'toolu_1', name: 'orders__get', input: { order_id: 'O-12345678' } };
  const ok = { model: 'm', system: SYSTEM, max_tokens: 64, messages: [{ role: 'user', content: 'Where is O-12345678?' }] };

  test('answers a valid request as a message: content blocks, stop_reason, usage', async () => {
    const r = await post('anthropic', '/v1/messages', ok, V);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual([r.body.type, r.body.role], ['message', 'assistant']);
    assert.ok(['end_turn', 'tool_use'].includes(r.body.stop_reason as string));
    assert.ok((r.body.usage as { input_tokens: number }).input_tokens > 0);
  });

  const refusals: Array<[string, unknown, Record<string, string>, string, RegExp]> = [
    ['no anthropic-version header', ok, {}, 'messages_version_missing', /anthropic-version: header is required/],
    ['no max_tokens', { ...ok, max_tokens: undefined }, V, 'messages_max_tokens_missing', /max_tokens: Field required/],
    [
      'a system role inside messages',
      { ...ok, messages: [{ role: 'system', content: SYSTEM }, ...ok.messages] },
      V,
      'messages_system_role',
      /Unexpected role "system"/,
    ],
    [
      'two user messages in a row',
      { ...ok, messages: [...ok.messages, { role: 'user', content: 'hello?' }] },
      V,
      'messages_roles_not_alternating',
      /roles must alternate/,
    ],
    ['an empty text block', { ...ok, messages: [{ role: 'user', content: [{ type: 'text', text: ' ' }] }] }, V, 'messages_empty_text', /non-whitespace text/],
    [
      'a tool_result not right after its tool_use',
      {
        ...ok,
        messages: [
          ...ok.messages,
          { role: 'assistant', content: [use] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{}' }] },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{}' }] },
        ],
      },
      V,
      'messages_tool_result_without_use',
      /unexpected `tool_use_id` found in `tool_result` blocks: toolu_1/,
    ],
    [
      'a tool_use with no tool_result in the next message',
      { ...ok, messages: [...ok.messages, { role: 'assistant', content: [use] }, { role: 'user', content: 'well?' }] },
      V,
      'messages_tool_use_unanswered',
      /`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1/,
    ],
  ];
  for (const [what, body, headers, rule, message] of refusals)
    test(`refuses ${what} (400, Anthropic's error shape, rule ${rule})`, async () => {
      const r = await post('anthropic', '/v1/messages', body, headers);
      assert.equal(r.status, 400);
      assert.equal(r.body.type, 'error');
      const error = r.body.error as { message: string; type: string };
      assert.equal(error.type, 'invalid_request_error');
      assert.match(error.message, message);
      assert.equal(sims.get('anthropic')!.stats().byRefused[rule], 1);
    });

  test('a tool round trip in alternating roles is accepted, and a 404 comes in the Messages error shape', async () => {
    const r = await post(
      'anthropic',
      '/v1/messages',
      {
        ...ok,
        messages: [
          ...ok.messages,
          { role: 'assistant', content: [use] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"status":"shipped"}' }] },
        ],
      },
      V,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    sims.get('anthropic')!.setFault({ kind: 'model_not_found', times: 1 });
    const nf = await post('anthropic', '/v1/messages', ok, V);
    assert.equal(nf.status, 404);
    assert.deepEqual([nf.body.type, (nf.body.error as { type: string }).type], ['error', 'not_found_error']);
  });

  test('chat completions and the Responses route do not exist under the anthropic profile', async () => {
    assert.equal((await post('anthropic', '/v1/chat/completions', { model: 'm', messages: ok.messages })).status, 404);
    assert.equal((await post('anthropic', '/v1/responses', { model: 'm', input: 'hi' })).status, 404);
  });
});

describe("llama.cpp 0.94's leniency and quirks (llamacpp profile)", () => {
  test('Responses: an orphan function_call_output is accepted; an assistant message without type "message" is not', async () => {
    const orphan = await post('llamacpp', '/v1/responses', {
      model: 'm',
      input: [
        { role: 'user', content: 'hi' },
        { type: 'function_call_output', call_id: 'zz', output: '{}' },
      ],
    });
    assert.equal(orphan.status, 200);
    const untyped = await post('llamacpp', '/v1/responses', {
      model: 'm',
      input: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'x' },
        { role: 'user', content: 'again' },
      ],
    });
    assert.equal(untyped.status, 400);
    assert.equal((untyped.body.error as { message: string }).message, "Cannot determine type of 'item'");
  });

  test('Messages: no version header, no max_tokens, a system role and two user messages in a row are all accepted', async () => {
    const r = await post('llamacpp', '/v1/messages', {
      model: 'm',
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'hi' },
        { role: 'user', content: 'again' },
      ],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.type, 'message');
  });
});
