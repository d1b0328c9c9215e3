/**
 * HMAC-SHA256 request signatures, shared by the webhook ingress (verifying) and the outcome
 * callbacks (signing), so that one scheme is documented and implemented in one place.
 *
 * **Tao scheme** (`X-Tao-Signature: t=<unix seconds>,v1=<hex>`): `v1` is the lowercase hex
 * HMAC-SHA256, keyed with the shared secret, of the ASCII timestamp, a `.`, and the raw body bytes
 * (`<t>.<body>`). Because the timestamp is signed, a receiver rejects signatures older (or newer)
 * than its tolerance, which bounds replays. Several `v1=` entries may be sent (secret rotation);
 * one matching entry is enough.
 *
 * **GitHub scheme** (`X-Hub-Signature-256: sha256=<hex>`): HMAC-SHA256 of the raw body alone; no
 * timestamp is signed, so replay protection has to come from elsewhere (see ingress/webhooks.ts).
 *
 * Comparisons use `crypto.timingSafeEqual` on equal-length digests; secrets and digests are never
 * put in error messages.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Header carrying the Tao scheme. */
export const TAO_SIGNATURE_HEADER = 'x-tao-signature';

/** Why a signature was refused. */
export type SignatureFailure = 'missing' | 'malformed' | 'stale' | 'mismatch';

export type SignatureCheck = { ok: true; timestamp?: number; digest: string } | { ok: false; reason: SignatureFailure };

const HEX_DIGEST = /^[0-9a-f]{64}$/i;

function hmac(secret: string, ...parts: Array<string | Buffer>): Buffer {
  const h = createHmac('sha256', secret);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** True when `hex` is a SHA-256 hex digest equal to `expected`, compared in constant time. */
function digestMatches(expected: Buffer, hex: string): boolean {
  if (!HEX_DIGEST.test(hex)) return false;
  const given = Buffer.from(hex, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The `X-Tao-Signature` value for `body` signed at `timestampSeconds`. */
export function signTao(secret: string, body: string | Buffer, timestampSeconds: number): string {
  const t = Math.floor(timestampSeconds);
  return `t=${t},v1=${hmac(secret, `${t}.`, body).toString('hex')}`;
}

/**
 * Verifies an `X-Tao-Signature` header against the raw body.
 * @param toleranceSeconds accepted distance between the signed timestamp and `nowMs`, either way
 *   (clock skew in the future, delivery delay in the past).
 * @returns `ok` with the signed timestamp and the matching digest (usable as a replay key), or
 *   the reason: `missing` header, `malformed` header, `stale` timestamp, or `mismatch`.
 */
export function verifyTao(header: string | undefined, body: Buffer, secret: string, toleranceSeconds: number, nowMs: number = Date.now()): SignatureCheck {
  if (!header) return { ok: false, reason: 'missing' };
  let t: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return { ok: false, reason: 'malformed' };
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') t = /^\d{1,12}$/.test(value) ? Number(value) : Number.NaN;
    else if (key === 'v1') candidates.push(value);
  }
  if (t === undefined || !Number.isFinite(t) || candidates.length === 0) return { ok: false, reason: 'malformed' };
  // Checked before the MAC so a stale request costs no HMAC; the timestamp is not secret.
  if (Math.abs(nowMs / 1000 - t) > toleranceSeconds) return { ok: false, reason: 'stale' };
  const expected = hmac(secret, `${t}.`, body);
  const match = candidates.find((c) => digestMatches(expected, c));
  return match ? { ok: true, timestamp: t, digest: match.toLowerCase() } : { ok: false, reason: 'mismatch' };
}

/** Verifies GitHub's `X-Hub-Signature-256: sha256=<hex>` header against the raw body. */
export function verifyGithub(header: string | undefined, body: Buffer, secret: string): SignatureCheck {
  if (!header) return { ok: false, reason: 'missing' };
  if (!header.startsWith('sha256=')) return { ok: false, reason: 'malformed' };
  const hex = header.slice('sha256='.length).trim();
  if (!HEX_DIGEST.test(hex)) return { ok: false, reason: 'malformed' };
  return digestMatches(hmac(secret, body), hex) ? { ok: true, digest: hex.toLowerCase() } : { ok: false, reason: 'mismatch' };
}

/** The `X-Hub-Signature-256` value GitHub would send for `body` (for senders and tests). */
export function signGithub(secret: string, body: string | Buffer): string {
  return `sha256=${hmac(secret, body).toString('hex')}`;
}
