import { ConfigError } from './errors.ts';

/**
 * The one declaration of every environment variable the product reads (`TAO_*`, `KAFKA_*`,
 * `SCHEMA_REGISTRY_*`, and the OpenTelemetry endpoint): its kind, default, range, meaning and the
 * components that use it. Code reads a variable only through {@link setting} (or
 * {@link loadRuntimeConfig} for the connection settings), so a value is parsed by one rule.
 *
 * Rules every variable follows:
 * - An empty value counts as unset (the default applies).
 * - A value that does not parse stops the process at start-up with one line naming the variable
 *   and the value: `TAO_INGRESS_MAX_IN_FLIGHT must be an integer >= 1, got "abc"`. Secret values
 *   are never repeated in a message.
 * - `duration`: a number with a unit (`250ms`, `30s`, `5m`, `2h`, `7d`, decimals allowed:
 *   `1.5s`), or a plain number in the unit the name ends with (`_MS`: milliseconds, `_S`:
 *   seconds). Parsed to whole milliseconds.
 * - `bool`: true/false/1/0; `enum`: one of the listed values, case-insensitive.
 * - An unknown `TAO_*` name in the environment is refused by {@link checkEnvironment}, with the
 *   closest known name suggested. Names a tool catalog references (`${NAME}`) are known too, and
 *   the service links Kubernetes injects for a Service named `tao-...` (`TAO_..._SERVICE_HOST`,
 *   `TAO_..._PORT`, ...: runtime/service-links.ts) are ignored.
 *
 * The settings table of docs/CONFIGURATION.md is generated from {@link SETTINGS}
 * (`node --import tsx scripts/gen-config-docs.ts`); a test fails when it is stale.
 */
import { looksLikeServiceLink, serviceLinkNames } from './service-links.ts';
import { LOCAL_SETTINGS } from './settings/local.ts';
import { PLATFORM_SETTINGS } from './settings/platform.ts';
import type { Component, SettingKind, SettingSpec } from './settings/spec.ts';
import { STAGE_SETTINGS } from './settings/stages.ts';
import { RETIRED_THOUGHT_SETTINGS, THOUGHT_SETTINGS } from './settings/thought.ts';

export type { Component, SettingKind, SettingSpec } from './settings/spec.ts';

/** Every setting, by name, in the order docs/CONFIGURATION.md's table lists them (runtime/settings/: one file per part of the product). */
/** Variables no longer read, each with what replaces it (refused at start-up with that advice, not as unknown). */
const RETIRED_SETTINGS: Readonly<Record<string, string>> = { ...RETIRED_THOUGHT_SETTINGS };

export const SETTINGS = { ...PLATFORM_SETTINGS, ...THOUGHT_SETTINGS, ...STAGE_SETTINGS, ...LOCAL_SETTINGS } as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;

type Parsed<S> = S extends { kind: 'int' | 'number' | 'port' | 'duration' }
  ? number
  : S extends { kind: 'bool' }
    ? boolean
    : S extends { kind: 'list' }
      ? string[]
      : S extends { kind: 'enum'; values: readonly (infer V)[] }
        ? V
        : string;

/** The parsed value of a variable: always present when it has a default, else possibly undefined. */
export type SettingValue<N extends SettingName> = (typeof SETTINGS)[N] extends { default: string }
  ? Parsed<(typeof SETTINGS)[N]>
  : Parsed<(typeof SETTINGS)[N]> | undefined;

const spec = (name: SettingName): SettingSpec => SETTINGS[name];

/** True when the variable is set to a non-empty value. */
export function isSet(env: NodeJS.ProcessEnv, name: SettingName): boolean {
  return (env[name] ?? '') !== '';
}

/**
 * The parsed value of `name` in `env`, or its default.
 * @throws ConfigError with one line naming the variable and the value when the value does not parse.
 */
export function setting<N extends SettingName>(env: NodeJS.ProcessEnv, name: N): SettingValue<N> {
  const raw = env[name];
  const s = spec(name);
  if (raw !== undefined && raw !== '') return parseValue(name, s, raw) as SettingValue<N>;
  return (s.default === undefined ? undefined : parseValue(name, s, s.default)) as SettingValue<N>;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

function parseValue(name: string, s: SettingSpec, raw: string): unknown {
  const fail = (what: string): never => {
    throw new ConfigError(`${name} must be ${what}, got ${s.kind === 'secret' ? 'a value that is not shown' : JSON.stringify(raw)}`);
  };
  const text = raw.trim();
  switch (s.kind) {
    case 'string':
    case 'secret':
      if (s.pattern && !s.pattern.test(raw)) fail(s.hint ?? `like ${s.pattern}`);
      return raw;
    case 'int':
    case 'port': {
      const n = /^[+-]?\d+$/.test(text) ? Number(text) : NaN;
      const what = s.kind === 'port' ? `a TCP port from ${s.min} to ${s.max}` : `an integer ${rangeText(s, String)}`;
      if (!Number.isSafeInteger(n) || (s.min !== undefined && n < s.min) || (s.max !== undefined && n > s.max)) fail(what);
      return n;
    }
    case 'number': {
      const n = text === '' ? NaN : Number(text);
      if (!Number.isFinite(n) || (s.min !== undefined && n < s.min) || (s.max !== undefined && n > s.max)) fail(`a number ${rangeText(s, String)}`);
      return n;
    }
    case 'bool': {
      const v = text.toLowerCase();
      if (v === 'true' || v === '1') return true;
      if (v === 'false' || v === '0') return false;
      return fail('true or false');
    }
    case 'enum': {
      const v = text.toLowerCase();
      const retired = s.retired && Object.hasOwn(s.retired, v) ? s.retired[v] : undefined;
      if (retired !== undefined) throw new ConfigError(`${name}=${v} is retired: ${retired}`);
      if (!s.values!.includes(v)) fail(`one of ${s.values!.join(', ')}`);
      return v;
    }
    case 'url':
      if (!isHttpUrl(text)) fail('an http(s) URL');
      return text.replace(/\/+$/, '');
    case 'duration': {
      const ms = parseDuration(text, name.endsWith('_S') ? 1000 : 1);
      const plain = name.endsWith('_S') ? 'seconds' : 'milliseconds';
      if (ms === null || (s.min !== undefined && ms < s.min) || (s.max !== undefined && ms > s.max))
        fail(`a duration ${rangeText(s, formatDuration)} (like 500ms, 30s, 5m, 7d; a plain number is ${plain})`);
      return ms;
    }
    case 'list': {
      const items = raw
        .split(',')
        .map((i) => i.trim())
        .filter(Boolean);
      for (const item of items) {
        if (s.urlItems && !isHttpUrl(item)) fail('a comma-separated list of http(s) URLs');
        if (s.pattern && !s.pattern.test(item)) fail(`a comma-separated list of ${s.hint}`);
      }
      return items;
    }
  }
}

function rangeText(s: SettingSpec, show: (n: number) => string): string {
  if (s.min !== undefined && s.max !== undefined) return `from ${show(s.min)} to ${show(s.max)}`;
  if (s.min !== undefined) return `>= ${show(s.min)}`;
  if (s.max !== undefined) return `<= ${show(s.max)}`;
  return '';
}

function isHttpUrl(text: string): boolean {
  if (!/^https?:\/\/[^\s/]+/.test(text)) return false;
  return URL.canParse(text);
}

/**
 * Whole milliseconds of `text`: a number with a unit (ms, s, m, h, d) or a plain number taken in
 * `plainUnitMs`. Null when it does not parse, is negative, or is not a whole number of milliseconds.
 */
export function parseDuration(text: string, plainUnitMs: number): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * (m[2] ? DURATION_UNITS[m[2]]! : plainUnitMs);
  return Number.isSafeInteger(ms) ? ms : null;
}

/** Milliseconds in the largest unit that divides them exactly: 604800000 → `7d`, 1500 → `1500ms`. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) if (ms !== 0 && ms % DURATION_UNITS[unit]! === 0) return `${ms / DURATION_UNITS[unit]!}${unit}`;
  return `${ms}ms`;
}

/**
 * The prefix of the variables the project's own tests and benchmarks set (TAO_TEST_MODEL_URL, a test
 * tool's token...): the product never reads them, declares none, and does not refuse them.
 */
const TEST_PREFIX = 'TAO_TEST_';

/**
 * Every problem of the environment, one line each: values that do not parse, and `TAO_*` names
 * that are not declared, but for TAO_TEST_* (with the closest declared name). `alsoKnown`: more accepted names (those
 * a tool catalog references, the variables TAO_LLM_API_KEY_ENV and TAO_LLM_FALLBACK_API_KEY_ENV name).
 * Kubernetes service links (runtime/service-links.ts: name and value as kubelet writes them) are not
 * settings and are ignored; a declared setting one of them overwrote is refused with that said.
 */
export function environmentProblems(env: NodeJS.ProcessEnv, options: { alsoKnown?: Iterable<string> } = {}): string[] {
  const problems: string[] = [];
  const known = new Set<string>([...Object.keys(SETTINGS), ...(options.alsoKnown ?? [])]);
  for (const keyEnv of [env.TAO_LLM_API_KEY_ENV, env.TAO_LLM_FALLBACK_API_KEY_ENV]) if (keyEnv) known.add(keyEnv);
  for (const link of serviceLinkNames(env, 'TAO_')) known.add(link);
  for (const name of Object.keys(env).sort()) {
    if (name in SETTINGS) {
      try {
        setting(env, name as SettingName);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        const link = looksLikeServiceLink(name, env[name]!)
          ? ' (a Kubernetes service link of a Service named like it: set enableServiceLinks: false on the pod)'
          : '';
        problems.push(`${err.message}${link}`);
      }
    } else if (name in RETIRED_SETTINGS) {
      problems.push(`${name} is retired: ${RETIRED_SETTINGS[name]}`);
    } else if (name.startsWith('TAO_') && !name.startsWith(TEST_PREFIX) && !known.has(name)) {
      const near = closest(name, Object.keys(SETTINGS));
      problems.push(`${name} is not a known setting${near ? ` (did you mean ${near}?)` : ''}; \`tao config\` lists them all`);
    }
  }
  return problems;
}

/**
 * Start-up check of a process's environment.
 * @throws ConfigError whose message is the problems of {@link environmentProblems}, joined on one line.
 */
export function checkEnvironment(env: NodeJS.ProcessEnv, options: { alsoKnown?: Iterable<string> } = {}): void {
  const problems = environmentProblems(env, options);
  if (problems.length) throw new ConfigError(problems.join('; '));
}

/** The declared name nearest to `name` by edit distance, when it is near enough to be a typo. */
function closest(name: string, candidates: string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return bestDistance <= Math.max(3, Math.floor(name.length / 4)) ? best : null;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/** One line of the effective configuration: the value in force and where it came from; secrets masked. */
export interface EffectiveSetting {
  name: SettingName;
  kind: SettingKind;
  /** The value as set or defaulted (`***` for a set secret); null when unset, or when the default is a note. */
  value: string | null;
  /** The default's description when it is not a value (a path in the package, a per-process port). */
  defaultNote: string | null;
  source: 'env' | 'default' | 'unset';
  secret: boolean;
  meaning: string;
  usedBy: readonly Component[];
}

/**
 * The effective configuration: every declared variable (test/bench-only ones only when set), with
 * secrets shown as `***`. Does not validate; see {@link environmentProblems}.
 */
export function effectiveConfig(env: NodeJS.ProcessEnv): EffectiveSetting[] {
  return (Object.keys(SETTINGS) as SettingName[]).map((name) => {
    const s = spec(name);
    const secret = s.kind === 'secret';
    const fromEnv = isSet(env, name);
    const value = fromEnv ? (secret ? '***' : env[name]!) : (s.default ?? null);
    const source = fromEnv ? 'env' : s.default !== undefined || s.defaultNote ? 'default' : 'unset';
    return { name, kind: s.kind, value, defaultNote: fromEnv ? null : (s.defaultNote ?? null), source, secret, meaning: s.meaning, usedBy: s.usedBy };
  });
}

/**
 * Connection settings shared by every process (see {@link SETTINGS} for each variable).
 */
export interface RuntimeConfig {
  kafka: {
    brokers: string[];
    /** TLS to the brokers (KAFKA_SSL). */
    ssl: boolean;
    /** KAFKA_SSL_CA_FILE: a PEM file of CAs to trust besides the system ones (read by runtime/kafka.ts); null: system CAs only. */
    sslCaFile: string | null;
    /** KAFKA_SSL_REJECT_UNAUTHORIZED: false accepts a certificate that does not verify. */
    sslRejectUnauthorized: boolean;
    sasl: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string } | null;
    sessionTimeoutMs: number;
    startupWaitMs: number;
    /** TAO_KAFKA_MIN_VERSION_CHECK: what a starting process does with a broker older than Kafka 3.9 (runtime/broker-version.ts). */
    minVersionCheck: SettingValue<'TAO_KAFKA_MIN_VERSION_CHECK'>;
  };
  registry: { url: string; username: string | null; password: string | null };
  namespace: string;
  /** Address every server of this process binds (TAO_BIND_HOST). */
  bindHost: string;
  /** The lowest level this process logs (TAO_LOG_LEVEL). */
  logLevel: SettingValue<'TAO_LOG_LEVEL'>;
}

/**
 * Reads and validates the connection settings.
 * @throws ConfigError naming the first variable that does not parse, the SASL settings that are
 *   missing, or a KAFKA_SSL_* setting given without KAFKA_SSL=true.
 */
export function loadRuntimeConfig(env: NodeJS.ProcessEnv): RuntimeConfig {
  const mechanism = setting(env, 'KAFKA_SASL_MECHANISM');
  const username = setting(env, 'KAFKA_SASL_USERNAME');
  const password = setting(env, 'KAFKA_SASL_PASSWORD');
  if (mechanism && (!username || !password)) throw new ConfigError(`KAFKA_SASL_MECHANISM=${mechanism} needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD`);
  const ssl = setting(env, 'KAFKA_SSL');
  const sslCaFile = setting(env, 'KAFKA_SSL_CA_FILE') ?? null;
  const sslRejectUnauthorized = setting(env, 'KAFKA_SSL_REJECT_UNAUTHORIZED');
  if (!ssl && sslCaFile !== null) throw new ConfigError('KAFKA_SSL_CA_FILE is set but KAFKA_SSL is not true: set KAFKA_SSL=true to connect over TLS');
  if (!ssl && !sslRejectUnauthorized)
    throw new ConfigError('KAFKA_SSL_REJECT_UNAUTHORIZED=false is set but KAFKA_SSL is not true: set KAFKA_SSL=true to connect over TLS');
  const brokers = setting(env, 'KAFKA_BROKERS');
  if (brokers.length === 0) throw new ConfigError('KAFKA_BROKERS must name at least one host:port');
  return {
    kafka: {
      brokers,
      ssl,
      sslCaFile,
      sslRejectUnauthorized,
      sasl: mechanism ? { mechanism, username: username!, password: password! } : null,
      sessionTimeoutMs: setting(env, 'TAO_SESSION_TIMEOUT_MS'),
      startupWaitMs: setting(env, 'TAO_STARTUP_WAIT_MS'),
      minVersionCheck: setting(env, 'TAO_KAFKA_MIN_VERSION_CHECK'),
    },
    registry: {
      url: setting(env, 'SCHEMA_REGISTRY_URL'),
      username: setting(env, 'SCHEMA_REGISTRY_USERNAME') ?? null,
      password: setting(env, 'SCHEMA_REGISTRY_PASSWORD') ?? null,
    },
    namespace: setting(env, 'TAO_NAMESPACE'),
    bindHost: setting(env, 'TAO_BIND_HOST'),
    logLevel: setting(env, 'TAO_LOG_LEVEL'),
  };
}
