/**
 * Action's MCP client: catalog tools with `transport: "mcp"` are called with `tools/call` over
 * Streamable HTTP through the official TypeScript SDK (`@modelcontextprotocol/sdk`), one attempt at
 * a time, inside invoke.ts's resilience (the same timeout per attempt, retries by class, breaker,
 * fallback tool, size cap, idempotency key as HTTP tools).
 *
 * - One MCP session per server (endpoint URL and header templates), opened on the first call and
 *   shared by every call to that server; a session the server no longer knows (HTTP 404) is opened
 *   again at once, and a session whose transport failed is dropped so the next attempt opens a new one.
 * - Every call carries the step's idempotency key in the request's `_meta`
 *   (`dev.tao/idempotency-key`) and in an `Idempotency-Key` header, and the attempt's `traceparent`.
 * - **Pinned definitions.** An imported tool records the digest of its definition
 *   (tools/mcp.ts). Before a call, the server's `tools/list` (cached per server, refreshed when
 *   older than TAO_MCP_LIST_TTL_MS and when the server announces `notifications/tools/list_changed`)
 *   must list the tool with that digest; otherwise the call is refused, nothing is sent, and the
 *   result is a `schema_changed` error naming both digests. Checked here, at call time, rather than
 *   at start-up: an MCP server is deployed on its own schedule, so a definition that changes while
 *   Action runs is refused within the cache's age (start-up alone would call a changed tool until the
 *   next restart), and Action starts, and serves every other tool, while a server is down.
 * - Errors map to the catalog's error classes (mcp-errors.ts): a transport failure is `network`, no
 *   answer within the tool's timeout `timeout`, an HTTP error status or a JSON-RPC error
 *   `http_status`, a result that is not a CallToolResult `malformed`, a result with `isError: true`
 *   a `tool_error` (not retried, not a breaker failure, no fallback: the server answered).
 * - The answer's bytes on the wire are counted as they arrive: past the tool's `maxResponseBytes`
 *   the attempt is a `too_large` error and the request is cancelled.
 *
 * Secrets: the catalog's `headers` hold `${NAME}` references, resolved when a session is opened and
 * kept in memory only.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ListToolsResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch as undiciFetch, Response as UndiciResponse } from 'undici';
import type { Tool } from '../../tools/catalog.ts';
import { IDEMPOTENCY_META_KEY, mcpResultData, mcpResultText, mcpToolDigest, type McpToolDefinition } from '../../tools/mcp.ts';
import type { Attempt, McpCallContext } from './attempt.ts';
import type { SecretResolver } from '../../tools/secrets.ts';
import { failure, isTransportFailure, refused } from './mcp-errors.ts';

export interface McpClientsOptions {
  /** How long a server's `tools/list` is trusted before the next call lists again (TAO_MCP_LIST_TTL_MS). */
  listTtlMs: number;
  now?: () => number;
  /** Client name and version sent in `initialize`. */
  clientInfo?: { name: string; version: string };
}

/** The state of one `tools/call` exchange, found by the transport's fetch from the request body. */
interface CallWatch {
  traceparent: string;
  maxBytes: number;
  /** Called once when the answer passes maxBytes. */
  onTooLarge(): void;
}

interface Listing {
  at: number;
  digests: Map<string, string>;
}

interface Server {
  key: string;
  url: URL;
  headers: Record<string, string>;
  session: Promise<Client> | null;
  listing: Listing | null;
  /** A `tools/list` in progress: concurrent calls share it. */
  listingInFlight: Promise<Listing> | null;
}

/** Raised by the counting fetch when an answer is larger than the call allows. */
class TooLarge extends Error {}

/** Sessions, listings and in-flight calls of every MCP server this Action calls. */
export class McpClients {
  private readonly servers = new Map<string, Server>();
  private readonly watches = new Map<string, CallWatch>();
  private readonly dispatcher = new Agent({ keepAliveTimeout: 4000, keepAliveMaxTimeout: 4000, connections: 64, connect: { timeout: 2000 } });
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly options: McpClientsOptions) {
    this.now = options.now ?? (() => Date.now());
  }

  /**
   * One attempt of a `tools/call`, within `timeoutMs` (opening the session and listing the tools
   * included). Never rejects: whatever happens is an {@link Attempt}.
   */
  async attempt(tool: Tool, input: unknown, ctx: McpCallContext): Promise<Attempt> {
    const { timeoutMs, maxResponseBytes } = tool.spec;
    const binding = tool.spec.mcp!;
    const abort = new AbortController();
    let settle!: (a: Attempt) => void;
    const stopped = new Promise<Attempt>((resolve) => (settle = resolve));
    const timer = setTimeout(() => {
      settle({
        status: null,
        body: null,
        error: {
          type: 'timeout',
          message: `no complete answer from MCP server ${tool.mcpUrl!.host} within ${timeoutMs} ms`,
          retryable: ctx.retries('timeout'),
        },
      });
      abort.abort(new Error('attempt timed out'));
    }, timeoutMs);
    const watchKey = `${ctx.idempotencyKey}\u0000${binding.tool}`;
    this.watches.set(watchKey, {
      traceparent: ctx.traceparent,
      maxBytes: maxResponseBytes,
      onTooLarge: () => {
        settle({ status: 200, body: null, error: { type: 'too_large', message: `answer exceeds ${maxResponseBytes} bytes`, retryable: false } });
        abort.abort(new TooLarge('answer too large'));
      },
    });
    const server = this.serverFor(tool, ctx.secrets);
    try {
      return await Promise.race([stopped, this.call(server, tool, input, ctx, abort.signal)]);
    } finally {
      clearTimeout(timer);
      this.watches.delete(watchKey);
      if (!abort.signal.aborted) abort.abort(new Error('attempt ended'));
    }
  }

  /** Closes every session (the servers are told with DELETE). */
  async close(): Promise<void> {
    this.closed = true;
    const sessions = [...this.servers.values()].map((s) => s.session);
    this.servers.clear();
    await Promise.allSettled(sessions.map(async (p) => (await p)?.close()));
    await this.dispatcher.close();
  }

  private async call(server: Server, tool: Tool, input: unknown, ctx: McpCallContext, signal: AbortSignal): Promise<Attempt> {
    const binding = tool.spec.mcp!;
    // A session the server forgot (it restarted) is opened again once within the attempt.
    for (let round = 1; ; round++) {
      let client: Client;
      try {
        client = await this.session(server, signal);
        const listed = await this.digestOf(server, client, binding.tool, signal);
        if (listed === undefined) return refused(`MCP server ${server.url.host} no longer lists tool ${binding.tool}: re-import it (tao tools import-mcp)`);
        if (listed !== binding.digest)
          return refused(
            `the definition of ${binding.tool} on MCP server ${server.url.host} changed since it was imported (digest ${listed}, imported ${binding.digest}): not called; review the change and re-import it (tao tools import-mcp)`,
          );
        const result = await client.request(
          {
            method: 'tools/call',
            params: { name: binding.tool, arguments: input as Record<string, unknown>, _meta: { [IDEMPOTENCY_META_KEY]: ctx.idempotencyKey } },
          },
          CallToolResultSchema,
          // The attempt's own timer decides; the SDK's default (60 s) must not fire first.
          { signal, timeout: tool.spec.timeoutMs + 60_000 },
        );
        const body = JSON.stringify(result);
        if (result.isError === true)
          return {
            status: 200,
            body,
            error: {
              type: 'tool_error',
              message: `${binding.tool} reported an error: ${mcpResultText(result).slice(0, 500) || '(no text)'}`,
              retryable: false,
            },
          };
        return { status: 200, body, error: null, data: JSON.stringify(mcpResultData(result)) };
      } catch (err) {
        if (signal.aborted) return { status: null, body: null, error: { type: 'network', message: 'attempt ended', retryable: false } }; // settled by the timer or the size cap
        // The server restarted and forgot the session: open a new one, once.
        const sessionLost = err instanceof StreamableHTTPError && err.code === 404;
        if (sessionLost || isTransportFailure(err)) this.dropSession(server);
        if (sessionLost && round === 1) continue;
        return failure(err, ctx);
      }
    }
  }

  private serverFor(tool: Tool, secrets: SecretResolver): Server {
    const headersTemplate = tool.spec.headers ?? {};
    const key = `${tool.mcpUrl!.href}\u0000${JSON.stringify(headersTemplate)}`;
    let server = this.servers.get(key);
    if (!server) {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(headersTemplate))
        headers[name.toLowerCase()] = secrets.resolve(value, `tool ${tool.spec.name} header ${name}`);
      server = { key, url: tool.mcpUrl!, headers, session: null, listing: null, listingInFlight: null };
      this.servers.set(key, server);
    }
    return server;
  }

  /** The server's session, opened when there is none; waited for no longer than the attempt. */
  private session(server: Server, signal: AbortSignal): Promise<Client> {
    if (this.closed) return Promise.reject(new Error('MCP clients closed'));
    if (!server.session) {
      const client = new Client(this.options.clientInfo ?? { name: 'tao-action', version: '0.1.0' }, { capabilities: {} });
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        server.listing = null;
      });
      const transport = new StreamableHTTPClientTransport(server.url, {
        requestInit: { headers: server.headers },
        fetch: this.fetchFor() as never,
        // Redirects are not followed, as for HTTP tools.
        redirectPolicy: 'same-origin',
        reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
      });
      // Not the attempt's signal: concurrent calls share the session, and one call's timeout must not fail the others'.
      const opened = client.connect(transport, { timeout: 60_000 }).then(() => client);
      server.session = opened;
      opened.catch(() => {
        if (server.session === opened) server.session = null;
        void client.close().catch(() => undefined);
      });
    }
    return abortable(server.session, signal);
  }

  private dropSession(server: Server): void {
    const session = server.session;
    server.session = null;
    server.listing = null;
    void session?.then((c) => c.close()).catch(() => undefined);
  }

  /** The digest the server lists for `name` now (undefined: not listed), from the cached listing or a new one. */
  private async digestOf(server: Server, client: Client, name: string, signal: AbortSignal): Promise<string | undefined> {
    const fresh = server.listing && this.now() - server.listing.at < this.options.listTtlMs ? server.listing : null;
    if (fresh) return fresh.digests.get(name);
    server.listingInFlight ??= this.list(client).finally(() => (server.listingInFlight = null));
    const listing = await abortable(server.listingInFlight, signal);
    server.listing = listing;
    return listing.digests.get(name);
  }

  private async list(client: Client): Promise<Listing> {
    const digests = new Map<string, string>();
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const result = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, ListToolsResultSchema, { timeout: 60_000 });
      for (const t of result.tools) digests.set(t.name, mcpToolDigest(t as McpToolDefinition));
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return { at: this.now(), digests };
  }

  /**
   * The fetch of every session: undici with Action's keep-alive; a `tools/call` gets the
   * idempotency key and traceparent as headers and its answer counted against the call's size cap.
   */
  private fetchFor(): (url: string | URL, init?: RequestInit) => Promise<UndiciResponse> {
    return async (url, init) => {
      const headers = new Headers(init?.headers);
      let watch: CallWatch | undefined;
      if (init?.method === 'POST' && typeof init.body === 'string' && init.body.includes('"tools/call"')) {
        const message = parseCall(init.body);
        if (message) {
          headers.set('idempotency-key', message.key);
          watch = this.watches.get(`${message.key}\u0000${message.tool}`);
          if (watch) headers.set('traceparent', watch.traceparent);
        }
      }
      const response = await undiciFetch(url, { ...(init as object), headers, dispatcher: this.dispatcher } as unknown as Parameters<typeof undiciFetch>[1]);
      if (!watch || !response.body) return response;
      const { maxBytes, onTooLarge } = watch;
      let size = 0;
      const counted = (response.body as unknown as ReadableStream<Uint8Array>).pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            size += chunk.byteLength;
            if (size > maxBytes) {
              onTooLarge();
              controller.error(new TooLarge(`answer exceeds ${maxBytes} bytes`));
              return;
            }
            controller.enqueue(chunk);
          },
        }),
      );
      return new UndiciResponse(counted as never, { status: response.status, statusText: response.statusText, headers: response.headers });
    };
  }
}

/** The idempotency key and tool of a `tools/call` request body, or null for any other message. */
function parseCall(body: string): { key: string; tool: string } | null {
  try {
    const m = JSON.parse(body) as { method?: unknown; params?: { name?: unknown; _meta?: Record<string, unknown> } };
    const key = m.params?._meta?.[IDEMPOTENCY_META_KEY];
    return m.method === 'tools/call' && typeof key === 'string' && typeof m.params?.name === 'string' ? { key, tool: m.params.name } : null;
  } catch {
    return null;
  }
}

/** `promise`, or a rejection as soon as `signal` aborts (the promise itself runs on for others). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
