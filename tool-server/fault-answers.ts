/**
 * How a chosen fault answers a tool request: held then 504 (`timeout`), 429, 503, a body cut in half,
 * a body breaking the route's schema, a body sent slowly, 401, an HTML error page, a 200 saying
 * `error`, or a body padded with history (`large_body`).
 */
import type http from 'node:http';
import { DEFAULT_DELAY_MS, DEFAULT_LARGE_BODY_BYTES, DEFAULT_RETRY_AFTER_SECONDS, type FaultState } from './faults.ts';
import { sendJson, sendText } from './http.ts';
import type { JsonResponse } from './routes.ts';

/** setTimeout that is cleared when the response closes or the server stops. */
export type Schedule = (res: http.ServerResponse, ms: number, fn: () => void) => void;

/** Chunks a `slow_body` response is split into (at most). */
const SLOW_BODY_CHUNKS = 10;

const HTML_ERROR_PAGE =
  '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n' +
  '<body><h1>502 Bad Gateway</h1><p>The upstream service is temporarily unavailable.</p>' +
  '<hr><address>nginx</address></body></html>\n';

/**
 * `large_body`: a 2xx object answer gains a `history` array of made-up, deterministic events until
 * its JSON is at least `bytes` characters; anything else is sent as it is.
 */
function withHistory(r: JsonResponse, bytes: number): unknown {
  if (r.status < 200 || r.status > 299 || typeof r.body !== 'object' || r.body === null || Array.isArray(r.body)) return r.body;
  const history: Array<{ at: string; event: string }> = [];
  const body = { ...(r.body as Record<string, unknown>), history };
  let size = JSON.stringify(body).length;
  for (let i = 0; size < bytes; i++) {
    const entry = { at: new Date(Date.UTC(2025, 0, 1) + i * 3_600_000).toISOString(), event: `note ${i + 1}: record viewed by the back office, no change` };
    history.push(entry);
    size += JSON.stringify(entry).length + 1;
  }
  return body;
}

/**
 * Answers with a fault. `normal` is the answer the route would have given
 * (used by `malformed` and `slow_body`), `wrong` a body breaking its schema.
 */
export function applyFault(res: http.ServerResponse, fault: FaultState, normal: () => JsonResponse, wrong: () => unknown, schedule: Schedule): void {
  const { spec } = fault;
  switch (spec.mode) {
    case 'timeout':
      // Hold the request; answer only if the client is still waiting after delayMs.
      schedule(res, spec.delayMs ?? DEFAULT_DELAY_MS, () => sendJson(res, 504, { error: 'timeout' }));
      return;
    case 'rate_limit':
      sendJson(
        res,
        429,
        { error: 'rate_limited' },
        {
          'retry-after': String(spec.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS),
        },
      );
      return;
    case 'server_error':
      sendJson(res, 503, { error: 'unavailable' });
      return;
    case 'malformed': {
      const full = JSON.stringify(normal().body);
      sendText(res, 200, 'application/json', full.slice(0, Math.max(1, Math.floor(full.length / 2))));
      return;
    }
    case 'wrong_schema':
      sendJson(res, 200, wrong());
      return;
    case 'slow_body':
      slowBody(res, normal(), spec.delayMs ?? DEFAULT_DELAY_MS, schedule);
      return;
    case 'auth_failed':
      sendJson(
        res,
        401,
        { error: 'unauthorized' },
        {
          'www-authenticate': 'Bearer error="invalid_token", error_description="token expired"',
        },
      );
      return;
    case 'html_error':
      sendText(res, 200, 'text/html; charset=utf-8', HTML_ERROR_PAGE);
      return;
    case 'ok_error_body':
      sendJson(res, 200, { status: 'error', message: 'token expired' });
      return;
    case 'large_body': {
      const r = normal();
      sendJson(res, r.status, withHistory(r, spec.bytes ?? DEFAULT_LARGE_BODY_BYTES));
      return;
    }
  }
}

/** Sends headers at once, then the body in chunks spread evenly over delayMs (last chunk at delayMs). */
function slowBody(res: http.ServerResponse, r: JsonResponse, delayMs: number, schedule: Schedule): void {
  const body = Buffer.from(JSON.stringify(r.body), 'utf8');
  res.writeHead(r.status, { 'content-type': 'application/json', 'content-length': body.length });
  res.flushHeaders();
  const n = Math.max(1, Math.min(SLOW_BODY_CHUNKS, body.length));
  const size = Math.ceil(body.length / n);
  const step = (i: number): void => {
    if (res.destroyed) return;
    const chunk = body.subarray(i * size, (i + 1) * size);
    if (i === n - 1) res.end(chunk);
    else {
      res.write(chunk);
      schedule(res, delayMs / n, () => step(i + 1));
    }
  };
  schedule(res, delayMs / n, () => step(0));
}
