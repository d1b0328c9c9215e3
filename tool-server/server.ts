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
 * `POST|GET|DELETE /__control/faults`, `GET|DELETE /__control/stats`. The control API has no
 * authentication, so it answers only when the server listens on a loopback address; on any other
 * (`TAO_BIND_HOST=0.0.0.0`, the chart's tools pod) it answers 403 and faults cannot be injected.
 *
 * This file starts the server and routes; `tool-requests.ts` handles a tool
 * request, `fault-answers.ts` answers with a fault, `control.ts` serves the
 * control API, `stats.ts` counts requests, `http.ts` holds the HTTP plumbing;
 * the routes are in `routes.ts`, `post-routes.ts` and `wrong-schema.ts`.
 *
 * @module
 */
import { listenStandIn } from '../runtime/listen.ts';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { Socket } from 'node:net';

import { controlRefusal } from '../runtime/loopback.ts';
import { controlHandler, faultMethods, routeRequests, type StandInRoute, type StandInServer } from '../runtime/stand-in-http.ts';
import { FaultRegistry, FaultSpecError, type FaultSpec, type FaultState } from './faults.ts';
import { sendJson } from './http.ts';
import { ToolLedger } from './post-routes.ts';
import { RequestStats, type Stats, type ToolServerEvents } from './stats.ts';
import { toolHandler } from './tool-requests.ts';

export type { FaultMode, FaultSpec, FaultState } from './faults.ts';
export { FaultSpecError } from './faults.ts';
export type { RouteId } from './routes.ts';
export { POST_ROUTE_IDS, ROUTE_IDS, ROUTE_METHODS } from './routes.ts';
export { MAX_RECORDED_REQUESTS, UNMATCHED_ROUTE, type RecordedRequest, type Stats, type ToolServerEvents } from './stats.ts';
export { MAX_TOOL_BODY_BYTES } from './tool-requests.ts';

/** Options of {@link startToolServer}. */
export interface ToolServerOptions {
  /** TCP port; 0 picks an ephemeral port. Default 7070. */
  port: number;
  /** Interface to bind. Default `127.0.0.1`. */
  host: string;
  /** Idle keep-alive sockets are closed after this many ms (`server.keepAliveTimeout`). Default 5000. */
  keepAliveTimeoutMs: number;
}

/** A running tool server. The in-process methods mirror the control API. */
export interface ToolServer extends StandInServer<Stats, FaultSpec, FaultState> {
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

const DEFAULTS: ToolServerOptions = { port: 7070, host: '127.0.0.1', keepAliveTimeoutMs: 5000 };

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
  const ledger = new ToolLedger();
  const requestStats = new RequestStats();
  const resetStats = (): void => requestStats.reset();
  const stats = (): Stats => requestStats.snapshot(sockets.size, ledger.storedKeys);

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

  const handleTool = toolHandler({ registry, ledger, stats: requestStats, events, schedule });
  const handleControl = controlHandler({
    faults: registry,
    stats,
    resetStats,
    specError: (err) => (err instanceof FaultSpecError ? { field: err.field, message: err.message } : undefined),
    errorBody: (code, message, field) => ({ error: code, ...(field === undefined ? {} : { field }), message }),
  });

  const refusal = controlRefusal(options.host, 'tool server');
  const route: StandInRoute = (req, res, pathname, fail) => {
    if (pathname === '/health') {
      req.resume();
      if (req.method === 'GET') sendJson(res, 200, { ok: true });
      else sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET' });
    } else if (pathname === '/__control' || pathname.startsWith('/__control/')) {
      if (!refusal) handleControl(req, res, pathname).catch(fail);
      else {
        req.resume();
        sendJson(res, 403, refusal);
      }
    } else {
      handleTool(req, res, pathname).catch(fail);
    }
  };
  const server = http.createServer(
    routeRequests(route, { badTarget: { error: 'bad_request' }, internal: (err) => ({ error: 'internal', message: String(err) }) }),
  );
  server.on('connection', () => requestStats.connectionOpened());

  const listening = await listenStandIn(server, { ...options, sockets, timers });
  return { ...listening, stats, resetStats, ...faultMethods(registry), events };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
