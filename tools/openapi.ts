/**
 * Imports the operations of an OpenAPI 3 document as catalog tools. Each operation with an
 * `operationId` becomes `<namespace>.<operation_id>`; its path and query parameters and its JSON
 * request body become the tool's parameter schema, and its 2xx JSON response the response schema.
 * Local `$ref`s (`#/components/...`) are inlined. Runtime settings come from `x-tao-*` extensions:
 *
 * - document: `x-tao-namespace` (default: slug of `info.title`), `x-tao-origin` (default:
 *   `servers[0].url`; may reference the environment), `x-tao-defaults` (any ToolSpec fields);
 * - operation: `x-tao-timeout-ms`, `x-tao-retry`, `x-tao-breaker`, `x-tao-fallback-tool`,
 *   `x-tao-max-response-bytes`, `x-tao-headers`.
 *
 * The result is validated like any catalog file, so a document that leaves something out fails
 * start-up with a message naming the document and the operation.
 */
import { ConfigError } from '../runtime/errors.ts';

type Json = Record<string, unknown>;

const DEFAULTS = { timeoutMs: 5000, retry: { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 5000 }, maxResponseBytes: 1024 * 1024 };
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export function toolsFromOpenApi(doc: unknown, path: string): Array<{ source: string; spec: unknown }> {
  if (!isObject(doc) || typeof doc.openapi !== 'string' || !doc.openapi.startsWith('3.'))
    throw new ConfigError(`${path}: not an OpenAPI 3 document (no "openapi": "3.x")`);
  const info = isObject(doc.info) ? doc.info : {};
  const namespace = typeof doc['x-tao-namespace'] === 'string' ? doc['x-tao-namespace'] : slug(String(info.title ?? ''));
  if (!namespace) throw new ConfigError(`${path}: set x-tao-namespace or info.title to name its tools`);
  const server = Array.isArray(doc.servers) && isObject(doc.servers[0]) ? String(doc.servers[0].url) : undefined;
  const originText = typeof doc['x-tao-origin'] === 'string' ? doc['x-tao-origin'] : server;
  if (!originText) throw new ConfigError(`${path}: no servers[0].url and no x-tao-origin`);
  // servers[].url may carry a base path; the tool origin is scheme://host[:port] and the base path prefixes every route.
  const { origin, basePath } = splitServer(originText);
  const defaults = isObject(doc['x-tao-defaults']) ? doc['x-tao-defaults'] : {};
  const resolve = (value: unknown, depth = 0): unknown => inlineRefs(doc, value, depth, path);

  const tools: Array<{ source: string; spec: unknown }> = [];
  for (const [route, item] of Object.entries(isObject(doc.paths) ? doc.paths : {})) {
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const where = `${path} ${method.toUpperCase()} ${route}`;
      if (typeof op.operationId !== 'string') throw new ConfigError(`${where}: operation has no operationId, so it can't be named as a tool`);
      const properties: Json = {};
      const required: string[] = [];
      const query: string[] = [];
      const params = [...(Array.isArray(item.parameters) ? item.parameters : []), ...(Array.isArray(op.parameters) ? op.parameters : [])].map((p) =>
        resolve(p),
      ) as Json[];
      for (const p of params) {
        if (p.in !== 'path' && p.in !== 'query') continue;
        const name = String(p.name);
        properties[name] = isObject(p.schema) ? p.schema : {};
        if (p.required === true || p.in === 'path') required.push(name);
        if (p.in === 'query') query.push(name);
      }
      const body = resolve(isObject(op.requestBody) ? (op.requestBody as Json) : undefined) as Json | undefined;
      const bodySchema =
        body && isObject(body.content) && isObject(body.content['application/json']) ? (body.content['application/json'] as Json).schema : undefined;
      if (isObject(bodySchema)) {
        if (bodySchema.type !== 'object' || !isObject(bodySchema.properties)) throw new ConfigError(`${where}: only JSON object request bodies are supported`);
        Object.assign(properties, bodySchema.properties);
        if (Array.isArray(bodySchema.required)) required.push(...(bodySchema.required as string[]));
      }
      const responses = isObject(op.responses) ? op.responses : {};
      const ok = ['200', '201', '202', '2XX', 'default']
        .map((code) => resolve(responses[code]))
        .find((r) => isObject(r) && isObject(r.content) && isObject(r.content['application/json'])) as Json | undefined;
      const responseSchema = ok ? ((ok.content as Json)['application/json'] as Json).schema : undefined;
      if (!isObject(responseSchema)) throw new ConfigError(`${where}: no 2xx application/json response schema`);
      const spec: Json = {
        ...DEFAULTS,
        ...defaults,
        name: `${namespace}.${snake(op.operationId)}`,
        description: String(op.summary ?? op.description ?? op.operationId),
        origin,
        method: method.toUpperCase(),
        path: basePath + route,
        parameters: { type: 'object', additionalProperties: false, required: [...new Set(required)], properties },
        response: responseSchema,
        ...(query.length ? { query } : {}),
      };
      const ext: Array<[string, string]> = [
        ['x-tao-timeout-ms', 'timeoutMs'],
        ['x-tao-retry', 'retry'],
        ['x-tao-breaker', 'breaker'],
        ['x-tao-fallback-tool', 'fallbackTool'],
        ['x-tao-max-response-bytes', 'maxResponseBytes'],
        ['x-tao-headers', 'headers'],
      ];
      for (const [key, field] of ext) if (op[key] !== undefined) spec[field] = op[key];
      tools.push({ source: `${path}#${op.operationId}`, spec });
    }
  }
  if (tools.length === 0) throw new ConfigError(`${path}: the document has no operations`);
  return tools;
}

function inlineRefs(doc: Json, value: unknown, depth: number, path: string): unknown {
  if (depth > 32) throw new ConfigError(`${path}: $ref nesting deeper than 32 (a recursive schema?)`);
  if (Array.isArray(value)) return value.map((v) => inlineRefs(doc, v, depth + 1, path));
  if (!isObject(value)) return value;
  if (typeof value.$ref === 'string') {
    if (!value.$ref.startsWith('#/')) throw new ConfigError(`${path}: only local $refs are supported, got ${value.$ref}`);
    let target: unknown = doc;
    for (const part of value.$ref.slice(2).split('/')) target = isObject(target) ? target[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    if (target === undefined) throw new ConfigError(`${path}: $ref ${value.$ref} points nowhere`);
    return inlineRefs(doc, target, depth + 1, path);
  }
  const out: Json = {};
  // OpenAPI's `nullable` and `example` are not JSON Schema; ajv (strict off) ignores them.
  for (const [k, v] of Object.entries(value)) out[k] = inlineRefs(doc, v, depth + 1, path);
  return out;
}

function splitServer(text: string): { origin: string; basePath: string } {
  const m = /^(\$\{[^}]+\}|[a-z]+:\/\/[^/]+)(\/.*)?$/i.exec(text);
  if (!m) return { origin: text, basePath: '' };
  return { origin: m[1]!, basePath: (m[2] ?? '').replace(/\/+$/, '') };
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .replace(/^([0-9])/, 't$1');
}

function snake(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toLowerCase()
    .replace(/^_+|_+$/g, '');
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
