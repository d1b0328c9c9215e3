/**
 * The model endpoint as catalog tools. A model call is a step like any other (docs/ARCHITECTURE.md): Thought emits it, Action performs it with the catalog's resilience
 * (timeout, retries by class with 429 Retry-After, breaker, fallback model), Observation verifies
 * the answer. These specs are built from the TAO_LLM_* settings, not from a file, so that one
 * setting (the base URL) serves the planner and the loop alike.
 *
 * | variable | meaning | default |
 * |---|---|---|
 * | TAO_LLM_BASE_URL | OpenAI-compatible API base up to its version segment (`http://host:8000/v1`) | none: no model tools |
 * | TAO_LLM_MODEL | the model name sent when a skill does not name one | required with a base URL |
 * | TAO_LLM_API_KEY_ENV | name of the variable holding the key (sent as a Bearer token, read when sending) | TAO_LLM_API_KEY |
 * | TAO_LLM_TIMEOUT_MS | budget of one attempt | 20000 |
 * | TAO_LLM_FALLBACK_MODEL | a second model Action calls when the first is unavailable (below) or its breaker is open | none |
 * | TAO_LLM_FALLBACK_BASE_URL | the fallback's endpoint, when it is not the primary's (alone: TAO_LLM_MODEL there) | the primary's |
 * | TAO_LLM_FALLBACK_API_KEY_ENV | name of the variable holding the fallback endpoint's key | none: no key there |
 *
 * The fallback is tried when the primary, after its retries, answered 5xx, timed out, could not be
 * reached, was rate-limited, or answered a 4xx saying the model or its capacity is unavailable
 * ({@link modelUnavailable}: 404 model_not_found and the like), and while its breaker is open; not
 * on other 4xx (a request the fallback would refuse too).
 */
import { setting } from '../runtime/config.ts';
import { ConfigError } from '../runtime/errors.ts';
import type { ToolSpec } from './catalog.ts';

/** Catalog name of the model tool Thought emits, and of its fallback. */
export const MODEL_TOOL = 'model.chat';
export const MODEL_FALLBACK_TOOL = 'model.chat_fallback';

/**
 * The model names the model tools ask: `primary` (TAO_LLM_MODEL) and `fallback`
 * (TAO_LLM_FALLBACK_MODEL, else TAO_LLM_MODEL when only TAO_LLM_FALLBACK_BASE_URL is set). Thought
 * uses them to name (and price) a turn whose completion does not say which model answered.
 */
export function modelNames(env: NodeJS.ProcessEnv): { primary?: string; fallback?: string; fallbackTool: string } {
  const primary = setting(env, 'TAO_LLM_MODEL');
  const fallback = setting(env, 'TAO_LLM_FALLBACK_MODEL') ?? (setting(env, 'TAO_LLM_FALLBACK_BASE_URL') ? primary : undefined);
  return { ...(primary ? { primary } : {}), ...(fallback ? { fallback } : {}), fallbackTool: MODEL_FALLBACK_TOOL };
}

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
const requestSchema = {
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
const responseSchema = {
  type: 'object',
  required: ['choices'],
  properties: {
    choices: { type: 'array', minItems: 1, items: { type: 'object', required: ['message'], properties: { message: { type: 'object' } } } },
    usage: { type: 'object' },
  },
} as const;

/**
 * The model tools for the catalog: none without TAO_LLM_BASE_URL; `model.chat`, and
 * `model.chat_fallback` when TAO_LLM_FALLBACK_MODEL is set.
 * @throws ConfigError for a base URL that is not http(s), or a base URL without TAO_LLM_MODEL.
 */
export function modelToolSpecs(env: NodeJS.ProcessEnv, purpose: 'call' | 'contracts' = 'call'): Array<{ source: string; spec: ToolSpec }> {
  // Thought, Observation and replay need the model tool's contracts, not its address: without a
  // base URL they get the tool at an address that cannot resolve (RFC 6761 .invalid), so a recorded
  // run verifies the same with the endpoint gone. Action, which calls it, needs the real one.
  const baseUrl = setting(env, 'TAO_LLM_BASE_URL') || (purpose === 'contracts' ? 'http://model.invalid/v1' : undefined);
  if (!baseUrl) return [];
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new ConfigError(`TAO_LLM_BASE_URL "${baseUrl}" is not a URL`);
  }
  if (!/^https?:$/.test(base.protocol)) throw new ConfigError(`TAO_LLM_BASE_URL must be http:// or https://, got "${baseUrl}"`);
  const model = setting(env, 'TAO_LLM_MODEL') || (purpose === 'contracts' ? 'unset' : undefined);
  if (!model) throw new ConfigError('TAO_LLM_MODEL is required when TAO_LLM_BASE_URL is set');
  const keyEnv = setting(env, 'TAO_LLM_API_KEY_ENV');
  const source = 'TAO_LLM_BASE_URL (tools/model.ts)';
  const primary: ToolSpec = {
    name: MODEL_TOOL,
    kind: 'model',
    description: `chat completions of ${model} at ${base.origin}`,
    origin: base.origin,
    method: 'POST',
    path: `${base.pathname.replace(/\/+$/, '')}/chat/completions`,
    parameters: requestSchema,
    response: responseSchema,
    timeoutMs: setting(env, 'TAO_LLM_TIMEOUT_MS'),
    // A rate-limited model says when it will answer again: wait for it (up to 2 minutes) rather than
    // fail a turn that costs the run its progress.
    retry: { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 5000, maxRetryAfterMs: 120_000 },
    maxResponseBytes: 256 * 1024,
    // The key is a reference, resolved by Action when it sends: it is never in a record or a log.
    ...(env[keyEnv] ? { headers: { authorization: `Bearer \${${keyEnv}}` } } : {}),
    breaker: { failureThreshold: 5, coolDownMs: 10000 },
    defaultBody: { model },
    cost: 0,
  };
  const fallbackBaseUrl = setting(env, 'TAO_LLM_FALLBACK_BASE_URL');
  const fallbackModel = setting(env, 'TAO_LLM_FALLBACK_MODEL') ?? (fallbackBaseUrl ? model : undefined);
  if (!fallbackModel) return [{ source, spec: primary }];
  let fallback: ToolSpec = {
    ...primary,
    name: MODEL_FALLBACK_TOOL,
    description: `chat completions of ${fallbackModel} (fallback)`,
    fixedBody: { model: fallbackModel },
  };
  if (fallbackBaseUrl) {
    // Another endpoint: its own origin, path and key. The primary's key is never sent there.
    const fb = new URL(fallbackBaseUrl);
    const fbKeyEnv = setting(env, 'TAO_LLM_FALLBACK_API_KEY_ENV');
    const { headers: _primaryKey, ...rest } = fallback;
    fallback = {
      ...rest,
      description: `chat completions of ${fallbackModel} at ${fb.origin} (fallback)`,
      origin: fb.origin,
      path: `${fb.pathname.replace(/\/+$/, '')}/chat/completions`,
      ...(fbKeyEnv && env[fbKeyEnv] ? { headers: { authorization: `Bearer \${${fbKeyEnv}}` } } : {}),
    };
  }
  return [
    { source, spec: { ...primary, fallbackTool: MODEL_FALLBACK_TOOL } },
    { source, spec: fallback },
  ];
}
