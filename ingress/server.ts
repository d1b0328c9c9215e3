import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Ajv } from 'ajv';
import type { Kafka, Producer } from 'kafkajs';
import { buildTask, submitTasks, type NewTask } from '../client/tasks.ts';
import type { EditChecks } from '../processors/thought/approval-rules.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import { readRunSnapshot } from '../runtime/run-stream/snapshot.ts';
import { errorMessage } from '../runtime/errors.ts';
import { listen, type Listening } from '../runtime/listen.ts';
import { routeMatcher } from '../runtime/openapi.ts';
import type { Logger } from '../runtime/log.ts';
import { IngressMetrics } from '../runtime/metrics.ts';
import { decideIngressAuth, type IngressAuth } from './api-keys.ts';
import { ApiKeyGuard } from './auth.ts';
import { approvalRoutes } from './approvals.ts';
import { readRunState, runReadRoutes } from './run-streams.ts';
import type { A2aSkill } from './a2a/card.ts';
import { a2aRoutes, serveAgentCard } from './a2a/route.ts';
import { parseJson, pathOf, readBody, tooLarge, writeWithin, type Reply } from './http-body.ts';

export { writeWithin } from './http-body.ts';
import { DeliveryLedger } from './deliveries.ts';
import { InFlightRuns, followOutcomes } from './in-flight.ts';
import { INGRESS_ROUTES, ingressOpenApi, taskRequestSchema, type IngressOperation } from './routes.ts';
import { WEBHOOK_SECRET_ENV, WEBHOOK_SOURCES, fieldErrors, webhookHandlers, type WebhookOptions, type WebhookSource } from './webhooks.ts';

export interface IngressOptions {
  port: number;
  host: string;
  /** Request bodies above this size get 413 (checked while the body streams in, before parsing). */
  maxBodyBytes: number;
  /**
   * Runs accepted by this ingress and not yet ended (no outcome seen) above which new runs get
   * 429. Default 1000. Counting needs `deps.kafka` (to follow `tao.outcomes`); without it the
   * limit is not applied.
   */
  maxInFlightRuns?: number;
  /** Runs whose outcome never shows up stop counting after this long. Default 1 hour. */
  inFlightTtlMs?: number;
  /** `Retry-After` (seconds) sent with 429. Default 5. */
  retryAfterSeconds?: number;
  /** Longest wait for Kafka to acknowledge a task before answering 503. Default 5000 ms. */
  sendTimeoutMs?: number;
  /** Open run event streams above which one more answers 429. Default 100. */
  maxStreams?: number;
  /** Milliseconds between heartbeat comments on an idle run event stream. Default 15000. */
  streamHeartbeatMs?: number;
  /** Webhook sources (the composition root reads them with `webhookOptionsFromEnv`, ingress/config.ts); default none. */
  webhooks?: WebhookOptions;
  /**
   * How `POST /v1/tasks` is authenticated (the composition root reads it with `ingressAuthFromEnv` in ingress/config.ts);
   * default: no keys, so it runs open on a loopback `host` only.
   */
  auth?: IngressAuth;
  /** The A2A agent card's skills and public base URL (ingress/a2a/route.ts); default no skills, the URL from the Host header. */
  a2a?: { skills: readonly A2aSkill[]; publicUrl?: string };
}

export interface IngressDeps {
  /** An idempotent producer, connected (an unconnected or unreachable one makes writes answer 503). */
  producer: Producer;
  /** A codec on which the `tasks` schema is registered. */
  codec: AvroCodec;
  logger: Logger;
  /** Follows `tao.outcomes` for the in-flight limit, and reads runs (`GET /v1/runs/...`; without it those answer 503). */
  kafka?: Kafka;
  /**
   * What an approver's edited arguments are checked against before the decision is written (the
   * tools' contracts, the skills' policies: processors/wiring `editChecks`); without it only Thought checks them.
   */
  edits?: EditChecks;
  /** Clock, for tests. */
  now?: () => number;
  /** Served on `GET /metrics`; default a fresh {@link IngressMetrics}. */
  metrics?: IngressMetrics;
}

/** A running ingress: its close also stops following the outcomes. */
export interface Ingress extends Listening {
  /** Runs this ingress is counting as in flight. */
  inFlight(): number;
}

interface TaskRequest {
  text: string;
  source?: string;
  external_id?: string;
  metadata?: Record<string, string>;
}

/** Task metadata the ingress sets to the id of the API key that submitted the task (a request may not set it). */
export const API_KEY_ID_METADATA = 'api_key_id';

// One body for every 401 and one for every 403: the client learns nothing about why.
const UNAUTHORIZED: Reply = { status: 401, headers: { 'www-authenticate': 'Bearer' }, body: { error: 'unauthorized' } };
const FORBIDDEN: Reply = { status: 403, body: { error: 'forbidden' } };

const reply = (res: ServerResponse, { status, body, headers }: Reply) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

/**
 * The HTTP ingress.
 *
 * `POST /v1/tasks` with `{text, source?, external_id?, metadata?}` (`metadata.callback_url`, when
 * given, must be an http(s) URL; see callbacks/) answers 202 `{thought_id, task_id}` once the task
 * is durably in `tao.tasks` (same source + external_id → same thought_id). With API keys
 * (`options.auth`, ingress/api-keys.ts) it first needs `Authorization: Bearer <key>`: 401
 * `{"error":"unauthorized"}` with `WWW-Authenticate: Bearer` for a missing, malformed, unknown or
 * revoked key (one answer for all four), 429 with `Retry-After` when the key's bucket is empty (before
 * the body is read), 403 `{"error":"forbidden"}` when the key may not submit as the task's `source`
 * (default `api`). An accepted task carries the key's id in metadata `api_key_id`.
 *
 * `POST /v1/webhooks/<source>` (`github`, `jira`; see ingress/webhooks.ts for signatures and
 * mapping) answers:
 * - 202 `{thought_id, task_id}` once the task is durably written;
 * - 200 `{duplicate: true, thought_id, task_id}` for a delivery already written inside the
 *   delivery window (nothing written again: redeliveries are safe to click);
 * - 202 `{ignored: true, reason}` for events that are not handled (nothing written);
 * - 401 `{error}` when the source has no secret configured (`source_not_configured`), the signature
 *   is missing/malformed/wrong (`invalid_signature`), or its timestamp or the event is too old
 *   (`stale_signature`, `stale_event`);
 * - 404 for an unknown source.
 *
 * Both routes answer 400 `{error, message, fields}` for malformed JSON or invalid fields, 413 above
 * `maxBodyBytes`, 429 with `Retry-After` when the in-flight limit is reached (new runs only: a reply
 * to a run already in flight passes), and 503 when Kafka did not acknowledge the record within
 * `sendTimeoutMs`: never a 2xx for a task that was not written. A 503 after a timeout does not
 * prove the record was not written; a retry then maps to the same thought_id.
 *
 * The routes, with every status each answers, are declared once in ingress/routes.ts: the
 * dispatch serves only those, and `GET /openapi.json` (no key needed) serves the OpenAPI document
 * made from them.
 *
 * @throws ConfigError when `options.auth` is not given and the environment's keys are invalid or
 * missing on a non-loopback `host` (`ingressAuthFromEnv` in ingress/config.ts); whatever `listen` throws (port in
 * use). Per-request failures become HTTP answers.
 */
export async function startIngress(options: IngressOptions, deps: IngressDeps): Promise<Ingress> {
  const { producer, codec, logger } = deps;
  const now = deps.now ?? Date.now;
  const validate = new Ajv({ allErrors: true }).compile<TaskRequest>(taskRequestSchema);
  const webhookOptions = options.webhooks ?? { secrets: {} };
  const handlers = webhookHandlers(webhookOptions);
  const deliveries = new DeliveryLedger(webhookOptions.deliveryWindowMs ?? 60 * 60 * 1000, webhookOptions.maxRememberedDeliveries ?? 100_000, now);
  const maxEventAgeMs = webhookOptions.maxEventAgeMs ?? 7 * 24 * 60 * 60 * 1000;
  const sendTimeoutMs = options.sendTimeoutMs ?? 5000;
  const retryAfter = String(options.retryAfterSeconds ?? 5);
  const auth = options.auth ?? decideIngressAuth(null, 'auto', options.host);
  const guard = auth.mode === 'keys' ? new ApiKeyGuard(auth.keys, now, ['tasks', 'approve', 'read']) : null;
  if (auth.mode === 'open') logger.warn('POST /v1/tasks is open: no API key is asked for', { reason: auth.reason });
  else logger.info('POST /v1/tasks needs an API key', { keys: guard!.active, revoked: auth.keys.length - guard!.active });

  const metrics = deps.metrics ?? new IngressMetrics();
  const runs = deps.kafka ? new InFlightRuns(options.maxInFlightRuns ?? 1000, options.inFlightTtlMs ?? 60 * 60 * 1000, now) : null;
  const outcomes = deps.kafka && runs ? await followOutcomes(deps.kafka, codec, runs, logger) : null;
  if (!runs) logger.warn('in-flight limit not applied: no Kafka client given to follow outcomes');
  logger.info('webhook sources', { configured: WEBHOOK_SOURCES.filter((s) => webhookOptions.secrets[s]) });

  /** Writes one task: 429 when over the limit, 503 when Kafka does not take it, 202 otherwise. */
  const accept = async (input: NewTask, onWritten?: (ids: { thought_id: string; task_id: string }) => void, keyId?: string): Promise<Reply> => {
    const task = buildTask(input, now());
    const release = runs ? runs.reserve(task.thought_id) : () => undefined;
    if (!release) {
      logger.warn('task refused: in-flight limit reached', { thought_id: task.thought_id, source: task.source, limit: runs?.limit });
      return {
        status: 429,
        headers: { 'retry-after': retryAfter },
        body: { error: 'too_many_runs', message: `more than ${runs?.limit} runs are in flight; retry later` },
      };
    }
    try {
      await writeWithin(sendTimeoutMs, submitTasks(producer, codec, [task]));
    } catch (err) {
      release();
      logger.warn('task not written', { thought_id: task.thought_id, source: task.source, error: err });
      return {
        status: 503,
        headers: { 'retry-after': retryAfter },
        body: { error: 'unavailable', message: `the task could not be written to Kafka; retry later (${errorMessage(err)})` },
      };
    }
    const ids = { thought_id: task.thought_id, task_id: task.task_id };
    onWritten?.(ids);
    logger.info('task accepted', { ...ids, kind: task.kind, source: task.source, external_id: task.external_id, ...(keyId ? { key_id: keyId } : {}) });
    return { status: 202, body: ids };
  };

  /** The key check, before the body is read: null to go on (with the key's id), else the answer. */
  const admit = (req: IncomingMessage): { keyId: string | null } | Reply => {
    if (!guard) return { keyId: null };
    const admission = guard.admit(req.headers.authorization);
    if (admission.ok) return { keyId: admission.keyId };
    req.resume();
    if (admission.status === 429) {
      metrics.apiKeys.inc({ key_id: admission.keyId, outcome: 'rate_limited' });
      logger.warn('task refused: key over its rate limit', { key_id: admission.keyId, retry_after_s: admission.retryAfterSeconds });
      return { status: 429, headers: { 'retry-after': String(admission.retryAfterSeconds) }, body: { error: 'rate_limited' } };
    }
    metrics.apiKeys.inc({ key_id: admission.keyId ?? 'none', outcome: 'unauthorized' });
    logger.warn('task refused: unauthorized', { reason: admission.reason, ...(admission.keyId ? { key_id: admission.keyId } : {}) });
    return UNAUTHORIZED;
  };

  const tasksRoute = async (req: IncomingMessage): Promise<Reply> => {
    const admitted = admit(req);
    if ('status' in admitted) return admitted;
    const { keyId } = admitted;
    // Counted as allowed unless the scope check below refuses it (a 400 or 413 passed the key check).
    let outcome: 'allowed' | 'forbidden' = 'allowed';
    try {
      const body = await readBody(req, options.maxBodyBytes);
      if (body === 'too_large') return tooLarge(options.maxBodyBytes);
      const parsed = parseJson(body, req);
      if ('error' in parsed) return parsed.error;
      if (!validate(parsed.value))
        return { status: 400, body: { error: 'invalid_task', message: 'the task has invalid fields', fields: fieldErrors(validate.errors) } };
      const value = parsed.value;
      const source = value.source ?? 'api';
      if (value.metadata && API_KEY_ID_METADATA in value.metadata) {
        const message = `metadata.${API_KEY_ID_METADATA} is set by the ingress, not by the client`;
        return { status: 400, body: { error: 'invalid_task', message, fields: [{ field: `metadata/${API_KEY_ID_METADATA}`, message }] } };
      }
      if (keyId !== null && !guard!.allows(keyId, source)) {
        outcome = 'forbidden';
        logger.warn('task refused: key not scoped to the source', { key_id: keyId, source });
        return FORBIDDEN;
      }
      const metadata = { ...value.metadata, ...(keyId !== null ? { [API_KEY_ID_METADATA]: keyId } : {}) };
      return await accept({ text: value.text, source, external_id: value.external_id ?? null, metadata }, undefined, keyId ?? undefined);
    } finally {
      if (keyId !== null) metrics.apiKeys.inc({ key_id: keyId, outcome });
    }
  };

  const webhookRoute = async (req: IncomingMessage, source: WebhookSource): Promise<Reply> => {
    const handler = handlers[source];
    const secret = webhookOptions.secrets[source];
    if (!secret) {
      req.resume();
      return {
        status: 401,
        body: { error: 'source_not_configured', message: `webhooks from ${source} are refused: no secret is configured (set ${WEBHOOK_SECRET_ENV[source]})` },
      };
    }
    const body = await readBody(req, options.maxBodyBytes);
    if (body === 'too_large') return tooLarge(options.maxBodyBytes);
    const signature = handler.verify(req.headers, body, secret, now());
    if (!signature.ok) {
      logger.warn('webhook refused', { source, reason: signature.reason });
      if (signature.reason === 'stale')
        return { status: 401, body: { error: 'stale_signature', message: 'the signed timestamp is outside the accepted window' } };
      return {
        status: 401,
        body: { error: 'invalid_signature', message: `the request signature is ${signature.reason === 'mismatch' ? 'wrong' : signature.reason}` },
      };
    }
    const parsed = parseJson(body, req);
    if ('error' in parsed) return parsed.error;
    const decision = handler.interpret(req.headers, parsed.value, signature);
    if (decision.kind === 'invalid') return { status: 400, body: { error: 'invalid_event', message: decision.message, fields: decision.fields } };
    if (decision.kind === 'ignored') {
      logger.info('webhook ignored', { source, reason: decision.reason });
      return { status: 202, body: { ignored: true, reason: decision.reason } };
    }
    if (decision.eventAtMs !== null && !(now() - decision.eventAtMs <= maxEventAgeMs)) {
      logger.warn('webhook refused', { source, reason: 'stale_event', delivery: decision.deliveryKey });
      return { status: 401, body: { error: 'stale_event', message: `the event is older than ${Math.round(maxEventAgeMs / 1000)} s (or has no valid time)` } };
    }
    const claim = await deliveries.claim(decision.deliveryKey);
    if (claim.state === 'duplicate') {
      logger.info('webhook duplicate: nothing written', { source, delivery: decision.deliveryKey, ...claim.result });
      return { status: 200, body: { duplicate: true, ...claim.result } };
    }
    let written: { thought_id: string; task_id: string } | null = null;
    try {
      return await accept(decision.task, (ids) => (written = ids));
    } finally {
      claim.settle(written);
    }
  };

  const readJson = async (req: IncomingMessage) => {
    const body = await readBody(req, options.maxBodyBytes);
    return body === 'too_large' ? { error: tooLarge(options.maxBodyBytes) } : parseJson(body, req);
  };
  const k = deps.kafka;
  const reads = k
    ? runReadRoutes({ kafka: k, codec, logger, guard, maxStreams: options.maxStreams ?? 100, heartbeatMs: options.streamHeartbeatMs ?? 15000 })
    : null;
  const noReads = async (): Promise<Reply> => ({
    status: 503,
    body: { error: 'unavailable', message: 'this ingress was started without a Kafka client to read runs' },
  });
  const a2a = k
    ? a2aRoutes({ kafka: k, codec, logger, producer, now, sendTimeoutMs, guard, maxBodyBytes: options.maxBodyBytes, skills: [], ...options.a2a })
    : null;
  const runReads = k
    ? { state: (id: string) => readRunState({ kafka: k, codec, logger }, id), snapshot: (id: string) => readRunSnapshot({ kafka: k, codec }, id) }
    : null;
  const decisions = approvalRoutes({ guard, producer, codec, logger, now, sendTimeoutMs, readJson, reads: runReads, edits: deps.edits ?? null });
  if (runs) metrics.trackInFlight(() => runs.size);
  const openapi = JSON.stringify(ingressOpenApi());
  const routes: Record<IngressOperation, (req: IncomingMessage, params: Record<string, string>, res: ServerResponse) => Promise<Reply | void>> = {
    health: async () => ({ status: 200, body: { ok: true, in_flight: runs?.size ?? null } }),
    metrics: async (_req, _params, res) => {
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(await metrics.registry.metrics());
    },
    openapi: async (_req, _params, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(openapi),
    submitTask: (req) => tasksRoute(req),
    approveRun: (req, params) => decisions.decide(req, params.thought_id!, 'approve'),
    denyRun: (req, params) => decisions.decide(req, params.thought_id!, 'deny'),
    cancelRun: (req, params) => decisions.cancel(req, params.thought_id!),
    runEvents: (req, params, res) => reads?.runEvents(req, res, params.thought_id!) ?? noReads(),
    ticketEvents: (req, _params, res) => reads?.externalEvents(req, res) ?? noReads(),
    getRun: (req, params) => reads?.runState(req, params.thought_id!) ?? noReads(),
    agentCard: (req, _params, res) => serveAgentCard(req, res, options.a2a),
    a2a: (req, _params, res) => a2a?.rpc(req, res) ?? (req.resume(), noReads()),
    webhook: async (req, params) => {
      const source = params.source!;
      if ((WEBHOOK_SOURCES as readonly string[]).includes(source)) return webhookRoute(req, source as WebhookSource);
      req.resume();
      return { status: 404, body: { error: 'unknown_source', message: `no webhook source "${source}"; known sources: ${WEBHOOK_SOURCES.join(', ')}` } };
    },
  };
  const match = routeMatcher(INGRESS_ROUTES);
  const server = createServer(async (req, res) => {
    const path = pathOf(req.url);
    const found = match(req.method, path);
    // Routes as labels, never raw paths (unbounded): an unknown webhook source counts as "webhooks/unknown".
    const source = found?.params.source;
    const route = !found
      ? 'other'
      : source === undefined
        ? found.route.metric
        : `${found.route.metric}/${(WEBHOOK_SOURCES as readonly string[]).includes(source) ? source : 'unknown'}`;
    const endTimer = metrics.requestSeconds.startTimer({ route });
    res.once('finish', () => {
      endTimer();
      metrics.requests.inc({ route, status: String(res.statusCode) });
    });
    try {
      // Another method on a POST route is 405; on a GET route (and on a path no route has) 404.
      if (found && !found.methodAllowed && found.route.method === 'POST') {
        req.resume();
        return reply(res, { status: 405, headers: { allow: 'POST' }, body: { error: 'method_not_allowed', message: 'use POST' } });
      }
      if (!found?.methodAllowed)
        return reply(res, {
          status: 404,
          body: {
            error: 'not_found',
            message: `no route ${req.method} ${path}; try ${INGRESS_ROUTES.map((r) => `${r.method} ${r.path}`).join(', ')}`,
          },
        });
      const answer = await routes[found.route.operationId](req, found.params, res);
      if (answer) reply(res, answer);
    } catch (err) {
      logger.error('ingress request failed', { error: err });
      if (!res.headersSent) reply(res, { status: 500, body: { error: 'internal', message: errorMessage(err) } });
    }
  });
  let listening: Listening;
  try {
    listening = await listen(server, options.host, options.port);
  } catch (err) {
    await outcomes?.stop();
    throw err;
  }
  return {
    ...listening,
    inFlight: () => runs?.size ?? 0,
    close: async () => {
      await listening.close();
      await outcomes?.stop();
    },
  };
}
