/**
 * A tool request: match its route, read a POST's body, count it, let a fault be chosen, perform a
 * POST unless the fault rejects it first, and answer (normally, or as the fault says).
 */
import type { EventEmitter } from 'node:events';
import type http from 'node:http';
import { applyFault, type Schedule } from './fault-answers.ts';
import type { FaultMode, FaultRegistry } from './faults.ts';
import { headerValue, readBody, safeDecode, sendJson } from './http.ts';
import { processPost, type PostOutcome, type ToolLedger } from './post-routes.ts';
import { matchRoute, normalResponse } from './routes.ts';
import { UNMATCHED_ROUTE, type RequestStats, type ToolServerEvents } from './stats.ts';
import { wrongSchemaBody } from './wrong-schema.ts';

/** Largest accepted body of a POST tool request; a larger one is answered 413. */
export const MAX_TOOL_BODY_BYTES = 16 * 1024;
/** Fault modes under which a POST still takes effect (the answer is lost or garbled on the way back). */
const EFFECTIVE_FAULT_MODES: ReadonlySet<FaultMode> = new Set<FaultMode>(['timeout', 'malformed', 'slow_body', 'large_body']);

/** What the tool-request handler works with: one server's state. */
export interface ToolContext {
  registry: FaultRegistry;
  ledger: ToolLedger;
  stats: RequestStats;
  events: EventEmitter<ToolServerEvents>;
  schedule: Schedule;
}

/** The handler of every path that is not `/health` or `/__control` for one server. */
export function toolHandler(ctx: ToolContext): (req: http.IncomingMessage, res: http.ServerResponse, pathname: string) => Promise<void> {
  const { registry, ledger, stats, events, schedule } = ctx;
  return async (req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> => {
    const m = matchRoute(pathname);
    const method = req.method ?? 'GET';
    const isPost = m !== null && m.method === 'POST' && method === 'POST';
    // POST bodies are read whole before the request is counted; anything else is drained.
    let text: string | null = '';
    if (isPost) text = await readBody(req, MAX_TOOL_BODY_BYTES);
    else req.resume();
    const rec = stats.record(req, m?.route ?? UNMATCHED_ROUTE);
    // `match` sees the raw and decoded path and, for a POST, the body.
    const targets = [pathname, safeDecode(pathname), ...(isPost && text !== null ? [text] : [])];
    const fault = m !== null && method === m.method ? registry.pick(m.route, targets, headerValue(req, 'idempotency-key')) : undefined;
    if (fault !== undefined) {
      rec.fault = fault.spec.mode;
      rec.faultId = fault.id;
    }
    // A POST takes effect unless a fault rejects it first.
    let post: PostOutcome | undefined;
    if (isPost && m !== null && (fault === undefined || EFFECTIVE_FAULT_MODES.has(fault.spec.mode))) {
      post = processPost(m, { body: text, contentType: headerValue(req, 'content-type'), idempotencyKey: headerValue(req, 'idempotency-key') }, ledger);
      stats.countPost(m.route, post, rec);
    }
    events.emit('request', { ...rec, headers: { ...rec.headers } });
    if (m === null) {
      sendJson(res, 404, { error: 'not_found' });
    } else if (method !== m.method) {
      sendJson(res, 405, { error: 'method_not_allowed' }, { allow: m.method });
    } else if (m.method === 'GET') {
      if (fault !== undefined)
        applyFault(
          res,
          fault,
          () => normalResponse(m),
          () => wrongSchemaBody(m),
          schedule,
        );
      else {
        const r = normalResponse(m);
        sendJson(res, r.status, r.body);
      }
    } else {
      const answer = post?.response;
      if (fault !== undefined) {
        applyFault(
          res,
          fault,
          () => answer ?? { status: 500, body: { error: 'internal' } },
          () => wrongSchemaBody(m, lenientObject(text)),
          schedule,
        );
      } else if (answer !== undefined) {
        sendJson(res, answer.status, answer.body, post?.replayed ? { 'idempotent-replayed': 'true' } : {});
      }
    }
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
