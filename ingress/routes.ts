/**
 * The ingress's route table: every route it serves, with the statuses each answers. The dispatch
 * (ingress/server.ts) matches requests against it and `GET /openapi.json` serves the OpenAPI
 * document made from it (docs/openapi/ingress.json is the generated copy:
 * `npm run docs:openapi`). Any route answers 500 `internal` on an unexpected failure (a bug).
 */
import { openApiDocument, type ResponseSpec, type RouteSpec } from '../runtime/openapi.ts';
import { packageVersion } from '../runtime/paths.ts';
import { cancelBodySchema, decisionBodySchema } from './approvals.ts';
import { A2A_ROUTES, type A2aOperation } from './a2a/spec.ts';
import { WEBHOOK_SOURCES } from './webhooks.ts';

/** The body of `POST /v1/tasks`. */
export const taskRequestSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: {
    text: { type: 'string', minLength: 1, maxLength: 20000 },
    source: { type: 'string', pattern: '^[a-z0-9][a-z0-9_.-]{0,63}$' },
    external_id: { type: 'string', minLength: 1, maxLength: 256 },
    metadata: {
      type: 'object',
      additionalProperties: { type: 'string', maxLength: 2000 },
      maxProperties: 50,
      properties: { callback_url: { type: 'string', pattern: '^https?://[^\\s]+$' } },
    },
  },
} as const;

/** The operations; the server has one handler for each. */
export type IngressOperation =
  'health' | 'metrics' | 'openapi' | 'submitTask' | 'webhook' | 'approveRun' | 'denyRun' | 'cancelRun' | 'runEvents' | 'ticketEvents' | 'getRun' | A2aOperation;

export interface IngressRoute extends RouteSpec {
  operationId: IngressOperation;
  /** Label `route` of `tao_ingress_requests_total` (webhooks: `webhooks/<source>`, `webhooks/unknown`). */
  metric: string;
}

const JSON_TYPE = 'application/json';
const retry = ['retry-after'];
const r405: ResponseSpec = { description: 'any other method on this path (`Allow: POST`)', errors: ['method_not_allowed'], headers: ['allow'] };
const r413: ResponseSpec = { description: 'the body is over `TAO_INGRESS_MAX_BODY_BYTES` (the connection is closed)', errors: ['payload_too_large'] };
const r503: ResponseSpec = {
  description: 'Kafka did not acknowledge the write within the send timeout; a retry maps to the same thought_id',
  errors: ['unavailable'],
  headers: retry,
};
const r500: ResponseSpec = { description: 'an unexpected failure (a bug)', errors: ['internal'] };
const inFlight: ResponseSpec = {
  description: 'a new run while `TAO_INGRESS_MAX_IN_FLIGHT` runs accepted here have no outcome yet, or the key is over its rate',
  errors: ['too_many_runs', 'rate_limited'],
  headers: retry,
};
const accepted: ResponseSpec = { description: 'the task is durably in `tao.tasks`: `{thought_id, task_id}`' };
const THOUGHT_ID = { thought_id: { description: "the run's thought_id", pattern: '[A-Za-z0-9:_.-]{1,200}' } };

const decisionAuth = {
  401: { description: 'a missing, malformed, unknown or revoked key (`WWW-Authenticate: Bearer`)', errors: ['unauthorized'], headers: ['www-authenticate'] },
  403: { description: 'a key without the `approve` scope, or an ingress running without keys', errors: ['forbidden'] },
  405: r405,
  413: r413,
  429: { description: 'the key is over its rate', errors: ['rate_limited'], headers: retry },
  500: r500,
  503: { ...r503, description: 'Kafka did not acknowledge the record within the send timeout, or the run could not be read' },
} as const;
const unknownRun: ResponseSpec = { description: 'the log has no record of the run (checked when the ingress reads runs)', errors: ['unknown_run'] };

const editRefused: ResponseSpec = {
  description: "the edited `arguments` break the tool's input contract or a policy of the run's skill: `{error, message, policy?}`",
  errors: ['edit_refused'],
};

const decision = (verdict: 'approve' | 'deny'): IngressRoute => ({
  method: 'POST',
  path: `/v1/runs/{thought_id}/${verdict}`,
  operationId: verdict === 'approve' ? 'approveRun' : 'denyRun',
  summary: `${verdict === 'approve' ? 'Approve' : 'Deny'} a parked call (\`interrupt\`) or the calls of a run awaiting approval (written to tao.tasks as a DECISION task)`,
  description:
    verdict === 'approve'
      ? 'With `interrupt` and `arguments`, the call runs with the edited arguments; the proposed ones stay in the record. docs/INGRESS.md, "Approvals".'
      : 'docs/INGRESS.md, "Approvals".',
  scope: 'approve',
  metric: 'approvals',
  params: THOUGHT_ID,
  body: { contentType: JSON_TYPE, schema: decisionBodySchema, required: false },
  responses: {
    202: { description: 'Kafka acknowledged the decision: `{thought_id, task_id, verdict, interrupt?}`' },
    400: {
      description:
        'malformed JSON, a body that is not `{interrupt?, arguments?, step?, reason?}`, `arguments` without approve and `interrupt`, or both `interrupt` and `step`',
      errors: ['invalid_json', 'invalid_decision'],
    },
    404: unknownRun,
    409: {
      description:
        'the `interrupt` is not pending (decided already, or the run moved on): `{error, message, pending: [{interrupt_id, step_id, tool, arguments, rule, why}]}`',
      errors: ['stale_decision'],
    },
    ...(verdict === 'approve' ? ({ 422: editRefused } as Record<number, ResponseSpec>) : {}),
    ...decisionAuth,
  },
});

const cancel: IngressRoute = {
  method: 'POST',
  path: '/v1/runs/{thought_id}/cancel',
  operationId: 'cancelRun',
  summary: 'Cancel a run that has not ended (written to tao.tasks as a CANCEL task; Thought ends it `cancelled`)',
  scope: 'approve',
  metric: 'approvals',
  params: THOUGHT_ID,
  body: { contentType: JSON_TYPE, schema: cancelBodySchema, required: false },
  responses: {
    202: { description: 'Kafka acknowledged the cancel: `{thought_id, task_id, verdict: "cancel"}`' },
    400: { description: 'malformed JSON or a body that is not `{reason?}`', errors: ['invalid_json', 'invalid_decision'] },
    404: unknownRun,
    409: { description: 'the run has ended already: `{error, message, status}`', errors: ['run_ended'] },
    ...decisionAuth,
  },
};

const noReads: ResponseSpec = { description: 'an ingress started without a Kafka client to read runs', errors: ['unavailable'] };
const readAuth = {
  401: { description: 'a missing, malformed, unknown or revoked key (`WWW-Authenticate: Bearer`)', errors: ['unauthorized'], headers: ['www-authenticate'] },
  403: { description: 'a key without the `read` scope', errors: ['forbidden'] },
} as const;
const stream = (description: string): Readonly<Record<number, ResponseSpec>> => ({
  200: {
    description: `${description} Server-Sent Events (\`id\` a cursor, \`event\` task, reply, decision, timer, wave, results, verdicts, approval, input_required, outcome; \`data\` JSON), with \`: keepalive\` comments while idle; closed after the run's ending outcome. docs/INGRESS.md`,
    contentType: 'text/event-stream',
  },
  400: { description: 'a `Last-Event-ID` (or `after`) that is not a cursor of this stream', errors: ['invalid_cursor', 'invalid_query'] },
  ...readAuth,
  429: {
    description: '`TAO_INGRESS_MAX_STREAMS` streams are open here, or the key is over its rate',
    errors: ['too_many_streams', 'rate_limited'],
    headers: retry,
  },
  500: r500,
  503: noReads,
});
const AFTER = { after: 'a cursor (an event `id`) to go on after, for clients that cannot send `Last-Event-ID`' };

/** Every route of the ingress, in dispatch order. */
export const INGRESS_ROUTES: readonly IngressRoute[] = [
  {
    method: 'POST',
    path: '/v1/tasks',
    operationId: 'submitTask',
    summary: 'Submit a task (a new run, or a reply to one)',
    description: "Same source + external_id map to the same thought_id. With API keys, the key must be scoped to the task's `source` (default `api`).",
    scope: 'tasks',
    keyOptional: true,
    metric: 'tasks',
    body: { contentType: JSON_TYPE, schema: taskRequestSchema, required: true },
    responses: {
      202: accepted,
      400: { description: 'malformed JSON or invalid fields: `{error, message, fields}`', errors: ['invalid_json', 'invalid_task'] },
      401: {
        description: 'a missing, malformed, unknown or revoked key (`WWW-Authenticate: Bearer`)',
        errors: ['unauthorized'],
        headers: ['www-authenticate'],
      },
      403: { description: "the key may not submit as the task's source", errors: ['forbidden'] },
      405: r405,
      413: r413,
      429: inFlight,
      500: r500,
      503: r503,
    },
  },
  {
    method: 'POST',
    path: '/v1/webhooks/{source}',
    operationId: 'webhook',
    summary: 'Take a signed webhook delivery (GitHub, Jira) as a task',
    description: 'Signatures, mapping and replay protection: ingress/webhooks.ts.',
    scope: null,
    metric: 'webhooks',
    params: { source: { description: `the webhook source: ${WEBHOOK_SOURCES.join(', ')}` } },
    body: { contentType: JSON_TYPE, schema: { type: 'object' }, required: true },
    responses: {
      200: { description: 'a delivery already written inside the delivery window: `{duplicate: true, thought_id, task_id}` (nothing written again)' },
      202: { description: 'the task is durably written `{thought_id, task_id}`, or an event not handled `{ignored: true, reason}`' },
      400: { description: 'malformed JSON or an event with invalid fields', errors: ['invalid_json', 'invalid_event'] },
      401: {
        description: 'no secret configured for the source, a missing/wrong signature, or a too old timestamp or event',
        errors: ['source_not_configured', 'invalid_signature', 'stale_signature', 'stale_event'],
      },
      404: { description: 'an unknown source', errors: ['unknown_source'] },
      405: r405,
      413: r413,
      429: { description: 'a new run while `TAO_INGRESS_MAX_IN_FLIGHT` runs accepted here have no outcome yet', errors: ['too_many_runs'], headers: retry },
      500: r500,
      503: r503,
    },
  },
  decision('approve'),
  decision('deny'),
  cancel,
  {
    method: 'GET',
    path: '/v1/runs/events',
    operationId: 'ticketEvents',
    summary: 'Follow the run of a ticket: the events of the run that `source` + `external_id` map to',
    scope: 'read',
    keyOptional: true,
    metric: 'run_events',
    query: { source: 'the task source (required)', external_id: "the ticket's external id (required)", ...AFTER },
    responses: stream("The run's committed records, as `GET /v1/runs/{thought_id}/events` sends them."),
  },
  {
    method: 'GET',
    path: '/v1/runs/{thought_id}/events',
    operationId: 'runEvents',
    summary: 'Follow a run: its committed records as Server-Sent Events, resumable with `Last-Event-ID`',
    scope: 'read',
    keyOptional: true,
    metric: 'run_events',
    params: THOUGHT_ID,
    query: AFTER,
    responses: stream("The run's committed records in their causal order, from its first or after the cursor."),
  },
  {
    method: 'GET',
    path: '/v1/runs/{thought_id}',
    operationId: 'getRun',
    summary: "A run's current state: status, waves, steps so far, the outcome once there is one",
    scope: 'read',
    keyOptional: true,
    metric: 'runs',
    params: THOUGHT_ID,
    responses: {
      200: { description: '`{thought_id, status, source, external_id, waves, steps, outcome, cursor}`' },
      404: { description: 'the log has no record of the run', errors: ['unknown_run'] },
      ...readAuth,
      429: { description: 'the key is over its rate', errors: ['rate_limited'], headers: retry },
      500: r500,
      503: noReads,
    },
  },
  ...A2A_ROUTES,
  {
    method: 'GET',
    path: '/health',
    operationId: 'health',
    summary: 'Liveness: `{ok: true, in_flight}`',
    scope: null,
    metric: 'health',
    responses: { 200: { description: '`{ok: true, in_flight}` (in_flight null when the limit is not applied)' }, 500: r500 },
  },
  {
    method: 'GET',
    path: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics (`tao_ingress_*`)',
    scope: null,
    metric: 'metrics',
    responses: { 200: { description: 'the metrics, Prometheus text format', contentType: 'text/plain' }, 500: r500 },
  },
  {
    method: 'GET',
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This document (no key needed)',
    scope: null,
    metric: 'openapi',
    responses: { 200: { description: 'the OpenAPI 3.1 document of the ingress' }, 500: r500 },
  },
];

/** The ingress's OpenAPI document, made from {@link INGRESS_ROUTES}. */
export function ingressOpenApi(): Record<string, unknown> {
  return openApiDocument(
    {
      title: 'tao ingress',
      version: packageVersion(),
      description:
        'The HTTP ingress of tao-kafka (`tao ingress`): tasks, webhooks and decisions, written to Kafka. Errors are JSON `{error, message?, fields?}`; a path no route has answers 404 `not_found`. API keys: docs/INGRESS.md.',
      jsonType: JSON_TYPE,
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'an ingress API key (`tao ingress key`); scopes `tasks`, `approve`' } },
    },
    INGRESS_ROUTES,
  );
}
