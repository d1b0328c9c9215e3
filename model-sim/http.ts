/**
 * The simulator's own HTTP pieces: OpenAI's error body and the constant-time bearer-key check; with
 * the plumbing it shares with the demo tool server (runtime/stand-in-http.ts) re-exported.
 */
import { timingSafeEqual } from 'node:crypto';

export { readBody, sendJson, sendText } from '../runtime/stand-in-http.ts';

/** OpenAI's error body. */
export function openAiError(message: string, type: string, param: string | null = null, code: string | null = null): unknown {
  return { error: { message, type, param, code } };
}

export function bearerMatches(header: string | undefined, key: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  if (!m?.[1]) return false;
  const a = Buffer.from(m[1].trim());
  const b = Buffer.from(key);
  return a.length === b.length && timingSafeEqual(a, b);
}
