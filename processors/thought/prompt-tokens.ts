/**
 * The prompt builder's token estimate (prompt.ts builds within it; tests and reports check recorded
 * requests by it): tokens of a text, of a message, of a whole request, and cutting a text to a count.
 * Deterministic and model-independent.
 */
import type { ChatMessage, WireTool } from './prompt-types.ts';

const CJK = /[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]/gu;

/**
 * Estimated tokens of a text: one per CJK character, one per four other characters. Deterministic
 * and model-independent (the builder must not depend on a tokenizer the replay host may lack).
 * Close to BPE tokenizers on English prose; dense JSON can count up to about a third more there,
 * so set a skill's `context-window` below the model's real window by that margin.
 */
export function estimateTokens(text: string): number {
  const cjk = text.match(CJK)?.length ?? 0;
  return cjk + Math.ceil((text.length - cjk) / 4);
}

/** Tokens a message costs beyond its content (role, separators). */
export const MESSAGE_OVERHEAD = 4;
/** Estimated tokens of one chat message: its content, and its tool calls' names and arguments. */
export const messageTokens = (m: ChatMessage): number =>
  MESSAGE_OVERHEAD +
  estimateTokens(m.content) +
  ('tool_calls' in m && m.tool_calls
    ? m.tool_calls.reduce((n, c) => n + estimateTokens(c.function.name) + estimateTokens(c.function.arguments) + MESSAGE_OVERHEAD, 0)
    : 0);

/**
 * Estimated prompt tokens of a chat-completions request (its messages and tools) by the builder's
 * own estimate: what a test or a report uses to check that a recorded prompt fits its window
 * (`promptTokens(messages, tools) + max_tokens <= context-window`).
 */
export function promptTokens(messages: readonly ChatMessage[], tools: readonly WireTool[]): number {
  return messages.reduce((n, m) => n + messageTokens(m), 0) + tools.reduce((n, t) => n + estimateTokens(JSON.stringify(t)), 0);
}

/** Cuts `text` to about `tokens` tokens, ending with a marker that says how many characters were cut. */
export function cutText(text: string, tokens: number): string {
  if (estimateTokens(text) <= tokens) return text;
  let keep = Math.max(0, tokens * 4);
  // CJK text is denser: shrink until it fits, deterministically.
  while (keep > 0 && estimateTokens(text.slice(0, keep)) + 8 > tokens) keep = Math.floor(keep * 0.8);
  return `${text.slice(0, keep)}…[cut ${text.length - keep} chars]`;
}
