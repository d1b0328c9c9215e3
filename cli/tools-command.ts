/**
 * `tao tools import-mcp` (catalog entries from an MCP server's `tools/list`) and `tao run mcp-tools`
 * (the demo tools served by a real MCP server). docs/TOOLS.md, MCP tools.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { commandFlags, intFlag, secretFromEnv, usageError } from '../runtime/command-flags.ts';
import { setting } from '../runtime/config.ts';
import { ConfigError } from '../runtime/errors.ts';
import { packagePath } from '../runtime/paths.ts';
import { catalogNameOf, mcpCatalogEntry, type McpToolDefinition } from '../tools/mcp.ts';

export const TOOLS_USAGE = `usage: tao tools import-mcp <url> [--out <dir>] [--auth-env <NAME>] [--prefix <p>] [--tools a,b] [--timeout-ms 5000]
  Asks the MCP server at <url> (Streamable HTTP, e.g. http://127.0.0.1:7072/mcp) for its tools
  (tools/list) and writes one catalog file per tool into --out (default TAO_TOOL_CATALOG_DIR, else
  the package's tools/catalog): transport "mcp", the server URL and tool name, its input schema as
  the parameters, its output schema (or any object) as the response, and the digest of its definition.
  Action refuses to call a tool whose definition on the server no longer has that digest: run the
  import again after reviewing a change. An existing file is replaced only when it is an MCP entry of
  the same server and tool.
  --auth-env    the server wants Authorization: Bearer <token>: the NAME of the variable holding it;
                the files say \${NAME} (resolved by Action when it calls), never the token
  --prefix      catalog names become <prefix>.<tool name> (needed when a name is not <system>.<operation>)
  --tools       import only these (server names), comma-separated
  --timeout-ms  each tool's timeout per attempt (default 5000)`;

/** Runs `tao tools <sub> ...`; resolves with the exit code. */
export async function toolsCommand(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        out: { type: 'string' },
        'auth-env': { type: 'string' },
        prefix: { type: 'string' },
        tools: { type: 'string' },
        'timeout-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    console.error(`tao tools: ${(err as Error).message}\n${TOOLS_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(TOOLS_USAGE);
    return 0;
  }
  const [sub, url, ...extra] = positionals;
  if (sub !== 'import-mcp' || url === undefined || extra.length) {
    console.error(
      `${sub !== 'import-mcp' ? `unknown tools command "${sub ?? ''}"` : url === undefined ? 'import-mcp needs the server URL' : `unexpected arguments: ${extra.join(' ')}`}\n${TOOLS_USAGE}`,
    );
    return 2;
  }
  const timeoutMs = values['timeout-ms'] === undefined ? undefined : Number(values['timeout-ms']);
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600000)) {
    return usageError(`--timeout-ms must be an integer from 1 to 600000, got "${values['timeout-ms']}"`, TOOLS_USAGE);
  }
  if (values.prefix !== undefined && !/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/.test(values.prefix)) {
    console.error(`--prefix must be lower-case letters, digits and _ (segments joined by .), got "${values.prefix}"\n${TOOLS_USAGE}`);
    return 2;
  }
  const authEnv = values['auth-env'];
  if (authEnv !== undefined && !/^[A-Z_][A-Z0-9_]*$/.test(authEnv)) {
    console.error(`--auth-env takes the NAME of an environment variable (A-Z, 0-9, _), got "${authEnv}"\n${TOOLS_USAGE}`);
    return 2;
  }
  // Not tools/catalog.ts's constant: `tao --help` loads this module, and the catalog module loads ajv.
  const out = values.out ?? setting(process.env, 'TAO_TOOL_CATALOG_DIR') ?? packagePath('tools', 'catalog');
  const written = await importMcpTools(url, {
    out,
    authEnv,
    prefix: values.prefix,
    only: values.tools
      ?.split(',')
      .map((t) => t.trim())
      .filter(Boolean),
    timeoutMs,
    env: process.env,
  });
  for (const w of written) console.log(`${w.status.padEnd(9)} ${w.name.padEnd(28)} ${w.digest}  (${w.tool} at ${url}) -> ${w.file}`);
  console.log(`${written.length} tool(s) from ${url} in ${out}`);
  return 0;
}

export interface ImportedTool {
  name: string;
  tool: string;
  digest: string;
  file: string;
  status: 'new' | 'updated' | 'unchanged';
}

/**
 * Lists the tools of the MCP server at `url` and writes their catalog files into `options.out`.
 * @throws ConfigError (one line) when the server cannot be reached or listed, the token variable is
 *   unset, a name is no catalog name, or a file of another tool would be replaced.
 */
export async function importMcpTools(
  url: string,
  options: { out: string; authEnv?: string; prefix?: string; only?: string[]; timeoutMs?: number; env: NodeJS.ProcessEnv },
): Promise<ImportedTool[]> {
  let endpoint: URL;
  try {
    endpoint = new URL(url);
  } catch {
    throw new ConfigError(`"${url}" is not a URL`);
  }
  if (!/^https?:$/.test(endpoint.protocol) || endpoint.username || endpoint.password)
    throw new ConfigError(`the MCP server URL must be http(s) without credentials, got "${url}"`);
  const headers: Record<string, string> = {};
  if (options.authEnv) {
    const token = options.env[options.authEnv];
    if (!token) throw new ConfigError(`--auth-env ${options.authEnv}: the variable is not set`);
    headers.authorization = `Bearer ${token}`;
  }
  const listed = await listMcpTools(endpoint, headers);
  const chosen = options.only ? listed.filter((t) => options.only!.includes(t.name)) : listed;
  const missing = (options.only ?? []).filter((n) => !listed.some((t) => t.name === n));
  if (missing.length)
    throw new ConfigError(`the MCP server at ${url} lists no tool ${missing.join(', ')} (it lists ${listed.map((t) => t.name).join(', ') || 'none'})`);
  const unnamed = chosen.filter((t) => catalogNameOf(t.name, options.prefix) === null).map((t) => t.name);
  if (unnamed.length) throw new ConfigError(`tool name(s) ${unnamed.join(', ')} make no catalog name (<system>.<operation>): give --prefix`);
  mkdirSync(options.out, { recursive: true });
  const result: ImportedTool[] = [];
  for (const tool of chosen) {
    const name = catalogNameOf(tool.name, options.prefix)!;
    const entry = mcpCatalogEntry(tool, { url, authEnv: options.authEnv, timeoutMs: options.timeoutMs }, name);
    const file = join(options.out, `${name}.json`);
    let status: ImportedTool['status'] = 'new';
    if (existsSync(file)) {
      let existing: { transport?: unknown; mcp?: { url?: unknown; tool?: unknown } } = {};
      try {
        existing = JSON.parse(readFileSync(file, 'utf8')) as typeof existing;
      } catch {
        // Not JSON: refused below as not ours.
      }
      if (existing.transport !== 'mcp' || existing.mcp?.url !== url || existing.mcp?.tool !== tool.name)
        throw new ConfigError(`${file} exists and is not the MCP entry of ${tool.name} at ${url}: not replaced (use --prefix or --out)`);
      status = readFileSync(file, 'utf8') === `${JSON.stringify(entry, null, 2)}\n` ? 'unchanged' : 'updated';
    }
    writeFileSync(file, `${JSON.stringify(entry, null, 2)}\n`);
    result.push({ name, tool: tool.name, digest: (entry.mcp as { digest: string }).digest, file, status });
  }
  return result;
}

/** The server's tools (every page of `tools/list`), through the SDK's client over Streamable HTTP. */
export async function listMcpTools(endpoint: URL, headers: Record<string, string>): Promise<McpToolDefinition[]> {
  const [{ Client }, { StreamableHTTPClientTransport }, { ListToolsResultSchema }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  const client = new Client({ name: 'tao-import-mcp', version: '0.1.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(endpoint, {
    requestInit: { headers },
    redirectPolicy: 'same-origin',
    reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
  });
  try {
    await client.connect(transport, { timeout: 30_000 });
    const tools: McpToolDefinition[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const listed = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, ListToolsResultSchema, { timeout: 30_000 });
      tools.push(...(listed.tools as McpToolDefinition[]));
      cursor = listed.nextCursor;
      if (!cursor) break;
    }
    return tools;
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    throw new ConfigError(`could not list the tools of the MCP server at ${endpoint.href}: ${e.cause?.code ? `${e.cause.code}: ` : ''}${e.message}`);
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}

export const MCP_TOOLS_USAGE = `usage: tao run mcp-tools [--port 7072] [--host 127.0.0.1] [--tools a,b] [--token-env <NAME>]
  Serves the demo tools (tools/catalog, the same data as tao run tools) from a real MCP server
  (the official SDK, Streamable HTTP at http://<host>:<port>/mcp), for tao tools import-mcp and the
  MCP tools of the catalog. Faults and definition changes: /__control/faults, /__control/tools,
  /__control/stats (tool-server/mcp-server.ts).
  --port        TCP port (0: any free port)                   default 7072
  --host        interface to bind                             default 127.0.0.1
  --tools       serve only these demo tools, comma-separated  default all
  --token-env   require Authorization: Bearer <the value of this environment variable>`;

/** `tao run mcp-tools`: runs the demo MCP server until a signal; -1 once running. */
export async function mcpToolsCommand(args: string[], onStarted: (stop: () => Promise<void>) => void): Promise<number> {
  const parsed = commandFlags(
    args,
    { port: { type: 'string' }, host: { type: 'string' }, tools: { type: 'string' }, 'token-env': { type: 'string' } },
    MCP_TOOLS_USAGE,
  );
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  let port: number | undefined;
  let token: string | undefined;
  try {
    port = intFlag('port', values.port, 0, 65535);
    token = secretFromEnv('token-env', values['token-env'], process.env);
  } catch (err) {
    return usageError((err as Error).message, MCP_TOOLS_USAGE);
  }
  const { startMcpToolServer } = await import('../tool-server/mcp-server.ts');
  let server;
  try {
    server = await startMcpToolServer({
      port,
      host: values.host ?? setting(process.env, 'TAO_BIND_HOST'),
      tools: values.tools
        ?.split(',')
        .map((t) => t.trim())
        .filter(Boolean),
      token,
    });
  } catch (err) {
    if (err instanceof RangeError) return usageError(err.message, MCP_TOOLS_USAGE);
    throw err;
  }
  console.log(
    `tao-mcp-tools: the demo tools over MCP (Streamable HTTP) at ${server.url}: ${server.tools.join(', ')}; ${token ? `bearer token required (from ${values['token-env']})` : 'no token'}`,
  );
  onStarted(() => server.close());
  return -1;
}
