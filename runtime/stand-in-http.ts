/**
 * HTTP plumbing (node:http, no framework) of the servers that stand in for third-party services
 * (model-sim/, the model simulator; tool-server/, the demo tool server): JSON and text answers, a
 * size-capped body reader, and their shared control API under
 * `/__control/` (never authenticated, never counted): `POST|GET|DELETE /__control/faults` sets,
 * lists and clears faults; `GET|DELETE /__control/stats` reads and resets the request stats.
 */
import type http from 'node:http';

/** Answers `text` as `contentType`; a response already sent or destroyed (a client gone) is left alone. */
export function sendText(res: http.ServerResponse, status: number, contentType: string, text: string, headers: http.OutgoingHttpHeaders = {}): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { ...headers, 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  sendText(res, status, 'application/json', JSON.stringify(body), headers);
}

/** Reads a request body up to a byte limit; resolves `null` when it is larger. */
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

/** What a stand-in server answers, in its own error shape, when a request cannot be routed. */
export interface RoutingErrors {
  /** The body of the 400 for a request target that does not parse. */
  badTarget: unknown;
  /** The body of the 500 for what a route threw or rejected with. */
  internal(err: unknown): unknown;
}

/** A route of a stand-in server: `fail` answers 500 (or drops the connection once an answer started). */
export type StandInRoute = (req: http.IncomingMessage, res: http.ServerResponse, pathname: string, fail: (err: unknown) => void) => void;

/** The request listener of a stand-in server: parses the request's path and hands it to `route`, answering what cannot be routed. */
export function routeRequests(route: StandInRoute, errors: RoutingErrors): http.RequestListener {
  return (req, res) => {
    let pathname: string;
    try {
      pathname = new URL(req.url ?? '/', 'http://stand-in.invalid').pathname;
    } catch {
      req.resume();
      sendJson(res, 400, errors.badTarget);
      return;
    }
    const fail = (err: unknown): void => {
      if (!res.headersSent) sendJson(res, 500, errors.internal(err));
      else res.destroy();
    };
    try {
      route(req, res, pathname, fail);
    } catch (err) {
      fail(err);
    }
  };
}

/** Why the control API refused a request. */
export type ControlErrorCode = 'body_too_large' | 'invalid_json' | 'invalid_fault_spec' | 'method_not_allowed' | 'not_found';

/** What the control API acts on. */
export interface ControlContext {
  faults: {
    /** @returns the fault's id. @throws the server's spec error ({@link ControlContext.specError}) for a bad spec. */
    add(spec: unknown): string;
    /** @returns how many were cleared. */
    clear(): number;
    list(): unknown[];
  };
  /** The field and message when `err` is the refusal of a fault spec; undefined for anything else (rethrown). */
  specError(err: unknown): { field: string; message: string } | undefined;
  stats(): unknown;
  resetStats(): void;
  /** An error answer's body in the server's own shape (`field`: the spec field at fault). */
  errorBody(code: ControlErrorCode, message: string, field?: string): unknown;
}

const MAX_CONTROL_BODY_BYTES = 64 * 1024;

/** The handler of every `/__control` path for one server. */
export function controlHandler(ctx: ControlContext): (req: http.IncomingMessage, res: http.ServerResponse, pathname: string) => Promise<void> {
  return async (req, res, pathname) => {
    const method = req.method ?? 'GET';
    const refuse = (status: number, code: ControlErrorCode, message: string, headers: http.OutgoingHttpHeaders = {}, field?: string): void =>
      sendJson(res, status, ctx.errorBody(code, message, field), headers);
    const notAllowed = (allow: string): void => refuse(405, 'method_not_allowed', `method ${method} not allowed on ${pathname}`, { allow });
    if (pathname === '/__control/faults' && method === 'POST') {
      const text = await readBody(req, MAX_CONTROL_BODY_BYTES);
      if (text === null) return refuse(413, 'body_too_large', `a fault spec is at most ${MAX_CONTROL_BODY_BYTES} bytes`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return refuse(400, 'invalid_json', 'the fault spec is not valid JSON');
      }
      try {
        return sendJson(res, 201, { id: ctx.faults.add(parsed) });
      } catch (err) {
        const refusal = ctx.specError(err);
        if (refusal === undefined) throw err;
        return refuse(400, 'invalid_fault_spec', refusal.message, {}, refusal.field);
      }
    }
    req.resume();
    if (pathname === '/__control/faults') {
      if (method === 'DELETE') sendJson(res, 200, { cleared: ctx.faults.clear() });
      else if (method === 'GET') sendJson(res, 200, { faults: ctx.faults.list() });
      else notAllowed('GET, POST, DELETE');
    } else if (pathname === '/__control/stats') {
      if (method === 'GET') sendJson(res, 200, ctx.stats());
      else if (method === 'DELETE') {
        ctx.resetStats();
        sendJson(res, 200, { ok: true });
      } else notAllowed('GET, DELETE');
    } else refuse(404, 'not_found', `no control route ${pathname}`);
  };
}

/** A running stand-in server. Its in-process methods mirror its control API. */
export interface StandInServer<Stats, Spec, State> {
  /** Base URL, e.g. `http://127.0.0.1:7070` (no trailing slash). */
  url: string;
  /** The bound port. */
  port: number;
  /** Stops listening, destroys every open socket (held requests included) and clears timers. Idempotent. */
  close(): Promise<void>;
  /** A snapshot of the request accounting. */
  stats(): Stats;
  resetStats(): void;
  /** Registers a fault. @returns the fault id. @throws the server's spec error when the spec is invalid. */
  setFault(spec: Spec): string;
  /** Removes every fault. */
  clearFaults(): void;
  /** A snapshot of the registered faults and their counters. */
  faults(): State[];
}

/** The in-process twins of the control API's fault routes, for a server's handle. */
export function faultMethods<Spec, State>(faults: { add(spec: Spec): string; clear(): number; list(): State[] }) {
  return {
    setFault: (spec: Spec): string => faults.add(spec),
    clearFaults: (): void => {
      faults.clear();
    },
    faults: (): State[] => faults.list(),
  };
}
