/**
 * Request accounting: each counted tool request ({@link RecordedRequest}), the counts by route, the
 * POST routes' side effects and idempotent replays, and the connections ({@link RequestStats}, served
 * by `GET /__control/stats`).
 */
import type http from 'node:http';
import type { FaultMode } from './faults.ts';
import { headerValue } from './http.ts';
import type { PostOutcome } from './post-routes.ts';
import { POST_ROUTE_IDS, ROUTE_IDS, type RouteId } from './routes.ts';

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
  /**
   * Side effects performed per `Idempotency-Key` (requests without one are not counted here), for
   * the most recent {@link MAX_EFFECT_KEYS} keys: how a test or `npm run chaos` counts, at the
   * upstream, a call applied more than once.
   */
  effectsByKey: Record<string, number>;
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
/** How many keys `effectsByKey` keeps (the oldest forgotten first). */
export const MAX_EFFECT_KEYS = 100_000;

/** Events of {@link ToolServer.events}. */
export interface ToolServerEvents {
  request: [RecordedRequest];
}

/** The counters behind {@link Stats}; one per server. */
export class RequestStats {
  private total = 0;
  private byRoute: Record<string, number> = {};
  private records: RecordedRequest[] = [];
  private connections = 0;
  private effects: Record<string, number> = {};
  private effectsByKey = new Map<string, number>();
  private replays: Record<string, number> = {};
  private conflicts = 0;

  constructor() {
    this.reset();
  }

  /** Resets request counts, records and the connection counter. */
  reset(): void {
    this.total = 0;
    this.byRoute = Object.fromEntries(ROUTE_IDS.map((r) => [r, 0]));
    this.records = [];
    this.connections = 0;
    this.effects = Object.fromEntries(POST_ROUTE_IDS.map((r) => [r, 0]));
    this.effectsByKey = new Map();
    this.replays = Object.fromEntries(POST_ROUTE_IDS.map((r) => [r, 0]));
    this.conflicts = 0;
  }

  /** Counts a tool request and keeps its record (the most recent {@link MAX_RECORDED_REQUESTS}); the caller fills in its fault and replay. */
  record(req: http.IncomingMessage, route: RecordedRequest['route']): RecordedRequest {
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
    this.total += 1;
    this.byRoute[route] = (this.byRoute[route] ?? 0) + 1;
    this.records.push(rec);
    if (this.records.length > MAX_RECORDED_REQUESTS) this.records.splice(0, this.records.length - MAX_RECORDED_REQUESTS);
    return rec;
  }

  /** Counts what a POST did: its side effect, a replay from its `Idempotency-Key` (marked on `rec`), a key conflict. */
  countPost(route: RouteId, post: PostOutcome, rec: RecordedRequest): void {
    if (post.effect) {
      this.effects[route] = (this.effects[route] ?? 0) + 1;
      const key = rec.headers['idempotency-key'];
      if (key !== null) {
        this.effectsByKey.set(key, (this.effectsByKey.get(key) ?? 0) + 1);
        if (this.effectsByKey.size > MAX_EFFECT_KEYS) this.effectsByKey.delete(this.effectsByKey.keys().next().value!);
      }
    }
    if (post.replayed) {
      this.replays[route] = (this.replays[route] ?? 0) + 1;
      rec.idempotentReplay = true;
    }
    if (post.conflict) this.conflicts += 1;
  }

  /** Counts an accepted TCP connection. */
  connectionOpened(): void {
    this.connections += 1;
  }

  /** A copy of the counts and records, with the server's open connections and stored idempotency keys. */
  snapshot(openConnections: number, storedKeys: number): Stats {
    return {
      total: this.total,
      byRoute: { ...this.byRoute },
      requests: this.records.map((r) => ({ ...r, headers: { ...r.headers } })),
      connections: this.connections,
      openConnections,
      effects: { ...this.effects },
      effectsByKey: Object.fromEntries(this.effectsByKey),
      idempotency: { storedKeys, replays: { ...this.replays }, conflicts: this.conflicts },
    };
  }
}
