/**
 * The ingress's read side of runs (docs/INGRESS.md, "Following a run"):
 *
 * - `GET /v1/runs/{thought_id}/events`: the run's committed records as Server-Sent Events, in the
 *   order of runtime/run-stream/order.ts, closed after the run's ending outcome. Each event's `id` is
 *   a cursor; a reconnect with `Last-Event-ID: <id>` (or `?after=<id>`) goes on with the next
 *   event. Heartbeat comments (`: keepalive`) while idle.
 * - `GET /v1/runs/events?source=S&external_id=E`: the same stream for the run that source and
 *   external id map to (`POST /v1/tasks` and the webhooks map them to one thought_id), for a
 *   ticketing integration that knows its ticket, not our id.
 * - `GET /v1/runs/{thought_id}`: the run as the log has it now: status, waves and steps so far, the
 *   outcome once there is one; 404 for a run the log has nothing of.
 *
 * With API keys, each needs a key with the `read` scope (401 without a valid key, 403 without the
 * scope, 429 over its rate); an ingress running open (loopback, no keys) serves them to anyone, as
 * it takes tasks from anyone. Open streams are capped (`maxStreams`): one more answers 429
 * `too_many_streams`. A client that goes away releases its stream's consumer at once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { thoughtIdFor } from '../client/tasks.ts';
import type { Logger } from '../runtime/log.ts';
import { decodeCursor } from '../runtime/run-stream/cursor.ts';
import { openRunStream, type RunStreamDeps } from '../runtime/run-stream/read.ts';
import { foldRunState, type RunState } from '../runtime/run-stream/state.ts';
import type { ApiKeyGuard } from './auth.ts';
import type { Reply } from './http-body.ts';

export interface RunReadDeps extends RunStreamDeps {
  /** The ingress's keys; null when it runs open. */
  guard: ApiKeyGuard | null;
  logger: Logger;
  maxStreams: number;
  heartbeatMs: number;
}

/** The handlers of the three routes (ingress/routes.ts); a handler that streams answers itself and returns nothing. */
export function runReadRoutes(deps: RunReadDeps) {
  const { guard, logger } = deps;
  let open = 0;

  const admit = (req: IncomingMessage): Reply | null => {
    if (!guard) return null;
    const admission = guard.admit(req.headers.authorization);
    if (!admission.ok) {
      if (admission.status === 429) return { status: 429, headers: { 'retry-after': String(admission.retryAfterSeconds) }, body: { error: 'rate_limited' } };
      return { status: 401, headers: { 'www-authenticate': 'Bearer' }, body: { error: 'unauthorized' } };
    }
    if (!guard.has(admission.keyId, 'read')) return { status: 403, body: { error: 'forbidden', message: 'this key has no read scope' } };
    return null;
  };

  const stream = async (req: IncomingMessage, res: ServerResponse, thoughtId: string): Promise<Reply | void> => {
    const refused = admit(req);
    if (refused) return refused;
    const url = new URL(req.url ?? '/', 'http://x');
    const lastId = header(req, 'last-event-id') ?? url.searchParams.get('after');
    const after = lastId ? decodeCursor(lastId) : null;
    if (lastId && !after)
      return { status: 400, body: { error: 'invalid_cursor', message: `Last-Event-ID "${lastId.slice(0, 80)}" is not an event id of this stream` } };
    if (open >= deps.maxStreams) {
      logger.warn('run stream refused: too many open', { thought_id: thoughtId, limit: deps.maxStreams });
      return {
        status: 429,
        headers: { 'retry-after': '5' },
        body: { error: 'too_many_streams', message: `${deps.maxStreams} run streams are open on this ingress (TAO_INGRESS_MAX_STREAMS); retry later` },
      };
    }
    open++;
    let released = false;
    const release = () => void (released || ((released = true), open--));
    try {
      const events = await openRunStream(deps, thoughtId, after);
      const gone = () => void events.close();
      req.once('close', gone);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      res.write(': run stream\n\n');
      const beat = setInterval(() => res.write(': keepalive\n\n'), deps.heartbeatMs);
      let sent = 0;
      try {
        for await (const e of events) {
          res.write(`id: ${e.id}\nevent: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
          sent++;
        }
      } catch (err) {
        logger.warn('run stream stopped', { thought_id: thoughtId, error: err });
        res.write(`event: error\ndata: ${JSON.stringify({ error: 'unavailable', message: 'the log could not be read; reconnect with Last-Event-ID' })}\n\n`);
      } finally {
        clearInterval(beat);
        req.off('close', gone);
        res.end();
        logger.info('run stream closed', { thought_id: thoughtId, events: sent });
      }
    } finally {
      release();
    }
  };

  return {
    runEvents: (req: IncomingMessage, res: ServerResponse, thoughtId: string) => stream(req, res, thoughtId),
    externalEvents: (req: IncomingMessage, res: ServerResponse): Promise<Reply | void> => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      const source = q.get('source');
      const externalId = q.get('external_id');
      if (!source || !externalId)
        return Promise.resolve({
          status: 400,
          body: { error: 'invalid_query', message: 'give both source and external_id (the ticket the run was made for)' },
        });
      return stream(req, res, thoughtIdFor(source, externalId));
    },
    runState: async (req: IncomingMessage, thoughtId: string): Promise<Reply> => {
      const refused = admit(req);
      if (refused) return refused;
      const state = await readRunState(deps, thoughtId);
      if (!state) return { status: 404, body: { error: 'unknown_run', message: `the log has no record of run ${thoughtId}` } };
      return { status: 200, body: state };
    },
  };
}

/**
 * The run's current state as the log has it now (its stream read to the current end, folded), or
 * null when the log has no record of it. `GET /v1/runs/{thought_id}`, and the decision and cancel
 * routes' check before they write (ingress/approvals.ts).
 */
export async function readRunState(deps: RunStreamDeps, thoughtId: string): Promise<RunState | null> {
  const events = await openRunStream(deps, thoughtId, null, { untilEnd: true });
  const seen = [];
  for await (const e of events) seen.push(e);
  return seen.length === 0 && events.pending === 0 ? null : foldRunState(thoughtId, seen);
}

function header(req: IncomingMessage, name: string): string | null {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : null;
}
