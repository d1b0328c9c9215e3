/**
 * Error shapes: the body each server sends with a refusal (OpenAI's `error` object, Ollama's and
 * llama.cpp's, vLLM's), and {@link refuse}, which makes a {@link Refusal} in the profile's shape.
 */
import type { ProfileConfig, ProfileName, RuleName } from './config.ts';
import type { Refusal } from './wire.ts';

interface ErrorParts {
  /** OpenAI's / vLLM's `param`. */
  param?: string | null;
  /** OpenAI's `code` (a string). */
  code?: string | null;
  /** Overrides the shape's default `type`. */
  type?: string;
  /** llama.cpp: extra fields inside `error` (`n_prompt_tokens`, `n_ctx`). */
  extra?: Record<string, unknown>;
}

/**
 * The error body of a profile.
 *
 * - openai / lenient: `{error: {message, type, param, code}}` — OpenAI's shape.
 * - llamacpp: `{error: {code: <status>, message, type}}` — verified:
 *   ggml-org/llama.cpp tools/server/server-common.cpp `format_error_response`
 *   (400 → `invalid_request_error`, `exceed_context_size_error` → 400) and
 *   tools/server/server.cpp `ex_wrapper` (`{"error": format_error_response(...)}`;
 *   `std::invalid_argument` → 400, any other exception → 500 `server_error`).
 * - ollama: `{error: {message, type: "invalid_request_error", param: null, code: null}}` —
 *   verified: ollama/ollama openai/openai.go `NewError` and `Error` (param and
 *   code have no omitempty) and middleware/openai.go (a `FromChatRequest` error → 400).
 * - vllm: `{error: {message, type: "BadRequestError", param, code: 400}}` — verified:
 *   vllm-project/vllm vllm/entrypoints/openai/engine/protocol.py `ErrorResponse` /
 *   `ErrorInfo` (`code: int`); type `BadRequestError` as in the bodies quoted in its tests.
 */
function errorBody(profile: ProfileName, status: number, message: string, parts: ErrorParts = {}): unknown {
  switch (profile) {
    case 'llamacpp':
      return { error: { code: status, message, type: parts.type ?? 'invalid_request_error', ...parts.extra } };
    case 'ollama':
      return { error: { message, type: parts.type ?? 'invalid_request_error', param: null, code: null } };
    case 'vllm':
      return { error: { message, type: parts.type ?? 'BadRequestError', param: parts.param ?? null, code: status } };
    default:
      return { error: { message, type: parts.type ?? 'invalid_request_error', param: parts.param ?? null, code: parts.code ?? null } };
  }
}

export function refuse(c: ProfileConfig, rule: RuleName, message: string, parts: ErrorParts = {}, status = 400): Refusal {
  return { rule, status, body: errorBody(c.profile, status, message, parts) };
}
