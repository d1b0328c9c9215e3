/**
 * What one attempt of a tool call is given and comes to, for both transports (HTTP in invoke.ts,
 * MCP in mcp.ts and mcp-errors.ts). Types only: the transports import it, it imports neither.
 */
import type { ToolError } from '../../schemas/types.gen.ts';
import type { SecretResolver } from '../../tools/secrets.ts';

/** What one attempt of a call came to (an HTTP exchange, or an MCP `tools/call`). */
export interface Attempt {
  status: number | null;
  body: string | null;
  error: ToolError | null;
  /** Delay the tool asked for (429 Retry-After), honoured by the retry helper. */
  retryAfterMs?: number;
  /** The step's data as JSON, when it is not the body itself (an MCP result's structured content). */
  data?: string;
}

/** What one attempt needs besides the tool and its input. */
export interface McpCallContext {
  idempotencyKey: string;
  traceparent: string;
  /** Resolves the tool's `${NAME}` header references. */
  secrets: SecretResolver;
  /** Whether a failure class is retried for this tool (its `retry.retryOn`). */
  retries(cls: 'rate_limited' | 'timeout' | 'server_error' | 'network'): boolean;
}
