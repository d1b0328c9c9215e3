/**
 * Route tables and the OpenAPI 3.1 documents made from them. A server declares its routes once
 * ({@link RouteSpec}: method, path template, auth, request body schema, every status it answers);
 * its dispatch matches requests against that table ({@link routeMatcher}), so a route cannot be
 * served without being declared, and {@link openApiDocument} turns the same table into the document
 * the server serves at `GET /openapi.json` (docs/openapi/ holds the generated copies). Pure: no I/O.
 */

export type HttpMethod = 'GET' | 'POST';

/** One status a route answers with. */
export interface ResponseSpec {
  /** One line: when this status is answered. */
  description: string;
  /** The `error` codes of the JSON body `{error, message?, fields?}` (omit for free-text errors). */
  errors?: readonly string[];
  /** Media type of the body; default the route table's `jsonType`. */
  contentType?: string;
  /** Response headers set with this status (e.g. `retry-after`). */
  headers?: readonly string[];
  /** The body's JSON Schema when it is not the error body above (e.g. a JSON-RPC error envelope). */
  schema?: object;
}

/** A path parameter (`{name}` in the path template). */
export interface ParamSpec {
  description: string;
  /** The regular expression (no anchors) the segment must match for the route to match; default `[^/]+`. */
  pattern?: string;
}

/** One route: what the dispatch matches and what the document says. */
export interface RouteSpec {
  method: HttpMethod;
  /** OpenAPI path template, e.g. `/v1/runs/{thought_id}/approve`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** Scope of the API key the route asks for; null when it needs none. */
  scope: string | null;
  /** The key is asked for only when the server runs with keys (open on loopback otherwise). */
  keyOptional?: boolean;
  params?: Readonly<Record<string, ParamSpec>>;
  query?: Readonly<Record<string, string>>;
  body?: { contentType: string; schema: object; required: boolean };
  responses: Readonly<Record<number, ResponseSpec>>;
}

/** A request's match in a route table. */
export interface RouteMatch<R extends RouteSpec> {
  route: R;
  /** The path parameters, as they are in the path (not decoded). */
  params: Record<string, string>;
  /** False when the path is a route's but the method is not (the route is the first with this path). */
  methodAllowed: boolean;
}

const escape = (text: string) => text.replace(/[.*+?^$()|[\]\\]/g, '\\$&');

/** The anchored regular expression of a route's path, and its parameter names in order. */
export function pathPattern(route: Pick<RouteSpec, 'path' | 'params'>): { regex: RegExp; names: string[] } {
  const names: string[] = [];
  const source = route.path
    .split(/(\{[a-z_]+\})/)
    .map((part) => {
      const name = /^\{([a-z_]+)\}$/.exec(part)?.[1];
      if (!name) return escape(part);
      names.push(name);
      return `(${route.params?.[name]?.pattern ?? '[^/]+'})`;
    })
    .join('');
  return { regex: new RegExp(`^${source}$`), names };
}

/**
 * The dispatch's lookup: the route of `method` and `path`, else the first route of `path` with
 * `methodAllowed: false`, else null (no route has this path).
 */
export function routeMatcher<R extends RouteSpec>(routes: readonly R[]): (method: string | undefined, path: string) => RouteMatch<R> | null {
  const compiled = routes.map((route) => ({ route, ...pathPattern(route) }));
  return (method, path) => {
    let other: RouteMatch<R> | null = null;
    for (const { route, regex, names } of compiled) {
      const m = regex.exec(path);
      if (!m) continue;
      const params = Object.fromEntries(names.map((n, i) => [n, m[i + 1]!]));
      if (route.method === method) return { route, params, methodAllowed: true };
      other ??= { route, params, methodAllowed: false };
    }
    return other;
  };
}

/** What a document says besides its routes. */
export interface DocumentInfo {
  title: string;
  version: string;
  description: string;
  /** Media type of JSON bodies (requests' and answers'). */
  jsonType: string;
  /** Security schemes by name; a route's `scope` is asked of each of them (any one will do). */
  securitySchemes: Record<string, object>;
}

const ERROR_REF = { $ref: '#/components/schemas/Error' };

/** The error body: `{error, message?, fields?}`, `error` one of `errors` when given. */
const errorBody = (errors: readonly string[] | undefined) => (errors ? { allOf: [ERROR_REF], properties: { error: { enum: [...errors] } } } : ERROR_REF);

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: { type: 'string' },
    message: { type: 'string' },
    fields: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, message: { type: 'string' } } } },
  },
};

function operation(route: RouteSpec, info: DocumentInfo): object {
  const schemes = Object.keys(info.securitySchemes);
  const security = route.scope === null ? [] : [...schemes.map((s) => ({ [s]: [route.scope!] })), ...(route.keyOptional ? [{}] : [])];
  const parameters = [
    ...Object.entries(route.params ?? {}).map(([name, p]) => ({
      name,
      in: 'path',
      required: true,
      description: p.description,
      schema: { type: 'string', ...(p.pattern ? { pattern: `^${p.pattern}$` } : {}) },
    })),
    ...Object.entries(route.query ?? {}).map(([name, description]) => ({ name, in: 'query', required: false, description, schema: { type: 'string' } })),
  ];
  const responses = Object.fromEntries(
    Object.entries(route.responses).map(([status, r]) => {
      const type = r.contentType ?? info.jsonType;
      const schema = r.schema ?? (Number(status) >= 400 && type === info.jsonType ? errorBody(r.errors) : {});
      return [
        status,
        {
          description: r.description,
          ...(r.headers?.length ? { headers: Object.fromEntries(r.headers.map((h) => [h, { schema: { type: 'string' } }])) } : {}),
          ...(status === '303' ? {} : { content: { [type]: { schema } } }),
        },
      ];
    }),
  );
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    security,
    ...(parameters.length ? { parameters } : {}),
    ...(route.body ? { requestBody: { required: route.body.required, content: { [route.body.contentType]: { schema: route.body.schema } } } } : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document of a route table (deterministic: paths and operations in table order). */
export function openApiDocument(info: DocumentInfo, routes: readonly RouteSpec[]): Record<string, unknown> {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route, info);
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    paths,
    components: { schemas: { Error: ERROR_SCHEMA }, securitySchemes: info.securitySchemes },
  };
}
