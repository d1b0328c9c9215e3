/**
 * The console's route table: every route `tao ui` serves, with the statuses each answers. The
 * dispatch (console/server.ts) matches requests against it and `GET /openapi.json` serves the
 * OpenAPI document made from it (docs/openapi/console.json is the generated copy:
 * `npm run docs:openapi`).
 *
 * Every route but `POST /login` and `GET /openapi.json` first passes the access check
 * (console/auth.ts): 401 without a console key off loopback, 403 for a non-loopback `Host` on
 * loopback, 429 over the key's rate. A POST must not be cross-site (403) and, but for the login
 * form, must be `application/json` (415). Errors are JSON `{"error": text}`; any route answers 500
 * on an unexpected failure, and a path no route has 404 `{"error": "no route ..."}`.
 */
import { decisionBodySchema } from '../ingress/approvals.ts';
import { openApiDocument, type ResponseSpec, type RouteSpec } from '../runtime/openapi.ts';
import { packageVersion } from '../runtime/paths.ts';

export type ConsoleOperation =
  | 'page'
  | 'runPage'
  | 'deadLettersPage'
  | 'healthPage'
  | 'releasesPage'
  | 'asset'
  | 'reportCss'
  | 'login'
  | 'openapi'
  | 'events'
  | 'listRuns'
  | 'getRun'
  | 'runReport'
  | 'verifyRun'
  | 'forkRun'
  | 'approveRun'
  | 'denyRun'
  | 'replyRun'
  | 'listDeadLetters'
  | 'redrive'
  | 'health'
  | 'listManifests';

export interface ConsoleRoute extends RouteSpec {
  operationId: ConsoleOperation;
}

const JSON_TYPE = 'application/json';
const HTML = 'text/html; charset=utf-8';
const r500: ResponseSpec = { description: 'an unexpected failure (a bug)' };
const r503: ResponseSpec = { description: 'the cluster did not answer in time (retry)' };
const r404run: ResponseSpec = { description: 'the log has no record of the run' };
const r400id: ResponseSpec = { description: 'the run id is not a valid URL component' };

/** The access check's answers, on every route it guards; `html`: a browser's GET of a page gets the login page with its 401. */
const access = (html: boolean): Record<number, ResponseSpec> => ({
  401: {
    description: html ? 'off loopback without a console key: the login page' : 'off loopback without a console key',
    ...(html ? { contentType: HTML } : {}),
  },
  403: { description: 'on loopback, a request whose `Host` is not a loopback name' },
  429: { description: 'the key is over its rate (`Retry-After`)', headers: ['retry-after'] },
  500: r500,
});
/**
 * A POST's answers besides the access check's. A JSON body over 64 KiB is read as no body: the
 * route answers it 400, as it does malformed JSON (only the login form answers 413).
 */
const post = (): Record<number, ResponseSpec> => ({
  403: { description: 'a request from another site (`Origin`, `Sec-Fetch-Site`), or on loopback a non-loopback `Host`' },
  415: { description: 'a body that is not `application/json`' },
});
const RUN_ID = { id: { description: "the run's thought_id (URL-encoded)" } };
const page = (path: string, operationId: ConsoleOperation, summary: string): ConsoleRoute => ({
  method: 'GET',
  path,
  operationId,
  summary,
  scope: 'console',
  keyOptional: true,
  ...(path.includes('{id}') ? { params: { id: { description: "the run's thought_id" } } } : {}),
  responses: { 200: { description: 'the page shell (console/static/index.html)', contentType: HTML }, ...access(true) },
});
const decision = (verdict: 'approve' | 'deny'): ConsoleRoute => ({
  method: 'POST',
  path: `/api/runs/{id}/${verdict}`,
  operationId: verdict === 'approve' ? 'approveRun' : 'denyRun',
  summary: `${verdict === 'approve' ? 'Approve' : 'Deny'} a run awaiting approval, recorded as made by the key's id (\`key:<id>\`) or, on loopback, the OS user`,
  scope: 'console',
  keyOptional: true,
  params: RUN_ID,
  body: { contentType: JSON_TYPE, schema: decisionBodySchema, required: false },
  responses: {
    202: { description: 'Kafka took the decision: `{thought_id, verdict, task_id}`' },
    400: {
      description:
        'a body that is not `{interrupt?, arguments?, step?, reason?}` (or is over 64 KiB), `arguments` without approve and `interrupt`, or a run id that is not a valid URL component',
    },
    404: r404run,
    409: { description: 'the run is not awaiting approval, or the `interrupt` is not pending (`{error, code: "stale_decision", pending}`)' },
    ...(verdict === 'approve'
      ? ({
          422: {
            description: 'the edited `arguments` break the tool\'s input contract or a policy of the run\'s skill (`{error, code: "edit_refused", policy?}`)',
          },
        } as Record<number, ResponseSpec>)
      : {}),
    503: r503,
    ...access(false),
    ...post(),
    403: { description: 'a key without the `approve` scope, a request from another site, or on loopback a non-loopback `Host`' },
  },
});

/** Every route of the console, in dispatch order. */
export const CONSOLE_ROUTES: readonly ConsoleRoute[] = [
  page('/', 'page', 'The runs page'),
  page('/runs/{id}', 'runPage', "A run's page"),
  page('/dead-letters', 'deadLettersPage', 'The dead letters page'),
  page('/health', 'healthPage', 'The health page'),
  page('/releases', 'releasesPage', 'The releases page: per-manifest rates'),
  {
    method: 'GET',
    path: '/static/{file}',
    operationId: 'asset',
    summary: "The page's assets (console/static/)",
    scope: 'console',
    keyOptional: true,
    params: { file: { description: 'the file, `[vendor/]<name>.js|css|svg`', pattern: '.*' } },
    responses: { 200: { description: 'the file', contentType: 'text/javascript; charset=utf-8' }, 404: { description: 'no such asset' }, ...access(false) },
  },
  {
    method: 'GET',
    path: '/report.css',
    operationId: 'reportCss',
    summary: "The run report's style sheet",
    scope: 'console',
    keyOptional: true,
    responses: { 200: { description: 'the style sheet', contentType: 'text/css; charset=utf-8' }, ...access(false) },
  },
  {
    method: 'POST',
    path: '/login',
    operationId: 'login',
    summary: 'The login form: keeps a console key in an HttpOnly cookie',
    scope: null,
    body: { contentType: 'application/x-www-form-urlencoded', schema: { type: 'object', properties: { key: { type: 'string' } } }, required: true },
    responses: {
      303: { description: 'the key is a console key: `Set-Cookie` and `Location: /`', headers: ['location', 'set-cookie'] },
      401: { description: 'not a console key: the login page again', contentType: HTML },
      403: { description: 'a request from another site' },
      413: { description: 'a body over 64 KiB' },
      500: r500,
    },
  },
  {
    method: 'GET',
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This document (no key needed)',
    scope: null,
    responses: { 200: { description: 'the OpenAPI 3.1 document of the console' }, 500: r500 },
  },
  {
    method: 'GET',
    path: '/api/events',
    operationId: 'events',
    summary: 'Server-sent events: `ready`, `runs` (changed summaries)',
    scope: 'console',
    keyOptional: true,
    responses: { 200: { description: 'the event stream', contentType: 'text/event-stream; charset=utf-8' }, ...access(false) },
  },
  {
    method: 'GET',
    path: '/api/runs',
    operationId: 'listRuns',
    summary: 'Runs newest first, counts by status, facets (`"ready": false` while the index is rebuilt)',
    scope: 'console',
    keyOptional: true,
    query: {
      status: 'only runs of this status',
      flow: 'only runs of this flow',
      source: 'only runs of this source',
      from: 'started at or after (ISO time or ms since the epoch)',
      to: 'started before (ISO time or ms since the epoch)',
      q: 'text search',
      manifest: 'only runs made with this release (its manifest digest; `none`: runs whose records name none)',
      limit: 'page size',
      offset: 'page start',
    },
    responses: { 200: { description: 'the page of runs' }, 400: { description: '`from` or `to` is not a time' }, ...access(false) },
  },
  {
    method: 'GET',
    path: '/api/runs/{id}',
    operationId: 'getRun',
    summary: "The run's timeline (`tao replay --format json`)",
    scope: 'console',
    keyOptional: true,
    params: RUN_ID,
    responses: { 200: { description: 'the timeline' }, 400: r400id, 404: r404run, 503: r503, ...access(false) },
  },
  {
    method: 'GET',
    path: '/api/runs/{id}/report',
    operationId: 'runReport',
    summary: "The run's report body (HTML fragment)",
    scope: 'console',
    keyOptional: true,
    params: RUN_ID,
    responses: { 200: { description: 'the report body', contentType: HTML }, 400: r400id, 404: r404run, 503: r503, ...access(false) },
  },
  {
    method: 'POST',
    path: '/api/runs/{id}/verify',
    operationId: 'verifyRun',
    summary: 'The drift report (`tao replay --verify`)',
    scope: 'console',
    keyOptional: true,
    params: RUN_ID,
    responses: { 200: { description: '`{report, text}`' }, 400: r400id, 404: r404run, 503: r503, ...access(false), ...post() },
  },
  {
    method: 'POST',
    path: '/api/runs/{id}/fork',
    operationId: 'forkRun',
    summary: 'Fork the run from a point into the live loop (`tao replay --fork`)',
    scope: 'console',
    keyOptional: true,
    params: RUN_ID,
    body: {
      contentType: JSON_TYPE,
      schema: {
        type: 'object',
        required: ['point'],
        properties: { point: { type: ['string', 'integer'], description: 'a wave number (2) or a step id (S2)' } },
      },
      required: true,
    },
    responses: {
      200: { description: 'the new run: `{thought_id, parent, point, iteration}`' },
      400: { description: 'no valid `point` (a body that is not JSON or is over 64 KiB has none), or a run id that is not a valid URL component' },
      404: r404run,
      409: { description: 'the point is not in the run, or Thought would end the fork at once' },
      503: r503,
      ...access(false),
      ...post(),
    },
  },
  decision('approve'),
  decision('deny'),
  {
    method: 'POST',
    path: '/api/runs/{id}/reply',
    operationId: 'replyRun',
    summary: 'Answer a run awaiting input (`tao submit --reply`)',
    scope: 'console',
    keyOptional: true,
    params: RUN_ID,
    body: { contentType: JSON_TYPE, schema: { type: 'object', required: ['text'], properties: { text: { type: 'string', minLength: 1 } } }, required: true },
    responses: {
      202: { description: 'Kafka took the answer: `{thought_id, task_id}`' },
      400: { description: 'no `text` (a body that is not JSON or is over 64 KiB has none), or a run id that is not a valid URL component' },
      404: r404run,
      409: { description: 'the run is not awaiting input' },
      503: r503,
      ...access(false),
      ...post(),
      403: { description: 'a key without the `approve` scope, a request from another site, or on loopback a non-loopback `Host`' },
    },
  },
  {
    method: 'GET',
    path: '/api/dead-letters',
    operationId: 'listDeadLetters',
    summary: 'The dead letters (`tao dlq list`)',
    scope: 'console',
    keyOptional: true,
    query: { topic: 'only this dead-letter topic', reason: 'only this reason' },
    responses: { 200: { description: 'the listing' }, 503: r503, ...access(false) },
  },
  {
    method: 'POST',
    path: '/api/dead-letters/redrive',
    operationId: 'redrive',
    summary: 'Re-drive chosen dead letters exactly once (`tao dlq redrive`)',
    scope: 'console',
    keyOptional: true,
    body: {
      contentType: JSON_TYPE,
      schema: {
        type: 'object',
        required: ['topic', 'offsets'],
        properties: {
          topic: { type: 'string', minLength: 1 },
          offsets: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['partition', 'offset'],
              properties: { partition: { type: 'integer', minimum: 0 }, offset: { type: ['string', 'integer'] } },
            },
          },
        },
      },
      required: true,
    },
    responses: {
      200: { description: 'the re-drive report' },
      400: { description: 'no `topic` or no valid `offsets` (a body that is not JSON or is over 64 KiB has neither)' },
      409: { description: 'the topic is not a dead-lettered topic' },
      503: r503,
      ...access(false),
      ...post(),
    },
  },
  {
    method: 'GET',
    path: '/api/health',
    operationId: 'health',
    summary: "`tao status` with the index's rates, tool figures and outcomes per minute",
    scope: 'console',
    keyOptional: true,
    responses: { 200: { description: 'the status' }, 503: r503, ...access(false) },
  },
  {
    method: 'GET',
    path: '/api/manifests',
    operationId: 'listManifests',
    summary:
      "Per release (manifest digest), over the index's ended runs: runs, TCR, self-recovery, escalations, cost per run (`tao rollout status`), with the pointer's role",
    scope: 'console',
    keyOptional: true,
    responses: {
      200: {
        description:
          '`{ready, pointer, pointer_error, manifests: [{manifest, role, runs, completed, escalated, failed, tcr, hitFailure, recovered, srr, costPerRun, stepsPerRun}]}`',
      },
      ...access(false),
    },
  },
];

/** The console's OpenAPI document, made from {@link CONSOLE_ROUTES}. */
export function consoleOpenApi(): Record<string, unknown> {
  return openApiDocument(
    {
      title: 'tao console',
      version: packageVersion(),
      description:
        'The operator console of tao-kafka (`tao ui`): its pages and JSON API. On a loopback bind no key is asked; on any other every route but `/login` and `/openapi.json` needs an API key with the `console` scope (approve, deny and reply the `approve` scope too). Errors are JSON `{"error": text}`. Access: docs/CONSOLE.md.',
      jsonType: JSON_TYPE,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'an API key with the `console` scope (`tao ingress key --scopes console`)' },
        cookie: { type: 'apiKey', in: 'cookie', name: 'tao_console_key', description: 'the key, as the login page keeps it' },
      },
    },
    CONSOLE_ROUTES,
  );
}
