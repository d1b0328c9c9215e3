/**
 * The console's HTTP server: the page shell and its static assets (console/static/), a JSON API
 * over the index and the actions, the run report fragment (the HTML report's renderer,
 * replay/render-html.ts), and server-sent events fed from the log (`/api/events`): the browser
 * never polls.
 *
 * | route | answers |
 * |---|---|
 * | `GET /`, `/runs/<id>`, `/dead-letters`, `/health`, `/releases` | the page shell (console/static/index.html) |
 * | `GET /static/<file>`, `/report.css` | the page's assets; the report's style sheet |
 * | `GET /api/runs?status&flow&source&from&to&q&manifest&limit&offset` | runs newest first, counts by status, facets |
 * | `GET /api/runs/<id>` | the run's timeline (`tao replay --format json`) |
 * | `GET /api/runs/<id>/report` | the run's report body (HTML fragment) |
 * | `POST /api/runs/<id>/verify` | the drift report |
 * | `POST /api/runs/<id>/fork` `{"point"}` | the new run's thought_id |
 * | `POST /api/runs/<id>/approve`, `/deny` `{"interrupt"?, "arguments"?, "step"?, "reason"?}` | 202 `{thought_id, verdict, interrupt?, task_id}`: the decision, recorded as made by the key's id (`key:<id>`) or, on loopback, the OS user running the console; 409 for an interrupt not pending, 422 for an edit refused (`{error, code, policy?}`) |
 * | `POST /api/runs/<id>/reply` `{"text"}` | 202 `{thought_id, task_id}`: the answer to a run awaiting input |
 * | `GET /api/dead-letters?topic&reason` | the `tao dlq list` document |
 * | `POST /api/dead-letters/redrive` `{"topic","offsets":[{"partition","offset"}]}` | the re-drive report |
 * | `GET /api/health` | `tao status` with the index's rates, tool figures and outcomes per minute |
 * | `GET /api/manifests` | per release: the index's ended runs, TCR, self-recovery, escalations, cost per run; the pointer's role |
 * | `GET /api/events` | server-sent events: `ready`, `runs` (changed summaries) |
 *
 * A POST must be `application/json` (415 otherwise) and not cross-site (403; console/auth.ts
 * `crossSite`); approve, deny and reply need a key with the `approve` scope as well (403) off loopback. Errors are JSON `{"error"}` with a status: 400 a bad request, 401/403 see console/auth.ts, 404
 * unknown run or route, 409 a request the log refuses (a fork Thought would end at once; a decision for a run not
 * awaiting approval or an interrupt no longer pending, a reply for one not awaiting input, a re-drive of a topic that is not dead-lettered),
 * 422 edited arguments the tool's contract or a policy of the run's skill refuses,
 * 413 a login form over 64 KiB (a JSON body over 64 KiB is read as none: 400), 503 when the cluster
 * does not answer. While the index is rebuilt `/api/runs` says `"ready": false`.
 *
 * The routes, with every status each answers, are declared once in console/routes.ts: the dispatch
 * below serves only those, and `GET /openapi.json` (no key needed) serves the OpenAPI document made
 * from them.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { validDecisionBody } from '../ingress/approvals.ts';
import { decisionBodyProblem } from '../ingress/decision-checks.ts';
import { renderReportBody, REPORT_CSS } from '../replay/render-html.ts';
import { toTaoError } from '../runtime/errors.ts';
import { listen, type Listening } from '../runtime/listen.ts';
import { routeMatcher } from '../runtime/openapi.ts';
import type { Logger } from '../runtime/log.ts';
import { packagePath } from '../runtime/paths.ts';
import type { ConsoleActions } from './actions.ts';
import { admit, admitKey, crossSite, KEY_COOKIE, type ConsoleAuth } from './auth.ts';
import type { Feed } from './feed.ts';
import { loginPage } from './login.ts';
import { CONSOLE_ROUTES, consoleOpenApi, type ConsoleOperation } from './routes.ts';
import { releaseRole } from '../observability/release-rates.ts';
import type { ReleasePointer } from '../schemas/types.gen.ts';

/** Where the page's files are (not copied into dist/: served from the package's console/static/). */
export const STATIC_DIR = packagePath('console', 'static');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};
const MAX_BODY = 64 * 1024;

export interface ConsoleServerDeps {
  /** The run index and the live stream the pages read. */
  feed: Feed;
  /** What the pages read from the log beyond the index (timelines, drift, dead letters) and what their buttons write (decisions, answers, forks, re-drives). */
  actions: ConsoleActions;
  auth: ConsoleAuth;
  logger: Logger;
  /** The wall clock the pages' ages are measured against (injected for tests). */
  now?: () => number;
}

/** A running console server: its close ends the live streams first. */
export interface ConsoleServer extends Listening {
  readonly server: Server;
}

/** Starts serving on `host:port` (0: any free port). */
export async function startConsoleServer(deps: ConsoleServerDeps, host: string, port: number): Promise<ConsoleServer> {
  const streams = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    handle(deps, streams, req, res).catch((err: unknown) => {
      if ((err as { status?: number }).status === 413) return json(res, 413, { error: 'request body over 64 KiB' });
      const e = toTaoError(err);
      deps.logger.warn('console request failed', { method: req.method, url: req.url?.split('?')[0], code: e.code, error: e.message });
      if (!res.headersSent) json(res, e.retriable ? 503 : e.code === 'CONTRACT_VIOLATION' ? 409 : 500, { error: e.message, code: e.code });
      else res.end();
    });
  });
  // close ends the event streams first; keepAlive is set below, once listening, before any close can run
  const listening = await listen(server, host, port, () => {
    clearInterval(keepAlive);
    for (const s of streams) s.end();
  });
  const keepAlive = setInterval(() => {
    for (const s of streams) s.write(': keep-alive\n\n');
  }, 15000);
  return { server, ...listening };
}

type Handler = (
  deps: ConsoleServerDeps,
  streams: Set<ServerResponse>,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  id: string,
  who: { who: string; mayDecide: boolean },
) => Promise<void> | void;

const shell: Handler = (_deps, _streams, _req, res) =>
  send(res, 200, TYPES['.html']!, readFileSync(join(STATIC_DIR, 'index.html')), { 'Cache-Control': 'no-store' });
const notFound = (res: ServerResponse, id: string) => json(res, 404, { error: `no record of run ${id}` });

/** One handler per route of console/routes.ts (the dispatch serves nothing else). */
const HANDLERS: Record<ConsoleOperation, Handler> = {
  page: shell,
  runPage: shell,
  deadLettersPage: shell,
  healthPage: shell,
  releasesPage: shell,
  asset: (_deps, _streams, _req, res, url) => asset(res, url.pathname.slice('/static/'.length)),
  reportCss: (_deps, _streams, _req, res) => send(res, 200, TYPES['.css']!, REPORT_CSS),
  login: (deps, _streams, req, res) => login(deps, req, res),
  openapi: (_deps, _streams, _req, res) => send(res, 200, 'application/json; charset=utf-8', OPENAPI),
  events: (deps, streams, _req, res) => events(deps, streams, res),
  listRuns: (deps, _streams, _req, res, url) => runs(deps, url, res),
  getRun: async (deps, _streams, _req, res, _url, id) => {
    const timeline = await deps.actions.timeline(id);
    return timeline ? json(res, 200, timeline) : notFound(res, id);
  },
  runReport: async (deps, _streams, _req, res, _url, id) => {
    const timeline = await deps.actions.timeline(id);
    if (!timeline) return notFound(res, id);
    send(res, 200, TYPES['.html']!, renderReportBody(timeline), { 'Cache-Control': 'no-store' });
  },
  verifyRun: async (deps, _streams, _req, res, _url, id) => {
    const verified = await deps.actions.verify(id);
    return verified ? json(res, 200, verified) : notFound(res, id);
  },
  forkRun: async (deps, _streams, req, res, _url, id) => {
    const body = await readJson(req);
    const point = typeof body?.['point'] === 'string' || typeof body?.['point'] === 'number' ? String(body['point']) : '';
    if (!/^(?:\d+|[A-Za-z][A-Za-z0-9_.-]*)$/.test(point)) return json(res, 400, { error: 'fork needs {"point": a wave number (2) or a step id (S2)}' });
    const fork = await deps.actions.fork(id, point);
    return fork ? json(res, 200, fork) : notFound(res, id);
  },
  approveRun: (deps, _streams, req, res, _url, id, who) => decide(deps, id, '/approve', who, req, res),
  denyRun: (deps, _streams, req, res, _url, id, who) => decide(deps, id, '/deny', who, req, res),
  replyRun: (deps, _streams, req, res, _url, id, who) => decide(deps, id, '/reply', who, req, res),
  listDeadLetters: async (deps, _streams, _req, res, url) =>
    json(res, 200, await deps.actions.deadLetters({ topic: url.searchParams.get('topic') || null, reason: url.searchParams.get('reason') || null })),
  redrive: async (deps, _streams, req, res) => {
    const body = await readJson(req);
    const topic = body?.['topic'];
    const offsets = body?.['offsets'];
    const valid =
      Array.isArray(offsets) &&
      offsets.length > 0 &&
      offsets.every((o) => Number.isInteger(o?.partition) && o.partition >= 0 && /^\d+$/.test(String(o?.offset)));
    if (typeof topic !== 'string' || !topic || !valid)
      return json(res, 400, { error: 're-drive needs {"topic": a dead-letter topic, "offsets": [{"partition": 0, "offset": "12"}, ...]}' });
    const chosen = (offsets as Array<{ partition: number; offset: unknown }>).map((o) => ({ partition: o.partition, offset: String(o.offset) }));
    json(res, 200, await deps.actions.redrive(topic, chosen));
  },
  health: async (deps, _streams, _req, res) => {
    const status = await deps.actions.status();
    json(res, 200, {
      status,
      ...deps.feed.index.health((deps.now ?? Date.now)()),
      index: { runs: deps.feed.index.size, records: deps.feed.index.records, rebuild_ms: deps.feed.rebuildMs },
    });
  },
  listManifests: (deps, _streams, _req, res) => manifests(deps, res),
};
const OPENAPI = JSON.stringify(consoleOpenApi());
const match = routeMatcher(CONSOLE_ROUTES);

async function handle(deps: ConsoleServerDeps, streams: Set<ServerResponse>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://console');
  const path = url.pathname;
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'same-origin');
  if (req.method === 'POST' && crossSite(req)) return json(res, 403, { error: 'a request from another site may not act on the console' });
  const found = match(req.method, path);
  const op = found?.methodAllowed ? found.route.operationId : null;
  // The login form and this API's description need no key.
  if (op === 'login' || op === 'openapi') return HANDLERS[op](deps, streams, req, res, url, '', { who: '', mayDecide: false });
  const admission = admit(deps.auth, req);
  if (!admission.ok) {
    if (admission.retryAfterSeconds) res.setHeader('Retry-After', String(admission.retryAfterSeconds));
    if (admission.status === 401 && !path.startsWith('/api/') && req.method === 'GET') return send(res, 401, TYPES['.html']!, loginPage(null));
    return json(res, admission.status, { error: admission.message });
  }
  // JSON only: a form of another site cannot send it without a CORS preflight, which is never answered.
  if (req.method === 'POST' && !/^application\/json\b/i.test(req.headers['content-type'] ?? ''))
    return json(res, 415, { error: 'send the request body as application/json' });
  let id = '';
  // A run id of the API that is not a URL component is a bad request, whatever the method.
  if (found?.params.id !== undefined && path.startsWith('/api/')) {
    try {
      id = decodeURIComponent(found.params.id);
    } catch {
      return json(res, 400, { error: 'the run id is not a valid URL component' });
    }
  }
  if (!op) return json(res, 404, { error: `no route ${req.method} ${path}` });
  return HANDLERS[op](deps, streams, req, res, url, id, admission);
}

/** `POST /api/runs/<id>/approve|deny` `{"step"?, "reason"?}` and `/reply` `{"text"}`: 202 once Kafka took it. */
async function decide(
  deps: ConsoleServerDeps,
  id: string,
  what: '/approve' | '/deny' | '/reply',
  who: { who: string; mayDecide: boolean },
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (!who.mayDecide) return json(res, 403, { error: 'approving, denying or replying needs an API key with both the console and the approve scopes' });
  const summary = deps.feed.index.get(id);
  if (!summary) return json(res, 404, { error: `no record of run ${id}` });
  const awaits = what === '/reply' ? 'awaiting_input' : 'awaiting_approval';
  if (summary.status !== awaits) return json(res, 409, { error: `run ${id} is ${summary.status}, not ${awaits.replace('_', ' ')}` });
  const body = await readJson(req);
  if (what === '/reply') {
    const text = body?.['text'];
    if (typeof text !== 'string' || !text.trim()) return json(res, 400, { error: 'a reply needs {"text": the answer the run waits for}' });
    return json(res, 202, { thought_id: id, ...(await deps.actions.reply(id, text, who.who)) });
  }
  if (!validDecisionBody(body))
    return json(res, 400, {
      error: 'a decision takes {"interrupt"?: an interrupt id, "arguments"?: an object, "step"?: a step id (S2), "reason"?: text up to 2000 characters}',
    });
  const verdict = what === '/approve' ? 'approve' : 'deny';
  const problem = decisionBodyProblem(body, verdict);
  if (problem) return json(res, 400, { error: problem });
  const { step = null, reason = null, interrupt = null, arguments: edited = null } = body;
  const sent = await deps.actions.decide(id, verdict, who.who, { step, reason: reason || null, interrupt, arguments: edited });
  if ('refused' in sent) {
    const { error, message, ...rest } = sent.refused.body;
    return json(res, sent.refused.status, { error: message, code: error, ...rest });
  }
  return json(res, 202, { thought_id: id, verdict, ...(interrupt ? { interrupt } : {}), ...sent });
}

/** The index's per-release rates; the pointer's roles when tao.manifests could be read (otherwise why not, with the rates still). */
async function manifests(deps: ConsoleServerDeps, res: ServerResponse): Promise<void> {
  let pointer: ReleasePointer | null = null;
  let pointerError: string | null = null;
  try {
    pointer = await deps.actions.releasePointer();
  } catch (err) {
    pointerError = `tao.manifests could not be read: ${toTaoError(err).message}`;
  }
  json(res, 200, {
    ready: deps.feed.rebuildMs !== null,
    pointer,
    pointer_error: pointerError,
    manifests: deps.feed.index.manifests().map((m) => ({ ...m, role: releaseRole(m.manifest, pointer) })),
  });
}

function runs(deps: ConsoleServerDeps, url: URL, res: ServerResponse): void {
  const p = url.searchParams;
  const time = (name: string) => {
    const v = p.get(name);
    if (!v) return undefined;
    const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
    return Number.isNaN(ms) ? null : ms;
  };
  const fromMs = time('from');
  const toMs = time('to');
  const num = (name: string) => (p.get(name) && /^\d+$/.test(p.get(name)!) ? Number(p.get(name)) : undefined);
  if (fromMs === null || toMs === null) return json(res, 400, { error: 'from and to take ISO times or milliseconds since the epoch' });
  const { feed } = deps;
  const result = feed.index.query({
    status: p.get('status') || undefined,
    flow: p.get('flow') || undefined,
    source: p.get('source') || undefined,
    fromMs,
    toMs,
    q: p.get('q') || undefined,
    manifest: p.get('manifest') || undefined,
    limit: num('limit'),
    offset: num('offset'),
  });
  json(res, 200, {
    ready: feed.rebuildMs !== null,
    rebuild_ms: feed.rebuildMs,
    stopped: feed.stopped,
    indexed: feed.index.size,
    now: (deps.now ?? Date.now)(),
    ...feed.index.facets(),
    ...result,
  });
}

function events(deps: ConsoleServerDeps, streams: Set<ServerResponse>, res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', Connection: 'keep-alive' });
  streams.add(res);
  const sendEvent = (name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  const unsubscribe = deps.feed.subscribe((changes) => sendEvent('runs', changes));
  deps.feed.ready.then(
    () => sendEvent('ready', { rebuild_ms: deps.feed.rebuildMs, runs: deps.feed.index.size }),
    () => undefined,
  );
  res.on('close', () => {
    unsubscribe();
    streams.delete(res);
  });
}

async function login(deps: ConsoleServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const form = new URLSearchParams(await readBody(req));
  const key = form.get('key') ?? '';
  if (!key || !admitKey(deps.auth, key)) return send(res, 401, TYPES['.html']!, loginPage('That key is not a console key.'));
  res.writeHead(303, { Location: '/', 'Set-Cookie': `${KEY_COOKIE}=${encodeURIComponent(key)}; HttpOnly; SameSite=Strict; Path=/` });
  res.end();
}

function asset(res: ServerResponse, name: string): void {
  if (!/^(?:vendor\/)?[a-z0-9][a-z0-9.-]*\.(?:js|css|svg)$/.test(name)) return json(res, 404, { error: 'no such asset' });
  let body: Buffer;
  try {
    body = readFileSync(join(STATIC_DIR, name));
  } catch {
    return json(res, 404, { error: `no asset ${name}` }); // a missing file is a 404, not a failure of the server
  }
  send(res, 200, TYPES[extname(name)]!, body, { 'Cache-Control': 'no-cache' });
}

async function readBody(req: IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw Object.assign(new Error('request body over 64 KiB'), { status: 413 });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | null> {
  try {
    const v: unknown = JSON.parse(await readBody(req));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null; // not JSON: the route answers 400 with what it needs
  }
}

function json(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value), { 'Cache-Control': 'no-store' });
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': type, ...headers });
  res.end(body);
}
