/**
 * The simulator's HTTP plumbing (node:http, no framework): OpenAI's error body, JSON and text
 * responses, a size-capped body reader, the base URL of a bound address, and the constant-time
 * bearer-key check.
 */
import { timingSafeEqual } from 'node:crypto';
import type http from 'node:http';

/** OpenAI's error body. */
export function openAiError(message: string, type: string, param: string | null = null, code: string | null = null): unknown {
  return { error: { message, type, param, code } };
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  sendText(res, status, JSON.stringify(body), headers);
}

export function sendText(res: http.ServerResponse, status: number, text: string, headers: http.OutgoingHttpHeaders = {}): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Reads a body up to a byte limit; resolves `null` when it is larger. */
export function readBody(req: http.IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > limit ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function formatUrl(host: string, port: number): string {
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
}

export function bearerMatches(header: string | undefined, key: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  if (!m?.[1]) return false;
  const a = Buffer.from(m[1].trim());
  const b = Buffer.from(key);
  return a.length === b.length && timingSafeEqual(a, b);
}
