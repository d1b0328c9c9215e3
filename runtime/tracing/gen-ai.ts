/**
 * The OpenTelemetry GenAI semantic conventions on model-call spans, pinned to one version:
 * semantic-conventions v1.41.1 (docs/gen-ai/gen-ai-spans.md, openai.md, anthropic.md; the last
 * release of the main repository that carries them, schema URL {@link GEN_AI_SCHEMA_URL}). They are
 * at Development status, so they are opt-in, as that version says: only with
 * `OTEL_SEMCONV_STABILITY_OPT_IN` listing `gen_ai_latest_experimental` (and spans exported at all,
 * ./spans.ts `genAiSpans`); without it no span, name or attribute changes.
 *
 * - A model call's HTTP attempt (a `model` tool: tools/model-config.ts) is an inference span
 *   `chat {gen_ai.request.model}`, kind client, with the request's attributes at its start
 *   ({@link chatSpan}) and the answer's at its end ({@link chatAnswerAttributes}), besides the
 *   `tao.*` ones it always has.
 * - A tool call a verified model answer asked for (step `M<n>_<i>`) is an `execute_tool {name}`
 *   span, kind internal, around its execution in Action (retries and fallback included), its
 *   attempts' spans under it ({@link startExecuteTool}).
 *
 * Content is never captured: no prompt, message, tool definition, argument or result is an
 * attribute (the conventions' opt-in content attributes stay off).
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import { genAiSpans, spanContextOf, traceparentOf, type SemconvSpan } from './spans.ts';

/** The pinned version of the OpenTelemetry semantic conventions whose GenAI part the spans follow. */
export const GEN_AI_SEMCONV_VERSION = '1.41.1';
export const GEN_AI_SCHEMA_URL = `https://opentelemetry.io/schemas/${GEN_AI_SEMCONV_VERSION}`;

/** The model API a request went out on (tools/wires/): `chat` completions, OpenAI `responses`, Anthropic `messages`. */
export type GenAiWire = 'chat' | 'responses' | 'messages';

/** `gen_ai.provider.name` by wire: the API's owner, the conventions' best knowledge (the endpoint may host another's model). */
const PROVIDER: Record<GenAiWire, string> = { chat: 'openai', responses: 'openai', messages: 'anthropic' };
/** `openai.api.type` of the OpenAI wires. */
const OPENAI_API: Partial<Record<GenAiWire, string>> = { chat: 'chat_completions', responses: 'responses' };

/**
 * The GenAI name and start attributes of a model call's attempt: `chatBody` is the chat-completions
 * request as recorded (the tool's defaults merged, before the wire's translation), `url` where it
 * goes. Reads the model, max_tokens (or max_completion_tokens), temperature and the output type;
 * nothing from the messages or tools.
 */
export function chatSpan(chatBody: string, wire: GenAiWire, url: URL, thoughtId: string | null): SemconvSpan {
  let request: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(chatBody);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) request = parsed as Record<string, unknown>;
  } catch {
    // Not JSON: Action refuses it anyway; the span names the operation only.
  }
  const model = typeof request.model === 'string' && request.model !== '' ? request.model : null;
  const maxTokens = [request.max_tokens, request.max_completion_tokens].find((v) => Number.isInteger(v));
  const format = request.response_format as { type?: unknown } | undefined;
  const outputType = typeof format?.type === 'string' ? (format.type === 'text' ? 'text' : 'json') : null;
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': PROVIDER[wire],
    ...(model !== null ? { 'gen_ai.request.model': model } : {}),
    ...(maxTokens !== undefined ? { 'gen_ai.request.max_tokens': maxTokens as number } : {}),
    ...(typeof request.temperature === 'number' ? { 'gen_ai.request.temperature': request.temperature } : {}),
    ...(outputType !== null ? { 'gen_ai.output.type': outputType } : {}),
    ...(thoughtId !== null ? { 'gen_ai.conversation.id': thoughtId } : {}),
    ...(OPENAI_API[wire] ? { 'openai.api.type': OPENAI_API[wire] } : {}),
    'server.address': url.hostname,
    'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
  };
  return { name: model === null ? 'chat' : `chat ${model}`, attributes, schemaUrl: GEN_AI_SCHEMA_URL };
}

/**
 * The GenAI attributes of a model's answer, read from the chat completion Action records as
 * `data_json` (for the other wires, the translation of their answer: tools/wires/): response id and
 * model, finish reasons (the Messages API's own `stop_reason`, else each choice's `finish_reason`),
 * input tokens (cache reads and writes included, as the conventions count them), output tokens, and
 * the cached and reasoning tokens when the server said. Nothing for an answer that is not JSON.
 */
export function chatAnswerAttributes(completion: string | null, wire: GenAiWire): Attributes {
  let answer: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(completion ?? '');
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    answer = parsed as Record<string, unknown>;
  } catch {
    return {};
  }
  const choices = Array.isArray(answer.choices) ? (answer.choices as Array<{ finish_reason?: unknown }>) : [];
  const reasons =
    wire === 'messages' && typeof answer.stop_reason === 'string'
      ? [answer.stop_reason]
      : choices.map((c) => c?.finish_reason).filter((r): r is string => typeof r === 'string');
  const usage = objectOf(answer.usage);
  const count = (v: unknown) => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : undefined);
  const tokens: Array<[string, number | undefined]> = [
    ['gen_ai.usage.input_tokens', count(usage?.prompt_tokens)],
    ['gen_ai.usage.output_tokens', count(usage?.completion_tokens)],
    ['gen_ai.usage.cache_read.input_tokens', count(objectOf(usage?.prompt_tokens_details)?.cached_tokens)],
    ['gen_ai.usage.reasoning.output_tokens', count(objectOf(usage?.completion_tokens_details)?.reasoning_tokens)],
  ];
  return {
    ...(typeof answer.id === 'string' && answer.id !== '' ? { 'gen_ai.response.id': answer.id } : {}),
    ...(typeof answer.model === 'string' && answer.model !== '' ? { 'gen_ai.response.model': answer.model } : {}),
    ...(reasons.length > 0 ? { 'gen_ai.response.finish_reasons': reasons } : {}),
    ...Object.fromEntries(tokens.filter(([, n]) => n !== undefined)),
  };
}

/** An `execute_tool` span in flight; see {@link startExecuteTool}. */
export interface ExecuteToolSpan {
  /** The parent to give the call's attempts: this span, or the given header when there is no span. */
  traceparent: string;
  /** Ends the span; `errorType` is the step's error type, null when it succeeded. */
  end(errorType: string | null): void;
}

/**
 * Starts the `execute_tool {tool}` span of a tool call the model asked for, a child of the Action
 * span `parentTraceparent` names, when GenAI spans are on; otherwise changes nothing (the given
 * header, no span). `callId` is the call's id in the conversation (the `tool_call_id` the model is
 * shown with its result); `description` the catalog's.
 */
export function startExecuteTool(
  parentTraceparent: string,
  call: { tool: string; callId: string; description: string | null; step: string; thoughtId: string },
): ExecuteToolSpan {
  const parent = genAiSpans() ? spanContextOf(parentTraceparent) : null;
  if (parent === null) return { traceparent: parentTraceparent, end: () => undefined };
  const span = trace
    .getTracerProvider()
    .getTracer('tao-kafka', undefined, { schemaUrl: GEN_AI_SCHEMA_URL })
    .startSpan(
      `execute_tool ${call.tool}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': call.tool,
          'gen_ai.tool.call.id': call.callId,
          'gen_ai.tool.type': 'function',
          ...(call.description ? { 'gen_ai.tool.description': call.description } : {}),
          'tao.step': call.step,
          'tao.thought_id': call.thoughtId,
        },
      },
      trace.setSpanContext(ROOT_CONTEXT, parent),
    );
  return {
    traceparent: traceparentOf(span.spanContext()),
    end(errorType) {
      if (errorType !== null) {
        span.setAttribute('error.type', errorType);
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
      }
      span.end();
    },
  };
}

function objectOf(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}
