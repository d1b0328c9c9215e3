/**
 * The tool server's own HTTP pieces: header values and lenient percent-decoding; with the plumbing
 * it shares with the model simulator (runtime/stand-in-http.ts) re-exported.
 */
import type http from 'node:http';

export { readBody, sendJson, sendText } from '../runtime/stand-in-http.ts';

export function headerValue(req: http.IncomingMessage, name: string): string | null {
  const v = req.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(', ') : v;
}

export function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
