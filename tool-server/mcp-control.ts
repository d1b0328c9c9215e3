/**
 * The demo MCP server's control API under `/__control/` (tool-server/mcp-server.ts):
 * `POST|GET|DELETE /__control/faults` sets, lists and clears faults; `GET|DELETE /__control/stats`
 * reads and resets the request accounting; `POST /__control/tools` changes a tool's listed
 * definition.
 *
 * @module
 */
import type http from 'node:http';
import { readBody, sendJson } from './http.ts';
import type { ListedTool } from './mcp-demo-tools.ts';
import type { McpFaults, McpFaultSpec } from './mcp-faults.ts';

/** Request accounting (`GET /__control/stats`). */
export interface McpToolStats {
  /** `tools/call` requests that reached a tool (faults included), per tool. */
  calls: Record<string, number>;
  /** `tools/call` requests per idempotency key (`_meta`), so a test sees what was called more than once. */
  keys: Record<string, number>;
  /** Side effects performed (refunds created, copies sent, resets issued), per tool. */
  effects: Record<string, number>;
  /** Calls of POST tools answered from the result stored under their idempotency key (nothing done again). */
  replays: Record<string, number>;
  /** `tools/list` requests answered. */
  lists: number;
  /** Sessions opened (initialize), and open now. */
  sessionsOpened: number;
  sessionsOpen: number;
  /** Requests refused for a missing or wrong bearer token. */
  unauthorized: number;
}

/** What the control API acts on. */
export interface McpControlContext {
  faults: McpFaults;
  /** Largest accepted request body; a larger one is read as empty (and refused as invalid JSON). */
  maxBodyBytes: number;
  stats(): McpToolStats;
  resetStats(): void;
  /** The tools as listed now. */
  listed(): ListedTool[];
  changeTool(name: string, change: { description?: string; inputSchema?: Record<string, unknown> }): Promise<void>;
}

/** The handler of every `/__control/` path for one server. */
export function mcpControlHandler(ctx: McpControlContext): (req: http.IncomingMessage, res: http.ServerResponse, path: string) => Promise<void> {
  const { faults, maxBodyBytes } = ctx;
  return async (req, res, path) => {
    if (path === '/__control/faults') {
      if (req.method === 'DELETE') {
        faults.clear();
        return sendJson(res, 200, { faults: [] });
      }
      if (req.method === 'GET') return sendJson(res, 200, { faults: faults.list() });
      if (req.method === 'POST') {
        const text = (await readBody(req, maxBodyBytes)) ?? '';
        try {
          return sendJson(res, 201, { id: faults.set(JSON.parse(text) as McpFaultSpec) });
        } catch (err) {
          return sendJson(res, 400, { error: 'invalid_fault', message: (err as Error).message });
        }
      }
    }
    if (path === '/__control/stats') {
      if (req.method === 'DELETE') ctx.resetStats();
      return sendJson(res, 200, ctx.stats());
    }
    if (path === '/__control/tools' && req.method === 'POST') {
      const text = (await readBody(req, maxBodyBytes)) ?? '';
      try {
        const change = JSON.parse(text) as { name: string; description?: string; inputSchema?: Record<string, unknown> };
        await ctx.changeTool(change.name, change);
        return sendJson(res, 200, { tools: ctx.listed() });
      } catch (err) {
        return sendJson(res, 400, { error: 'invalid_change', message: (err as Error).message });
      }
    }
    sendJson(res, 404, { error: 'not_found' });
  };
}
