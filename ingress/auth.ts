/**
 * The request-time check of `POST /v1/tasks`: a bearer API key, looked up by its SHA-256, scoped
 * to sources, and rate limited per key by a token bucket. Configuration is ingress/api-keys.ts.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { scopesOf, type ApiKeyEntry, type ApiKeyScope } from './api-keys.ts';

/** Why a request was refused 401. Logged and counted, never told to the client. */
export type UnauthorizedReason = 'missing' | 'malformed' | 'unknown' | 'revoked';

/** What {@link ApiKeyGuard.admit} decided. */
export type Admission =
  | { ok: true; keyId: string }
  /** `keyId` only for a revoked key (a key nobody holds has no id). */
  | { ok: false; status: 401; reason: UnauthorizedReason; keyId: string | null }
  | { ok: false; status: 429; keyId: string; retryAfterSeconds: number };

/**
 * A token bucket: `capacity` tokens, refilled continuously at `perMinute` tokens a minute, on an
 * injected clock. Starts full.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly perMs: number;

  constructor(
    private readonly perMinute: number,
    private readonly capacity: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.last = now;
    this.perMs = perMinute / 60_000;
  }

  /** Takes one token: null when there was one, else the whole seconds (>= 1) until there is. */
  take(now: number): number | null {
    // A clock that steps back adds nothing (and takes nothing away).
    this.tokens = Math.min(this.capacity, this.tokens + Math.max(0, now - this.last) * this.perMs);
    this.last = Math.max(this.last, now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perMs / 1000));
  }
}

/** RFC 6750 `b64token`. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

interface KnownKey {
  entry: ApiKeyEntry;
  digest: Buffer;
  bucket: TokenBucket | null;
}

/**
 * The configured keys of the given scopes, ready for requests (a key with none of them is unknown
 * here: the ingress takes `tasks` and `approve` keys, the console `console` keys). A presented key
 * is hashed and looked up by its digest,
 * then the digests are compared with `timingSafeEqual` (fixed length, 32 bytes): no comparison
 * ever runs over the plaintext, and the time taken does not depend on how much of a configured
 * key a guess got right.
 */
export class ApiKeyGuard {
  private readonly byDigest = new Map<string, KnownKey>();
  private readonly byId = new Map<string, ApiKeyEntry>();

  constructor(
    keys: readonly ApiKeyEntry[],
    private readonly now: () => number,
    scopes: ApiKeyScope | readonly ApiKeyScope[] = 'tasks',
  ) {
    const wanted: readonly ApiKeyScope[] = typeof scopes === 'string' ? [scopes] : scopes;
    for (const entry of keys) {
      if (!scopesOf(entry).some((s) => wanted.includes(s))) continue;
      const bucket = entry.revoked ? null : new TokenBucket(entry.rate_per_minute, entry.burst ?? Math.max(1, Math.floor(entry.rate_per_minute)), now());
      this.byDigest.set(entry.sha256, { entry, digest: Buffer.from(entry.sha256, 'hex'), bucket });
      this.byId.set(entry.id, entry);
    }
  }

  /** Keys that are not revoked. */
  get active(): number {
    return [...this.byId.values()].filter((e) => !e.revoked).length;
  }

  /**
   * Checks an `Authorization` header value and, for a valid key, takes a token from its bucket.
   * Never throws.
   */
  admit(authorization: string | undefined): Admission {
    if (authorization === undefined || authorization === '') return { ok: false, status: 401, reason: 'missing', keyId: null };
    const token = BEARER.exec(authorization)?.[1];
    if (!token) return { ok: false, status: 401, reason: 'malformed', keyId: null };
    const digest = createHash('sha256').update(token, 'utf8').digest();
    const known = this.byDigest.get(digest.toString('hex'));
    if (!known || !timingSafeEqual(digest, known.digest)) return { ok: false, status: 401, reason: 'unknown', keyId: null };
    if (!known.bucket) return { ok: false, status: 401, reason: 'revoked', keyId: known.entry.id };
    const retryAfterSeconds = known.bucket.take(this.now());
    if (retryAfterSeconds !== null) return { ok: false, status: 429, keyId: known.entry.id, retryAfterSeconds };
    return { ok: true, keyId: known.entry.id };
  }

  /** Whether the key `keyId` may submit tasks (scope `tasks`) as `source`. */
  allows(keyId: string, source: string): boolean {
    const entry = this.byId.get(keyId);
    return !!entry && this.has(keyId, 'tasks') && (entry.sources.includes('*') || entry.sources.includes(source));
  }

  /** Whether the key `keyId` is active and has `scope` (a key without `scopes` has `tasks` only). */
  has(keyId: string, scope: ApiKeyScope): boolean {
    const entry = this.byId.get(keyId);
    return !!entry && !entry.revoked && scopesOf(entry).includes(scope);
  }
}
