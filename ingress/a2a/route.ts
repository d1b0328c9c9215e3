/**
 * The ingress's A2A routes (docs/A2A.md):
 *
 * - `GET /.well-known/agent-card.json`: the agent card (./card.ts), no key needed. Its endpoint URL
 *   is `publicUrl` (TAO_A2A_PUBLIC_URL) when set, else `http://<Host header>`.
 * - `POST /a2a`: A2A v1.0 JSON-RPC (the SDK's JsonRpcTransportHandler over ./handler.ts). The
 *   streaming methods answer Server-Sent Events. Requests need the `A2A-Version: 1.0` header (the
 *   SDK's clients send it). With API keys: a bearer key (HTTP 401 without a valid one, 429 over its
 *   rate), with scope `tasks` and source `a2a` for SendMessage and SendStreamingMessage, `tasks` for
 *   CancelTask, `read` for GetTask and SubscribeToTask (HTTP 403 otherwise), and `approve` to answer
 *   an approval. Every answer is a JSON-RPC envelope.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { formatSSEErrorEvent, formatSSEEvent } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion, type User } from '@a2a-js/sdk/server';
import type { ApiKeyScope } from '../api-keys.ts';
import type { ApiKeyGuard } from '../auth.ts';
import { readBody, type Reply } from '../http-body.ts';
import { agentCard, agentCardJson, type A2aSkill } from './card.ts';
import { A2A_ERRORS, CALLER, RunRequestHandler, type A2aDeps, type Caller } from './handler.ts';
import { A2A_SOURCE } from './tasks.ts';

export interface A2aRouteDeps extends A2aDeps {
  guard: ApiKeyGuard | null;
  maxBodyBytes: number;
  skills: readonly A2aSkill[];
  /** The ingress's public base URL (no trailing slash), for the card; default from the Host header. */
  publicUrl?: string;
}

/** The scope each method needs (methods not listed need a valid key only; the SDK answers them). */
const SCOPES: Record<string, ApiKeyScope> = {
  SendMessage: 'tasks',
  SendStreamingMessage: 'tasks',
  CancelTask: 'tasks',
  GetTask: 'read',
  SubscribeToTask: 'read',
  ListTasks: 'read',
};

class KeyUser implements User {
  constructor(private readonly keyId: string | null) {}
  get isAuthenticated(): boolean {
    return this.keyId !== null;
  }
  get userName(): string {
    return this.keyId === null ? 'anonymous' : `key:${this.keyId}`;
  }
}

const envelope = (id: unknown, code: number, message: string) => ({ jsonrpc: '2.0', id: id ?? null, error: { code, message } });

/** The two handlers; `rpc` answers itself when it streams. */
export function a2aRoutes(deps: A2aRouteDeps) {
  const { guard, logger } = deps;
  const card = agentCard(deps.publicUrl ?? 'http://localhost', deps.skills);
  const transport = new JsonRpcTransportHandler(new RunRequestHandler(card, deps));

  const rpc = async (req: IncomingMessage, res: ServerResponse): Promise<Reply | void> => {
    let keyId: string | null = null;
    if (guard) {
      const admission = guard.admit(req.headers.authorization);
      if (!admission.ok) {
        req.resume();
        if (admission.status === 429)
          return {
            status: 429,
            headers: { 'retry-after': String(admission.retryAfterSeconds) },
            body: envelope(null, A2A_ERRORS.rateLimited, 'rate limited: this key is over its rate'),
          };
        return {
          status: 401,
          headers: { 'www-authenticate': 'Bearer' },
          body: envelope(null, A2A_ERRORS.unauthorized, 'unauthorized: send a valid ingress API key as Authorization: Bearer <key>'),
        };
      }
      keyId = admission.keyId;
    }
    const raw = await readBody(req, deps.maxBodyBytes);
    if (raw === 'too_large')
      return { status: 413, headers: { connection: 'close' }, body: envelope(null, -32600, `the request is over ${deps.maxBodyBytes} bytes`) };
    const text = raw.toString('utf8');
    let request: { id?: unknown; method?: unknown } | null = null;
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) request = parsed as { id?: unknown; method?: unknown };
    } catch {
      // The transport answers the parse error.
    }
    const scope = typeof request?.method === 'string' ? SCOPES[request.method] : undefined;
    if (guard && keyId !== null && scope) {
      const refused = !guard.has(keyId, scope)
        ? `this key has no ${scope} scope`
        : scope === 'tasks' && request?.method !== 'CancelTask' && !guard.allows(keyId, A2A_SOURCE)
          ? `this key may not submit tasks as source ${A2A_SOURCE}`
          : null;
      if (refused) {
        logger.warn('a2a: refused', { key_id: keyId, method: request?.method, reason: refused });
        return { status: 403, body: envelope(request?.id, A2A_ERRORS.forbidden, `forbidden: ${refused}`) };
      }
    }
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    const caller: Caller = { keyId, may: (s) => (guard && keyId !== null ? guard.has(keyId, s) : s !== 'approve'), signal: gone.signal };
    const version = req.headers['a2a-version'];
    const context = new ServerCallContext({
      user: new KeyUser(keyId),
      requestedVersion: typeof version === 'string' && version !== '' ? version : undefined,
      state: new Map([[CALLER, caller]]),
    });
    try {
      validateVersion(context.requestedVersion, card, 'JSONRPC');
    } catch (err) {
      return { status: 200, body: { jsonrpc: '2.0', id: request?.id ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(err) } };
    }
    const answer = await transport.handle(request ?? text, context);
    if (!(Symbol.asyncIterator in answer)) return { status: 200, body: answer };
    const events = answer[Symbol.asyncIterator]();
    let first: IteratorResult<unknown>;
    try {
      first = await events.next();
    } catch (err) {
      return { status: 200, body: { jsonrpc: '2.0', id: request?.id ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(err) } };
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    try {
      for (let next = first; !next.done; next = await events.next()) res.write(formatSSEEvent(next.value));
    } catch (err) {
      logger.warn('a2a: stream stopped', { method: request?.method, error: err });
      if (!res.writableEnded)
        res.write(formatSSEErrorEvent({ jsonrpc: '2.0', id: request?.id ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }));
    } finally {
      res.end();
    }
  };

  return { rpc };
}

/** `GET /.well-known/agent-card.json` (needs no Kafka). */
export async function serveAgentCard(
  req: IncomingMessage,
  res: ServerResponse,
  options: { skills: readonly A2aSkill[]; publicUrl?: string } | undefined,
): Promise<void> {
  const base = options?.publicUrl ?? `http://${req.headers.host ?? 'localhost'}`;
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(JSON.stringify(agentCardJson(base, options?.skills ?? [])));
}
