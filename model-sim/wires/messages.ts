/**
 * `POST /v1/messages` of the simulator: the Anthropic Messages API in front of the chat-completions
 * simulator (as model-sim/wires/responses.ts does for the Responses API).
 *
 * Rules under the `anthropic` profile (api.anthropic.com; Refusal `rule` names): no
 * `anthropic-version` header (`messages_version_missing`); no `max_tokens`
 * (`messages_max_tokens_missing`); a `system` role inside `messages` (`messages_system_role`); two
 * messages of the same role in a row (`messages_roles_not_alternating`); an empty text block
 * (`messages_empty_text`); a `tool_result` whose `tool_use_id` is not a `tool_use` of the message
 * right before (`messages_tool_result_without_use`); a `tool_use` with no `tool_result` in the next
 * message (`messages_tool_use_unanswered`). Every other profile is as lenient as llama.cpp 0.94's
 * llama-server, which accepts all of these (verified, infra/README.md); `messages` must be an array.
 * Errors are Anthropic's `{type: "error", error: {type, message}}`; the key is `x-api-key` (or a
 * Bearer token, as llama.cpp takes either).
 */
import { timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import type { RuleName } from '../profiles/config.ts';
import type { ProfileConfig, Refusal, WireCompletion } from '../profiles.ts';
import type { SimWire } from './types.ts';
import { bearerMatches } from '../http.ts';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function anthropicError(status: number, message: string, type?: string): unknown {
  const t =
    type ??
    (status === 401
      ? 'authentication_error'
      : status === 404
        ? 'not_found_error'
        : status === 429
          ? 'rate_limit_error'
          : status === 529 || status === 503
            ? 'overloaded_error'
            : status >= 500
              ? 'api_error'
              : 'invalid_request_error');
  return { type: 'error', error: { type: t, message } };
}

function refusal(rule: RuleName, message: string): Refusal {
  return { rule, status: 400, body: anthropicError(400, message) };
}

function blocks(content: unknown): Array<Record<string, unknown>> {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content.filter(isRecord) : [];
}

/** The wire's refusal of a request, or null. */
export function checkMessagesRequest(profile: ProfileConfig, body: Record<string, unknown>, headers: http.IncomingHttpHeaders): Refusal | null {
  if (!Array.isArray(body['messages'])) return refusal('messages_missing', 'messages: Field required');
  if (profile.profile !== 'anthropic') return null;
  if (!headers['anthropic-version']) return refusal('messages_version_missing', 'anthropic-version: header is required');
  if (body['max_tokens'] === undefined) return refusal('messages_max_tokens_missing', 'max_tokens: Field required');
  const messages = body['messages'] as unknown[];
  for (const [i, m] of messages.entries()) {
    const role = isRecord(m) ? m['role'] : undefined;
    if (role === 'system')
      return refusal(
        'messages_system_role',
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.',
      );
    const prev = i > 0 && isRecord(messages[i - 1]) ? (messages[i - 1] as Record<string, unknown>) : null;
    if (prev && prev['role'] === role)
      return refusal(
        'messages_roles_not_alternating',
        `messages: roles must alternate between "user" and "assistant", but found multiple "${String(role)}" roles in a row`,
      );
    const content = blocks(isRecord(m) ? m['content'] : undefined);
    if (content.some((b) => b['type'] === 'text' && !(typeof b['text'] === 'string' && b['text'].trim())))
      return refusal('messages_empty_text', `messages.${i}: text content blocks must contain non-whitespace text`);
    const uses = new Set(
      blocks(prev?.['content'])
        .filter((b) => b['type'] === 'tool_use')
        .map((b) => String(b['id'])),
    );
    for (const [k, b] of content.entries())
      if (b['type'] === 'tool_result' && !uses.has(String(b['tool_use_id'])))
        return refusal(
          'messages_tool_result_without_use',
          `messages.${i}.content.${k}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b['tool_use_id'])}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        );
    if (role === 'assistant' && i < messages.length - 1) {
      const next = blocks(isRecord(messages[i + 1]) ? (messages[i + 1] as Record<string, unknown>)['content'] : undefined);
      const results = new Set(next.filter((b) => b['type'] === 'tool_result').map((b) => String(b['tool_use_id'])));
      const open = content.filter((b) => b['type'] === 'tool_use' && !results.has(String(b['id']))).map((b) => String(b['id']));
      if (open.length)
        return refusal(
          'messages_tool_use_unanswered',
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${open.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
    }
  }
  return null;
}

/** The chat request a Messages request means (what the scenarios read). */
export function messagesToChat(body: Record<string, unknown>): Record<string, unknown> {
  const messages: Array<Record<string, unknown>> = [];
  const system =
    typeof body['system'] === 'string'
      ? body['system']
      : blocks(body['system'])
          .map((b) => String(b['text'] ?? ''))
          .join('\n');
  if (system) messages.push({ role: 'system', content: system });
  for (const m of body['messages'] as unknown[]) {
    if (!isRecord(m)) continue;
    const content = blocks(m['content']);
    const text = content
      .filter((b) => b['type'] === 'text')
      .map((b) => String(b['text']))
      .join('\n');
    if (m['role'] === 'assistant') {
      const calls = content
        .filter((b) => b['type'] === 'tool_use')
        .map((b) => ({ id: String(b['id']), type: 'function', function: { name: String(b['name']), arguments: JSON.stringify(b['input'] ?? {}) } }));
      messages.push({ role: 'assistant', content: text, ...(calls.length ? { tool_calls: calls } : {}) });
      continue;
    }
    for (const b of content.filter((b) => b['type'] === 'tool_result'))
      messages.push({
        role: 'tool',
        tool_call_id: String(b['tool_use_id']),
        content: typeof b['content'] === 'string' ? b['content'] : JSON.stringify(b['content'] ?? ''),
      });
    if (text || !content.some((b) => b['type'] === 'tool_result')) messages.push({ role: m['role'], content: text });
  }
  const tools = Array.isArray(body['tools'])
    ? body['tools']
        .filter(isRecord)
        .map((t) => ({ type: 'function', function: { name: t['name'], description: t['description'], parameters: t['input_schema'] } }))
    : undefined;
  const choice = isRecord(body['tool_choice']) ? body['tool_choice'] : null;
  const format = isRecord(body['output_config']) && isRecord(body['output_config']['format']) ? body['output_config']['format'] : null;
  return {
    model: body['model'],
    messages,
    ...(tools ? { tools } : {}),
    ...(choice
      ? {
          tool_choice:
            choice['type'] === 'tool' ? { type: 'function', function: { name: choice['name'] } } : choice['type'] === 'any' ? 'required' : choice['type'],
          ...(choice['disable_parallel_tool_use'] === true ? { parallel_tool_calls: false } : {}),
        }
      : {}),
    ...(format?.['type'] === 'json_schema' ? { response_format: { type: 'json_schema', json_schema: { name: 'output', schema: format['schema'] } } } : {}),
    ...(body['max_tokens'] !== undefined ? { max_tokens: body['max_tokens'] } : {}),
    ...(body['temperature'] !== undefined ? { temperature: body['temperature'] } : {}),
    ...(body['stream'] !== undefined ? { stream: body['stream'] } : {}),
  };
}

const STOP: Record<string, string> = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens', content_filter: 'refusal' };

/** The Messages answer for the simulator's chat completion. */
export function chatToMessages(c: WireCompletion): unknown {
  const choice = c.choices[0]!;
  const m = choice.message;
  const content: Array<Record<string, unknown>> = [];
  const reasoning = m.reasoning_content ?? m.reasoning;
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning, signature: 'tao-model-sim' });
  if (m.content) content.push({ type: 'text', text: m.content });
  for (const [i, call] of (m.tool_calls ?? []).entries()) {
    let input: unknown = {};
    try {
      input = JSON.parse(call.function.arguments);
    } catch {
      input = {};
    }
    content.push({ type: 'tool_use', id: `toolu_${(call.id ?? `call_${i + 1}`).replace(/[^A-Za-z0-9_-]/g, '')}`, name: call.function.name, input });
  }
  return {
    id: `msg_${c.id.replace(/^chatcmpl-sim-/, '')}`,
    type: 'message',
    role: 'assistant',
    model: c.model,
    content,
    stop_reason: m.refusal ? 'refusal' : (STOP[choice.finish_reason] ?? 'end_turn'),
    stop_sequence: null,
    ...(c.usage
      ? { usage: { input_tokens: c.usage.prompt_tokens, output_tokens: c.usage.completion_tokens, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 } }
      : {}),
  };
}

function keyMatches(header: string | string[] | undefined, key: string): boolean {
  const a = Buffer.from(typeof header === 'string' ? header : '');
  const b = Buffer.from(key);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const MESSAGES_WIRE: SimWire = {
  name: 'messages',
  check: checkMessagesRequest,
  toChat: messagesToChat,
  answer: (c) => chatToMessages(c),
  error: (status, body) => {
    const e = isRecord(body) && isRecord(body['error']) ? body['error'] : {};
    return anthropicError(
      status,
      typeof e['message'] === 'string' ? e['message'] : 'error',
      status === 404 && e['code'] === 'model_not_found' ? 'not_found_error' : undefined,
    );
  },
  authorized: (headers, key) => keyMatches(headers['x-api-key'], key) || bearerMatches(headers.authorization, key),
};
