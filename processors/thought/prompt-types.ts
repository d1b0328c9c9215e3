/**
 * The prompt builder's vocabulary (prompt.ts): what a model turn is built from (the skill's tools, the
 * earlier turns with their calls and observations, the task and facts) and what it builds (the
 * chat-completions messages and tools as sent, the tokens per section, what compaction did).
 */

/** A catalog tool as the model sees it. */
export interface PromptTool {
  /** Catalog name, e.g. `orders.get`. */
  name: string;
  description: string;
  /** The tool's parameter JSON Schema. */
  parameters: Record<string, unknown>;
}

/** One tool call the model made, and what Observation found of its result. */
export interface PromptCall {
  /** The model's tool_call id. */
  id: string;
  /** Catalog name. */
  tool: string;
  arguments: Record<string, unknown>;
  /** Observation's verdict on the result. */
  valid: boolean;
  /** The fields Observation extracted from a valid result. */
  extracted: Record<string, unknown> | null;
  /** The tool's answer as received (a JSON text, an error page, ...). */
  raw: string;
  /** Observation's error type and message for an invalid result. */
  error: string | null;
}

/** One earlier model turn: what the model said and the calls it made, with their observations. */
export interface PromptTurn {
  turn: number;
  /** The assistant's text beside its tool calls (its reasoning), or the final answer Thought rejected, if any. */
  content: string | null;
  calls: PromptCall[];
  /** The gate rejected this turn's answer: why, told to the model in a user turn after it. */
  rejected?: { error: string; evidence: string };
  /** The model asked the customer (`ask_customer`): its question, then the customer's reply as a user turn. */
  asked?: { question: string; reply: string | null };
}

/** Everything a model turn is built from. */
export interface PromptInput {
  /** Fixed rules of the runtime (how to answer, what a final answer holds). */
  system: string;
  skill: { ref: string; prompt: string; tools: PromptTool[] };
  /** The run's text: the task and any replies. Protected. */
  task: string;
  /** Extracted slots and values the user gave. Protected. */
  facts: Record<string, string>;
  /** Earlier turns, oldest first. */
  turns: PromptTurn[];
  /** Reflections written so far (model-written or rule-based), oldest first. */
  reflections: string[];
  /**
   * `react` asks for tool calls or a final answer; `reflection` asks for a structured reflection;
   * `plan` asks for a whole plan as JSON (the tools are listed so the model sees their contracts,
   * with `tool_choice: none`).
   */
  mode: 'react' | 'reflection' | 'plan';
  /**
   * How a react turn asks for tool calls: `native` offers `tools` (and `ask_customer`);
   * `json_schema` asks for a `response_format` that is one call, a final answer or a question
   * (model-wire.ts `turnSchema`), with the tools described in the system message. Default native.
   */
  toolCalls?: 'native' | 'json_schema';
  /**
   * The skill's output schema (skills/<name>/output.schema.json), if it declares one: a react turn's
   * final answer is then a `final_answer` call with arguments of that schema (native), or a
   * `final_answer` object of it (constrained), never plain text.
   */
  output?: Record<string, unknown>;
}
/**
 * A chat-completions message as sent. The builder keeps the rules the strictest servers and chat
 * templates enforce: one system message, first; then user and assistant turns alternating, where an
 * assistant turn with tool calls is followed by one tool message per call; assistant content is a
 * string, never null (Ollama refuses null); the last message is never an assistant's (llama.cpp
 * would continue it as a prefill, and refuses two at the end).
 */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface WireTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** Estimated tokens per section of a built prompt. */
export interface SectionTokens {
  system: number;
  skill: number;
  results: number;
  history: number;
  /** The request's `max_tokens`. */
  generation: number;
  /** Everything but generation. */
  prompt: number;
}

/** The result of {@link buildPrompt}. */
export interface BuiltPrompt {
  messages: ChatMessage[];
  /** Empty for a reflection turn and a constrained (`json_schema`) turn. */
  tools: WireTool[];
  /** `response_format` for a reflection or plan turn. */
  responseFormat: Record<string, unknown> | null;
  maxTokens: number;
  tokens: SectionTokens;
  /** What compaction did, for the record. */
  compaction: { reducedObservations: number; cutOutputs: number; foldedTurns: number; omittedTurns: number; skillCut: boolean };
  /** True when the protected sections alone exceed the prompt window: the prompt is not sendable. */
  overflow: boolean;
}
