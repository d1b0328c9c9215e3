/**
 * The `${NAME}` / `${NAME:-default}` references of the tool catalog (origins, MCP URLs, header
 * secrets), resolved from the environment the process started with. Action's call path holds a
 * {@link SecretResolver}, not the environment: a header is resolved when a call needs it, so a
 * secret is never copied into the catalog, a record or a log line.
 */
import { ConfigError } from '../runtime/errors.ts';

export interface SecretResolver {
  /**
   * `text` with each reference replaced by its variable's value.
   * @throws ConfigError naming `where` and the variable when one is unset and has no default.
   */
  resolve(text: string, where: string): string;
}

/** Replaces `${NAME}` / `${NAME:-default}` with environment values; an unset variable without default is a ConfigError. */
export function interpolateEnv(text: string, env: NodeJS.ProcessEnv, where: string): string {
  return text.replace(/\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}/g, (_, name: string, fallback: string | undefined) => {
    // As in the shell, `:-` also takes the default when the variable is set but empty.
    const value = fallback !== undefined && !env[name] ? fallback : env[name];
    if (value === undefined) throw new ConfigError(`${where}: environment variable ${name} is not set`);
    return value;
  });
}

/** The resolver of a process's environment (its composition root makes it once). */
export function envSecrets(env: NodeJS.ProcessEnv): SecretResolver {
  return { resolve: (text, where) => interpolateEnv(text, env, where) };
}
