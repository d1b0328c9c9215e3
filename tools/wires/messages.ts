/**
 * The Anthropic Messages API wire (`POST {base}/messages`, TAO_LLM_API=messages): the recorded
 * chat-completions request translated into a Messages request, and a Messages answer translated
 * back into the chat completion Observation reads. Pure.
 *
 * Request: the leading system messages are the top-level `system` (the API has no system role in
 * `messages`; a later one becomes a user text block); an assistant's text and tool calls are one
 * assistant message of a `text` block and `tool_use` blocks (`input` an object); tool messages are
 * `tool_result` blocks of the user message right after (results first, then any user text), since
 * roles must alternate: consecutive same-role messages are merged, and empty text blocks (refused)
 * are left out. `max_tokens` is required (Thought always sends one; 4096 otherwise); temperature is
 * capped at 1 (the API's range). Tools carry `input_schema`; `tool_choice` auto / required / none /
 * a named tool become `{type: auto | any | none | tool}`, `parallel_tool_calls: false`
 * `disable_parallel_tool_use`; a `json_schema` response format is `output_config.format`.
 *
 * Answer: `text` blocks are the content, `tool_use` blocks the tool calls (arguments as JSON text),
 * `thinking` blocks the reasoning (kept apart, never sent back). `stop_reason` end_turn,
 * stop_sequence and pause_turn are `stop`, tool_use `tool_calls`, max_tokens and
 * model_context_window_exceeded `length`, refusal `content_filter`. The prompt tokens are
 * `input_tokens` plus the cache's read and creation tokens (Anthropic counts them apart); the read
 * ones are `cached_tokens`.
 */
import {
  argumentsObject,
  chatCompletion,
  count,
  objectOf,
  textOf,
  WireAnswerError,
  type ChatCompletion,
  type ChatRequest,
  type ChatToolCall,
} from './chat-shape.ts';

/** The API version header every request carries. */
export const ANTHROPIC_VERSION = '2023-06-01';
/** `max_tokens` when the recorded request names none (the Messages API requires one). */
export const DEFAULT_MAX_TOKENS = 4096;

type Block = Record<string, unknown> & { type: string };
interface Turn {
  role: 'user' | 'assistant';
  content: Block[];
}

/** The Messages request for a recorded chat request. */
export function toMessagesRequest(chat: ChatRequest): Record<string, unknown> {
  const system: string[] = [];
  const turns: Turn[] = [];
  const add = (role: Turn['role'], blocks: Block[]): void => {
    if (!blocks.length) return;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: [...blocks] });
  };
  const text = (t: string): Block[] => (t.trim() ? [{ type: 'text', text: t }] : []);
  for (const [i, m] of chat.messages.entries()) {
    switch (m.role) {
      case 'system':
      case 'developer':
        if (turns.length === 0) system.push(textOf(m.content));
        else add('user', text(textOf(m.content)));
        break;
      case 'assistant':
        add('assistant', [
          ...text(textOf(m.content)),
          ...(m.tool_calls ?? []).map((c) => ({
            type: 'tool_use',
            id: String(c.id),
            name: String(c.function?.name),
            input: argumentsObject(c.function?.arguments, `messages[${i}]`),
          })),
        ]);
        break;
      case 'tool':
        add('user', [{ type: 'tool_result', tool_use_id: String(m.tool_call_id), content: textOf(m.content) }]);
        break;
      default:
        add('user', text(textOf(m.content)));
    }
  }
  // In a user message, tool results come before any text (the API refuses text before them).
  for (const t of turns) if (t.role === 'user') t.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  const format = chat.response_format;
  const choice = toolChoice(chat.tool_choice, chat.parallel_tool_calls);
  return {
    ...(chat.model !== undefined ? { model: chat.model } : {}),
    ...(system.some((s) => s.trim()) ? { system: system.join('\n\n') } : {}),
    messages: turns,
    max_tokens: chat.max_tokens ?? chat.max_completion_tokens ?? DEFAULT_MAX_TOKENS,
    ...(chat.temperature !== undefined ? { temperature: Math.min(1, chat.temperature) } : {}),
    ...(chat.tools?.length
      ? {
          tools: chat.tools.map((t) => ({
            name: t.function?.name,
            ...(t.function?.description !== undefined ? { description: t.function.description } : {}),
            input_schema: t.function?.parameters ?? { type: 'object', properties: {} },
          })),
        }
      : {}),
    ...(choice ? { tool_choice: choice } : {}),
    ...(format?.type === 'json_schema' && format.json_schema ? { output_config: { format: { type: 'json_schema', schema: format.json_schema.schema } } } : {}),
  };
}

function toolChoice(choice: unknown, parallel: boolean | undefined): Record<string, unknown> | null {
  const named = objectOf(objectOf(choice)?.function)?.name;
  const base: Record<string, unknown> | null =
    typeof named === 'string'
      ? { type: 'tool', name: named }
      : choice === 'required'
        ? { type: 'any' }
        : choice === 'none'
          ? { type: 'none' }
          : choice === 'auto'
            ? { type: 'auto' }
            : null;
  if (parallel !== false || base?.type === 'none') return base;
  return { ...(base ?? { type: 'auto' }), disable_parallel_tool_use: true };
}

const FINISH: Record<string, ChatCompletion['choices'][0]['finish_reason']> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'content_filter',
};

/** The chat completion for a Messages answer. */
export function fromMessagesAnswer(answer: unknown): ChatCompletion {
  const r = objectOf(answer);
  if (!r || r.type !== 'message' || !Array.isArray(r.content))
    throw new WireAnswerError('the answer is not a Messages API message (no type "message" with a content array)');
  const texts: string[] = [];
  const reasoning: string[] = [];
  const calls: ChatToolCall[] = [];
  for (const raw of r.content) {
    const b = objectOf(raw);
    if (b?.type === 'text' && typeof b.text === 'string') texts.push(b.text);
    else if (b?.type === 'thinking' && typeof b.thinking === 'string' && b.thinking.trim()) reasoning.push(b.thinking.trim());
    else if (b?.type === 'tool_use')
      calls.push({
        id: String(b.id ?? `toolu_${calls.length + 1}`),
        type: 'function',
        function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) },
      });
  }
  const stop = typeof r.stop_reason === 'string' ? r.stop_reason : null;
  const usage = objectOf(r.usage);
  const read = count(usage?.cache_read_input_tokens);
  const prompt = count(usage?.input_tokens) + read + count(usage?.cache_creation_input_tokens);
  const output = count(usage?.output_tokens);
  const refused = stop === 'refusal';
  return chatCompletion({
    id: r.id,
    model: r.model,
    wire: 'messages',
    texts,
    calls,
    reasoning,
    finish: (stop ? FINISH[stop] : undefined) ?? (refused ? 'content_filter' : calls.length ? 'tool_calls' : 'stop'),
    usage: { prompt, completion: output, cached: read },
    ...(stop ? { extra: { stop_reason: stop } } : {}),
  });
}
