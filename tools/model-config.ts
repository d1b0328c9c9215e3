/**
 * The model endpoint as catalog tools, built from the TAO_LLM_* settings rather than from a file: a
 * configuration loader the composition roots call (the tools' contracts are in tools/model.ts).
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
 * | TAO_LLM_API | the endpoint's API: `chat`, `responses` or `messages` (tools/wires/) | chat |
 * | TAO_LLM_FALLBACK_API | the fallback's API | TAO_LLM_API's |
 */
import { setting } from '../runtime/config.ts';
import { ConfigError } from '../runtime/errors.ts';
import type { ToolSpec } from './catalog.ts';
import { MODEL_FALLBACK_TOOL, MODEL_TOOL, requestSchema, responseSchema } from './model.ts';
import { keyHeader, wirePath, type ModelWire } from './wires/index.ts';

/** What the description says each wire is. */
const WIRE_NAMES: Record<ModelWire, string> = { chat: 'chat completions', responses: 'Responses API', messages: 'Messages API' };

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
  const wire: ModelWire = setting(env, 'TAO_LLM_API') as ModelWire;
  const source = 'TAO_LLM_BASE_URL (tools/model-config.ts)';
  const primary: ToolSpec = {
    name: MODEL_TOOL,
    kind: 'model',
    ...(wire !== 'chat' ? { wire } : {}),
    description: `${WIRE_NAMES[wire]} of ${model} at ${base.origin}`,
    origin: base.origin,
    method: 'POST',
    path: wirePath(base.pathname, wire),
    parameters: requestSchema,
    response: responseSchema,
    timeoutMs: setting(env, 'TAO_LLM_TIMEOUT_MS'),
    // A rate-limited model says when it will answer again: wait for it (up to 2 minutes) rather than
    // fail a turn that costs the run its progress.
    retry: { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 5000, maxRetryAfterMs: 120_000 },
    maxResponseBytes: 256 * 1024,
    // The key is a reference, resolved by Action when it sends: it is never in a record or a log.
    ...(env[keyEnv] ? { headers: keyHeader(wire, keyEnv) } : {}),
    breaker: { failureThreshold: 5, coolDownMs: 10000 },
    defaultBody: { model },
    cost: 0,
  };
  const fallbackBaseUrl = setting(env, 'TAO_LLM_FALLBACK_BASE_URL');
  const fallbackModel = setting(env, 'TAO_LLM_FALLBACK_MODEL') ?? (fallbackBaseUrl ? model : undefined);
  if (!fallbackModel) return [{ source, spec: primary }];
  const fallbackWire: ModelWire = (setting(env, 'TAO_LLM_FALLBACK_API') as ModelWire | undefined) ?? wire;
  const { wire: _primaryWire, ...primaryRest } = primary;
  let fallback: ToolSpec = {
    ...primaryRest,
    ...(fallbackWire !== 'chat' ? { wire: fallbackWire } : {}),
    name: MODEL_FALLBACK_TOOL,
    description: `${WIRE_NAMES[fallbackWire]} of ${fallbackModel} (fallback)`,
    path: wirePath(base.pathname, fallbackWire),
    // The primary's key, in the header the fallback's wire carries it in.
    ...(env[keyEnv] ? { headers: keyHeader(fallbackWire, keyEnv) } : {}),
    fixedBody: { model: fallbackModel },
  };
  if (fallbackBaseUrl) {
    // Another endpoint: its own origin, path and key. The primary's key is never sent there.
    const fb = new URL(fallbackBaseUrl);
    const fbKeyEnv = setting(env, 'TAO_LLM_FALLBACK_API_KEY_ENV');
    const { headers: _primaryKey, ...rest } = fallback;
    fallback = {
      ...rest,
      description: `${WIRE_NAMES[fallbackWire]} of ${fallbackModel} at ${fb.origin} (fallback)`,
      origin: fb.origin,
      path: wirePath(fb.pathname, fallbackWire),
      ...(fbKeyEnv && env[fbKeyEnv] ? { headers: keyHeader(fallbackWire, fbKeyEnv) } : {}),
    };
  }
  return [
    { source, spec: { ...primary, fallbackTool: MODEL_FALLBACK_TOOL } },
    { source, spec: fallback },
  ];
}
