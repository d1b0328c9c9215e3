/**
 * Who may use the console. On a loopback bind, anyone on this machine (as `tao replay` and
 * `tao dlq`, which need no key either), but only through a loopback `Host` (a page of another site
 * cannot reach it by rebinding a name to 127.0.0.1). On any other bind, every request, pages and
 * static files included, needs an API key with the `console` scope: the ingress's keys and checks
 * (ingress/api-keys.ts, ingress/auth.ts), read from the same settings.
 *
 * A browser presents the key once on the login page; it is kept in an HttpOnly, SameSite=Strict
 * cookie and sent with every request. Scripts send `Authorization: Bearer <key>`.
 */
import type { IncomingMessage } from 'node:http';
import { userInfo } from 'node:os';
import { isLoopback, scopesOf, type ApiKeyEntry } from '../ingress/api-keys.ts';
import { ApiKeyGuard } from '../ingress/auth.ts';
import { ConfigError } from '../runtime/errors.ts';

/** The cookie a browser keeps the key in. */
export const KEY_COOKIE = 'tao_console_key';

/** What the console decided at start: open on loopback, or keys. */
export type ConsoleAuth = { mode: 'loopback'; user: string } | { mode: 'keys'; guard: ApiKeyGuard; keys: number };

/**
 * What one request is: allowed (with who is asking, as a decision records it, and whether they may
 * decide a run: approve, deny or reply), or refused with a status and a message for people.
 */
export type ConsoleAdmission =
  { ok: true; who: string; mayDecide: boolean } | { ok: false; status: 401 | 403 | 429; message: string; retryAfterSeconds?: number };

/**
 * The start-up rule: a loopback `host` runs without keys; any other needs at least one configured
 * key with the `console` scope.
 * @throws ConfigError, one line, when a non-loopback bind has no console key.
 */
export function decideConsoleAuth(host: string, keys: readonly ApiKeyEntry[] | null, now: () => number = Date.now): ConsoleAuth {
  if (isLoopback(host) || host === 'localhost') return { mode: 'loopback', user: `user:${userInfo().username}` };
  const console = (keys ?? []).filter((k) => scopesOf(k).includes('console') && !k.revoked);
  if (!console.length) {
    throw new ConfigError(
      `tao ui on ${host} (not a loopback address) needs an API key with the console scope: make one with \`tao ingress key --id <id> --sources '*' --scopes console\` and add its entry to TAO_INGRESS_KEYS_FILE or TAO_INGRESS_API_KEYS, or bind 127.0.0.1`,
    );
  }
  return { mode: 'keys', guard: new ApiKeyGuard(keys ?? [], now, 'console'), keys: console.length };
}

/** Checks one request against the start-up decision. Never throws. */
export function admit(auth: ConsoleAuth, req: IncomingMessage): ConsoleAdmission {
  if (auth.mode === 'loopback') {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    return isLoopback(host) || host === 'localhost'
      ? { ok: true, who: auth.user, mayDecide: true }
      : { ok: false, status: 403, message: `the console is bound to loopback and answers only to a loopback Host (got "${host}")` };
  }
  const cookie = cookies(req.headers.cookie)[KEY_COOKIE];
  const decision = auth.guard.admit(req.headers.authorization ?? (cookie ? `Bearer ${cookie}` : undefined));
  if (decision.ok) return { ok: true, who: `key:${decision.keyId}`, mayDecide: auth.guard.has(decision.keyId, 'approve') };
  if (decision.status === 429) return { ok: false, status: 429, message: 'too many requests for this key', retryAfterSeconds: decision.retryAfterSeconds };
  return { ok: false, status: 401, message: 'an API key with the console scope is needed' };
}

/**
 * True for a request a page of another site made the browser send (its `Origin` is not this
 * console's `Host`, or the browser says `Sec-Fetch-Site: cross-site`). The console refuses such
 * requests that act (POST): a page elsewhere must not fork or re-drive through an operator's
 * browser, even on loopback where no key is asked. Scripts send neither header and are not
 * cross-site.
 */
export function crossSite(req: IncomingMessage): boolean {
  // A browser's own word, where it gives one (a page with no referrer sends `Origin: null` even to its own site).
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true; // an Origin that is not a URL ("null" from a sandboxed page) is not this console
  }
}

/** Checks a key typed on the login page (without taking a token from its bucket twice: this is the one request). */
export function admitKey(auth: ConsoleAuth, key: string): boolean {
  return auth.mode === 'loopback' || auth.guard.admit(`Bearer ${key}`).ok;
}

function cookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = decodeURIComponent(part.slice(i + 1).trim());
  }
  return out;
}
