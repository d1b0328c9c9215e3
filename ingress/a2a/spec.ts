/** The A2A routes' entries in the ingress's route table (ingress/routes.ts, and so its OpenAPI document). */
import type { ResponseSpec, RouteSpec } from '../../runtime/openapi.ts';

export type A2aOperation = 'agentCard' | 'a2a';

/** An entry of the route table (ingress/routes.ts `IngressRoute`, declared here without importing it). */
interface A2aRoute extends RouteSpec {
  operationId: A2aOperation;
  metric: string;
}

const rpcError: ResponseSpec['schema'] = {
  type: 'object',
  required: ['jsonrpc', 'error'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: {},
    error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: { type: 'string' } } },
  },
};

export const A2A_ROUTES: readonly A2aRoute[] = [
  {
    method: 'GET',
    path: '/.well-known/agent-card.json',
    operationId: 'agentCard',
    summary: 'The A2A v1.0 agent card: the JSON-RPC endpoint, streaming, bearer keys, one skill per skills/ entry (docs/A2A.md; no key needed)',
    scope: null,
    metric: 'a2a_card',
    responses: { 200: { description: 'the agent card (A2A v1.0 `AgentCard`)' }, 500: { description: 'an unexpected failure (a bug)', errors: ['internal'] } },
  },
  {
    method: 'POST',
    path: '/a2a',
    operationId: 'a2a',
    summary: 'A2A v1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, SubscribeToTask, CancelTask (docs/A2A.md)',
    description:
      'Header `A2A-Version: 1.0`. Scopes by method: `tasks` (and source `a2a`) to send, `tasks` to cancel, `read` to get and subscribe, `approve` to answer an approval. A task id is a run id (thought_id).',
    scope: 'tasks',
    keyOptional: true,
    metric: 'a2a',
    body: { contentType: 'application/json', schema: { type: 'object', required: ['jsonrpc', 'method'] }, required: true },
    responses: {
      200: {
        description: 'a JSON-RPC response (a result or an A2A error); the streaming methods answer Server-Sent Events, one JSON-RPC response per `data:`',
      },
      401: {
        description: 'a missing, malformed, unknown or revoked key (`WWW-Authenticate: Bearer`), JSON-RPC error -32040',
        headers: ['www-authenticate'],
        schema: rpcError,
      },
      403: { description: "a key without the method's scope (or not scoped to source `a2a`), JSON-RPC error -32043", schema: rpcError },
      413: { description: 'the body is over `TAO_INGRESS_MAX_BODY_BYTES` (the connection is closed), JSON-RPC error -32600', schema: rpcError },
      429: { description: 'the key is over its rate, JSON-RPC error -32029', headers: ['retry-after'], schema: rpcError },
      500: { description: 'an unexpected failure (a bug)', errors: ['internal'] },
      503: { description: 'an ingress started without a Kafka client to read runs', errors: ['unavailable'] },
    },
  },
];
