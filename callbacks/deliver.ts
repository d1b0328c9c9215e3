import { TaoError, TransientError, errorMessage } from '../runtime/errors.ts';
import { signTao, TAO_SIGNATURE_HEADER } from '../runtime/signature.ts';

/**
 * Parses an allow-list entry list (`TAO_CALLBACK_ALLOWED_HOSTS`): each entry is a host name or
 * IP (any port) or `host:port` (that port only), compared case-insensitively with the URL's host.
 */
export function parseAllowedHosts(list: string | readonly string[]): string[] {
  const entries = typeof list === 'string' ? list.split(',') : list;
  return entries.map((e) => e.trim().toLowerCase()).filter(Boolean);
}

/**
 * The URL when it is http(s) and its host is allow-listed, else why not. Redirects are never
 * followed (see {@link postCallback}), so the allow-listed host is the only one ever called.
 */
export function checkCallbackUrl(
  raw: string,
  allowedHosts: readonly string[],
): { ok: true; url: URL } | { ok: false; reason: 'invalid_url' | 'host_not_allowed'; host: string | null } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'invalid_url', host: null };
  }
  // Credentials in the URL are refused by fetch anyway, and would end up in logs.
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password)
    return { ok: false, reason: 'invalid_url', host: url.host || null };
  const host = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const allowed = allowedHosts.some((entry) => entry === host || entry === `${host}:${port}`);
  return allowed ? { ok: true, url } : { ok: false, reason: 'host_not_allowed', host: url.host };
}

export interface PostOptions {
  secret: string;
  idempotencyKey: string;
  timeoutMs: number;
  /** Aborts the request when the dispatcher stops. */
  signal: AbortSignal;
  now?: () => number;
}

/** Longest `Retry-After` honoured, so one receiver can't park a partition for long. */
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * POSTs `body` (JSON) to `url`, signed with `X-Tao-Signature: t=<unix s>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>">` (a fresh timestamp per attempt, so late retries still pass the receiver's window)
 * and `Idempotency-Key` for the receiver's de-duplication. Redirects are not followed.
 *
 * @throws TransientError (retriable) on network errors, timeouts, 408, 425, 429 (with the asked
 *   `Retry-After` in `details.retryAfterMs`) and 5xx; a non-retriable `CONTRACT_VIOLATION`
 *   TaoError when the receiver refuses the callback (other 3xx/4xx).
 */
export async function postCallback(url: URL, body: string, options: PostOptions): Promise<{ status: number }> {
  const timestamp = Math.floor((options.now ?? Date.now)() / 1000);
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'tao-callbacks/1',
        'idempotency-key': options.idempotencyKey,
        [TAO_SIGNATURE_HEADER]: signTao(options.secret, body, timestamp),
      },
      signal: AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]),
    });
  } catch (err) {
    throw new TransientError(`callback to ${url.host} failed: ${errorMessage(err)}`, { cause: err, details: { host: url.host } });
  }
  // The answer's body is not used; reading it frees the connection for reuse.
  await response.arrayBuffer().catch(() => undefined);
  const status = response.status;
  if (status >= 200 && status < 300) return { status };
  const details: Record<string, string | number | boolean> = { host: url.host, status };
  if (status === 408 || status === 425 || status === 429 || status >= 500) {
    const retryAfter = Number(response.headers.get('retry-after'));
    if (Number.isFinite(retryAfter) && retryAfter > 0) details.retryAfterMs = Math.min(retryAfter * 1000, MAX_RETRY_AFTER_MS);
    throw new TransientError(`callback to ${url.host} answered ${status}`, { details });
  }
  throw new TaoError('CONTRACT_VIOLATION', `callback to ${url.host} was refused with ${status}`, { retriable: false, details });
}
