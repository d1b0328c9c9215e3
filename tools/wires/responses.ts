/**
 * The OpenAI Responses API wire (`POST {base}/responses`, TAO_LLM_API=responses): the recorded
 * chat-completions request translated into a Responses request, and a Responses answer translated
 * back into the chat completion Observation reads. Pure.
 *
 * Request: leading system messages become `instructions`; user and later system messages are
 * `message` items; an assistant's text is a `message` item with `type: "message"` (llama.cpp 0.94
 * refuses an assistant item without it), its tool calls `function_call` items; a tool message is a
 * `function_call_output` paired by `call_id`. Tools are flat (`{type, name, description,
 * parameters}`); `response_format` is `text.format`; `max_tokens` / `max_completion_tokens` is
 * `max_output_tokens`. `store: false` always: the runtime keeps the conversation in Kafka, never on
 * the provider (and no `previous_response_id`).
 *
 * Answer: `message` items' `output_text` is the content, `refusal` parts the refusal,
 * `function_call` items the tool calls, `reasoning` items the reasoning (kept apart: the
 * `reasoning_content` the gate records, never sent back; the items themselves under
 * `reasoning_items`, their opaque `encrypted_content` dropped). `status: "incomplete"` for
 * `max_output_tokens` is `finish_reason: "length"`, for `content_filter` a refusal; so is a
 * `completed` answer whose output tokens reached the request's limit (llama.cpp 0.94 reports a
 * truncated answer as completed). Usage `input_tokens` / `output_tokens` / cached are the chat
 * usage. `status: "failed"` or an answer that is not a response is a {@link WireAnswerError}.
 */
import {
  chatCompletion,
  count,
  objectOf,
  textOf,
  WireAnswerError,
  type ChatCompletion,
  type ChatMsg,
  type ChatRequest,
  type ChatToolCall,
} from './chat-shape.ts';

/** The Responses request for a recorded chat request. */
export function toResponsesRequest(chat: ChatRequest): Record<string, unknown> {
  const messages = chat.messages;
  let first = 0;
  const instructions: string[] = [];
  while (first < messages.length && (messages[first]!.role === 'system' || messages[first]!.role === 'developer'))
    instructions.push(textOf(messages[first++]!.content));
  const input: Array<Record<string, unknown>> = [];
  for (const m of messages.slice(first)) input.push(...inputItems(m));
  const format = chat.response_format;
  const maxTokens = chat.max_completion_tokens ?? chat.max_tokens;
  return {
    ...(chat.model !== undefined ? { model: chat.model } : {}),
    ...(instructions.length ? { instructions: instructions.join('\n\n') } : {}),
    input,
    ...(chat.tools?.length
      ? {
          tools: chat.tools.map((t) => ({
            type: 'function',
            name: t.function?.name,
            ...(t.function?.description !== undefined ? { description: t.function.description } : {}),
            parameters: t.function?.parameters ?? { type: 'object', properties: {} },
            // Chat tools are not strict unless they say so; the Responses API defaults to strict.
            strict: false,
          })),
        }
      : {}),
    ...(chat.tool_choice !== undefined ? { tool_choice: toolChoice(chat.tool_choice) } : {}),
    ...(chat.parallel_tool_calls !== undefined ? { parallel_tool_calls: chat.parallel_tool_calls } : {}),
    ...(chat.temperature !== undefined ? { temperature: chat.temperature } : {}),
    ...(maxTokens !== undefined ? { max_output_tokens: maxTokens } : {}),
    ...(format?.type === 'json_schema' && format.json_schema
      ? {
          text: {
            format: {
              type: 'json_schema',
              name: format.json_schema.name ?? 'answer',
              schema: format.json_schema.schema,
              ...(format.json_schema.strict !== undefined ? { strict: format.json_schema.strict } : {}),
            },
          },
        }
      : format?.type === 'json_object'
        ? { text: { format: { type: 'json_object' } } }
        : {}),
    store: false,
  };
}

function inputItems(m: ChatMsg): Array<Record<string, unknown>> {
  switch (m.role) {
    case 'assistant': {
      const items: Array<Record<string, unknown>> = [];
      const text = textOf(m.content);
      if (text) items.push({ type: 'message', role: 'assistant', content: text });
      for (const c of m.tool_calls ?? [])
        items.push({
          type: 'function_call',
          call_id: String(c.id),
          name: String(c.function?.name),
          arguments: typeof c.function?.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function?.arguments ?? {}),
        });
      return items;
    }
    case 'tool':
      return [{ type: 'function_call_output', call_id: String(m.tool_call_id), output: textOf(m.content) }];
    default:
      return [{ type: 'message', role: m.role, content: textOf(m.content) }];
  }
}

function toolChoice(choice: unknown): unknown {
  const named = objectOf(choice);
  const fn = objectOf(named?.function);
  return fn && typeof fn.name === 'string' ? { type: 'function', name: fn.name } : choice;
}

/** The chat completion for a Responses answer to `sent` (the Responses request). */
export function fromResponsesAnswer(answer: unknown, sent: Record<string, unknown>): ChatCompletion {
  const r = objectOf(answer);
  if (!r || !Array.isArray(r.output)) throw new WireAnswerError('the answer is not a Responses API response (no output array)');
  if (r.status === 'failed') {
    const error = objectOf(r.error);
    throw new WireAnswerError(`the response failed: ${String(error?.code ?? 'no code')}: ${String(error?.message ?? 'no message')}`);
  }
  const texts: string[] = [];
  const refusals: string[] = [];
  const reasoning: string[] = [];
  const reasoningItems: Array<Record<string, unknown>> = [];
  const calls: ChatToolCall[] = [];
  for (const raw of r.output) {
    const item = objectOf(raw);
    if (!item) continue;
    if (item.type === 'message') {
      for (const part of Array.isArray(item.content) ? item.content : []) {
        const p = objectOf(part);
        if (p?.type === 'output_text' && typeof p.text === 'string') texts.push(p.text);
        else if (p?.type === 'refusal' && typeof p.refusal === 'string') refusals.push(p.refusal);
      }
    } else if (item.type === 'function_call') {
      calls.push({
        id: String(item.call_id ?? item.id ?? `call_${calls.length + 1}`),
        type: 'function',
        function: { name: String(item.name ?? ''), arguments: typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {}) },
      });
    } else if (item.type === 'reasoning') {
      const { encrypted_content: _opaque, ...kept } = item;
      reasoningItems.push(kept);
      for (const list of [item.summary, item.content])
        for (const part of Array.isArray(list) ? list : []) {
          const text = objectOf(part)?.text;
          if (typeof text === 'string' && text.trim()) reasoning.push(text.trim());
        }
    }
  }
  const usage = objectOf(r.usage);
  const input = count(usage?.input_tokens);
  const output = count(usage?.output_tokens);
  const cached = count(objectOf(usage?.input_tokens_details)?.cached_tokens);
  const limit = typeof sent.max_output_tokens === 'number' ? sent.max_output_tokens : null;
  const reason = objectOf(r.incomplete_details)?.reason;
  const finish: ChatCompletion['choices'][0]['finish_reason'] =
    r.status === 'incomplete' && reason === 'content_filter'
      ? 'content_filter'
      : r.status === 'incomplete' || (limit !== null && output >= limit)
        ? 'length'
        : calls.length
          ? 'tool_calls'
          : 'stop';
  return chatCompletion({
    id: r.id,
    model: r.model,
    wire: 'responses',
    texts,
    calls,
    reasoning,
    refusals,
    finish,
    usage: { prompt: input, completion: output, total: count(usage?.total_tokens), cached },
    extra: { ...(reasoningItems.length ? { reasoning_items: reasoningItems } : {}), ...(typeof r.status === 'string' ? { status: r.status } : {}) },
  });
}
