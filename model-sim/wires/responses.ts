/**
 * `POST /v1/responses` of the simulator: the OpenAI Responses API in front of the chat-completions
 * simulator. A request is checked by the wire's rules, read as the chat request it means (so the
 * scenarios, faults and stats are the same), and the chat answer is sent as a Responses answer.
 *
 * Rules (Refusal `rule` names, in `RecordedRequest.refused`):
 * - every profile: `input` is required (`responses_input_missing`; a `messages` key instead of
 *   `input` is refused naming it, as OpenAI does); an input item of no known type
 *   (`responses_unknown_item`);
 * - `llamacpp` (verified with llama.cpp 0.94's llama-server, infra/README.md): an assistant message
 *   item without `type: "message"` is an item of no known type (`responses_unknown_item`);
 * - `openai-responses` (api.openai.com): a `function_call_output` whose `call_id` no earlier
 *   `function_call` has (`responses_output_without_call`), a `function_call` with no output after
 *   it when more input follows (`responses_call_unanswered`), `stream: true` as everywhere in the
 *   simulator. llama.cpp 0.94 accepts both (sim rule there: lenient).
 * Errors are OpenAI's `{error: {message, type, param, code}}`.
 */
import type { RuleName } from '../profiles/config.ts';
import type { ProfileConfig, Refusal, WireCompletion } from '../profiles.ts';
import type { SimWire } from './types.ts';

const ITEM_TYPES = ['message', 'function_call', 'function_call_output', 'reasoning'];

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function refusal(rule: RuleName, message: string, param: string | null, code: string | null = 'invalid_value'): Refusal {
  return { rule, status: 400, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (isRecord(p) && typeof p['text'] === 'string' ? p['text'] : '')).join('');
  return '';
}

/** The wire's refusal of a request, or null. */
export function checkResponsesRequest(profile: ProfileConfig, body: Record<string, unknown>): Refusal | null {
  if (!('input' in body)) {
    if ('messages' in body)
      return refusal(
        'responses_input_missing',
        "Unsupported parameter: 'messages'. In the Responses API, this parameter has moved to 'input'.",
        'messages',
        'unsupported_parameter',
      );
    return refusal('responses_input_missing', "Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  }
  const input = body['input'];
  if (typeof input === 'string') return null;
  if (!Array.isArray(input)) return refusal('responses_input_missing', "Invalid type for 'input': expected a string or an array of input items.", 'input');
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const [i, item] of input.entries()) {
    const type = isRecord(item) ? (item['type'] ?? (typeof item['role'] === 'string' ? 'message' : undefined)) : undefined;
    const typed = isRecord(item) && item['type'] !== undefined;
    if (typeof type !== 'string' || !ITEM_TYPES.includes(type) || (profile.profile === 'llamacpp' && !typed && isRecord(item) && item['role'] === 'assistant'))
      return refusal(
        'responses_unknown_item',
        profile.profile === 'llamacpp'
          ? "Cannot determine type of 'item'"
          : `Invalid value: '${String(type)}'. Supported values are: ${ITEM_TYPES.map((t) => `'${t}'`).join(', ')}.`,
        `input[${i}].type`,
      );
    if (profile.profile !== 'openai-responses' || !isRecord(item)) continue;
    if (type === 'function_call') calls.add(String(item['call_id']));
    if (type === 'function_call_output') {
      const id = String(item['call_id']);
      if (!calls.has(id)) return refusal('responses_output_without_call', `No tool call found for function call output with call_id ${id}.`, 'input');
      answered.add(id);
    }
  }
  if (profile.profile === 'openai-responses') {
    const last = input.at(-1);
    for (const id of calls)
      if (!answered.has(id) && !(isRecord(last) && last['type'] === 'function_call' && last['call_id'] === id))
        return refusal('responses_call_unanswered', `No tool output found for function call ${id}.`, 'input');
  }
  return null;
}

/** The chat request a Responses request means (what the scenarios read). */
export function responsesToChat(body: Record<string, unknown>): Record<string, unknown> {
  const messages: Array<Record<string, unknown>> = [];
  if (typeof body['instructions'] === 'string') messages.push({ role: 'system', content: body['instructions'] });
  const input = typeof body['input'] === 'string' ? [{ role: 'user', content: body['input'] }] : (body['input'] as unknown[]);
  for (const item of input) {
    if (!isRecord(item)) continue;
    const type = item['type'] ?? 'message';
    if (type === 'message') {
      const role = item['role'] === 'developer' ? 'system' : item['role'];
      messages.push({ role, content: text(item['content']) });
    } else if (type === 'function_call') {
      const call = { id: String(item['call_id']), type: 'function', function: { name: String(item['name']), arguments: String(item['arguments'] ?? '{}') } };
      const last = messages.at(-1);
      if (last?.['role'] === 'assistant') last['tool_calls'] = [...((last['tool_calls'] as unknown[] | undefined) ?? []), call];
      else messages.push({ role: 'assistant', content: '', tool_calls: [call] });
    } else if (type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: String(item['call_id']), content: text(item['output']) });
    }
  }
  const tools = Array.isArray(body['tools'])
    ? body['tools']
        .filter(isRecord)
        .map((t) => ({ type: 'function', function: { name: t['name'], description: t['description'], parameters: t['parameters'] } }))
    : undefined;
  const format = isRecord(body['text']) && isRecord(body['text']['format']) ? body['text']['format'] : null;
  const choice = body['tool_choice'];
  return {
    model: body['model'],
    messages,
    ...(tools ? { tools } : {}),
    ...(choice !== undefined ? { tool_choice: isRecord(choice) && choice['name'] ? { type: 'function', function: { name: choice['name'] } } : choice } : {}),
    ...(format?.['type'] === 'json_schema'
      ? { response_format: { type: 'json_schema', json_schema: { name: format['name'], schema: format['schema'] } } }
      : {}),
    ...(body['max_output_tokens'] !== undefined ? { max_tokens: body['max_output_tokens'] } : {}),
    ...(body['temperature'] !== undefined ? { temperature: body['temperature'] } : {}),
    ...(body['parallel_tool_calls'] !== undefined ? { parallel_tool_calls: body['parallel_tool_calls'] } : {}),
    ...(body['stream'] !== undefined ? { stream: body['stream'] } : {}),
  };
}

/** The Responses answer for the simulator's chat completion. */
export function chatToResponses(c: WireCompletion, body: Record<string, unknown>): unknown {
  const choice = c.choices[0]!;
  const m = choice.message;
  const output: Array<Record<string, unknown>> = [];
  const reasoning = m.reasoning_content ?? m.reasoning;
  const suffix = c.id.replace(/^chatcmpl-sim-/, '');
  if (reasoning) output.push({ type: 'reasoning', id: `rs_${suffix}`, summary: [{ type: 'summary_text', text: reasoning }] });
  const parts: Array<Record<string, unknown>> = [];
  if (m.content) parts.push({ type: 'output_text', text: m.content, annotations: [] });
  if (m.refusal) parts.push({ type: 'refusal', refusal: m.refusal });
  if (parts.length) output.push({ type: 'message', id: `msg_${suffix}`, status: 'completed', role: 'assistant', content: parts });
  for (const [i, call] of (m.tool_calls ?? []).entries())
    output.push({
      type: 'function_call',
      id: `fc_${suffix}_${i + 1}`,
      call_id: call.id ?? `call_${i + 1}`,
      name: call.function.name,
      arguments: call.function.arguments,
      status: 'completed',
    });
  const truncated = choice.finish_reason === 'length' || choice.finish_reason === 'content_filter';
  const usage = c.usage;
  return {
    id: `resp_${suffix}`,
    object: 'response',
    created_at: c.created,
    status: truncated ? 'incomplete' : 'completed',
    ...(truncated ? { incomplete_details: { reason: choice.finish_reason === 'length' ? 'max_output_tokens' : 'content_filter' } } : {}),
    model: c.model,
    output,
    store: body['store'] ?? true,
    ...(usage
      ? {
          usage: {
            input_tokens: usage.prompt_tokens,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: usage.completion_tokens,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: usage.total_tokens,
          },
        }
      : {}),
  };
}

export const RESPONSES_WIRE: SimWire = {
  name: 'responses',
  check: checkResponsesRequest,
  toChat: responsesToChat,
  answer: chatToResponses,
  error: (_status, body) => body,
};
