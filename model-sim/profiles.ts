/**
 * Server PROFILES of the model simulator: what a real OpenAI-compatible server
 * refuses that the lenient simulator accepts, and how its answers differ.
 *
 * - `lenient` — the simulator as it always was (the default): no rule below
 *   applies unless `reasoningModels` / `contextWindow` are configured.
 * - `openai` — api.openai.com's chat completions.
 * - `ollama` — Ollama's OpenAI compatibility layer (`/v1/chat/completions`).
 * - `llamacpp` — llama.cpp's `llama-server --jinja` with a strict chat template
 *   (the Qwen3.5 template's system-message check).
 * - `vllm` — vLLM's OpenAI server; `toolIdFormat: 'mistral'` is vLLM serving a
 *   Mistral model with the Mistral tokenizer (mistral-common's validator).
 * - `openai-responses` — api.openai.com's Responses API (`/v1/responses`; no `/v1/messages`).
 * - `anthropic` — api.anthropic.com's Messages API (`/v1/messages` only).
 *   The wires' rules and shapes are in `model-sim/wires/`; every other profile
 *   serves both wires as leniently as llama.cpp 0.94 does.
 *
 * Two pure functions do the work: {@link checkRequest} (a request → `null` or
 * the refusal, in the server's own error shape) and {@link shapeAnswer} (the
 * simulator's answer → the answer as that server would shape it: tool-call
 * ids, one tool call without `parallel_tool_calls`, llama.cpp's assistant
 * prefill, Ollama's silent truncation). Both are deterministic functions of
 * their inputs (ids are hashes of the request).
 *
 * SOURCES. Each rule says what it is based on. "Verified" means the text was
 * read in the server's source (repository + file) or in a quoted error body in
 * a public issue (URL). "Sim rule" means the server itself does not check it
 * (or it could not be verified): the simulator enforces it anyway because the
 * conversation is malformed for every model, and uses the closest verified
 * wording.
 *
 * One file per concern under `profiles/`: `config.ts` (the profiles, rules and their settings),
 * `wire.ts` (the OpenAI wire shapes), `errors.ts` (each server's error body), `request-rules.ts`
 * ({@link checkRequest}), `answers.ts` ({@link shapeAnswer}). Import from this file.
 *
 * @module
 */
export {
  PROFILES,
  REASONING_MODEL_PATTERN,
  RULES,
  estimatePromptTokens,
  isReasoningModel,
  profileConfig,
  type ProfileConfig,
  type ProfileName,
  type RuleName,
  validateProfileConfig,
} from './profiles/config.ts';
export {
  type ProfileQuirk,
  type Refusal,
  type ShapedAnswer,
  type WireCompletion,
  type WireMessage,
  type WireToolCall,
  type WireUsage,
} from './profiles/wire.ts';
export { checkRequest } from './profiles/request-rules.ts';
export { reasoningKey, shapeAnswer, toolCallId, type ShapeContext } from './profiles/answers.ts';
