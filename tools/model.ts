/**
 * The model endpoint's tools: their names, the request and response contracts Action checks, and
 * which failures send a call to the fallback model. A model call is a step like any other
 * (docs/ARCHITECTURE.md): Thought emits it, Action performs it with the catalog's resilience
 * (timeout, retries by class with 429 Retry-After, breaker, fallback model), Observation verifies
 * the answer. The tools themselves are built from the TAO_LLM_* settings by tools/model-config.ts.
 *
 * The fallback is tried when the primary, after its retries, answered 5xx, timed out, could not be
 * reached, was rate-limited, or answered a 4xx saying the model or its capacity is unavailable
 * ({@link modelUnavailable}: 404 model_not_found and the like), and while its breaker is open; not
 * on other 4xx (a request the fallback would refuse too).
 */

/** Catalog name of the model tool Thought emits, and of its fallback. */
export const MODEL_TOOL = 'model.chat';
export const MODEL_FALLBACK_TOOL = 'model.chat_fallback';

/**
 * Error codes and types (OpenAI, vLLM, Azure, Anthropic's and others' OpenAI-compatible shapes) of a
 * 4xx that says the model, not the request, is the problem: not served here, or out of capacity.
 */
const MODEL_UNAVAILABLE_CODES = new Set([
  'model_not_found',
  'model_not_available',
  'model_unavailable',
  'deploymentnotfound',
  'deployment_not_found',
  'notfounderror',
  'not_found_error',
  'overloaded',
  'overloaded_error',
  'model_overloaded',
  'capacity_exceeded',
  'engine_overloaded',
  'service_unavailable',
]);

/**
 * Whether a model endpoint's 4xx answer says the model or its capacity is unavailable (so another
 * model may answer the same request): a code or type of {@link MODEL_UNAVAILABLE_CODES}, or a 404
 * whose message names the model (`The model \`x\` does not exist`, Ollama's `model "x" not found`).
 * A 404 of a chat-completions endpoint with any other message is taken the same way: the path is
 * fixed, so what was not found is the model (or the deployment). 429 counts as unavailable
 * capacity elsewhere (it is an upstream failure for every tool).
 */
export function modelUnavailable(status: number | null, body: string | null): boolean {
  if (status === null || status < 400 || status >= 500) return false;
  let error: { code?: unknown; type?: unknown; message?: unknown } = {};
  try {
    const parsed = JSON.parse(body ?? '') as { error?: unknown; code?: unknown; type?: unknown; message?: unknown };
    if (parsed && typeof parsed.error === 'object' && parsed.error !== null) error = parsed.error as typeof error;
    else if (typeof parsed.error === 'string') error = { message: parsed.error };
    else error = parsed;
  } catch {
    // Not JSON: the status alone decides.
  }
  const names = [error.code, error.type].filter((v): v is string => typeof v === 'string').map((v) => v.toLowerCase());
  if (names.some((n) => MODEL_UNAVAILABLE_CODES.has(n))) return true;
  return status === 404;
}

/** What Action sends: an OpenAI chat-completions request without `model` (the tool's body fills it). */
export const requestSchema = {
  type: 'object',
  required: ['messages'],
  properties: {
    model: { type: 'string', minLength: 1 },
    messages: {
      type: 'array',
      minItems: 1,
      items: { type: 'object', required: ['role'], properties: { role: { enum: ['system', 'user', 'assistant', 'tool'] } } },
    },
    tools: { type: 'array', items: { type: 'object', required: ['type', 'function'] } },
    tool_choice: {},
    temperature: { type: 'number' },
    max_tokens: { type: 'integer', minimum: 1 },
    // Reasoning models refuse max_tokens and ask for this instead (TAO_LLM_PARAMS=reasoning).
    max_completion_tokens: { type: 'integer', minimum: 1 },
    parallel_tool_calls: { type: 'boolean' },
    response_format: { type: 'object' },
    stream: { const: false },
  },
} as const;

/** A chat completion: at least one choice with a message. Observation's model gate checks the rest. */
export const responseSchema = {
  type: 'object',
  required: ['choices'],
  properties: {
    choices: { type: 'array', minItems: 1, items: { type: 'object', required: ['message'], properties: { message: { type: 'object' } } } },
    usage: { type: 'object' },
  },
} as const;
