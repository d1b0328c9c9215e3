/**
 * Answers: how a profile shapes the simulator's answer (tool-call ids hashed from the request, one
 * tool call without `parallel_tool_calls`, llama.cpp's assistant prefill, Ollama's silent truncation,
 * the reasoning field's name).
 */
import { createHash } from 'node:crypto';
import { type ProfileConfig, type ProfileName, estimatePromptTokens, isRecord, profileConfig } from './config.ts';
import type { ProfileQuirk, ShapedAnswer, WireCompletion } from './wire.ts';

const ALNUM = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const LOWER_ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';

function hashChars(seed: string, alphabet: string, n: number): string {
  let out = '';
  let round = 0;
  while (out.length < n) {
    for (const byte of createHash('sha256').update(`${seed}#${round}`).digest()) {
      if (out.length === n) break;
      out += alphabet[byte % alphabet.length];
    }
    round += 1;
  }
  return out;
}

/**
 * The id of the `index`-th tool call of an answer, a hash of the request.
 *
 * - openai: `call_` + 24 alphanumerics (the form of OpenAI's ids, e.g. `call_gmd4tanjXcwOxfPawOnDmq6R`).
 * - ollama: `call_` + 8 of `[a-z0-9]` — verified: ollama/ollama server/routes.go `toolCallId()`.
 * - llamacpp: 32 of `[0-9A-Za-z]` — verified: tools/server/server-common.cpp `gen_tool_call_id()` =
 *   `random_string()`.
 * - vllm: `chatcmpl-tool-` + 32 hex digits — verified: vllm/entrypoints/chat_utils.py `make_tool_call_id`
 *   (`f"chatcmpl-tool-{random_uuid()}"`, `uuid4().hex`); with `toolIdFormat: 'mistral'`, 9 of
 *   `[a-zA-Z0-9]` (`MistralToolCall.generate_random_id`).
 * - lenient: `null` (the simulator keeps `call_<turn>_<n>`).
 */
export function toolCallId(c: ProfileConfig, requestKey: string, index: number): string | null {
  const seed = `${requestKey}:${index}`;
  switch (c.profile) {
    case 'openai':
      return `call_${hashChars(seed, ALNUM, 24)}`;
    case 'ollama':
      return `call_${hashChars(seed, LOWER_ALNUM, 8)}`;
    case 'llamacpp':
      return hashChars(seed, ALNUM, 32);
    case 'vllm':
      return c.toolIdFormat === 'mistral' ? hashChars(seed, ALNUM, 9) : `chatcmpl-tool-${createHash('sha256').update(seed).digest('hex').slice(0, 32)}`;
    default:
      return null;
  }
}

/** Text of a message `content`: a string, or the text parts of an array. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (isRecord(p) && typeof p['text'] === 'string' ? p['text'] : '')).join('');
  return '';
}

/** Context of {@link shapeAnswer}. */
export interface ShapeContext {
  /** A hash of the request body (ids are derived from it). */
  requestKey: string;
  /** The parsed request body. */
  body: unknown;
}

/**
 * Shapes the simulator's answer as the profile's server would send it.
 *
 * - Tool-call ids in the server's form ({@link toolCallId}).
 * - One tool call per answer when the request has `parallel_tool_calls: false`
 *   (every strict profile), and under `llamacpp` unless it has
 *   `parallel_tool_calls: true` — verified: server-common.cpp
 *   `inputs.parallel_tool_calls = json_value(body, "parallel_tool_calls", false)`
 *   (the grammar then allows one call). Quirk `parallel_tool_calls_trimmed`.
 * - llamacpp PREFILL: a request ending with one assistant message (see
 *   {@link checkLlamacpp}) is continued: when the answer's content starts with
 *   that text, the content is the rest of it (the server returns only what was
 *   generated). Quirk `prefill`; `prefill` is the continued text.
 * - Strict profiles report `usage.prompt_tokens` = {@link estimatePromptTokens};
 *   ollama over `contextWindow` reports the window (its prompt was truncated,
 *   server/prompt.go). Quirk `context_truncated`.
 */
export function shapeAnswer(profile: ProfileName | Partial<ProfileConfig>, completion: WireCompletion, ctx: ShapeContext): ShapedAnswer {
  const c = profileConfig(profile);
  const out = structuredClone(completion);
  const quirks: ProfileQuirk[] = [];
  let prefill: string | null = null;
  if (c.profile === 'lenient') return { completion: out, quirks, prefill };
  const body = isRecord(ctx.body) ? ctx.body : {};
  const choice = out.choices[0];
  const message = choice?.message;
  if (message?.tool_calls !== undefined) {
    const parallel = body['parallel_tool_calls'];
    if (message.tool_calls.length > 1 && (parallel === false || (c.profile === 'llamacpp' && parallel !== true))) {
      message.tool_calls = message.tool_calls.slice(0, 1);
      quirks.push('parallel_tool_calls_trimmed');
    }
    message.tool_calls.forEach((call, i) => {
      call.id = toolCallId(c, ctx.requestKey, i) ?? call.id;
    });
  }
  const messages = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  const last = messages.at(-1);
  if (c.profile === 'llamacpp' && isRecord(last) && last['role'] === 'assistant' && message !== undefined) {
    prefill = textOf(last['content']);
    quirks.push('prefill');
    if (typeof message.content === 'string' && prefill !== '' && message.content.startsWith(prefill)) message.content = message.content.slice(prefill.length);
  }
  if (out.usage !== undefined) {
    let prompt = estimatePromptTokens(body);
    if (c.profile === 'ollama' && c.contextWindow !== undefined && prompt > c.contextWindow) {
      prompt = c.contextWindow;
      quirks.push('context_truncated');
    }
    out.usage = { prompt_tokens: prompt, completion_tokens: out.usage.completion_tokens, total_tokens: prompt + out.usage.completion_tokens };
  }
  return { completion: out, quirks, prefill };
}

/**
 * Where the profile puts reasoning text. Ollama's OpenAI layer: `reasoning` — verified,
 * ollama/ollama openai/openai.go `Message.Reasoning` (`json:"reasoning,omitempty"`). llama.cpp with a
 * reasoning format and vLLM with a reasoning parser: `reasoning_content` (llama.cpp: verified in its
 * Responses conversion in tools/server/server-common.cpp; vLLM: its long-standing field name — recent
 * vLLM releases also use `reasoning`, not verified here).
 */
export function reasoningKey(profile: ProfileName): 'reasoning' | 'reasoning_content' {
  return profile === 'ollama' ? 'reasoning' : 'reasoning_content';
}
