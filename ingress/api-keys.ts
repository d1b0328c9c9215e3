/**
 * API keys of `POST /v1/tasks`: their configuration (a keys file and/or an inline list), how a new
 * key is made, and the start-up rule for an ingress without keys. The request-time check (lookup,
 * scopes, rate limits) is ingress/auth.ts.
 *
 * A key is `tao_` + 32 random bytes in base64url (256 bits). Only its SHA-256 (hex) is configured.
 * A plain SHA-256 is enough here, and deliberately not a slow KDF (scrypt, argon2): a slow hash
 * protects low-entropy secrets (passwords) against guessing from a stolen hash, but guessing a
 * 256-bit random key is hopeless at any hash speed; a salted KDF would also forbid looking a key
 * up by its digest (every request would have to try every entry) and would cost milliseconds of
 * CPU per request, which an unauthenticated caller could spend at will.
 *
 * The entry format (file `{"keys": [...]}`, or the same object or the bare array inline):
 *
 * | field | | meaning |
 * |---|---|---|
 * | `id` | required | names the key in logs and metrics; unique |
 * | `sha256` | required | hex SHA-256 of the key (64 hex digits); unique |
 * | `sources` | required | the task `source` values the key may submit as; `"*"` for any |
 * | `rate_per_minute` | required | token-bucket refill, requests per minute |
 * | `burst` | optional | bucket size, default `rate_per_minute` |
 * | `scopes` | optional | what the key may do: `tasks` (`POST /v1/tasks`), `console` (the operator console, `tao ui`), `approve` (`POST /v1/runs/{id}/approve\|deny`, ingress/approvals.ts), `read` (`GET /v1/runs/...`, ingress/run-streams.ts); default `["tasks"]` |
 * | `revoked` | optional | `true`: refused like an unknown key |
 * | `note` | optional | free text for people (who holds it, when it was made) |
 */
import { createHash, randomBytes } from 'node:crypto';

import { Ajv, type ValidateFunction } from 'ajv';

import { ConfigError, errorMessage } from '../runtime/errors.ts';
import { isLoopback } from '../runtime/loopback.ts';

/** One configured key, as validated. */
export interface ApiKeyEntry {
  id: string;
  /** Hex SHA-256 of the key, lower case. */
  sha256: string;
  /** Sources the key may submit as; `*` means any. */
  sources: string[];
  rate_per_minute: number;
  burst?: number;
  /** What the key may do (default `["tasks"]`). */
  scopes?: ApiKeyScope[];
  revoked?: boolean;
  note?: string;
}

/** What a key may be used for: submitting tasks (the ingress), the operator console (`tao ui`), deciding runs awaiting approval, reading runs (their state and event streams). */
export const API_KEY_SCOPES = ['tasks', 'console', 'approve', 'read'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** The scopes of an entry (`tasks` when it names none). */
export function scopesOf(entry: ApiKeyEntry): ApiKeyScope[] {
  return entry.scopes ?? ['tasks'];
}

/** A key id, and each source a key is scoped to: the same rule as a task's `source` (ingress/server.ts). */
export const NAME = '^[a-z0-9][a-z0-9_.-]{0,63}$';

const entrySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'sha256', 'sources', 'rate_per_minute'],
  properties: {
    id: { type: 'string', pattern: NAME },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    sources: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', anyOf: [{ const: '*' }, { pattern: NAME }] } },
    rate_per_minute: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
    burst: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    scopes: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: API_KEY_SCOPES } },
    revoked: { type: 'boolean' },
    note: { type: 'string', maxLength: 500 },
  },
} as const;

let compiledEntry: ValidateFunction<ApiKeyEntry> | undefined;
/** Compiled on first use: every `tao` command imports this module (for `--help`), few parse keys. */
const entryValidator = () => (compiledEntry ??= new Ajv({ allErrors: false }).compile<ApiKeyEntry>(entrySchema));

/** Hex SHA-256 of a key, the form configured in `sha256`. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A new random key (`tao_` + 43 base64url characters: 256 bits). */
export function newApiKey(): string {
  return `tao_${randomBytes(32).toString('base64url')}`;
}

/**
 * Parses and validates a list of key entries: `{"keys": [...]}` or a bare array. `origin` names where
 * the text came from in errors (`keys file /etc/tao/keys.json`, `TAO_INGRESS_API_KEYS`).
 * @throws ConfigError, one line naming the origin and the entry (index and id) and the field; never
 * the value of a `sha256`.
 */
export function parseApiKeys(text: string, origin: string): ApiKeyEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${origin}: not JSON (${errorMessage(err)})`);
  }
  const list = Array.isArray(doc) ? doc : isObject(doc) && Object.keys(doc).length === 1 && Array.isArray(doc.keys) ? doc.keys : null;
  if (!list) throw new ConfigError(`${origin}: must be {"keys": [...]} (an array of key entries), nothing else`);
  const entries: ApiKeyEntry[] = [];
  list.forEach((entry: unknown, i) => {
    const name = `entry ${i}${isObject(entry) && typeof entry.id === 'string' ? ` ("${entry.id.slice(0, 64)}")` : ''}`;
    const validateEntry = entryValidator();
    if (!validateEntry(entry)) {
      const e = validateEntry.errors![0]!;
      const params = e.params as { missingProperty?: string; additionalProperty?: string };
      const field = [e.instancePath, params.missingProperty ?? params.additionalProperty].filter(Boolean).join('/').replace(/^\/?/, '/');
      const what = params.missingProperty
        ? 'is missing'
        : params.additionalProperty
          ? 'is not a known field'
          : e.instancePath === '/sha256'
            ? "must be the 64 lower-case hex digits of the key's SHA-256"
            : e.instancePath === '/sources'
              ? 'must be a non-empty list of distinct source names or "*"'
              : e.instancePath.startsWith('/sources/')
                ? 'must be a source name (lower case letters, digits, _ . -) or "*"'
                : e.instancePath.startsWith('/scopes')
                  ? `must be a non-empty list of distinct scopes: ${API_KEY_SCOPES.join(', ')}`
                  : (e.message ?? 'is invalid');
      throw new ConfigError(`${origin}: ${name}: ${field} ${what}`);
    }
    entries.push(entry);
  });
  return entries;
}

/**
 * Every entry of several origins, checked together: ids and digests unique across all of them.
 * @throws ConfigError naming the duplicated id, or the two ids sharing a digest.
 */
export function mergeApiKeys(lists: ReadonlyArray<{ origin: string; entries: ApiKeyEntry[] }>): ApiKeyEntry[] {
  const byId = new Map<string, string>();
  const byHash = new Map<string, string>();
  const all: ApiKeyEntry[] = [];
  for (const { origin, entries } of lists) {
    for (const entry of entries) {
      const idSeen = byId.get(entry.id);
      if (idSeen) throw new ConfigError(`${origin}: key id "${entry.id}" is used twice (also in ${idSeen})`);
      const hashSeen = byHash.get(entry.sha256);
      if (hashSeen) throw new ConfigError(`${origin}: keys "${hashSeen}" and "${entry.id}" have the same sha256 (one key, two entries)`);
      byId.set(entry.id, origin);
      byHash.set(entry.sha256, entry.id);
      all.push(entry);
    }
  }
  return all;
}

/** How `POST /v1/tasks` is guarded: by keys, or not at all (`reason` says why, for the start-up line). */
export type IngressAuth = { mode: 'keys'; keys: ApiKeyEntry[] } | { mode: 'open'; reason: string };

export { isLoopback } from '../runtime/loopback.ts';

/**
 * The start-up rule. With keys configured they are enforced (`TAO_INGRESS_AUTH=off` alongside them
 * is a contradiction and refused). Without keys: `off` runs open anywhere; the default (`auto`)
 * runs open only on a loopback bind; `on` never runs open.
 * @throws ConfigError, one line, when the ingress must not start.
 */
export function decideIngressAuth(keys: ApiKeyEntry[] | null, mode: 'auto' | 'on' | 'off', host: string): IngressAuth {
  if (keys) {
    if (mode === 'off')
      throw new ConfigError('TAO_INGRESS_AUTH=off contradicts the configured API keys (TAO_INGRESS_KEYS_FILE / TAO_INGRESS_API_KEYS): unset one of them');
    return { mode: 'keys', keys };
  }
  if (mode === 'off') return { mode: 'open', reason: 'TAO_INGRESS_AUTH=off' };
  if (mode === 'auto' && isLoopback(host)) return { mode: 'open', reason: `no API keys configured and the bind address ${host} is loopback` };
  const why = mode === 'on' ? 'TAO_INGRESS_AUTH=on' : `TAO_BIND_HOST=${host} is not a loopback address`;
  throw new ConfigError(
    `the ingress needs API keys (${why}): set TAO_INGRESS_KEYS_FILE or TAO_INGRESS_API_KEYS (make one with \`tao ingress key --id <id> --sources <list>\`), or TAO_INGRESS_AUTH=off to run it open on purpose`,
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
