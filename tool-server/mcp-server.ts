/**
 * tao-mcp-tools: the demo tools served by a real MCP server (Model Context Protocol, Streamable
 * HTTP at `/mcp`), built with the official TypeScript SDK's low-level `Server`. For tests and the
 * demo of MCP tools (`tao run mcp-tools`, `tao tools import-mcp`; docs/TOOLS.md, MCP tools).
 *
 * Each tool is a demo catalog tool (tools/catalog/*.json, read by tool-server/mcp-demo-tools.ts):
 * the same name and description, its parameter schema as `inputSchema` and its response schema as
 * `outputSchema`, and the same deterministic data and side effects as the demo HTTP tool server
 * (tool-server/routes.ts, over tool-server/data.ts): a call is answered as the HTTP route would
 * answer, a 2xx body as `structuredContent` (and its JSON as text content), any other status as a
 * result with `isError: true` whose text is the error body. POST tools (refunds.create, ...)
 * de-duplicate by the idempotency key the caller sends in `_meta` (`dev.tao/idempotency-key`), as
 * the HTTP routes do by their `Idempotency-Key` header: a repeated key performs no second side effect.
 *
 * Stateful sessions (`Mcp-Session-Id`); a request naming a session the server does not know is
 * answered 404 (the client opens a new one). Faults (tool-server/mcp-faults.ts) and definition
 * changes for tests, in process or through the control API (tool-server/mcp-control.ts):
 * `POST|GET|DELETE /__control/faults`, `GET|DELETE /__control/stats`, `POST /__control/tools`
 * (change a tool's description or input schema; sessions are notified with
 * `notifications/tools/list_changed`). `GET /health`.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  isInitializeRequest,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { listen } from '../runtime/listen.ts';
import type { StandInServer } from '../runtime/stand-in-http.ts';
import { DEFAULT_CATALOG_DIR } from '../tools/catalog.ts';
import { IDEMPOTENCY_META_KEY } from '../tools/mcp.ts';
import { readBody, sendJson as send } from './http.ts';
import { controlRefusal } from '../runtime/loopback.ts';
import { mcpControlHandler, type McpToolStats } from './mcp-control.ts';

export type { McpToolStats } from './mcp-control.ts';
import { answerCall, demoTools, listedTools } from './mcp-demo-tools.ts';
import { McpFaults, type McpFaultSpec, type McpFaultState } from './mcp-faults.ts';
import { ToolLedger } from './post-routes.ts';

/** Default TCP port of `tao run mcp-tools`. */
export const DEFAULT_MCP_TOOLS_PORT = 7072;
/** Largest accepted request body; a larger one is answered 413. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface McpToolServerOptions {
  /** TCP port; 0 picks any free port. Default 7072. */
  port?: number;
  host?: string;
  /** Catalog names of the demo tools to serve; default all. */
  tools?: string[];
  /** Require `Authorization: Bearer <token>` on /mcp. */
  token?: string;
  /** Where the demo tool definitions are read; default the shipped catalog. */
  catalogDir?: string;
}

export interface McpToolServer extends StandInServer<McpToolStats, McpFaultSpec, McpFaultState> {
  /** The MCP endpoint, e.g. `http://127.0.0.1:7072/mcp`. */
  url: string;
  /** Names of the tools served. */
  tools: string[];
  /** Changes a tool's definition as listed (the tool keeps working); open sessions are notified. */
  changeTool(name: string, change: { description?: string; inputSchema?: Record<string, unknown> }): Promise<void>;
}

/** Starts the demo MCP server. */
export async function startMcpToolServer(options: McpToolServerOptions = {}): Promise<McpToolServer> {
  const tools = demoTools(options.catalogDir ?? DEFAULT_CATALOG_DIR, options.tools);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const ledger = new ToolLedger();
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers = new Set<Server>();
  const held = new Set<() => void>();
  const faults = new McpFaults((name) => byName.has(name));
  const empty = (): McpToolStats => ({ calls: {}, keys: {}, effects: {}, replays: {}, lists: 0, sessionsOpened: 0, sessionsOpen: 0, unauthorized: 0 });
  let stats = empty();
  const bump = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);
  const listed = () => listedTools(tools);

  const hold = (ms: number | undefined, signal: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      const release = () => {
        held.delete(release);
        clearTimeout(timer);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(release, ms);
      held.add(release);
      signal.addEventListener('abort', release, { once: true });
    });

  const newServer = (): Server => {
    const server = new Server({ name: 'tao-mcp-tools', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler(ListToolsRequestSchema, () => {
      stats.lists++;
      return { tools: listed() };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const name = request.params.name;
      const tool = byName.get(name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      const meta = request.params._meta as Record<string, unknown> | undefined;
      const key = typeof meta?.[IDEMPOTENCY_META_KEY] === 'string' ? (meta[IDEMPOTENCY_META_KEY] as string) : null;
      bump(stats.calls, name);
      if (key) bump(stats.keys, key);
      const fault = faults.choose(name, ['rpc_error', 'tool_error', 'timeout', 'large']);
      if (fault?.mode === 'rpc_error') throw new McpError(fault.code ?? ErrorCode.InternalError, `simulated JSON-RPC error of ${name} (tao-mcp-tools)`);
      if (fault?.mode === 'tool_error') return { content: [{ type: 'text', text: `simulated failure of ${name} (tao-mcp-tools)` }], isError: true };
      if (fault?.mode === 'timeout') {
        await hold(fault.delayMs, extra.signal);
        if (fault.delayMs === undefined) return { content: [{ type: 'text', text: 'cancelled' }], isError: true };
      }
      const args = request.params.arguments ?? {};
      if (!tool.validate(args)) {
        return {
          content: [
            {
              type: 'text',
              text: `invalid arguments for ${name}: ${(tool.validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')}`,
            },
          ],
          isError: true,
        };
      }
      const done = answerCall(tool, args, key, ledger);
      if (done.effect) bump(stats.effects, name);
      if (done.replayed) bump(stats.replays, name);
      const res = done.response;
      if (res.status < 200 || res.status >= 300) return { content: [{ type: 'text', text: JSON.stringify(res.body) }], isError: true };
      let body = res.body as Record<string, unknown>;
      if (fault?.mode === 'large') {
        const bytes = fault.bytes ?? 300_000;
        const item = { at: '2025-01-01T00:00:00+08:00', note: 'x'.repeat(200) };
        body = { ...body, history: Array.from({ length: Math.ceil(bytes / JSON.stringify(item).length) }, () => item) };
      }
      return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
    });
    servers.add(server);
    server.onclose = () => servers.delete(server);
    return server;
  };

  const rpcError = (res: http.ServerResponse, status: number, message: string): void =>
    send(res, status, { jsonrpc: '2.0', error: { code: -32000, message }, id: null });

  const handleMcp = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`) {
      stats.unauthorized++;
      send(res, 401, { error: 'unauthorized' });
      return;
    }
    const sid = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sid) ? sid[0] : sid;
    if (req.method === 'POST') {
      const text = await readBody(req, MAX_BODY_BYTES);
      if (text === null) return send(res, 413, { error: 'body_too_large' });
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return send(res, 400, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
      }
      const call = body as { method?: unknown; params?: { name?: unknown } };
      if (call.method === 'tools/call' && typeof call.params?.name === 'string') {
        const fault = faults.choose(call.params.name, ['http_error']);
        if (fault) return send(res, fault.status ?? 503, { error: 'simulated HTTP error (tao-mcp-tools)' });
      }
      let transport = sessionId ? transports.get(sessionId) : undefined;
      if (!transport) {
        if (sessionId) return rpcError(res, 404, 'Session not found');
        if (!isInitializeRequest(body)) return rpcError(res, 400, 'Bad Request: no session id, and not an initialize request');
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            transports.set(id, created);
            stats.sessionsOpened++;
          },
        });
        created.onclose = () => {
          if (created.sessionId) transports.delete(created.sessionId);
        };
        await newServer().connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      const transport = sessionId ? transports.get(sessionId) : undefined;
      if (!transport) return rpcError(res, sessionId ? 404 : 400, sessionId ? 'Session not found' : 'Bad Request: no session id');
      await transport.handleRequest(req, res);
      return;
    }
    send(res, 405, { error: 'method_not_allowed' });
  };

  const changeTool = async (name: string, change: { description?: string; inputSchema?: Record<string, unknown> }): Promise<void> => {
    const tool = byName.get(name);
    if (!tool) throw new RangeError(`no tool named ${name}`);
    if (change.description !== undefined) tool.description = change.description;
    if (change.inputSchema !== undefined) tool.inputSchema = change.inputSchema;
    await Promise.allSettled([...servers].map((s) => s.sendToolListChanged()));
  };

  const copyOfStats = (): McpToolStats => ({
    ...stats,
    calls: { ...stats.calls },
    keys: { ...stats.keys },
    effects: { ...stats.effects },
    replays: { ...stats.replays },
    sessionsOpen: transports.size,
  });
  const resetStats = () => {
    stats = empty();
  };
  const handleControl = mcpControlHandler({ faults, maxBodyBytes: MAX_BODY_BYTES, stats: copyOfStats, resetStats, listed, changeTool });

  const refusal = controlRefusal(options.host ?? '127.0.0.1', 'MCP tool server');
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const work =
      path === '/mcp'
        ? handleMcp(req, res)
        : path.startsWith('/__control/')
          ? refusal
            ? Promise.resolve(req.resume()).then(() => send(res, 403, refusal))
            : handleControl(req, res, path)
          : path === '/health'
            ? Promise.resolve(send(res, 200, { status: 'ok' }))
            : Promise.resolve(send(res, 404, { error: 'not_found' }));
    work.catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { error: 'internal', message: String(err) });
      else res.destroy();
    });
  });
  const listening = await listen(server, options.host ?? '127.0.0.1', options.port ?? DEFAULT_MCP_TOOLS_PORT, async () => {
    for (const release of [...held]) release();
    await Promise.allSettled([...transports.values()].map((t) => t.close()));
  });
  return {
    ...listening,
    url: `${listening.url}/mcp`,
    tools: tools.map((t) => t.name),
    stats: copyOfStats,
    resetStats,
    setFault: (spec: McpFaultSpec) => faults.set(spec),
    clearFaults: () => faults.clear(),
    faults: (): McpFaultState[] => faults.list(),
    changeTool,
  };
}
