/**
 * Fault specs for the tool server: validation, and the registry that decides
 * (deterministically) which request gets which fault.
 *
 * @module
 */
import { ROUTE_IDS, type RouteId } from './routes.ts';

/** The kinds of fault the tool server can inject, each with what it answers. */
export const FAULT_MODES = {
  timeout: 'hold the request without answering for `delayMs` (default 30000), then answer 504 `{ "error": "timeout" }` if the client is still there',
  rate_limit: '429 `{ "error": "rate_limited" }` with `Retry-After: retryAfterSeconds` (default 1)',
  server_error: '503 `{ "error": "unavailable" }`',
  malformed: '200 `application/json` whose body is the normal body truncated to half its length',
  wrong_schema: '200 valid JSON missing required fields / with wrong types',
  slow_body: 'the normal response, headers sent at once, body dribbled out over `delayMs` (default 30000)',
  auth_failed: '401 `{ "error": "unauthorized" }` with `WWW-Authenticate`',
  html_error: '200 `text/html` error page',
  ok_error_body: '200 `{ "status": "error", "message": "token expired" }`',
  large_body:
    'not an error: the normal 2xx answer with an extra `history` array of deterministic, made-up events, so that the body is at least `bytes` characters (default 8192); a simulator of a chatty API (a long order history), for context-window tests',
} as const;

/** A fault kind: one key of {@link FAULT_MODES}. */
export type FaultMode = keyof typeof FAULT_MODES;

/** Default hold / dribble duration for `timeout` and `slow_body`. */
export const DEFAULT_DELAY_MS = 30_000;
/** Default `Retry-After` for `rate_limit`. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;
/** Default body size of `large_body`. */
export const DEFAULT_LARGE_BODY_BYTES = 8192;
/** Largest accepted `bytes`: past a Kafka record (1 MiB), for the tests of responses a wave's result cannot hold. */
export const MAX_LARGE_BODY_BYTES = 2_000_000;
/** Largest accepted `delayMs` (10 minutes). */
export const MAX_DELAY_MS = 600_000;

/** A fault to inject, as posted to `POST /__control/faults`. */
export interface FaultSpec {
  /** Route id the fault applies to, or `*` for every tool route. */
  route: RouteId | '*';
  mode: FaultMode;
  /** Apply to the next N matching requests only (positive integer); default unlimited. */
  times?: number;
  /**
   * Fraction of matching requests to fault, 0..1 (default 1). Deterministic:
   * the n-th matching request is faulted iff `floor(n·rate) > floor((n−1)·rate)`,
   * so exactly `floor(N·rate)` of the first N are faulted (rate 0.25 → the
   * 4th, 8th, 12th, …).
   */
  rate?: number;
  /** `Retry-After` seconds for `rate_limit` (non-negative integer, default 1). */
  retryAfterSeconds?: number;
  /** Milliseconds for `timeout` / `slow_body` (integer 0..600000, default 30000). */
  delayMs?: number;
  /** Body size in characters for `large_body` (integer 256..60000, default 8192). */
  bytes?: number;
  /** Only requests whose path (raw or percent-decoded) or, for a POST, body text contains this substring. */
  match?: string;
  /**
   * Fault calls, not requests: only requests with an `Idempotency-Key`, each key's first `perKey`
   * requests (positive integer). `rate` then picks the keys (the n-th new key by the rule above),
   * and `times` still counts requests. With `timeout` and a POST, a slow upstream: the call is
   * applied at its first request and every retry of it up to `perKey` is answered late.
   */
  perKey?: number;
}

/** A registered fault and its counters. */
export interface FaultState {
  id: string;
  spec: FaultSpec;
  /** Matching requests this fault has considered (while not exhausted). */
  seen: number;
  /** Requests this fault was applied to. */
  applied: number;
  /** `true` once `times` applications have been made. */
  exhausted: boolean;
}

/** Keys a `perKey` fault remembers (the oldest forgotten first). */
export const MAX_FAULT_KEYS = 100_000;

/** A fault spec was rejected; `field` names the offending field. */
export class FaultSpecError extends Error {
  /** The offending field (`body` when the spec is not an object). */
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.name = 'FaultSpecError';
    this.field = field;
  }
}

const KNOWN_FIELDS = new Set(['route', 'mode', 'times', 'rate', 'retryAfterSeconds', 'delayMs', 'bytes', 'match', 'perKey']);
const ROUTE_CHOICES: readonly string[] = [...ROUTE_IDS, '*'];
const MODE_CHOICES: readonly string[] = Object.keys(FAULT_MODES);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v);
}

/**
 * Validates an untrusted fault spec.
 *
 * @param input - the parsed JSON body (or an in-process object).
 * @returns a normalized copy holding only the known fields.
 * @throws {@link FaultSpecError} naming the first offending field.
 */
export function validateFaultSpec(input: unknown): FaultSpec {
  if (!isRecord(input)) throw new FaultSpecError('body', 'fault spec must be a JSON object');
  for (const key of Object.keys(input)) {
    if (!KNOWN_FIELDS.has(key)) throw new FaultSpecError(key, `unknown field "${key}"`);
  }
  const { route, mode, times, rate, retryAfterSeconds, delayMs, bytes, match, perKey } = input;
  if (typeof route !== 'string' || !ROUTE_CHOICES.includes(route)) {
    throw new FaultSpecError('route', `route must be one of ${ROUTE_CHOICES.join(', ')}`);
  }
  if (typeof mode !== 'string' || !MODE_CHOICES.includes(mode)) {
    throw new FaultSpecError('mode', `mode must be one of ${MODE_CHOICES.join(', ')}`);
  }
  const spec: FaultSpec = { route: route as FaultSpec['route'], mode: mode as FaultMode };
  if (times !== undefined) {
    if (!isInt(times) || times < 1) throw new FaultSpecError('times', 'times must be a positive integer');
    spec.times = times;
  }
  if (rate !== undefined) {
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
      throw new FaultSpecError('rate', 'rate must be a number between 0 and 1');
    }
    spec.rate = rate;
  }
  if (retryAfterSeconds !== undefined) {
    if (mode !== 'rate_limit') {
      throw new FaultSpecError('retryAfterSeconds', 'retryAfterSeconds applies only to mode rate_limit');
    }
    if (!isInt(retryAfterSeconds) || retryAfterSeconds < 0) {
      throw new FaultSpecError('retryAfterSeconds', 'retryAfterSeconds must be a non-negative integer');
    }
    spec.retryAfterSeconds = retryAfterSeconds;
  }
  if (delayMs !== undefined) {
    if (mode !== 'timeout' && mode !== 'slow_body') {
      throw new FaultSpecError('delayMs', 'delayMs applies only to modes timeout and slow_body');
    }
    if (!isInt(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) {
      throw new FaultSpecError('delayMs', `delayMs must be an integer between 0 and ${MAX_DELAY_MS}`);
    }
    spec.delayMs = delayMs;
  }
  if (bytes !== undefined) {
    if (mode !== 'large_body') throw new FaultSpecError('bytes', 'bytes applies only to mode large_body');
    if (!isInt(bytes) || bytes < 256 || bytes > MAX_LARGE_BODY_BYTES) {
      throw new FaultSpecError('bytes', `bytes must be an integer between 256 and ${MAX_LARGE_BODY_BYTES}`);
    }
    spec.bytes = bytes;
  }
  if (match !== undefined) {
    if (typeof match !== 'string' || match.length === 0 || match.length > 2048) {
      throw new FaultSpecError('match', 'match must be a non-empty string of at most 2048 characters');
    }
    spec.match = match;
  }
  if (perKey !== undefined) {
    if (!isInt(perKey) || perKey < 1) throw new FaultSpecError('perKey', 'perKey must be a positive integer');
    spec.perKey = perKey;
  }
  return spec;
}

/** Tolerance for float error in `n·rate` (e.g. 0.29·100 = 28.999999999999996). */
const RATE_EPSILON = 1e-9;

/**
 * The set of active faults. Faults are considered in registration order; the
 * first one that fires for a request wins, and later faults do not see (or
 * count) that request.
 */
export class FaultRegistry {
  #faults: FaultState[] = [];
  #nextId = 1;
  /** Per `perKey` fault: each key seen, whether it is faulted and how many of its requests were. */
  #keys = new Map<string, Map<string, { faulted: boolean; requests: number }>>();

  /**
   * Validates and registers a fault.
   *
   * @returns the new fault's id.
   * @throws {@link FaultSpecError} when the spec is invalid.
   */
  add(input: unknown): string {
    const spec = validateFaultSpec(input);
    const id = `fault-${this.#nextId++}`;
    this.#faults.push({ id, spec, seen: 0, applied: 0, exhausted: false });
    return id;
  }

  /**
   * Removes every fault.
   *
   * @returns how many were removed.
   */
  clear(): number {
    const n = this.#faults.length;
    this.#faults = [];
    this.#keys.clear();
    return n;
  }

  /** A snapshot of every registered fault (including exhausted ones). */
  list(): FaultState[] {
    return this.#faults.map((f) => ({ ...f, spec: { ...f.spec } }));
  }

  /**
   * Decides which fault (if any) applies to a request and updates counters.
   *
   * @param route - the request's route id.
   * @param paths - the texts `match` is tested against (raw and decoded path, and a POST's body).
   * @param key - the request's `Idempotency-Key` (for `perKey` faults), or null.
   * @returns a snapshot of the fault that fires, or `undefined`.
   */
  pick(route: RouteId, paths: readonly string[], key: string | null = null): FaultState | undefined {
    for (const f of this.#faults) {
      if (f.exhausted) continue;
      const { spec } = f;
      if (spec.route !== '*' && spec.route !== route) continue;
      if (spec.match !== undefined && !paths.some((p) => p.includes(spec.match as string))) continue;
      if (spec.perKey !== undefined) {
        if (!this.#firesForKey(f, key)) continue;
        f.applied += 1;
        if (spec.times !== undefined && f.applied >= spec.times) f.exhausted = true;
        return { ...f, spec: { ...spec } };
      }
      f.seen += 1;
      const rate = spec.rate ?? 1;
      const fires = Math.floor(f.seen * rate + RATE_EPSILON) > Math.floor((f.seen - 1) * rate + RATE_EPSILON);
      if (!fires) continue;
      f.applied += 1;
      if (spec.times !== undefined && f.applied >= spec.times) f.exhausted = true;
      return { ...f, spec: { ...spec } };
    }
    return undefined;
  }

  /** Whether a `perKey` fault fires for a request under `key`: a key the rate picked, within its first `perKey` requests. */
  #firesForKey(f: FaultState, key: string | null): boolean {
    if (key === null) return false;
    let keys = this.#keys.get(f.id);
    if (!keys) this.#keys.set(f.id, (keys = new Map()));
    let state = keys.get(key);
    if (!state) {
      f.seen += 1;
      const rate = f.spec.rate ?? 1;
      state = { faulted: Math.floor(f.seen * rate + RATE_EPSILON) > Math.floor((f.seen - 1) * rate + RATE_EPSILON), requests: 0 };
      keys.set(key, state);
      if (keys.size > MAX_FAULT_KEYS) keys.delete(keys.keys().next().value!);
    }
    if (!state.faulted || state.requests >= f.spec.perKey!) return false;
    state.requests += 1;
    return true;
  }
}
