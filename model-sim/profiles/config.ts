/**
 * The simulator's server profiles and request rules by name, a profile's settings
 * ({@link ProfileConfig}) with their defaults and checks, and the prompt-token estimate the profiles
 * share.
 */

/** The profiles, `lenient` first (the default). */
export const PROFILES = ['lenient', 'openai', 'ollama', 'llamacpp', 'vllm', 'openai-responses', 'anthropic'] as const;
export type ProfileName = (typeof PROFILES)[number];

/** Names of the request rules, as recorded in `RecordedRequest.refused`. */
export const RULES = [
  'tool_call_id_missing',
  'tool_result_without_call',
  'duplicate_tool_result',
  'tool_call_unanswered',
  'duplicate_tool_call_ids',
  'assistant_tool_call_id_missing',
  'content_null',
  'tool_call_arguments_not_json',
  'message_without_content',
  'two_trailing_assistants',
  'system_not_first',
  'mistral_tool_call_id',
  'reasoning_max_tokens',
  'reasoning_temperature',
  'context_length',
  // The Responses API (model-sim/wires/responses.ts) and the Messages API (model-sim/wires/messages.ts).
  'responses_input_missing',
  'responses_unknown_item',
  'responses_output_without_call',
  'responses_call_unanswered',
  'messages_missing',
  'messages_version_missing',
  'messages_max_tokens_missing',
  'messages_system_role',
  'messages_roles_not_alternating',
  'messages_empty_text',
  'messages_tool_result_without_use',
  'messages_tool_use_unanswered',
] as const;
export type RuleName = (typeof RULES)[number];

/** Profile options (a profile name alone means the defaults). */
export interface ProfileConfig {
  profile: ProfileName;
  /**
   * Models refused `max_tokens` and `temperature` other than 1, under any
   * profile. Under `openai`, models named `o<digit>…` or `gpt-5…` are reasoning
   * models too ({@link REASONING_MODEL_PATTERN}).
   */
  reasoningModels: readonly string[];
  /** Context window in tokens (prompt estimated by {@link estimatePromptTokens}); none when undefined. */
  contextWindow?: number;
  /** `vllm` only: `mistral` — tool-call ids must be 9 characters `[a-zA-Z0-9]` (and answers use such ids). */
  toolIdFormat: 'random' | 'mistral';
}

/** Reasoning models by name under the `openai` profile. */
export const REASONING_MODEL_PATTERN = /^(o\d|gpt-5)/;

/** The defaults of a profile. */
export function profileConfig(profile: ProfileName | Partial<ProfileConfig> = 'lenient'): ProfileConfig {
  const p: Partial<ProfileConfig> = typeof profile === 'string' ? { profile } : profile;
  return {
    profile: p.profile ?? 'lenient',
    reasoningModels: p.reasoningModels ?? [],
    ...(p.contextWindow !== undefined ? { contextWindow: p.contextWindow } : {}),
    toolIdFormat: p.toolIdFormat ?? 'random',
  };
}

/**
 * Validates profile options.
 *
 * @throws RangeError naming the option.
 */
export function validateProfileConfig(c: ProfileConfig): void {
  if (!(PROFILES as readonly string[]).includes(c.profile))
    throw new RangeError(`profile must be one of ${PROFILES.join(', ')}, got ${JSON.stringify(c.profile)}`);
  if (!Array.isArray(c.reasoningModels) || c.reasoningModels.some((m) => typeof m !== 'string' || m === '')) {
    throw new RangeError('reasoningModels must be an array of non-empty strings');
  }
  if (c.contextWindow !== undefined && (!Number.isInteger(c.contextWindow) || c.contextWindow < 1)) {
    throw new RangeError(`contextWindow must be a positive integer, got ${String(c.contextWindow)}`);
  }
  if (c.toolIdFormat !== 'random' && c.toolIdFormat !== 'mistral')
    throw new RangeError(`toolIdFormat must be random or mistral, got ${JSON.stringify(c.toolIdFormat)}`);
  if (c.toolIdFormat === 'mistral' && c.profile !== 'vllm') throw new RangeError('toolIdFormat mistral applies only to the vllm profile');
}

/** Whether the model is a reasoning model under this configuration. */
export function isReasoningModel(c: ProfileConfig, model: string): boolean {
  return c.reasoningModels.includes(model) || (c.profile === 'openai' && REASONING_MODEL_PATTERN.test(model));
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Prompt tokens as the profiles count them: ceil(characters / 4) of the JSON of `messages` and `tools`. */
export function estimatePromptTokens(body: unknown): number {
  if (!isRecord(body)) return 0;
  const chars =
    JSON.stringify(body['messages'] ?? []).length + (body['tools'] === undefined || body['tools'] === null ? 0 : JSON.stringify(body['tools']).length);
  return Math.ceil(chars / 4);
}
