/**
 * The chat-completions shapes the model wires translate from and to (tools/wires/): the request
 * Thought emits and Action records (`input_json`), and the completion Observation's gate reads
 * (`data_json`). Types and small helpers only; pure.
 */
import { ContractViolation } from '../../runtime/errors.ts';

/** Which API a model endpoint speaks (TAO_LLM_API, TAO_LLM_FALLBACK_API). */
export const MODEL_WIRES = ['chat', 'responses', 'messages'] as const;
export type ModelWire = (typeof MODEL_WIRES)[number];

/** The request path of each wire under the endpoint's base URL (`…/v1`). */
export const WIRE_PATHS: Record<ModelWire, string> = { chat: '/chat/completions', responses: '/responses', messages: '/messages' };

/** One chat message as Thought writes it (processors/thought/model/prompt.ts), read defensively. */
export interface ChatMsg {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: unknown;
  tool_calls?: Array<{ id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } }>;
  tool_call_id?: unknown;
}

/** A chat-completions request as recorded (tools/model.ts `requestSchema`). */
export interface ChatRequest {
  model?: string;
  messages: ChatMsg[];
  tools?: Array<{ type?: string; function?: { name?: string; description?: string; parameters?: unknown } }>;
  tool_choice?: unknown;
  temperature?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  parallel_tool_calls?: boolean;
  response_format?: { type?: string; json_schema?: { name?: string; schema?: unknown; strict?: boolean } };
  [key: string]: unknown;
}

/** A chat tool call as the gate reads it. */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The chat completion a wire's answer is translated into: what Observation reads, with `wire` saying which API answered. */
export interface ChatCompletion {
  id: string | null;
  object: 'chat.completion';
  model: string | null;
  wire: Exclude<ModelWire, 'chat'>;
  choices: Array<{
    index: 0;
    message: { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[]; refusal?: string; reasoning_content?: string };
    finish_reason: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
  [key: string]: unknown;
}

/** What a wire's answer says, read: the parts {@link chatCompletion} assembles. */
export interface WireAnswer {
  id: unknown;
  model: unknown;
  wire: ChatCompletion['wire'];
  texts: readonly string[];
  calls: readonly ChatToolCall[];
  reasoning: readonly string[];
  refusals?: readonly string[];
  finish: ChatCompletion['choices'][0]['finish_reason'];
  usage: { prompt: number; completion: number; total?: number; cached: number };
  /** Fields of the wire kept beside the completion (a stop reason, reasoning items, a status). */
  extra?: Record<string, unknown>;
}

/** The chat completion Observation reads, from what a wire's answer said. */
export function chatCompletion(a: WireAnswer): ChatCompletion {
  return {
    id: typeof a.id === 'string' ? a.id : null,
    object: 'chat.completion',
    model: typeof a.model === 'string' ? a.model : null,
    wire: a.wire,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: a.texts.length ? a.texts.join('') : null,
          ...(a.calls.length ? { tool_calls: [...a.calls] } : {}),
          ...(a.refusals?.length ? { refusal: a.refusals.join('\n') } : {}),
          ...(a.reasoning.length ? { reasoning_content: a.reasoning.join('\n\n') } : {}),
        },
        finish_reason: a.finish,
      },
    ],
    usage: {
      prompt_tokens: a.usage.prompt,
      completion_tokens: a.usage.completion,
      total_tokens: a.usage.total || a.usage.prompt + a.usage.completion,
      ...(a.usage.cached > 0 ? { prompt_tokens_details: { cached_tokens: a.usage.cached } } : {}),
    },
    ...a.extra,
  };
}

/** A message's content as text: a string as is, an array of text parts joined, anything else as JSON. */
export function textOf(content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((p) =>
        typeof p === 'string' ? p : p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '',
      )
      .join('');
  return JSON.stringify(content);
}

/** A call's arguments as the wire wants them: the JSON text parsed to an object (Messages' `input`). */
export function argumentsObject(args: unknown, where: string): Record<string, unknown> {
  if (args && typeof args === 'object' && !Array.isArray(args)) return args as Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(typeof args === 'string' ? args : '');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // Reported below.
  }
  throw new ContractViolation(`${where}: tool-call arguments are not a JSON object, so they cannot be sent on this wire`);
}

/** A non-negative finite number, else 0. */
export function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}

/** `v` as a plain object, else null. */
export function objectOf(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

/** Thrown when a wire's answer is not what that API answers: the step is a `malformed` result. */
export class WireAnswerError extends Error {}
