/**
 * How an MCP exchange that did not give a result maps to the catalog's error classes (one
 * {@link Attempt} each):
 * - a transport failure is `network`; no answer within the tool's timeout is `timeout`;
 * - an HTTP error status of the endpoint is `http_status` with that status (429 rate_limited and
 *   5xx server_error retried by class);
 * - a JSON-RPC error answer is `http_status` with the equivalent status ({@link RPC_STATUS}:
 *   internal error 500, invalid params 400, method not found 404, ...), its code and message in the
 *   error and the raw JSON-RPC error as the body;
 * - a result that is not a CallToolResult is `malformed`;
 * - a tool the server no longer lists, or lists with another definition than the imported one, is
 *   refused as `schema_changed`.
 *
 * A result with `isError: true` is a `tool_error` (not retried, not a breaker failure, no fallback:
 * the server answered) that Observation marks invalid, the tool's error text as the message; made
 * in mcp.ts, which has the result.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Attempt, McpCallContext } from './attempt.ts';

/** The HTTP status a JSON-RPC error code is reported as (`http_status` results need one for Observation). */
export const RPC_STATUS: Readonly<Record<number, number>> = {
  [ErrorCode.ParseError]: 400,
  [ErrorCode.InvalidRequest]: 400,
  [ErrorCode.InvalidParams]: 400,
  [ErrorCode.MethodNotFound]: 404,
  [ErrorCode.InternalError]: 500,
};

/** A call refused before it was sent: the server no longer lists the tool, or lists another definition than the imported one. */
export function refused(message: string): Attempt {
  return { status: null, body: null, error: { type: 'schema_changed', message, retryable: false } };
}

/** A failure of the session's transport (not an answer): the session may be gone with the server. */
export function isTransportFailure(err: unknown): boolean {
  if (err instanceof McpError) return err.code === ErrorCode.ConnectionClosed;
  if (err instanceof StreamableHTTPError) return err.code === undefined || err.code < 0;
  return !(err instanceof Error && err.name === 'ZodError');
}

/** The attempt a failed exchange makes, by the error's class. */
export function failure(err: unknown, ctx: McpCallContext): Attempt {
  if (err instanceof StreamableHTTPError && err.code !== undefined && err.code >= 100) {
    const status = err.code;
    const cls = status === 429 ? 'rate_limited' : status >= 500 ? 'server_error' : null;
    return {
      status,
      body: err.message,
      error: {
        type: 'http_status',
        message: `HTTP ${status} from the MCP endpoint: ${err.message.slice(0, 300)}`,
        retryable: cls !== null && ctx.retries(cls),
      },
    };
  }
  if (err instanceof StreamableHTTPError)
    return { status: null, body: null, error: { type: 'malformed', message: `MCP transport: ${err.message.slice(0, 300)}`, retryable: false } };
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout)
      return { status: null, body: null, error: { type: 'timeout', message: err.message, retryable: ctx.retries('timeout') } };
    if (err.code === ErrorCode.ConnectionClosed)
      return { status: null, body: null, error: { type: 'network', message: err.message, retryable: ctx.retries('network') } };
    // A server-defined code (-32000 to -32099 besides the SDK's own) or another: the server failed.
    const status = RPC_STATUS[err.code] ?? 500;
    const rpc = JSON.stringify({
      code: err.code,
      message: err.message.replace(/^MCP error -?\d+: /, ''),
      ...(err.data === undefined ? {} : { data: err.data }),
    });
    return {
      status,
      body: rpc,
      error: {
        type: 'http_status',
        message: `JSON-RPC error ${err.code} from the MCP server (reported as HTTP ${status}): ${err.message.slice(0, 300)}`,
        retryable: status >= 500 && ctx.retries('server_error'),
      },
    };
  }
  if (err instanceof Error && err.name === 'ZodError')
    return {
      status: 200,
      body: null,
      error: { type: 'malformed', message: `the answer is not an MCP tool result: ${err.message.slice(0, 300)}`, retryable: false },
    };
  const e = err as Error & { cause?: { code?: string; message?: string } };
  const code = e.cause?.code ?? (e as { code?: string }).code ?? e.name;
  return {
    status: null,
    body: null,
    error: { type: 'network', message: `${code}: ${e.cause?.message ?? e.message}`.slice(0, 300), retryable: ctx.retries('network') },
  };
}
