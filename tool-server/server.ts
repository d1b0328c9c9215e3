/**
 * A fake third-party tool API server (node:http, no framework) for the demo
 * and tests: deterministic answers, on-demand fault injection and request
 * accounting.
 *
 * Tool routes (JSON; the route id in parentheses names the route in fault
 * specs and stats, and the catalog tool that calls it):
 * - `GET /crm/customers/by-email/{email}` (`crm.find_customer`)
 * - `GET /crm/customers/{customer_id}/tier` (`crm.tier`)
 * - `GET /orders/customers/{customer_id}/latest` (`orders.latest`)
 * - `GET /shipping/orders/{order_id}/tracking` (`shipping.track`)
 * - `GET /orders/{order_id}` (`orders.get`)
 * - `POST /refunds` (`refunds.create`)
 * - `GET /billing/invoices/{invoice_id}` (`billing.get_invoice`)
 * - `POST /billing/invoices/{invoice_id}/copies` (`billing.send_invoice_copy`)
 * - `POST /identity/password-resets` (`identity.password_reset`)
 * - `GET /status/services/{service}` (`status.service`)
 * - `GET /incidents/services/{service}/latest` (`incidents.latest`)
 * - `GET /expenses/claims/{claim_id}` (`expenses.get_claim`)
 *
 * `POST` routes take a JSON body (`Content-Type: application/json`) and
 * honour `Idempotency-Key`: repeating a key with the same request replays the
 * stored answer without doing anything again (see {@link processPost}).
 * Faults apply to them too; `timeout`, `malformed`, `slow_body` and `large_body` let the
 * request take effect before the answer is withheld or garbled (as when a
 * response is lost on the way back), so a retry with the same key gets the
 * original answer; the other modes reject the request before it takes effect.
 *
 * Uncounted routes: `GET /health`, and the control API under `/__control/`:
 * `POST|GET|DELETE /__control/faults`, `GET|DELETE /__control/stats`.
 *
 * @module
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { Socket } from 'node:net';
import { URL } from 'node:url';

import {
  DEFAULT_DELAY_MS,
  DEFAULT_LARGE_BODY_BYTES,
  DEFAULT_RETRY_AFTER_SECONDS,
  FaultRegistry,
  FaultSpecError,
  type FaultMode,
  type FaultSpec,
  type FaultState,
} from './faults.ts';
import { matchRoute, normalResponse, POST_ROUTE_IDS, processPost, ROUTE_IDS, ToolLedger, wrongSchemaBody, type JsonResponse, type PostOutcome, type RouteId } from './routes.ts';

export type { FaultMode, FaultSpec, FaultState } from './faults.ts';
export { FaultSpecError } from './faults.ts';
export type { RouteId } from './routes.ts';
export { POST_ROUTE_IDS, ROUTE_IDS, ROUTE_METHODS } from './routes.ts';

/** Options of {@link startToolServer}. */
export interface ToolServerOptions {
  /** TCP port; 0 picks an ephemeral port. Default 7070. */
  port: number;
  /** Interface to bind. Default `127.0.0.1`. */
  host: string;
  /** Idle keep-alive sockets are closed after this many ms (`server.keepAliveTimeout`). Default 5000. */
  keepAliveTimeoutMs: number;
}

/** Route label of a counted request that matched no tool route. */
export const UNMATCHED_ROUTE = 'unmatched';

/** One counted tool request. */
export interface RecordedRequest {
  /** Tool route id, or `unmatched` for a path that is no tool route. */
  route: RouteId | typeof UNMATCHED_ROUTE;
  method: string;
  /** The request target as received (path and query, percent-encoded). */
  path: string;
  /** Selected request headers; `null` when absent. */
  headers: {
    'idempotency-key': string | null;
    'x-request-id': string | null;
    traceparent: string | null;
  };
  /** Arrival time, ms since the Unix epoch. */
  at: number;
  /** The fault injected into this request, if any. */
  fault: FaultMode | null;
  /** Id of that fault, if any. */
  faultId: string | null;
  /** A POST answered from the response stored under its `Idempotency-Key` (nothing was done again). */
  idempotentReplay: boolean;
}

/** Request accounting, as returned by `GET /__control/stats`. */
export interface Stats {
  /** Tool requests received (excludes `/health` and `/__control/*`). */
  total: number;
  /** Per-route counts; every tool route id is present (0 when unused), plus `unmatched` once seen. */
  byRoute: Record<string, number>;
  /** The most recent {@link MAX_RECORDED_REQUESTS} tool requests, oldest first. */
  requests: RecordedRequest[];
  /** TCP connections accepted (all routes, including control and health). */
  connections: number;
  /** TCP connections currently open. */
  openConnections: number;
  /** Side effects performed by the POST routes (refunds created, copies sent, resets issued), per POST route id. */
  effects: Record<string, number>;
  /** `Idempotency-Key` handling of the POST routes. */
  idempotency: {
    /** Responses currently stored under a key (server state: not cleared by a stats reset). */
    storedKeys: number;
    /** Requests answered from a stored response, per POST route id. */
    replays: Record<string, number>;
    /** Requests that reused a key for a different request (answered 422). */
    conflicts: number;
  };
}

/** How many request records stats keep. */
export const MAX_RECORDED_REQUESTS = 10_000;

/** A running tool server. The in-process methods mirror the control API. */
export interface ToolServer {
  /** Base URL, e.g. `http://127.0.0.1:7070` (no trailing slash). */
  url: string;
  /** The bound port. */
  port: number;
  /** Stops listening, destroys every open socket (held requests included) and clears timers. Idempotent. */
  close(): Promise<void>;
  /** A snapshot of the request accounting. */
  stats(): Stats;
  /**
   * Registers a fault.
   *
   * @returns the fault id.
   * @throws {@link FaultSpecError} when the spec is invalid.
   */
  setFault(f: FaultSpec): string;
  /** Removes every fault. */
  clearFaults(): void;
  /** A snapshot of the registered faults and their counters. */
  faults(): FaultState[];
  /** Resets request counts, records and the connection counter. */
  resetStats(): void;
  /**
   * Emits `request` with the {@link RecordedRequest} as each tool request is
   * counted (after its fault, if any, was chosen, before the response is
   * started), so tests can await arrival instead of polling. Listeners run
   * synchronously inside request handling; one that throws turns the answer
   * into a 500.
   */
  events: EventEmitter<ToolServerEvents>;
}

/** Events of {@link ToolServer.events}. */
export interface ToolServerEvents {
  request: [RecordedRequest];
}

const DEFAULTS: ToolServerOptions = { port: 7070, host: '127.0.0.1', keepAliveTimeoutMs: 5000 };
const MAX_CONTROL_BODY_BYTES = 64 * 1024;
/** Largest accepted body of a POST tool request; a larger one is answered 413. */
export const MAX_TOOL_BODY_BYTES = 16 * 1024;
/** Fault modes under which a POST still takes effect (the answer is lost or garbled on the way back). */
const EFFECTIVE_FAULT_MODES: ReadonlySet<FaultMode> = new Set<FaultMode>(['timeout', 'malformed', 'slow_body', 'large_body']);
/** Chunks a `slow_body` response is split into (at most). */
const SLOW_BODY_CHUNKS = 10;

const HTML_ERROR_PAGE =
  '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n' +
  '<body><h1>502 Bad Gateway</h1><p>The upstream service is temporarily unavailable.</p>' +
  '<hr><address>nginx</address></body></html>\n';

function validateOptions(o: ToolServerOptions): void {
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) {
    throw new RangeError(`port must be an integer between 0 and 65535, got ${String(o.port)}`);
  }
  if (typeof o.host !== 'string' || o.host.length === 0) {
    throw new RangeError('host must be a non-empty string');
  }
  if (!Number.isInteger(o.keepAliveTimeoutMs) || o.keepAliveTimeoutMs < 1) {
    throw new RangeError(`keepAliveTimeoutMs must be a positive integer, got ${String(o.keepAliveTimeoutMs)}`);
  }
}

function headerValue(req: http.IncomingMessage, name: string): string | null {
  const v = req.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(', ') : v;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

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

function sendText(res: http.ServerResponse, status: number, contentType: string, text: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Reads a request body up to a byte limit; resolves `null` when it is too large. */
function readBody(req: http.IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function formatUrl(host: string, port: number): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

/**
 * Starts the tool server.
 *
 * @param opts - overrides of {@link ToolServerOptions} (default port 7070, host 127.0.0.1, keep-alive 5000 ms).
 * @returns the running server once it is listening.
 * @throws when the options are invalid or the port cannot be bound.
 */
export async function startToolServer(opts: Partial<ToolServerOptions> = {}): Promise<ToolServer> {
  const options: ToolServerOptions = { ...DEFAULTS, ...stripUndefined(opts) };
  validateOptions(options);

  const registry = new FaultRegistry();
  const events = new EventEmitter<ToolServerEvents>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let total = 0;
  let byRoute: Record<string, number> = {};
  let records: RecordedRequest[] = [];
  let connections = 0;
  let effects: Record<string, number> = {};
  let replays: Record<string, number> = {};
  let conflicts = 0;
  const ledger = new ToolLedger();

  const resetStats = (): void => {
    total = 0;
    byRoute = Object.fromEntries(ROUTE_IDS.map((r) => [r, 0]));
    records = [];
    connections = 0;
    effects = Object.fromEntries(POST_ROUTE_IDS.map((r) => [r, 0]));
    replays = Object.fromEntries(POST_ROUTE_IDS.map((r) => [r, 0]));
    conflicts = 0;
  };
  resetStats();

  /** Pending timers per response, cleared together when the response closes. */
  const timersByResponse = new WeakMap<http.ServerResponse, Set<NodeJS.Timeout>>();

  /** setTimeout that is cleared when the response closes or the server stops. */
  const schedule = (res: http.ServerResponse, ms: number, fn: () => void): void => {
    let own = timersByResponse.get(res);
    if (own === undefined) {
      const set = new Set<NodeJS.Timeout>();
      timersByResponse.set(res, set);
      res.once('close', () => {
        for (const t of set) {
          clearTimeout(t);
          timers.delete(t);
        }
        set.clear();
      });
      own = set;
    }
    const mine = own;
    const t = setTimeout(() => {
      timers.delete(t);
      mine.delete(t);
      fn();
    }, ms);
    timers.add(t);
    mine.add(t);
  };

  const record = (req: http.IncomingMessage, route: RecordedRequest['route']): RecordedRequest => {
    const rec: RecordedRequest = {
      route,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: {
        'idempotency-key': headerValue(req, 'idempotency-key'),
        'x-request-id': headerValue(req, 'x-request-id'),
        traceparent: headerValue(req, 'traceparent'),
      },
      at: Date.now(),
      fault: null,
      faultId: null,
      idempotentReplay: false,
    };
    total += 1;
    byRoute[route] = (byRoute[route] ?? 0) + 1;
    records.push(rec);
    if (records.length > MAX_RECORDED_REQUESTS) records.splice(0, records.length - MAX_RECORDED_REQUESTS);
    return rec;
  };

  const stats = (): Stats => ({
    total,
    byRoute: { ...byRoute },
    requests: records.map((r) => ({ ...r, headers: { ...r.headers } })),
    connections,
    openConnections: sockets.size,
    effects: { ...effects },
    idempotency: { storedKeys: ledger.storedKeys, replays: { ...replays }, conflicts },
  });

  /**
   * Answers with a fault. `normal` is the answer the route would have given
   * (used by `malformed` and `slow_body`), `wrong` a body breaking its schema.
   */
  const applyFault = (res: http.ServerResponse, fault: FaultState, normal: () => JsonResponse, wrong: () => unknown): void => {
    const { spec } = fault;
    switch (spec.mode) {
      case 'timeout':
        // Hold the request; answer only if the client is still waiting after delayMs.
        schedule(res, spec.delayMs ?? DEFAULT_DELAY_MS, () => sendJson(res, 504, { error: 'timeout' }));
        return;
      case 'rate_limit':
        sendJson(res, 429, { error: 'rate_limited' }, {
          'retry-after': String(spec.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS),
        });
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
        slowBody(res, normal(), spec.delayMs ?? DEFAULT_DELAY_MS);
        return;
      case 'auth_failed':
        sendJson(res, 401, { error: 'unauthorized' }, {
          'www-authenticate': 'Bearer error="invalid_token", error_description="token expired"',
        });
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
  };

  /** Sends headers at once, then the body in chunks spread evenly over delayMs (last chunk at delayMs). */
  const slowBody = (res: http.ServerResponse, r: JsonResponse, delayMs: number): void => {
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
  };

  const handleTool = async (req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> => {
    const m = matchRoute(pathname);
    const method = req.method ?? 'GET';
    const isPost = m !== null && m.method === 'POST' && method === 'POST';
    // POST bodies are read whole before the request is counted; anything else is drained.
    let text: string | null = '';
    if (isPost) text = await readBody(req, MAX_TOOL_BODY_BYTES);
    else req.resume();
    const rec = record(req, m?.route ?? UNMATCHED_ROUTE);
    // `match` sees the raw and decoded path and, for a POST, the body.
    const targets = [pathname, safeDecode(pathname), ...(isPost && text !== null ? [text] : [])];
    const fault = m !== null && method === m.method ? registry.pick(m.route, targets) : undefined;
    if (fault !== undefined) {
      rec.fault = fault.spec.mode;
      rec.faultId = fault.id;
    }
    // A POST takes effect unless a fault rejects it first.
    let post: PostOutcome | undefined;
    if (isPost && m !== null && (fault === undefined || EFFECTIVE_FAULT_MODES.has(fault.spec.mode))) {
      post = processPost(m, { body: text, contentType: headerValue(req, 'content-type'), idempotencyKey: headerValue(req, 'idempotency-key') }, ledger);
      if (post.effect) effects[m.route] = (effects[m.route] ?? 0) + 1;
      if (post.replayed) {
        replays[m.route] = (replays[m.route] ?? 0) + 1;
        rec.idempotentReplay = true;
      }
      if (post.conflict) conflicts += 1;
    }
    events.emit('request', { ...rec, headers: { ...rec.headers } });
    if (m === null) {
      sendJson(res, 404, { error: 'not_found' });
    } else if (method !== m.method) {
      sendJson(res, 405, { error: 'method_not_allowed' }, { allow: m.method });
    } else if (m.method === 'GET') {
      if (fault !== undefined) applyFault(res, fault, () => normalResponse(m), () => wrongSchemaBody(m));
      else {
        const r = normalResponse(m);
        sendJson(res, r.status, r.body);
      }
    } else {
      const answer = post?.response;
      if (fault !== undefined) {
        applyFault(res, fault, () => answer ?? { status: 500, body: { error: 'internal' } }, () => wrongSchemaBody(m, lenientObject(text)));
      } else if (answer !== undefined) {
        sendJson(res, answer.status, answer.body, post?.replayed ? { 'idempotent-replayed': 'true' } : {});
      }
    }
  };

  const handleControl = async (req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> => {
    const method = req.method ?? 'GET';
    if (pathname === '/__control/faults') {
      if (method === 'POST') {
        const text = await readBody(req, MAX_CONTROL_BODY_BYTES);
        if (text === null) {
          sendJson(res, 413, { error: 'body_too_large' });
          return;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          sendJson(res, 400, { error: 'invalid_json', message: 'request body is not valid JSON' });
          return;
        }
        try {
          sendJson(res, 201, { id: registry.add(parsed) });
        } catch (err) {
          if (!(err instanceof FaultSpecError)) throw err;
          sendJson(res, 400, { error: 'invalid_fault_spec', field: err.field, message: err.message });
        }
        return;
      }
      req.resume();
      if (method === 'DELETE') {
        sendJson(res, 200, { cleared: registry.clear() });
        return;
      }
      if (method === 'GET') {
        sendJson(res, 200, { faults: registry.list() });
        return;
      }
      sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET, POST, DELETE' });
      return;
    }
    req.resume();
    if (pathname === '/__control/stats') {
      if (method === 'GET') {
        sendJson(res, 200, stats());
        return;
      }
      if (method === 'DELETE') {
        resetStats();
        sendJson(res, 200, { ok: true });
        return;
      }
      sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET, DELETE' });
      return;
    }
    sendJson(res, 404, { error: 'not_found' });
  };

  const server = http.createServer((req, res) => {
    let pathname: string;
    try {
      pathname = new URL(req.url ?? '/', 'http://tool-server.invalid').pathname;
    } catch {
      req.resume();
      sendJson(res, 400, { error: 'bad_request' });
      return;
    }
    const fail = (err: unknown): void => {
      if (!res.headersSent) sendJson(res, 500, { error: 'internal', message: String(err) });
      else res.destroy();
    };
    try {
      if (pathname === '/health') {
        req.resume();
        if (req.method === 'GET') sendJson(res, 200, { ok: true });
        else sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET' });
      } else if (pathname === '/__control' || pathname.startsWith('/__control/')) {
        handleControl(req, res, pathname).catch(fail);
      } else {
        handleTool(req, res, pathname).catch(fail);
      }
    } catch (err) {
      fail(err);
    }
  });
  server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('tool server: unexpected listen address');
  const port = address.port;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
    });
    return closing;
  };

  return {
    url: formatUrl(options.host, port),
    port,
    close,
    stats,
    setFault: (f: FaultSpec): string => registry.add(f),
    clearFaults: (): void => {
      registry.clear();
    },
    faults: (): FaultState[] => registry.list(),
    resetStats,
    events,
  };
}

/** The body parsed as a JSON object, or `null`. */
function lenientObject(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
