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
  /** The non-empty values `text`'s references resolve to (its defaults left out), for {@link redact}. */
  valuesIn(text: string): string[];
}

const REFERENCE = /\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * `text` with every occurrence of each of `values` replaced by `***`: an upstream that echoes a
 * credential back (in a body or an error) does not put it into a record. Values shorter than 4
 * characters are left alone (they would blank out ordinary text).
 */
export function redact<T extends string | null>(text: T, values: readonly string[]): T {
  if (text === null) return text;
  let out: string = text;
  for (const value of values) if (value.length >= 4) out = out.split(value).join('***');
  return out as T;
}

/** Replaces `${NAME}` / `${NAME:-default}` with environment values; an unset variable without default is a ConfigError. */
export function interpolateEnv(text: string, env: NodeJS.ProcessEnv, where: string): string {
  return text.replace(REFERENCE, (_, name: string, fallback: string | undefined) => {
    // As in the shell, `:-` also takes the default when the variable is set but empty.
    const value = fallback !== undefined && !env[name] ? fallback : env[name];
    if (value === undefined) throw new ConfigError(`${where}: environment variable ${name} is not set`);
    return value;
  });
}

/** The resolver of a process's environment (its composition root makes it once). */
export function envSecrets(env: NodeJS.ProcessEnv): SecretResolver {
  return {
    resolve: (text, where) => interpolateEnv(text, env, where),
    valuesIn: (text) => [...text.matchAll(REFERENCE)].flatMap((m) => (env[m[1]!] ? [env[m[1]!]!] : [])),
  };
}
