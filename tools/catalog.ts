import { readFileSync, readdirSync } from 'node:fs';
import { interpolateEnv } from './secrets.ts';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ConfigError } from '../runtime/errors.ts';
import { packagePath } from '../runtime/paths.ts';
import { toolsFromOpenApi } from './openapi.ts';
import { MODEL_WIRES, type ModelWire } from './wires/chat-shape.ts';

// ajv-formats ships CommonJS with a default export; under NodeNext the callable is on `.default`.
const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv };

/** Classes of failure a tool call can be retried for; anything else (4xx, invalid input) never is. */
export const RETRY_CLASSES = ['rate_limited', 'timeout', 'server_error', 'network'] as const;
export type RetryClass = (typeof RETRY_CLASSES)[number];

export interface RetryPolicySpec {
  /** Attempts per call, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Failure classes that are retried (default: all of {@link RETRY_CLASSES}). */
  retryOn?: RetryClass[];
  /** A 429's Retry-After up to this long is waited even past the call's window (default 0: not past it). */
  maxRetryAfterMs?: number;
}

export interface BreakerSpec {
  /** Consecutive failed calls (after retries) that open the breaker. */
  failureThreshold: number;
  /** How long the breaker stays open before one half-open probe is let through. */
  coolDownMs: number;
}

/** A tool as declared in a catalog file (`tools/catalog/*.json`). */
export interface ToolSpec {
  name: string;
  description: string;
  /** Scheme, host and port; may reference the environment as `${NAME}` or `${NAME:-default}`. */
  origin: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path template; `{param}` segments are filled from the input, URL-encoded. */
  path: string;
  parameters: Record<string, unknown>;
  response: Record<string, unknown>;
  timeoutMs: number;
  retry: RetryPolicySpec;
  maxResponseBytes: number;
  /** Extra request headers; values may reference the environment (`${TOKEN}`), resolved only when sending. */
  headers?: Record<string, string>;
  /** Inputs sent in the query string; by default all non-path inputs of GET and DELETE, none otherwise. */
  query?: string[];
  breaker?: BreakerSpec;
  /** Tool called with the same input while this one fails or its breaker is open. */
  fallbackTool?: string;
  /** Cost units of one call, counted against a run's budget (default 1). */
  cost?: number;
  /**
   * The call changes something outside (a refund, a password reset, a message sent). Only such tools
   * may have approval rules (TAO_APPROVAL_RULES, a skill's metadata.approval). Default false.
   */
  side_effects?: boolean;
  /**
   * Parameters whose value selects a customer's data (an order, claim or invoice id, an e-mail
   * address, a customer id): a model's call may carry only a value the run was given (the ticket, a
   * reply, a verified result; processors/thought/model/checks.ts). Default none.
   */
  identity_parameters?: string[];
  /** `model` for a chat-completions endpoint (Observation verifies its answers as model turns); `http` by default. */
  kind?: 'http' | 'model';
  /**
   * A `model` tool's API (tools/wires/): `chat` (chat completions, the default), `responses` (OpenAI
   * Responses) or `messages` (Anthropic Messages). The recorded request and the answer Observation
   * reads are chat-shaped on every wire; Action translates when it sends.
   */
  wire?: ModelWire;
  /** JSON body fields sent unless the input sets them (e.g. the endpoint's default model). */
  defaultBody?: Record<string, unknown>;
  /** JSON body fields that override the input (e.g. a fallback tool's other model). */
  fixedBody?: Record<string, unknown>;
  /**
   * `mcp`: a tool of an MCP server, called with `tools/call` over Streamable HTTP (tools/mcp.ts);
   * `http` (default): an HTTP request built from `origin`, `method` and `path`.
   */
  transport?: 'http' | 'mcp';
  /** The MCP server and tool (transport `mcp`): written by `tao tools import-mcp`. */
  mcp?: McpBinding;
}

/** Where an MCP tool lives and what it was when it was imported. */
export interface McpBinding {
  /** The server's Streamable HTTP endpoint; may reference the environment as `${NAME}` or `${NAME:-default}`. */
  url: string;
  /** The tool's name on the server (the catalog name may differ). */
  tool: string;
  /** `sha256:<hex>` of the tool's definition when imported (tools/mcp.ts `mcpToolDigest`); a call is refused while the server lists another. */
  digest: string;
}

/** A loaded tool: its spec, resolved origin and compiled contract validators. */
export interface Tool {
  spec: ToolSpec;
  origin: URL;
  validateInput: ValidateFunction;
  validateResponse: ValidateFunction;
  source: string;
  /** The MCP endpoint, resolved (transport `mcp` only). */
  mcpUrl?: URL;
}

const toolSpecSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'description', 'parameters', 'response', 'timeoutMs', 'retry', 'maxResponseBytes'],
  // An HTTP tool is addressed by origin, method and path; an MCP tool by its server and tool name.
  if: { required: ['transport'], properties: { transport: { const: 'mcp' } } },
  then: {
    required: ['mcp'],
    not: {
      anyOf: [
        { required: ['origin'] },
        { required: ['method'] },
        { required: ['path'] },
        { required: ['query'] },
        { required: ['defaultBody'] },
        { required: ['fixedBody'] },
      ],
    },
  },
  else: { required: ['origin', 'method', 'path'], not: { required: ['mcp'] } },
  properties: {
    name: { type: 'string', pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+$' },
    description: { type: 'string' },
    origin: { type: 'string', minLength: 1 },
    method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] },
    path: { type: 'string', pattern: '^/' },
    parameters: { type: 'object' },
    response: { type: 'object' },
    timeoutMs: { type: 'integer', minimum: 1, maximum: 600000 },
    retry: {
      type: 'object',
      additionalProperties: false,
      required: ['maxAttempts', 'baseDelayMs', 'maxDelayMs'],
      properties: {
        maxAttempts: { type: 'integer', minimum: 1, maximum: 10 },
        baseDelayMs: { type: 'integer', minimum: 0 },
        maxDelayMs: { type: 'integer', minimum: 0 },
        retryOn: { type: 'array', uniqueItems: true, items: { enum: RETRY_CLASSES } },
        maxRetryAfterMs: { type: 'integer', minimum: 0, maximum: 600000 },
      },
    },
    maxResponseBytes: { type: 'integer', minimum: 1 },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    query: { type: 'array', uniqueItems: true, items: { type: 'string' } },
    breaker: {
      type: 'object',
      additionalProperties: false,
      required: ['failureThreshold', 'coolDownMs'],
      properties: { failureThreshold: { type: 'integer', minimum: 1 }, coolDownMs: { type: 'integer', minimum: 1 } },
    },
    fallbackTool: { type: 'string' },
    cost: { type: 'number', minimum: 0 },
    side_effects: { type: 'boolean' },
    identity_parameters: { type: 'array', uniqueItems: true, items: { type: 'string' } },
    kind: { enum: ['http', 'model'] },
    wire: { enum: MODEL_WIRES },
    defaultBody: { type: 'object' },
    fixedBody: { type: 'object' },
    transport: { enum: ['http', 'mcp'] },
    mcp: {
      type: 'object',
      additionalProperties: false,
      required: ['url', 'tool', 'digest'],
      properties: {
        url: { type: 'string', minLength: 1 },
        tool: { type: 'string', minLength: 1 },
        digest: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' },
      },
    },
  },
} as const;

/** One ajv instance with formats (email, date-time with offsets, uri, ...), shared by all contracts. */
export function createContractAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats.default(ajv);
  return ajv;
}

/**
 * The tools the loop may call. Built once at start-up from catalog files; only these tools, at these
 * origins, can be reached.
 */
export class ToolCatalog {
  private constructor(private readonly tools: ReadonlyMap<string, Tool>) {}

  /**
   * Loads every `*.json` file of `dir`, plus `extra` specs built from configuration (the model
   * endpoint's tools, tools/model-config.ts), checked exactly like files.
   * @throws ConfigError naming the file and the problem (invalid spec, bad origin, duplicate name with both sources).
   */
  static load(dir: string, env: NodeJS.ProcessEnv, ajv: Ajv = createContractAjv(), extra: Array<{ source: string; spec: unknown }> = []): ToolCatalog {
    const validateSpec = ajv.compile<ToolSpec>(toolSpecSchema);
    const tools = new Map<string, Tool>();
    const candidates: Array<{ source: string; spec: unknown }> = [...extra];
    for (const file of readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()) {
      const path = join(dir, file);
      let doc: unknown;
      try {
        doc = JSON.parse(readFileSync(path, 'utf8'));
      } catch (err) {
        throw new ConfigError(`${path}: not valid JSON (${(err as Error).message})`);
      }
      if (file.endsWith('.openapi.json')) candidates.push(...toolsFromOpenApi(doc, path));
      else candidates.push({ source: path, spec: doc });
    }
    for (const { source, spec } of candidates) {
      if (!validateSpec(spec)) throw new ConfigError(`${source}: ${describeSpecErrors(validateSpec.errors ?? [])}`);
      const existing = tools.get(spec.name);
      if (existing) throw new ConfigError(`tool "${spec.name}" is defined twice: in ${existing.source} and in ${source}`);
      let mcpUrl: URL | undefined;
      if (spec.transport === 'mcp') {
        // An MCP tool is POSTed to its server's endpoint: that is its origin, method and path.
        const url = interpolateEnv(spec.mcp!.url, env, source);
        try {
          mcpUrl = new URL(url);
        } catch {
          throw new ConfigError(`${source}: mcp.url "${url}" (from "${spec.mcp!.url}") is not a URL`);
        }
        if (!/^https?:$/.test(mcpUrl.protocol) || mcpUrl.username || mcpUrl.password || mcpUrl.hash)
          throw new ConfigError(
            `${source}: mcp.url must be an http(s) URL without credentials or fragment, got ${mcpUrl.protocol}//${mcpUrl.host}${mcpUrl.pathname}`,
          );
        Object.assign(spec, { origin: mcpUrl.origin, method: 'POST', path: mcpUrl.pathname });
      }
      const resolved = interpolateEnv(spec.origin, env, source);
      let origin: URL;
      try {
        origin = new URL(resolved);
      } catch {
        throw new ConfigError(`${source}: origin "${resolved}" (from "${spec.origin}") is not a URL`);
      }
      if (origin.pathname !== '/' || origin.search || !/^https?:$/.test(origin.protocol))
        throw new ConfigError(`${source}: origin must be scheme://host[:port] only, got ${origin.href}`);
      for (const contract of [spec.parameters, spec.response]) {
        if (!ajv.validateSchema(contract)) throw new ConfigError(`${source}: invalid JSON Schema: ${ajv.errorsText(ajv.errors)}`);
      }
      const declared = (spec.parameters as { properties?: Record<string, unknown> }).properties ?? {};
      for (const name of spec.identity_parameters ?? [])
        if (!Object.hasOwn(declared, name)) throw new ConfigError(`${source}: identity_parameters names ${name}, which is not one of its parameters`);
      tools.set(spec.name, {
        spec,
        origin,
        source,
        validateInput: lazyValidator(ajv, spec.parameters, `tool ${spec.name}'s parameters`),
        validateResponse: lazyValidator(ajv, spec.response, `tool ${spec.name}'s response`),
        ...(mcpUrl ? { mcpUrl } : {}),
      });
    }
    for (const tool of tools.values()) {
      const fallback = tool.spec.fallbackTool;
      if (fallback === undefined) continue;
      if (fallback === tool.spec.name) throw new ConfigError(`${tool.source}: tool ${fallback} cannot be its own fallback`);
      if (!tools.has(fallback)) throw new ConfigError(`${tool.source}: fallbackTool ${fallback} is not in the catalog`);
    }
    return new ToolCatalog(tools);
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }
}

/**
 * A contract's validator, compiled on its first call: compiling every contract was most of a
 * stage's start-up work, and each stage checks few of them. The schema was checked against the
 * JSON Schema meta-schema at load, so a malformed contract still stops start-up; one that passes
 * that check and still does not compile (an unresolvable `$ref`) fails every check it takes part
 * in, with an error naming the tool.
 */
function lazyValidator(ajv: Ajv, schema: object, what: string): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    if (!compiled) {
      try {
        compiled = ajv.compile(schema);
      } catch (err) {
        const errors = [
          { instancePath: '', schemaPath: '#', keyword: 'schema', params: {}, message: `${what}: invalid JSON Schema: ${(err as Error).message}` },
        ];
        compiled = Object.assign(() => false, { errors, schema }) as unknown as ValidateFunction;
      }
    }
    const valid = compiled(data) as boolean;
    validate.errors = compiled.errors;
    return valid;
  }) as ValidateFunction;
  validate.errors = null;
  validate.schema = schema;
  return validate;
}

function describeSpecErrors(errors: NonNullable<ValidateFunction['errors']>): string {
  return (
    errors
      // `if`/`then` add a summary error of their own; the specific errors say what is wrong.
      .filter((e) => e.keyword !== 'if')
      .map((e) => {
        if (e.keyword === 'not' && e.schemaPath.startsWith('#/then'))
          return 'an MCP tool (transport "mcp") is addressed by mcp.url and mcp.tool: origin, method, path, query, defaultBody and fixedBody do not apply';
        if (e.keyword === 'not' && e.schemaPath.startsWith('#/else')) return 'mcp is set but transport is not "mcp"';
        const params = e.params as { additionalProperty?: string; missingProperty?: string };
        if (params.additionalProperty) return `unknown key "${[e.instancePath, params.additionalProperty].join('/').replace(/^\//, '')}"`;
        if (params.missingProperty) return `missing key "${[e.instancePath, params.missingProperty].join('/').replace(/^\//, '')}"`;
        return `${e.instancePath || '/'} ${e.message}`;
      })
      .join('; ')
  );
}

/**
 * Names of the environment variables the catalog files of `dir` reference as `${NAME}` (tool
 * secrets, origins). The start-up check of the environment accepts them as known; none when `dir`
 * does not exist (loading the catalog reports that).
 */
export function catalogVariableNames(dir: string): string[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
  const names = new Set<string>();
  for (const file of files) for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/\$\{([A-Z_][A-Z0-9_]*)/g)) names.add(m[1]!);
  return [...names];
}

export const DEFAULT_CATALOG_DIR = packagePath('tools', 'catalog');
