/**
 * Tools served by MCP servers (Model Context Protocol, Streamable HTTP), as catalog entries. This
 * module has no I/O and does not load the MCP SDK: it defines what an imported tool is pinned to
 * (its digest) and how a `tools/list` entry becomes a catalog file. `tao tools import-mcp`
 * (cli/tools-command.ts) asks the server and writes the files; Action (processors/action/mcp.ts)
 * calls the tools and refuses one whose definition on the server no longer has the imported digest.
 *
 * A catalog entry of an MCP tool:
 *
 * ```json
 * { "name": "orders.get", "description": "...", "transport": "mcp",
 *   "mcp": { "url": "http://127.0.0.1:7072/mcp", "tool": "orders.get", "digest": "sha256:…" },
 *   "headers": { "authorization": "Bearer ${ORDERS_MCP_TOKEN}" },
 *   "parameters": { …inputSchema }, "response": { …outputSchema, or {"type":"object"} },
 *   "timeoutMs": 5000, "retry": { … }, "breaker": { … }, "maxResponseBytes": 262144 }
 * ```
 */
import { createHash } from 'node:crypto';

/** The `_meta` key of a `tools/call` request that carries the step's idempotency key. */
export const IDEMPOTENCY_META_KEY = 'dev.tao/idempotency-key';

/** A tool as an MCP server lists it (`tools/list`), the fields this module reads. */
export interface McpToolDefinition {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/**
 * The digest an imported tool is pinned to: `sha256:` + the hex SHA-256 of the canonical JSON
 * (object keys sorted, no whitespace) of the definition's `name`, `description`, `inputSchema` and
 * `outputSchema` (absent ones left out). These are what a call depends on and what the model is told:
 * a changed input schema would make our validated input wrong, a changed output schema our response
 * contract, and a changed description is how a server would change what the model is told the
 * tool does after it was reviewed (a "rug pull"). Display hints (`title`, `annotations`, `icons`,
 * `_meta`) are left out: a server may change them freely.
 */
export function mcpToolDigest(tool: McpToolDefinition): string {
  const pinned: Record<string, unknown> = { name: tool.name };
  if (tool.description !== undefined) pinned.description = tool.description;
  pinned.inputSchema = tool.inputSchema;
  if (tool.outputSchema !== undefined) pinned.outputSchema = tool.outputSchema;
  return `sha256:${createHash('sha256').update(canonicalJson(pinned)).digest('hex')}`;
}

/** JSON with object keys sorted and no whitespace, so equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What `import-mcp` puts into every entry besides what the server lists. */
export interface McpImportOptions {
  /** The server's Streamable HTTP endpoint, as it is to be written (may reference `${VAR}`). */
  url: string;
  /** Prepended as `<prefix>.` to each catalog name. */
  prefix?: string;
  /** Name of the environment variable holding the server's bearer token, written as `${NAME}`. */
  authEnv?: string;
  timeoutMs?: number;
  maxResponseBytes?: number;
}

export const MCP_IMPORT_DEFAULTS = {
  timeoutMs: 5000,
  retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 2000 },
  breaker: { failureThreshold: 5, coolDownMs: 30000 },
  maxResponseBytes: 256 * 1024,
} as const;

const CATALOG_NAME = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

/**
 * The catalog name of an MCP tool: its name, lower-cased, each run of characters other than
 * letters, digits, `_` and `.` made `_`, with `<prefix>.` in front when given. Null when that is
 * not a catalog name (`<system>.<operation>`): the import then asks for a prefix.
 */
export function catalogNameOf(mcpName: string, prefix?: string): string | null {
  const local = mcpName
    .toLowerCase()
    .replace(/[^a-z0-9_.]+/g, '_')
    .replace(/\.{2,}/g, '.')
    .replace(/^[._]+|[._]+$/g, '');
  const name = prefix ? `${prefix}.${local}` : local;
  return CATALOG_NAME.test(name) ? name : null;
}

/**
 * The catalog entry (a tool file's content) of one listed MCP tool. The response contract is the
 * tool's `outputSchema` when it declares one (its `structuredContent` is checked against it),
 * otherwise any JSON object.
 */
export function mcpCatalogEntry(tool: McpToolDefinition, options: McpImportOptions, name: string): Record<string, unknown> {
  const description = tool.description ?? tool.title ?? `${tool.name} (MCP tool)`;
  return {
    name,
    description,
    transport: 'mcp',
    mcp: { url: options.url, tool: tool.name, digest: mcpToolDigest(tool) },
    ...(options.authEnv ? { headers: { authorization: `Bearer \${${options.authEnv}}` } } : {}),
    parameters: tool.inputSchema,
    response: tool.outputSchema ?? { type: 'object' },
    timeoutMs: options.timeoutMs ?? MCP_IMPORT_DEFAULTS.timeoutMs,
    retry: { ...MCP_IMPORT_DEFAULTS.retry },
    breaker: { ...MCP_IMPORT_DEFAULTS.breaker },
    maxResponseBytes: options.maxResponseBytes ?? MCP_IMPORT_DEFAULTS.maxResponseBytes,
  };
}

/**
 * The step data of a successful `tools/call` result: its `structuredContent` when present;
 * otherwise the text of its content (text items joined by newlines) parsed as JSON when it is a
 * JSON object, else `{"text": <the text>}`. Observation checks it against the entry's response schema.
 */
export function mcpResultData(result: { structuredContent?: unknown; content?: unknown }): unknown {
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
  const text = mcpResultText(result);
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed;
  } catch {
    // Plain text: wrapped below.
  }
  return { text };
}

/** The text items of a `tools/call` result's content, joined by newlines (other item types are named in brackets). */
export function mcpResultText(result: { content?: unknown }): string {
  const items = Array.isArray(result.content) ? (result.content as Array<{ type?: unknown; text?: unknown }>) : [];
  return items.map((c) => (c && c.type === 'text' && typeof c.text === 'string' ? c.text : `[${String(c?.type ?? 'unknown')} content]`)).join('\n');
}
