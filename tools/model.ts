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
 * | TAO_LLM_FALLBACK_MODEL | a second model Action calls (same endpoint) when the first fails or its breaker is open | none |
 */
import { setting } from '../runtime/config.ts';
import { ConfigError } from '../runtime/errors.ts';
import type { ToolSpec } from './catalog.ts';

/** Catalog name of the model tool Thought emits, and of its fallback. */
export const MODEL_TOOL = 'model.chat';
export const MODEL_FALLBACK_TOOL = 'model.chat_fallback';

/** What Action sends: an OpenAI chat-completions request without `model` (the tool's body fills it). */
const requestSchema = {
  type: 'object',
  required: ['messages'],
  properties: {
    model: { type: 'string', minLength: 1 },
    messages: { type: 'array', minItems: 1, items: { type: 'object', required: ['role'], properties: { role: { enum: ['system', 'user', 'assistant', 'tool'] } } } },
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
  const fallbackModel = setting(env, 'TAO_LLM_FALLBACK_MODEL');
  if (!fallbackModel) return [{ source, spec: primary }];
  const fallback: ToolSpec = { ...primary, name: MODEL_FALLBACK_TOOL, description: `chat completions of ${fallbackModel} (fallback)`, fixedBody: { model: fallbackModel } };
  return [
    { source, spec: { ...primary, fallbackTool: MODEL_FALLBACK_TOOL } },
    { source, spec: fallback },
  ];
}
