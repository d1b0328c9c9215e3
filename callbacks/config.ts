/** The callback dispatcher's configuration, read from the environment by its composition root (`tao run callbacks`). */
import { setting } from '../runtime/config.ts';
import { ConfigError } from '../runtime/errors.ts';
import { parseAllowedHosts } from './deliver.ts';
import type { CallbackDispatcherOptions } from './dispatcher.ts';

/**
 * Dispatcher options from the environment: `TAO_CALLBACK_SECRET` (required),
 * `TAO_CALLBACK_ALLOWED_HOSTS` (comma list), `TAO_CALLBACK_MAX_ATTEMPTS`, `TAO_CALLBACK_TIMEOUT_MS`
 * (declared in runtime/config.ts).
 * @throws ConfigError naming the missing secret or the first malformed variable.
 */
export function callbackOptionsFromEnv(env: NodeJS.ProcessEnv): CallbackDispatcherOptions {
  const secret = setting(env, 'TAO_CALLBACK_SECRET');
  if (!secret) throw new ConfigError('TAO_CALLBACK_SECRET is required (callbacks are always signed)');
  return {
    secret,
    allowedHosts: parseAllowedHosts(setting(env, 'TAO_CALLBACK_ALLOWED_HOSTS')),
    maxAttempts: setting(env, 'TAO_CALLBACK_MAX_ATTEMPTS'),
    requestTimeoutMs: setting(env, 'TAO_CALLBACK_TIMEOUT_MS'),
  };
}
