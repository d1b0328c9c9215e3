/**
 * Request rules: what each strict server refuses that the lenient simulator accepts (tool-call
 * pairing, Ollama's and llama.cpp's template checks, Mistral's tool-call ids, reasoning models'
 * parameters, the context window), and {@link checkRequest}, which applies a profile's rules.
 */
import { type ProfileConfig, type ProfileName, estimatePromptTokens, isReasoningModel, isRecord, profileConfig } from './config.ts';
import { refuse } from './errors.ts';
import type { Refusal } from './wire.ts';

const STRICT: readonly ProfileName[] = ['openai', 'ollama', 'llamacpp', 'vllm'];

/** vLLM serving a Mistral model with the Mistral tokenizer: mistral-common's messages. */
function mistral(c: ProfileConfig): boolean {
  return c.profile === 'vllm' && c.toolIdFormat === 'mistral';
}

/**
 * Tool-call pairing (every strict profile).
 *
 * - openai: verified wording and `param`:
 *   "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'."
 *   (param `messages.[i].tool_call_id`) — https://github.com/langchain-ai/langchain/issues/22600,
 *   https://github.com/vercel/ai/issues/2178;
 *   "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
 *   (sic, param `messages.[i].role`) — https://github.com/miurla/morphic/issues/136,
 *   https://github.com/sdcb/chats/pull/132;
 *   "An assistant message with 'tool_calls' must be followed by tool messages responding to each
 *   'tool_call_id'. The following tool_call_ids did not have response messages: …" (param
 *   `messages.[i].role`) — https://github.com/sdcb/chats/pull/132 (which message `i` names could not be
 *   verified: the sim names the assistant message);
 *   "Invalid parameter: Duplicate value for 'tool_call_id' of '…', in messages[7] and messages[8]."
 *   (param `messages.[8].tool_call_id`) — https://github.com/agno-agi/agno/issues/5116.
 *   NOT verified (no quoted body found): a `tool_call_id` absent from the previous
 *   assistant message's calls ("Invalid parameter: 'tool_call_id' of '…' not found in 'tool_calls'
 *   of previous message.", from memory), an assistant tool call without `id` (OpenAI's usual
 *   "Missing required parameter: …" form) and duplicate ids inside one assistant message
 *   (worded after the verified duplicate-`tool_call_id` error).
 * - vllm with `toolIdFormat: 'mistral'`: mistral-common's own messages — verified:
 *   mistralai/mistral-common src/mistral_common/protocol/instruct/validator.py
 *   (`MistralRequestValidatorV13._validate_tool_calls_followed_by_tool_messages`: "Not the same number
 *   of function calls and responses", "Unexpected tool call id … in tool results", "Duplicate tool call id
 *   … in tool results", "Duplicate tool call id … in assistant message"; V3 `_validate_tool_message`:
 *   "Tool call id has to be defined.").
 * - ollama, llamacpp, vllm without the Mistral tokenizer: SIM RULE. Ollama's OpenAI layer
 *   (openai/openai.go `FromChatRequest`) and llama.cpp (server-common.cpp `oaicompat_chat_params_parse`)
 *   do not pair tool results with calls, and vLLM only does through a chat template; the simulator
 *   refuses anyway (OpenAI's wording, the server's shape) because such a conversation is malformed for
 *   every model.
 */
function checkToolPairing(c: ProfileConfig, messages: unknown[]): Refusal | null {
  const m13 = mistral(c);
  let pending: { index: number; ids: string[]; answered: Map<string, number> } | null = null;
  const unanswered = (): Refusal | null => {
    if (pending === null) return null;
    const missing = pending.ids.filter((id) => !pending?.answered.has(id));
    if (missing.length === 0) return null;
    return m13
      ? refuse(c, 'tool_call_unanswered', 'Not the same number of function calls and responses')
      : refuse(
          c,
          'tool_call_unanswered',
          `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`,
          { param: `messages.[${pending.index}].role` },
        );
  };
  for (let i = 0; i < messages.length; i += 1) {
    const m = messages[i];
    if (!isRecord(m)) continue;
    if (m['role'] === 'tool') {
      const id = m['tool_call_id'];
      if (typeof id !== 'string' || id === '') {
        return m13
          ? refuse(c, 'tool_call_id_missing', 'Tool call id has to be defined.')
          : refuse(c, 'tool_call_id_missing', "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.", {
              param: `messages.[${i}].tool_call_id`,
            });
      }
      if (pending === null || !pending.ids.includes(id)) {
        if (m13) return refuse(c, 'tool_result_without_call', `Unexpected tool call id ${id} in tool results`);
        return pending === null
          ? refuse(
              c,
              'tool_result_without_call',
              "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
              { param: `messages.[${i}].role` },
            )
          : refuse(c, 'tool_result_without_call', `Invalid parameter: 'tool_call_id' of '${id}' not found in 'tool_calls' of previous message.`, {
              param: `messages.[${i}].tool_call_id`,
            });
      }
      const first = pending.answered.get(id);
      if (first !== undefined) {
        return m13
          ? refuse(c, 'duplicate_tool_result', `Duplicate tool call id ${id} in tool results`)
          : refuse(c, 'duplicate_tool_result', `Invalid parameter: Duplicate value for 'tool_call_id' of '${id}', in messages[${first}] and messages[${i}].`, {
              param: `messages.[${i}].tool_call_id`,
            });
      }
      pending.answered.set(id, i);
      continue;
    }
    // Any other message closes the tool results of the previous assistant message.
    const open = unanswered();
    if (open !== null) return open;
    pending = null;
    const calls = m['role'] === 'assistant' ? m['tool_calls'] : undefined;
    if (!Array.isArray(calls) || calls.length === 0) continue;
    const ids: string[] = [];
    for (let j = 0; j < calls.length; j += 1) {
      const call: unknown = calls[j];
      const id = isRecord(call) ? call['id'] : undefined;
      if (typeof id !== 'string' || id === '') {
        return m13
          ? refuse(c, 'assistant_tool_call_id_missing', 'Tool call id has to be defined in serving mode.')
          : refuse(c, 'assistant_tool_call_id_missing', `Missing required parameter: 'messages[${i}].tool_calls[${j}].id'.`, {
              param: `messages.[${i}].tool_calls.[${j}].id`,
              code: 'missing_required_parameter',
            });
      }
      if (ids.includes(id)) {
        return m13
          ? refuse(c, 'duplicate_tool_call_ids', `Duplicate tool call id ${id} in assistant message`)
          : refuse(c, 'duplicate_tool_call_ids', `Invalid parameter: Duplicate value for 'id' of '${id}' in messages[${i}].tool_calls.`, {
              param: `messages.[${i}].tool_calls.[${j}].id`,
            });
      }
      ids.push(id);
    }
    pending = { index: i, ids, answered: new Map() };
  }
  return unanswered();
}

/**
 * Ollama's OpenAI layer, `FromChatRequest` — verified: ollama/ollama
 * openai/openai.go (at fb30760, 2026-08): a message whose `content` is neither a
 * string nor an array (JSON null, or absent) is refused with
 * `fmt.Errorf("invalid message content type: %T", content)` — "<nil>" — unless
 * the message has `tool_calls` ("content is only optional if tool calls are
 * present", since 203c137, 2025-08-06; so an assistant tool-call message with
 * `content: null` is ACCEPTED); and every tool call's `arguments` must parse as
 * JSON (`FromCompletionToolCall`: "invalid tool call arguments").
 */
function checkOllama(c: ProfileConfig, messages: unknown[]): Refusal | null {
  for (const m of messages) {
    if (!isRecord(m)) continue;
    const content = m['content'];
    const calls = m['tool_calls'];
    const hasCalls = calls !== undefined && calls !== null;
    if (typeof content !== 'string' && !Array.isArray(content) && !hasCalls) {
      return refuse(c, 'content_null', `invalid message content type: ${content === null || content === undefined ? '<nil>' : goTypeName(content)}`);
    }
    if (Array.isArray(calls)) {
      for (const call of calls) {
        const args: unknown = isRecord(call) && isRecord(call['function']) ? call['function']['arguments'] : undefined;
        if (typeof args !== 'string' || !isJsonText(args)) return refuse(c, 'tool_call_arguments_not_json', 'invalid tool call arguments');
      }
    }
  }
  return null;
}

/** Go's `%T` of a decoded JSON value other than string/array/null. */
function goTypeName(v: unknown): string {
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  return 'map[string]interface {}';
}

function isJsonText(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

/** The Qwen3.5 chat template's check, as llama.cpp's jinja engine reports it. */
const QWEN_SYSTEM_CHECK = "...first %}\u21b5            {{- raise_exception('System message must be at the beginnin...";

/**
 * llama.cpp (`llama-server --jinja`).
 *
 * - "All non-assistant messages must contain 'content'" and "Assistant message must contain either
 *   'content' or 'tool_calls'!" — verified: ggml-org/llama.cpp tools/server/server-common.cpp
 *   `oaicompat_chat_params_parse` (std::invalid_argument → 400).
 * - "Cannot have 2 or more assistant messages at the end of the list." — verified: same function; when
 *   the list ends with ONE assistant message it is a PREFILL (the prompt ends with its text and the
 *   model continues it; see {@link shapeAnswer}).
 * - A system message that is not the first message: the Qwen3.5 / Qwen3.6 template's
 *   `raise_exception('System message must be at the beginning.')`. The body is verified from quoted
 *   server logs: 400 `invalid_request_error` "Unable to generate parser for this template. Automatic
 *   parser generation failed: … Error: Jinja Exception: System message must be at the beginning." —
 *   https://github.com/tailcallhq/forgecode/issues/2586, https://github.com/lemonade-sdk/lemonade/issues/2674,
 *   https://github.com/ggml-org/llama.cpp/issues/20733. Older builds (before the automatic parser, e.g.
 *   b7950) answered the same Jinja text with 500 `server_error` — e.g.
 *   https://github.com/ggml-org/llama.cpp/issues/19851 (Mistral's "After the optional system message,
 *   conversation roles must alternate user and assistant roles…") and Gemma's "Conversation roles must
 *   alternate user/assistant/user/assistant/..." (https://github.com/idiap/sdialog/issues/122); the sim
 *   simulates the current 400 and only the Qwen check (one system message, first).
 */
function checkLlamacpp(c: ProfileConfig, messages: unknown[]): Refusal | null {
  for (const m of messages) {
    if (!isRecord(m)) continue;
    if (m['role'] !== 'assistant' && !('content' in m)) return refuse(c, 'message_without_content', "All non-assistant messages must contain 'content'");
    if (m['role'] === 'assistant' && !('content' in m) && !('tool_calls' in m)) {
      return refuse(c, 'message_without_content', "Assistant message must contain either 'content' or 'tool_calls'!");
    }
  }
  const roles = messages.map((m) => (isRecord(m) ? m['role'] : undefined));
  if (roles.at(-1) === 'assistant' && roles.at(-2) === 'assistant') {
    return refuse(c, 'two_trailing_assistants', 'Cannot have 2 or more assistant messages at the end of the list.');
  }
  if (roles.some((r, i) => r === 'system' && i > 0)) {
    return refuse(
      c,
      'system_not_first',
      'Unable to generate parser for this template. Automatic parser generation failed: \n------------\n' +
        `While executing CallExpression at line 85, column 32 in source:\n${QWEN_SYSTEM_CHECK}\n                                           ^\n` +
        'Error: Jinja Exception: System message must be at the beginning.',
    );
  }
  return null;
}

/**
 * vLLM with the Mistral tokenizer — verified: mistralai/mistral-common
 * src/mistral_common/protocol/instruct/validator.py (`MistralRequestValidatorV3`:
 * `^[a-zA-Z0-9]{9}$` on every assistant tool call id and every tool message's
 * `tool_call_id`, "Tool call id was … but must be a-z, A-Z, 0-9, with a length
 * of 9."); vllm-project/vllm `MistralToolCall.generate_random_id` (9 of
 * ascii_letters + digits). The pairing rules (structure) are checked first, as
 * mistral-common validates the structure before the content.
 */
function checkMistralIds(c: ProfileConfig, messages: unknown[]): Refusal | null {
  const ok = (id: unknown): boolean => typeof id === 'string' && /^[a-zA-Z0-9]{9}$/.test(id);
  for (const m of messages) {
    if (!isRecord(m)) continue;
    if (m['role'] === 'assistant' && Array.isArray(m['tool_calls'])) {
      for (const call of m['tool_calls'] as unknown[]) {
        const id = isRecord(call) ? call['id'] : undefined;
        if (!ok(id)) return refuse(c, 'mistral_tool_call_id', `Tool call id was ${String(id)} but must be a-z, A-Z, 0-9, with a length of 9.`);
      }
    }
    if (m['role'] === 'tool' && !ok(m['tool_call_id'])) {
      return refuse(c, 'mistral_tool_call_id', `Tool call id was ${String(m['tool_call_id'])} but must be a-z, A-Z, 0-9, with a length of 9.`);
    }
  }
  return null;
}

/**
 * Reasoning models (o-series, gpt-5…) — verified bodies:
 * "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'
 * instead." (param `max_tokens`, code `unsupported_parameter`) —
 * https://github.com/griptape-ai/ComfyUI-Griptape/issues/312,
 * https://github.com/microsoft/vscode-copilot-release/issues/8065;
 * "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is
 * supported." (param `temperature`, code `unsupported_value`) —
 * https://github.com/owndev/Open-WebUI-Functions/issues/98, https://github.com/johny-b/llmcomp/issues/69.
 * Under the other profiles (a `reasoningModels` entry) the same text in the server's shape is a SIM
 * RULE: llama.cpp, Ollama and vLLM accept both parameters for any model.
 */
function checkReasoning(c: ProfileConfig, body: Record<string, unknown>): Refusal | null {
  const model = body['model'];
  if (typeof model !== 'string' || !isReasoningModel(c, model)) return null;
  if (body['max_tokens'] !== undefined && body['max_tokens'] !== null) {
    return refuse(c, 'reasoning_max_tokens', "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", {
      param: 'max_tokens',
      code: 'unsupported_parameter',
    });
  }
  const t = body['temperature'];
  if (t !== undefined && t !== null && t !== 1) {
    return refuse(
      c,
      'reasoning_temperature',
      `Unsupported value: 'temperature' does not support ${String(t)} with this model. Only the default (1) value is supported.`,
      {
        param: 'temperature',
        code: 'unsupported_value',
      },
    );
  }
  return null;
}

/** `max_completion_tokens`, else `max_tokens`, when a positive number. */
function requestedCompletion(body: Record<string, unknown>): number | undefined {
  for (const k of ['max_completion_tokens', 'max_tokens']) {
    const v = body[k];
    if (typeof v === 'number' && v > 0) return v;
  }
  return undefined;
}

/**
 * The context window (prompt tokens = {@link estimatePromptTokens}).
 *
 * - openai / lenient — verified bodies: "This model's maximum context length is N tokens. However, your
 *   messages resulted in M tokens. Please reduce the length of the messages." (param `messages`, code
 *   `context_length_exceeded`) — https://github.com/chathub-dev/chathub/issues/126,
 *   https://github.com/crewAIInc/crewAI-examples/issues/121; with `max_tokens`: "However, you requested
 *   T tokens (M in the messages, X in the completion). Please reduce the length of the messages or
 *   completion." — https://github.com/conghaonet/hao_chatgpt/issues/4.
 * - vllm — "This model's maximum context length is N tokens. However, your request has M input tokens.
 *   Please reduce the length of the input messages." (param `input_tokens`), and "'max_tokens' or
 *   'max_completion_tokens' is too large: X. This model's maximum context length is N tokens and your
 *   request has M input tokens (X > N - M)." — vllm-project/vllm serving code (`VLLMValidationError(...,
 *   parameter="input_tokens")`; wording quoted at vllm/entrypoints/openai/serving_engine.py 9cfa5486 by
 *   several clients). The wording has changed between vLLM versions; type `BadRequestError`, code 400.
 * - llamacpp — verified: "request (M tokens) exceeds the available context size (N tokens), try increasing
 *   it", type `exceed_context_size_error` with `n_prompt_tokens` and `n_ctx` inside `error`
 *   (tools/server/server-context.cpp, `slot.task->n_tokens() >= slot.n_ctx`; server-task.cpp
 *   `server_task_result_error::to_json`). `max_tokens` only caps generation.
 * - ollama — verified: server/prompt.go `chatPrompt` drops the oldest messages that do not fit and
 *   answers normally (see {@link shapeAnswer}: `context_truncated`).
 */
function checkContext(c: ProfileConfig, body: Record<string, unknown>): Refusal | null {
  const n = c.contextWindow;
  if (n === undefined || c.profile === 'ollama') return null;
  const m = estimatePromptTokens(body);
  const x = requestedCompletion(body);
  switch (c.profile) {
    case 'llamacpp':
      return m >= n
        ? refuse(c, 'context_length', `request (${m} tokens) exceeds the available context size (${n} tokens), try increasing it`, {
            type: 'exceed_context_size_error',
            extra: { n_prompt_tokens: m, n_ctx: n },
          })
        : null;
    case 'vllm':
      if (m > n)
        return refuse(
          c,
          'context_length',
          `This model's maximum context length is ${n} tokens. However, your request has ${m} input tokens. Please reduce the length of the input messages.`,
          { param: 'input_tokens' },
        );
      if (x !== undefined && m + x > n) {
        return refuse(
          c,
          'context_length',
          `'max_tokens' or 'max_completion_tokens' is too large: ${x}. This model's maximum context length is ${n} tokens and your request has ${m} input tokens (${x} > ${n} - ${m}).`,
          {
            param: 'max_tokens',
          },
        );
      }
      return null;
    default:
      if (m > n) {
        return refuse(
          c,
          'context_length',
          `This model's maximum context length is ${n} tokens. However, your messages resulted in ${m} tokens. Please reduce the length of the messages.`,
          {
            param: 'messages',
            code: 'context_length_exceeded',
          },
        );
      }
      if (x !== undefined && m + x > n) {
        return refuse(
          c,
          'context_length',
          `This model's maximum context length is ${n} tokens. However, you requested ${m + x} tokens (${m} in the messages, ${x} in the completion). Please reduce the length of the messages or completion.`,
          { param: 'messages', code: 'context_length_exceeded' },
        );
      }
      return null;
  }
}

/**
 * Checks a chat-completions request against a profile.
 *
 * Only what the profile refuses is checked: a body the simulator cannot read
 * at all (no `messages` array, …) returns `null` and is left to the
 * simulator's own 400s.
 *
 * @param profile - a profile name (its defaults) or a configuration.
 * @param body - the parsed request body.
 * @returns `null` when the request is accepted, else the rule, status and body to send.
 */
export function checkRequest(profile: ProfileName | Partial<ProfileConfig>, body: unknown): Refusal | null {
  const c = profileConfig(profile);
  if (!isRecord(body) || !Array.isArray(body['messages'])) return null;
  const messages = body['messages'] as unknown[];
  const strict = STRICT.includes(c.profile);
  const structural = c.profile === 'ollama' ? checkOllama(c, messages) : c.profile === 'llamacpp' ? checkLlamacpp(c, messages) : null;
  return (
    structural ??
    (strict ? checkToolPairing(c, messages) : null) ??
    (mistral(c) ? checkMistralIds(c, messages) : null) ??
    checkReasoning(c, body) ??
    checkContext(c, body)
  );
}
