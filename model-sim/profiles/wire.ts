/**
 * The OpenAI chat-completions wire shapes the profiles read and write: messages, tool calls, usage,
 * a completion, a refusal, and an answer as a profile shapes it.
 */
import type { RuleName } from './config.ts';

/** A refused request: the rule, the HTTP status and the body the server would send. */
export interface Refusal {
  rule: RuleName;
  status: number;
  body: unknown;
}

/** A tool call of an answer as sent on the wire (`id` absent only under the `missing_ids` fault). */
export interface WireToolCall {
  id?: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The assistant message of an answer. */
export interface WireMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: WireToolCall[];
  refusal?: string | null;
  /** llama.cpp / vLLM with a reasoning parser. */
  reasoning_content?: string;
  /** Ollama's OpenAI layer. */
  reasoning?: string;
}

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** A chat completion as the simulator sends it. */
export interface WireCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: Array<{ index: number; message: WireMessage; logprobs: null; finish_reason: string }>;
  /** Absent only under the `no_usage` fault. */
  usage?: WireUsage;
}

/** Profile quirks {@link shapeAnswer} can apply, as recorded in `RecordedRequest.quirks`. */
export type ProfileQuirk = 'prefill' | 'parallel_tool_calls_trimmed' | 'context_truncated';

/** What {@link shapeAnswer} returns. */
export interface ShapedAnswer {
  completion: WireCompletion;
  quirks: ProfileQuirk[];
  /** llamacpp: the trailing assistant text the answer continues; otherwise `null`. */
  prefill: string | null;
}
