import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { Agent, request } from 'undici';

import { TAO_BIN } from '../../cli/processes.ts';
import { PROSE_INSTEAD, REASONING_TEXT, REFUSAL_TEXT, applyQuirk, pythonJson } from '../../model-sim/faults.ts';
import {
  checkRequest,
  estimatePromptTokens,
  profileConfig,
  shapeAnswer,
  toolCallId,
  type ProfileConfig,
  type ProfileName,
  type WireCompletion,
} from '../../model-sim/profiles.ts';
import { startModelSim, type ModelSim, type ModelSimOptions } from '../../model-sim/server.ts';

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

const TOOLS = Object.entries(PARAMS).map(([name, parameters]) => ({
  type: 'function',
  function: { name: name.replaceAll('.', '__'), description: `the ${name} tool`, parameters },
}));

const FAKE_RESULTS: Record<string, unknown> = {
  orders__get: { order_id: 'O-12345678', customer_id: 'C-100200', status: 'delivered', total_cents: 38312 },
  shipping__track: { order_id: 'O-12345678', carrier: 'SF', state: 'delivered', eta: '2025-03-17T04:00:00Z' },
};

const SYSTEM: Message = { role: 'system', content: 'Skill: order-status@1\nYou are a customer-service agent.' };
const USER: Message = { role: 'user', content: 'Where is my order O-12345678?' };

function call(id: string, name = 'orders__get', args = '{"order_id":"O-12345678"}'): Record<string, unknown> {
  return { id, type: 'function', function: { name, arguments: args } };
}

function assistantCalls(...ids: string[]): Message {
  return { role: 'assistant', content: null, tool_calls: ids.map((id) => call(id)) };
}

function toolResult(id: string): Message {
  return { role: 'tool', tool_call_id: id, content: JSON.stringify(FAKE_RESULTS['orders__get']) };
}

function req(messages: Message[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'gpt-test', messages, tools: TOOLS, ...extra };
}

/** checkRequest, asserting a refusal: returns [rule, status, body]. */
function refused(profile: ProfileName | Partial<ProfileConfig>, body: unknown): [string, number, unknown] {
  const r = checkRequest(profile, body);
  assert.ok(r !== null, `expected ${JSON.stringify(profile)} to refuse ${JSON.stringify(body)}`);
  return [r.rule, r.status, r.body];
}

function openAiBody(message: string, param: string | null, code: string | null = null): unknown {
  return { error: { message, type: 'invalid_request_error', param, code } };
}

const STRICT: ProfileName[] = ['openai', 'ollama', 'llamacpp', 'vllm'];

// ---------------------------------------------------------------------------
// Request rules: tool-call pairing (every strict profile)
// ---------------------------------------------------------------------------

test('lenient (the default) accepts what every strict profile refuses', () => {
  const bad = req([
    SYSTEM,
    USER,
    assistantCalls('c1', 'c1'),
    { role: 'tool', content: 'x' },
    { role: 'system', content: 'late' },
    { role: 'assistant', content: null },
  ]);
  assert.equal(checkRequest('lenient', bad), null);
  assert.equal(checkRequest({}, bad), null, 'no profile: lenient');
  for (const p of STRICT) assert.notEqual(checkRequest(p, bad), null, p);
});

test('openai: a tool message without tool_call_id is refused (Missing parameter ...)', () => {
  const body = req([SYSTEM, USER, assistantCalls('c1'), { role: 'tool', content: '{}' }]);
  assert.deepEqual(refused('openai', body), [
    'tool_call_id_missing',
    400,
    openAiBody("Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.", 'messages.[3].tool_call_id'),
  ]);
});

test('openai: a tool message that follows no tool call is refused (must be a response to a preceeding message)', () => {
  const body = req([SYSTEM, USER, toolResult('c1')]);
  assert.deepEqual(refused('openai', body), [
    'tool_result_without_call',
    400,
    openAiBody("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", 'messages.[2].role'),
  ]);
  // A tool result after a user message answers nothing, even if an earlier call had that id.
  const late = req([SYSTEM, USER, assistantCalls('c1'), toolResult('c1'), USER, toolResult('c1')]);
  assert.equal(refused('openai', late)[0], 'tool_result_without_call');
});

test('openai: a tool_call_id that is not a call of the previous assistant message is refused', () => {
  const body = req([SYSTEM, USER, assistantCalls('c1'), toolResult('c9')]);
  assert.deepEqual(refused('openai', body), [
    'tool_result_without_call',
    400,
    openAiBody("Invalid parameter: 'tool_call_id' of 'c9' not found in 'tool_calls' of previous message.", 'messages.[3].tool_call_id'),
  ]);
});

test('openai: two results for one call are refused (Duplicate value for tool_call_id)', () => {
  const body = req([SYSTEM, USER, assistantCalls('c1'), toolResult('c1'), toolResult('c1')]);
  assert.deepEqual(refused('openai', body), [
    'duplicate_tool_result',
    400,
    openAiBody("Invalid parameter: Duplicate value for 'tool_call_id' of 'c1', in messages[3] and messages[4].", 'messages.[4].tool_call_id'),
  ]);
});

test('openai: a tool call without a result before the next message (or at the end) is refused', () => {
  const before = req([SYSTEM, USER, assistantCalls('c1', 'c2'), toolResult('c1'), USER]);
  const message =
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: c2";
  assert.deepEqual(refused('openai', before), ['tool_call_unanswered', 400, openAiBody(message, 'messages.[2].role')]);
  const atEnd = req([SYSTEM, USER, assistantCalls('c1', 'c2')]);
  assert.deepEqual(refused('openai', atEnd), ['tool_call_unanswered', 400, openAiBody(message.replace(': c2', ': c1, c2'), 'messages.[2].role')]);
  const nextAssistant = req([SYSTEM, USER, assistantCalls('c1'), { role: 'assistant', content: 'done' }]);
  assert.equal(refused('openai', nextAssistant)[0], 'tool_call_unanswered');
});

test('openai: duplicate tool-call ids within one assistant message, and a call without id, are refused', () => {
  assert.deepEqual(refused('openai', req([SYSTEM, USER, assistantCalls('c1', 'c1'), toolResult('c1')])), [
    'duplicate_tool_call_ids',
    400,
    openAiBody("Invalid parameter: Duplicate value for 'id' of 'c1' in messages[2].tool_calls.", 'messages.[2].tool_calls.[1].id'),
  ]);
  const noId = req([
    SYSTEM,
    USER,
    { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'orders__get', arguments: '{}' } }] },
  ]);
  assert.deepEqual(refused('openai', noId), [
    'assistant_tool_call_id_missing',
    400,
    openAiBody("Missing required parameter: 'messages[2].tool_calls[0].id'.", 'messages.[2].tool_calls.[0].id', 'missing_required_parameter'),
  ]);
});

test('the pairing rules answer in each server own error shape', () => {
  const body = req([SYSTEM, USER, toolResult('c1')]);
  const message = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
  assert.deepEqual(refused('ollama', body), ['tool_result_without_call', 400, { error: { message, type: 'invalid_request_error', param: null, code: null } }]);
  assert.deepEqual(refused('llamacpp', body), ['tool_result_without_call', 400, { error: { code: 400, message, type: 'invalid_request_error' } }]);
  assert.deepEqual(refused('vllm', body), [
    'tool_result_without_call',
    400,
    { error: { message, type: 'BadRequestError', param: 'messages.[2].role', code: 400 } },
  ]);
});

test('vllm with the Mistral tokenizer: the pairing rules in mistral-common words', () => {
  const m: Partial<ProfileConfig> = { profile: 'vllm', toolIdFormat: 'mistral' };
  const vllmBody = (message: string): unknown => ({ error: { message, type: 'BadRequestError', param: null, code: 400 } });
  assert.deepEqual(refused(m, req([SYSTEM, USER, assistantCalls('abcDEF123'), USER])), [
    'tool_call_unanswered',
    400,
    vllmBody('Not the same number of function calls and responses'),
  ]);
  assert.deepEqual(refused(m, req([SYSTEM, USER, assistantCalls('abcDEF123'), toolResult('zzzzzzzz9')])), [
    'tool_result_without_call',
    400,
    vllmBody('Unexpected tool call id zzzzzzzz9 in tool results'),
  ]);
  assert.deepEqual(refused(m, req([SYSTEM, USER, assistantCalls('abcDEF123', 'abcDEF123')])), [
    'duplicate_tool_call_ids',
    400,
    vllmBody('Duplicate tool call id abcDEF123 in assistant message'),
  ]);
  assert.deepEqual(refused(m, req([SYSTEM, USER, assistantCalls('abcDEF123'), toolResult('abcDEF123'), toolResult('abcDEF123')])), [
    'duplicate_tool_result',
    400,
    vllmBody('Duplicate tool call id abcDEF123 in tool results'),
  ]);
  assert.deepEqual(refused(m, req([SYSTEM, USER, assistantCalls('abcDEF123'), { role: 'tool', content: '{}' }])), [
    'tool_call_id_missing',
    400,
    vllmBody('Tool call id has to be defined.'),
  ]);
});

// ---------------------------------------------------------------------------
// Request rules: per server
// ---------------------------------------------------------------------------

test('vllm toolIdFormat mistral: tool-call ids must be 9 alphanumerics (assistant calls and tool results)', () => {
  const m: Partial<ProfileConfig> = { profile: 'vllm', toolIdFormat: 'mistral' };
  const vllmBody = (message: string): unknown => ({ error: { message, type: 'BadRequestError', param: null, code: 400 } });
  assert.deepEqual(refused(m, req([SYSTEM, USER, assistantCalls('call_1_1'), toolResult('call_1_1')])), [
    'mistral_tool_call_id',
    400,
    vllmBody('Tool call id was call_1_1 but must be a-z, A-Z, 0-9, with a length of 9.'),
  ]);
  assert.equal(checkRequest(m, req([SYSTEM, USER, assistantCalls('abcDEF123'), toolResult('abcDEF123')])), null, 'a 9-character id is accepted');
  assert.equal(
    checkRequest('vllm', req([SYSTEM, USER, assistantCalls('call_1_1'), toolResult('call_1_1')])),
    null,
    'without the Mistral format any non-empty id',
  );
});

test('ollama: content null is refused ("invalid message content type: <nil>") unless the message has tool_calls', () => {
  const body = req([SYSTEM, USER, { role: 'assistant', content: null }, USER]);
  assert.deepEqual(refused('ollama', body), [
    'content_null',
    400,
    { error: { message: 'invalid message content type: <nil>', type: 'invalid_request_error', param: null, code: null } },
  ]);
  assert.equal(refused('ollama', req([SYSTEM, { role: 'user' }]))[0], 'content_null', 'an absent content is nil too');
  assert.equal(checkRequest('ollama', req([SYSTEM, USER, assistantCalls('c1'), toolResult('c1')])), null, 'content null beside tool_calls is accepted');
});

test('ollama: a tool call whose arguments are not JSON is refused ("invalid tool call arguments")', () => {
  const body = req([SYSTEM, USER, { role: 'assistant', content: null, tool_calls: [call('c1', 'orders__get', '{order_id: O-12345678}')] }, toolResult('c1')]);
  assert.deepEqual(refused('ollama', body), [
    'tool_call_arguments_not_json',
    400,
    { error: { message: 'invalid tool call arguments', type: 'invalid_request_error', param: null, code: null } },
  ]);
});

test('llamacpp: a system message that is not the first is refused with the chat template error', () => {
  const [rule, status, body] = refused('llamacpp', req([SYSTEM, USER, { role: 'system', content: 'Be brief.' }]));
  assert.equal(rule, 'system_not_first');
  assert.equal(status, 400);
  const e = (body as { error: { code: number; message: string; type: string } }).error;
  assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'type']);
  assert.equal(e.code, 400);
  assert.equal(e.type, 'invalid_request_error');
  assert.match(e.message, /^Unable to generate parser for this template\. Automatic parser generation failed: /);
  assert.match(e.message, /\nError: Jinja Exception: System message must be at the beginning\.$/);
  assert.equal(refused('llamacpp', req([SYSTEM, SYSTEM, USER]))[0], 'system_not_first', 'exactly one system message');
  assert.equal(checkRequest('llamacpp', req([SYSTEM, USER])), null);
});

test('llamacpp: two assistant messages at the end are refused; one is accepted (a prefill)', () => {
  const two = req([SYSTEM, USER, { role: 'assistant', content: 'Order' }, { role: 'assistant', content: ' O-12345678 is' }]);
  assert.deepEqual(refused('llamacpp', two), [
    'two_trailing_assistants',
    400,
    { error: { code: 400, message: 'Cannot have 2 or more assistant messages at the end of the list.', type: 'invalid_request_error' } },
  ]);
  assert.equal(checkRequest('llamacpp', req([SYSTEM, USER, { role: 'assistant', content: 'Order' }])), null);
});

test('llamacpp: messages without content are refused with llama-server words', () => {
  assert.deepEqual(refused('llamacpp', req([SYSTEM, { role: 'user' }])), [
    'message_without_content',
    400,
    { error: { code: 400, message: "All non-assistant messages must contain 'content'", type: 'invalid_request_error' } },
  ]);
  assert.deepEqual(refused('llamacpp', req([SYSTEM, USER, { role: 'assistant' }, USER])), [
    'message_without_content',
    400,
    { error: { code: 400, message: "Assistant message must contain either 'content' or 'tool_calls'!", type: 'invalid_request_error' } },
  ]);
});

test('reasoning models: max_tokens and temperature other than 1 are refused (openai by name; any profile by reasoningModels)', () => {
  const turn = [SYSTEM, USER];
  assert.deepEqual(refused('openai', req(turn, { model: 'gpt-5-mini', max_tokens: 512, temperature: 0 })), [
    'reasoning_max_tokens',
    400,
    openAiBody(
      "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      'max_tokens',
      'unsupported_parameter',
    ),
  ]);
  assert.deepEqual(refused('openai', req(turn, { model: 'o3', max_completion_tokens: 512, temperature: 0 })), [
    'reasoning_temperature',
    400,
    openAiBody(
      "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
      'temperature',
      'unsupported_value',
    ),
  ]);
  assert.equal(refused('openai', req(turn, { model: 'o4-mini', temperature: 0.2 }))[0], 'reasoning_temperature');
  assert.equal(
    checkRequest('openai', req(turn, { model: 'o3', max_completion_tokens: 512, temperature: 1 })),
    null,
    'the default temperature and max_completion_tokens',
  );
  assert.equal(checkRequest('openai', req(turn, { model: 'gpt-4o', max_tokens: 512, temperature: 0 })), null, 'not a reasoning model');
  assert.equal(checkRequest('llamacpp', req(turn, { model: 'gpt-5', max_tokens: 512 })), null, 'the name pattern is openai only');
  const deepseek: Partial<ProfileConfig> = { profile: 'llamacpp', reasoningModels: ['deepseek-r1'] };
  assert.deepEqual(refused(deepseek, req(turn, { model: 'deepseek-r1', max_tokens: 512 })), [
    'reasoning_max_tokens',
    400,
    {
      error: {
        code: 400,
        message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        type: 'invalid_request_error',
      },
    },
  ]);
  assert.equal(refused({ reasoningModels: ['gpt-test'] }, req(turn, { max_tokens: 5 }))[0], 'reasoning_max_tokens', 'lenient too, when configured');
});

test('context window: openai and vllm refuse with their wording, llamacpp with exceed_context_size_error, ollama answers', () => {
  const body = req([SYSTEM, USER]);
  const m = estimatePromptTokens(body);
  assert.equal(m, Math.ceil((JSON.stringify(body['messages']).length + JSON.stringify(TOOLS).length) / 4));
  const n = m - 1;
  assert.deepEqual(refused({ profile: 'openai', contextWindow: n }, body), [
    'context_length',
    400,
    openAiBody(
      `This model's maximum context length is ${n} tokens. However, your messages resulted in ${m} tokens. Please reduce the length of the messages.`,
      'messages',
      'context_length_exceeded',
    ),
  ]);
  assert.deepEqual(refused({ profile: 'openai', contextWindow: m + 10 }, { ...body, max_tokens: 100 }), [
    'context_length',
    400,
    openAiBody(
      `This model's maximum context length is ${m + 10} tokens. However, you requested ${m + 100} tokens (${m} in the messages, 100 in the completion). Please reduce the length of the messages or completion.`,
      'messages',
      'context_length_exceeded',
    ),
  ]);
  assert.deepEqual(refused({ profile: 'vllm', contextWindow: n }, body), [
    'context_length',
    400,
    {
      error: {
        message: `This model's maximum context length is ${n} tokens. However, your request has ${m} input tokens. Please reduce the length of the input messages.`,
        type: 'BadRequestError',
        param: 'input_tokens',
        code: 400,
      },
    },
  ]);
  assert.deepEqual(refused({ profile: 'vllm', contextWindow: m + 10 }, { ...body, max_tokens: 100 }), [
    'context_length',
    400,
    {
      error: {
        message: `'max_tokens' or 'max_completion_tokens' is too large: 100. This model's maximum context length is ${m + 10} tokens and your request has ${m} input tokens (100 > ${m + 10} - ${m}).`,
        type: 'BadRequestError',
        param: 'max_tokens',
        code: 400,
      },
    },
  ]);
  assert.deepEqual(refused({ profile: 'llamacpp', contextWindow: m }, { ...body, max_tokens: 100000 }), [
    'context_length',
    400,
    {
      error: {
        code: 400,
        message: `request (${m} tokens) exceeds the available context size (${m} tokens), try increasing it`,
        type: 'exceed_context_size_error',
        n_prompt_tokens: m,
        n_ctx: m,
      },
    },
  ]);
  assert.equal(checkRequest({ profile: 'llamacpp', contextWindow: m + 1 }, { ...body, max_tokens: 100000 }), null, 'llama.cpp does not count max_tokens');
  assert.equal(checkRequest({ profile: 'ollama', contextWindow: 1 }, body), null, 'ollama truncates instead');
  assert.equal(checkRequest({ profile: 'openai', contextWindow: m }, body), null, 'exactly the window fits');
});

// ---------------------------------------------------------------------------
// Answers shaped by the profile
// ---------------------------------------------------------------------------

function completionWith(calls: number, content: string | null = null): WireCompletion {
  return {
    id: 'chatcmpl-sim-x',
    object: 'chat.completion',
    created: 0,
    model: 'gpt-test',
    system_fingerprint: 'tao-model-sim',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          ...(calls > 0
            ? {
                tool_calls: Array.from({ length: calls }, (_, i) => ({
                  id: `call_1_${i + 1}`,
                  type: 'function' as const,
                  function: { name: 'orders__get', arguments: '{"order_id":"O-12345678"}' },
                })),
              }
            : {}),
          refusal: null,
        },
        logprobs: null,
        finish_reason: calls > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
  };
}

test('tool-call ids in each server form, deterministic per request', () => {
  const ids = (p: ProfileName | Partial<ProfileConfig>, key = 'k1'): string[] =>
    (
      shapeAnswer(p, completionWith(2), { requestKey: key, body: req([SYSTEM, USER], { parallel_tool_calls: true }) }).completion.choices[0]?.message
        .tool_calls ?? []
    ).map((c) => c.id ?? '');
  assert.deepEqual(ids('lenient'), ['call_1_1', 'call_1_2'], 'lenient keeps call_<turn>_<n>');
  for (const id of ids('openai')) assert.match(id, /^call_[A-Za-z0-9]{24}$/);
  for (const id of ids('ollama')) assert.match(id, /^call_[a-z0-9]{8}$/);
  for (const id of ids('llamacpp')) assert.match(id, /^[A-Za-z0-9]{32}$/);
  for (const id of ids('vllm')) assert.match(id, /^chatcmpl-tool-[0-9a-f]{32}$/);
  for (const id of ids({ profile: 'vllm', toolIdFormat: 'mistral' })) assert.match(id, /^[A-Za-z0-9]{9}$/);
  assert.deepEqual(ids('openai'), ids('openai'), 'same request, same ids');
  assert.notDeepEqual(ids('openai'), ids('openai', 'k2'), 'another request, other ids');
  const [a, b] = ids('llamacpp');
  assert.notEqual(a, b, 'two calls, two ids');
  assert.equal(toolCallId(profileConfig('lenient'), 'k', 0), null);
});

test('llamacpp answers one tool call unless parallel_tool_calls: true; every strict profile with parallel_tool_calls: false', () => {
  const count = (p: ProfileName, extra: Record<string, unknown>): [number, string[]] => {
    const s = shapeAnswer(p, completionWith(2), { requestKey: 'k', body: req([SYSTEM, USER], extra) });
    return [s.completion.choices[0]?.message.tool_calls?.length ?? 0, s.quirks];
  };
  assert.deepEqual(count('llamacpp', {}), [1, ['parallel_tool_calls_trimmed']]);
  assert.deepEqual(count('llamacpp', { parallel_tool_calls: true }), [2, []]);
  assert.deepEqual(count('openai', {}), [2, []]);
  assert.deepEqual(count('openai', { parallel_tool_calls: false }), [1, ['parallel_tool_calls_trimmed']]);
  assert.deepEqual(count('lenient', { parallel_tool_calls: false }), [2, []], 'lenient as before');
});

test('llamacpp: a conversation ending with one assistant message is a prefill the answer continues', () => {
  const body = req([SYSTEM, USER, { role: 'assistant', content: 'Order O-12345678 is' }]);
  const s = shapeAnswer('llamacpp', completionWith(0, 'Order O-12345678 is delivered.'), { requestKey: 'k', body });
  assert.deepEqual(s.quirks, ['prefill']);
  assert.equal(s.prefill, 'Order O-12345678 is');
  assert.equal(s.completion.choices[0]?.message.content, ' delivered.', 'only the continuation is returned');
  const other = shapeAnswer('openai', completionWith(0, 'Order O-12345678 is delivered.'), { requestKey: 'k', body });
  assert.equal(other.prefill, null, 'OpenAI answers a trailing assistant message afresh');
});

test('strict profiles report usage.prompt_tokens as estimated; ollama over its window reports the window (truncated)', () => {
  const body = req([SYSTEM, USER]);
  const m = estimatePromptTokens(body);
  const openai = shapeAnswer('openai', completionWith(1), { requestKey: 'k', body }).completion.usage;
  assert.deepEqual(openai, { prompt_tokens: m, completion_tokens: 2, total_tokens: m + 2 });
  const ollama = shapeAnswer({ profile: 'ollama', contextWindow: 10 }, completionWith(1), { requestKey: 'k', body });
  assert.deepEqual(ollama.quirks, ['context_truncated']);
  assert.deepEqual(ollama.completion.usage, { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 });
});

// ---------------------------------------------------------------------------
// Through the server: profiles end to end
// ---------------------------------------------------------------------------

interface Reply {
  status: number;
  json: Record<string, unknown>;
}

interface ChatCompletion {
  choices: Array<{
    message: {
      role: string;
      content: string | null;
      tool_calls?: Array<{ id?: string; type: string; function: { name: string; arguments: string } }>;
      refusal?: string | null;
      reasoning_content?: string;
      reasoning?: string;
    };
    finish_reason: string;
  }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

async function withSim(opts: Partial<ModelSimOptions>, fn: (sim: ModelSim, post: (body: unknown) => Promise<Reply>) => Promise<void>): Promise<void> {
  const sim = await startModelSim({ port: 0, ...opts });
  const agent = new Agent();
  const post = async (body: unknown): Promise<Reply> => {
    const res = await request(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
      dispatcher: agent,
    });
    return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
  };
  try {
    await fn(sim, post);
  } finally {
    await sim.close();
    await agent.close();
  }
}

test('every strict profile: a well-formed 3-turn conversation, echoing the answers back, is never refused', async () => {
  const profiles: Array<Partial<ModelSimOptions>> = [
    { profile: 'openai' },
    { profile: 'ollama' },
    { profile: 'llamacpp' },
    { profile: 'vllm' },
    { profile: 'vllm', toolIdFormat: 'mistral' },
  ];
  for (const opts of profiles) {
    await withSim(opts, async (sim, post) => {
      const messages: Message[] = [SYSTEM, USER];
      for (let turn = 1; turn <= 3; turn += 1) {
        const r = await post(req(messages, { temperature: 0, max_tokens: 256 }));
        assert.equal(r.status, 200, `${JSON.stringify(opts)} turn ${turn}: ${JSON.stringify(r.json)}`);
        const m = (r.json as unknown as ChatCompletion).choices[0]!.message;
        messages.push(m as unknown as Message);
        for (const c of m.tool_calls ?? []) messages.push({ role: 'tool', tool_call_id: c.id, content: JSON.stringify(FAKE_RESULTS[c.function.name]) });
      }
      assert.match(String((messages.at(-1) as { content: string }).content), /Order O-12345678 is delivered/);
      const s = sim.stats();
      assert.equal(s.profile, opts.profile);
      assert.deepEqual(s.byRefused, {}, 'nothing was refused');
      assert.deepEqual(
        s.requests.map((q) => [q.profile, q.refused, q.status]),
        [1, 2, 3].map(() => [opts.profile, null, 200]),
      );
    });
  }
});

test('a refused request is recorded with its rule (stats byRefused), its skill and turn', async () => {
  await withSim({ profile: 'openai' }, async (sim, post) => {
    const r = await post(req([SYSTEM, USER, assistantCalls('c1')]));
    assert.equal(r.status, 400);
    assert.equal(
      (r.json as { error: { message: string } }).error.message.startsWith("An assistant message with 'tool_calls' must be followed by tool messages"),
      true,
    );
    const s = sim.stats();
    assert.deepEqual(s.byRefused, { tool_call_unanswered: 1 });
    assert.deepEqual(s.byOutcome, { invalid_request: 1 });
    const q = s.requests[0]!;
    assert.deepEqual([q.refused, q.status, q.skill, q.turn, q.outcome], ['tool_call_unanswered', 400, 'order-status', 2, 'invalid_request']);
    sim.resetStats();
    assert.deepEqual(sim.stats().byRefused, {});
  });
});

test('llamacpp: a request ending on an assistant message is recorded as a prefill (so a test can assert the loop never does it)', async () => {
  await withSim({ profile: 'llamacpp' }, async (sim, post) => {
    const r = await post(req([SYSTEM, USER, { role: 'assistant', content: 'Let me' }]));
    assert.equal(r.status, 200);
    const q = sim.stats().requests[0]!;
    assert.deepEqual(q.quirks, ['prefill']);
    assert.equal(q.prefill, 'Let me');
    await post(req([SYSTEM, USER]));
    assert.deepEqual(
      sim.stats().requests.map((x) => x.prefill),
      ['Let me', null],
    );
  });
});

test('ollama over its context window answers normally and records the truncation', async () => {
  await withSim({ profile: 'ollama', contextWindow: 50 }, async (sim, post) => {
    const r = await post(req([SYSTEM, USER]));
    assert.equal(r.status, 200);
    assert.equal((r.json as unknown as ChatCompletion).usage?.prompt_tokens, 50);
    assert.deepEqual(sim.stats().requests[0]?.quirks, ['context_truncated']);
  });
});

test('startModelSim refuses invalid profile options', async () => {
  await assert.rejects(startModelSim({ port: 0, profile: 'bogus' as ProfileName }), /profile must be one of lenient, openai, ollama, llamacpp, vllm/);
  await assert.rejects(startModelSim({ port: 0, profile: 'openai', contextWindow: 0 }), /contextWindow must be a positive integer/);
  await assert.rejects(startModelSim({ port: 0, profile: 'openai', toolIdFormat: 'mistral' }), /toolIdFormat mistral applies only to the vllm profile/);
});

// ---------------------------------------------------------------------------
// Answer-quirk faults (setFault / [sim:kind] markers)
// ---------------------------------------------------------------------------

async function faulted(
  kind: string,
  opts: Partial<ModelSimOptions> = {},
  messages: Message[] = [SYSTEM, USER],
  extra: Record<string, unknown> = {},
): Promise<{ c: ChatCompletion; fault: string | null }> {
  let out: { c: ChatCompletion; fault: string | null } | undefined;
  await withSim(opts, async (sim, post) => {
    sim.setFault({ kind: kind as never, times: 1 });
    const r = await post(req(messages, extra));
    assert.equal(r.status, 200, JSON.stringify(r.json));
    out = { c: r.json as unknown as ChatCompletion, fault: sim.stats().requests[0]?.fault ?? null };
  });
  return out!;
}

test('args_not_json: the tool call arguments string is not JSON', async () => {
  const { c, fault } = await faulted('args_not_json');
  assert.equal(fault, 'args_not_json');
  const args = c.choices[0]!.message.tool_calls![0]!.function.arguments;
  assert.equal(args, '{order_id: O-12345678}');
  assert.throws(() => JSON.parse(args), SyntaxError);
  assert.equal(c.choices[0]!.finish_reason, 'tool_calls');
});

test('tool_call_as_text: no tool_calls, the call printed Hermes-style in the content', async () => {
  const { c } = await faulted('tool_call_as_text');
  const m = c.choices[0]!.message;
  assert.equal(m.tool_calls, undefined);
  assert.equal(m.content, '<tool_call>\n{"name": "orders__get", "arguments": {"order_id": "O-12345678"}}\n</tool_call>');
  assert.equal(c.choices[0]!.finish_reason, 'stop');
  assert.equal(pythonJson({ a: [1, 'x'], b: null }), '{"a": [1, "x"], "b": null}');
});

test('tool_call_as_fenced_json and tool_call_in_prose: no tool_calls, the call as JSON in a fence after a sentence, or inside a sentence', async () => {
  const fenced = (await faulted('tool_call_as_fenced_json')).c.choices[0]!;
  assert.equal(fenced.message.tool_calls, undefined);
  assert.equal(
    fenced.message.content,
    'I will look that up.\n\n```json\n{\n  "name": "orders__get",\n  "arguments": {\n    "order_id": "O-12345678"\n  }\n}\n```',
  );
  assert.equal(fenced.finish_reason, 'stop');
  const prose = (await faulted('tool_call_in_prose')).c.choices[0]!;
  assert.equal(prose.message.tool_calls, undefined);
  assert.equal(prose.message.content, 'To answer I call {"name": "orders__get", "arguments": {"order_id": "O-12345678"}} first.');
});

test('prose_instead: a sentence announcing the call, no tool calls, finish_reason stop', async () => {
  const { c } = await faulted('prose_instead');
  assert.equal(c.choices[0]!.message.content, PROSE_INSTEAD);
  assert.equal(PROSE_INSTEAD, 'Let me check the order status for you.');
  assert.equal(c.choices[0]!.message.tool_calls, undefined);
  assert.equal(c.choices[0]!.finish_reason, 'stop');
});

test('think_block: the content is prefixed by <think>…</think>', async () => {
  const messages: Message[] = [SYSTEM, { role: 'user', content: 'Where is my parcel?' }];
  const { c } = await faulted('think_block', {}, messages);
  const content = c.choices[0]!.message.content ?? '';
  assert.match(content, /^<think>\n[\s\S]+\n<\/think>\n\n/);
  assert.match(content.replace(/^<think>[\s\S]*<\/think>\n\n/, ''), /order number/, 'then the normal answer');
});

test('reasoning_field: reasoning_content beside the normal answer (ollama: reasoning)', async () => {
  const { c } = await faulted('reasoning_field');
  assert.equal(c.choices[0]!.message.reasoning_content, REASONING_TEXT);
  assert.equal(c.choices[0]!.message.tool_calls?.[0]?.function.name, 'orders__get', 'the normal answer is kept');
  const ollama = await faulted('reasoning_field', { profile: 'ollama' });
  assert.equal(ollama.c.choices[0]!.message.reasoning, REASONING_TEXT);
  assert.equal(ollama.c.choices[0]!.message.reasoning_content, undefined);
});

test('fenced_json: a json answer wrapped in ```json fences; on a tool-call turn it does not apply', async () => {
  const reflection: Message[] = [
    { role: 'system', content: 'Skill: order-status@1\nTurn: reflection\nJudge the run.' },
    USER,
    { role: 'assistant', content: null, tool_calls: [call('c1')] },
    { role: 'tool', tool_call_id: 'c1', content: JSON.stringify({ error: { status: 503, message: 'unavailable' } }) },
  ];
  const { c, fault } = await faulted('fenced_json', {}, reflection);
  assert.equal(fault, 'fenced_json');
  const content = c.choices[0]!.message.content ?? '';
  assert.match(content, /^```json\n\{[\s\S]*\}\n```$/);
  assert.equal((JSON.parse(content.slice('```json\n'.length, -'\n```'.length)) as { action: string }).action, 'ask_person');
  const normal = await faulted('fenced_json');
  assert.equal(normal.fault, null, 'nothing to fence: the normal answer, no fault recorded');
  assert.equal(normal.c.choices[0]!.message.tool_calls?.length, 1);
});

test('length: the tool-call arguments (or the content) cut in the middle, finish_reason length', async () => {
  const { c } = await faulted('length');
  const args = c.choices[0]!.message.tool_calls![0]!.function.arguments;
  const whole = '{"order_id":"O-12345678"}';
  assert.equal(args, whole.slice(0, Math.floor(whole.length / 2)));
  assert.equal(c.choices[0]!.finish_reason, 'length');
  const text = await faulted('length', {}, [SYSTEM, { role: 'user', content: 'Where is my parcel?' }]);
  const full = await faulted('no_usage', {}, [SYSTEM, { role: 'user', content: 'Where is my parcel?' }]);
  const answer = full.c.choices[0]!.message.content ?? '';
  assert.equal(text.c.choices[0]!.message.content, answer.slice(0, Math.floor(answer.length / 2)));
  assert.equal(text.c.choices[0]!.finish_reason, 'length');
});

test('content_filter: finish_reason content_filter, content null, no tool calls', async () => {
  const { c } = await faulted('content_filter');
  assert.deepEqual([c.choices[0]!.finish_reason, c.choices[0]!.message.content, c.choices[0]!.message.tool_calls], ['content_filter', null, undefined]);
});

test('refusal: message.refusal set, content null', async () => {
  const { c } = await faulted('refusal');
  assert.deepEqual([c.choices[0]!.message.refusal, c.choices[0]!.message.content, c.choices[0]!.message.tool_calls], [REFUSAL_TEXT, null, undefined]);
  assert.equal(REFUSAL_TEXT, "I'm sorry, I can't help with that.");
});

test('no_usage: the answer has no usage field', async () => {
  const { c, fault } = await faulted('no_usage');
  assert.equal(fault, 'no_usage');
  assert.equal('usage' in c, false);
});

test('duplicate_ids: every tool call with the same id (a single call sent twice); missing_ids: calls without id', async () => {
  const { c } = await faulted('duplicate_ids', { profile: 'openai' });
  const calls = c.choices[0]!.message.tool_calls!;
  assert.equal(calls.length, 2);
  assert.equal(calls[0]!.id, calls[1]!.id);
  assert.match(calls[0]!.id ?? '', /^call_[A-Za-z0-9]{24}$/);
  const missing = await faulted('missing_ids');
  assert.equal(
    missing.c.choices[0]!.message.tool_calls?.every((x) => !('id' in x)),
    true,
  );
  // Echoing such an answer back is what a strict server refuses.
  const echoed = req([SYSTEM, USER, c.choices[0]!.message as unknown as Message, toolResult(calls[0]!.id!)]);
  assert.equal(checkRequest('openai', echoed)?.rule, 'duplicate_tool_call_ids');
});

test('quirk markers: [sim:tool_call_as_text@2] applies at model turn 2 only', async () => {
  await withSim({ profile: 'openai' }, async (sim, post) => {
    const messages: Message[] = [SYSTEM, { role: 'user', content: 'Where is my order O-12345678? [sim:tool_call_as_text@2]' }];
    const t1 = (await post(req(messages))).json as unknown as ChatCompletion;
    const m1 = t1.choices[0]!.message;
    assert.equal(m1.tool_calls?.length, 1);
    messages.push(m1 as unknown as Message, { role: 'tool', tool_call_id: m1.tool_calls![0]!.id, content: JSON.stringify(FAKE_RESULTS['orders__get']) });
    const t2 = (await post(req(messages))).json as unknown as ChatCompletion;
    assert.match(t2.choices[0]!.message.content ?? '', /^<tool_call>\n\{"name": "shipping__track"/);
    assert.deepEqual(
      sim.stats().requests.map((r) => [r.turn, r.fault, r.faultId]),
      [
        [1, null, null],
        [2, 'tool_call_as_text', 'marker'],
      ],
    );
  });
});

test('applyQuirk does not change the completion it is given', () => {
  const c = completionWith(1);
  const before = structuredClone(c);
  applyQuirk('missing_ids', c);
  applyQuirk('no_usage', c);
  assert.deepEqual(c, before);
});

// ---------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------

test('`tao run model-sim --help` documents --profile; a bad --profile exits 2', async () => {
  const run = promisify(execFile);
  const { stdout } = await run(process.execPath, [TAO_BIN, 'run', 'model-sim', '--help'], { timeout: 30_000 });
  assert.match(stdout, /--profile\s+lenient\|openai\|ollama\|llamacpp\|vllm/);
  assert.match(stdout, /--context-window/);
  assert.match(stdout, /--reasoning-models/);
  assert.match(stdout, /--tool-id-format/);
  await assert.rejects(
    run(process.execPath, [TAO_BIN, 'run', 'model-sim', '--port', '0', '--profile', 'bogus'], { timeout: 30_000 }),
    (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr, /--profile must be one of lenient, openai, ollama, llamacpp, vllm/);
      return true;
    },
  );
});
