/**
 * The ingress's configuration, read from the environment by its composition roots (`tao run
 * ingress`, `tao ui` for the keys): the webhook sources and the API keys. The components
 * (ingress/server.ts, webhooks.ts, api-keys.ts) receive what these return.
 */
import { readFileSync } from 'node:fs';
import { setting } from '../runtime/config.ts';
import { ConfigError, errorMessage } from '../runtime/errors.ts';
import { decideIngressAuth, mergeApiKeys, parseApiKeys, type ApiKeyEntry, type IngressAuth } from './api-keys.ts';
import { WEBHOOK_SECRET_ENV, WEBHOOK_SOURCES, type WebhookOptions, type WebhookSource } from './webhooks.ts';

/**
 * Webhook options from the environment: `TAO_WEBHOOK_SECRET_GITHUB`, `TAO_WEBHOOK_SECRET_JIRA`,
 * `TAO_WEBHOOK_TOLERANCE_S`, `TAO_WEBHOOK_DELIVERY_WINDOW_S`, `TAO_WEBHOOK_JIRA_IGNORE_ACCOUNTS`
 * (comma list), declared in runtime/config.ts. Empty values count as unset.
 * @throws ConfigError naming a variable whose value does not parse.
 */
export function webhookOptionsFromEnv(env: NodeJS.ProcessEnv): WebhookOptions {
  const secrets: Partial<Record<WebhookSource, string>> = {};
  for (const source of WEBHOOK_SOURCES) {
    const value = setting(env, WEBHOOK_SECRET_ENV[source]);
    if (value) secrets[source] = value;
  }
  return {
    secrets,
    toleranceSeconds: setting(env, 'TAO_WEBHOOK_TOLERANCE_S') / 1000,
    deliveryWindowMs: setting(env, 'TAO_WEBHOOK_DELIVERY_WINDOW_S'),
    jiraIgnoreAccountIds: setting(env, 'TAO_WEBHOOK_JIRA_IGNORE_ACCOUNTS'),
  };
}

/**
 * The ingress's authentication from the environment: `TAO_INGRESS_KEYS_FILE` (read now),
 * `TAO_INGRESS_API_KEYS`, `TAO_INGRESS_AUTH`, for an ingress binding `host`.
 * @throws ConfigError when a file cannot be read, an entry is invalid, or the ingress must not start
 * (see {@link decideIngressAuth}).
 */
export function ingressAuthFromEnv(env: NodeJS.ProcessEnv, host: string): IngressAuth {
  return decideIngressAuth(apiKeysFromEnv(env), setting(env, 'TAO_INGRESS_AUTH'), host);
}

/**
 * Every configured key entry (`TAO_INGRESS_KEYS_FILE`, read now, and `TAO_INGRESS_API_KEYS`), of
 * every scope; null when neither is set. The ingress and the console (`tao ui`) read the same keys.
 * @throws ConfigError when a file cannot be read or an entry is invalid.
 */
export function apiKeysFromEnv(env: NodeJS.ProcessEnv): ApiKeyEntry[] | null {
  const lists: Array<{ origin: string; entries: ApiKeyEntry[] }> = [];
  const file = setting(env, 'TAO_INGRESS_KEYS_FILE');
  if (file) {
    const origin = `keys file ${file}`;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError(`TAO_INGRESS_KEYS_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`);
    }
    lists.push({ origin, entries: parseApiKeys(text, origin) });
  }
  const inline = setting(env, 'TAO_INGRESS_API_KEYS');
  if (inline) lists.push({ origin: 'TAO_INGRESS_API_KEYS', entries: parseApiKeys(inline, 'TAO_INGRESS_API_KEYS') });
  return lists.length ? mergeApiKeys(lists) : null;
}
