/**
 * The OpenAPI documents of the ingress and the console: made from their route tables, committed
 * current in docs/openapi/ (`npm run docs:openapi`), and well formed (3.1, every operation with
 * responses, parameters matching the path templates, request schemas that compile, references that
 * resolve). The route matcher the two dispatches use.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import { CONSOLE_ROUTES, consoleOpenApi } from '../../console/routes.ts';
import { INGRESS_ROUTES, ingressOpenApi } from '../../ingress/routes.ts';
import { routeMatcher } from '../../runtime/openapi.ts';
import { openApiFiles } from '../../scripts/gen-openapi.ts';

test('docs/openapi/*.json are the documents generated from the route tables (run npm run docs:openapi)', () => {
  for (const { file, text } of openApiFiles()) assert.equal(readFileSync(file, 'utf8'), text, `${file} is stale: run \`npm run docs:openapi\``);
});

type Doc = {
  openapi: string;
  info: Record<string, string>;
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: Record<string, Record<string, unknown>>;
};

function problems(doc: Doc): string[] {
  const out: string[] = [];
  if (!/^3\.1\.\d+$/.test(doc.openapi)) out.push(`openapi is ${doc.openapi}, not 3.1.x`);
  if (!doc.info?.title || !doc.info.version) out.push('info needs title and version');
  const ids = new Set<string>();
  const ajv = new Ajv({ strict: false });
  const resolve = (ref: string) =>
    ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], doc);
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
  for (const ref of refs) if (resolve(JSON.parse(`{${ref}}`).$ref) === undefined) out.push(`${ref} does not resolve`);
  for (const [path, ops] of Object.entries(doc.paths)) {
    if (!path.startsWith('/')) out.push(`${path} does not start with /`);
    const templated = [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]).sort();
    for (const [method, op] of Object.entries(ops)) {
      const where = `${method.toUpperCase()} ${path}`;
      if (!['get', 'post', 'put', 'delete', 'patch'].includes(method)) out.push(`${where}: unknown method`);
      const id = op.operationId as string;
      if (!id || ids.has(id)) out.push(`${where}: operationId ${id} missing or not unique`);
      ids.add(id);
      const responses = (op.responses ?? {}) as Record<string, { description?: string }>;
      if (Object.keys(responses).length === 0) out.push(`${where}: no responses`);
      for (const [status, r] of Object.entries(responses)) {
        if (!/^[1-5]\d\d$/.test(status)) out.push(`${where}: status ${status}`);
        if (!r.description) out.push(`${where} ${status}: no description`);
      }
      const params = ((op.parameters ?? []) as Array<{ name: string; in: string; required?: boolean }>).filter((p) => p.in === 'path');
      if (JSON.stringify(params.map((p) => p.name).sort()) !== JSON.stringify(templated)) out.push(`${where}: path parameters do not match the template`);
      if (params.some((p) => p.required !== true)) out.push(`${where}: a path parameter must be required`);
      for (const security of (op.security ?? []) as Array<Record<string, unknown>>)
        for (const scheme of Object.keys(security)) if (!doc.components.securitySchemes?.[scheme]) out.push(`${where}: unknown security scheme ${scheme}`);
      const body = op.requestBody as { content: Record<string, { schema: object }> } | undefined;
      for (const [type, media] of Object.entries(body?.content ?? {})) {
        try {
          ajv.compile(media.schema);
        } catch (err) {
          out.push(`${where} ${type}: the request schema does not compile (${(err as Error).message})`);
        }
      }
    }
  }
  return out;
}

test('both documents are well-formed OpenAPI 3.1', () => {
  for (const doc of [ingressOpenApi(), consoleOpenApi()] as unknown as Doc[]) {
    assert.deepEqual(problems(doc), [], doc.info.title);
    assert.ok(Object.keys(doc.paths).length > 5, doc.info.title);
  }
});

test('the structure check finds a broken document', () => {
  const doc = structuredClone(ingressOpenApi()) as unknown as Doc;
  doc.openapi = '3.0.3';
  delete doc.paths['/health']!.get!.responses;
  doc.paths['/v1/runs/{thought_id}/approve']!.post!.parameters = [];
  assert.equal(problems(doc).length, 3);
});

test('the route tables give each operation a unique id and the dispatch matches by method and path', () => {
  for (const routes of [INGRESS_ROUTES, CONSOLE_ROUTES]) assert.equal(new Set(routes.map((r) => r.operationId)).size, routes.length);
  const match = routeMatcher(INGRESS_ROUTES);
  const approve = match('POST', '/v1/runs/api:abc/approve');
  assert.equal(approve?.route.operationId, 'approveRun');
  assert.deepEqual(approve?.params, { thought_id: 'api:abc' });
  assert.equal(match('GET', '/v1/runs/api:abc/approve')?.methodAllowed, false);
  assert.equal(match('POST', '/v1/runs/a b/approve'), null, 'a thought_id outside the pattern matches no route');
  assert.equal(match('GET', '/v1/tasks/extra'), null);
  const console = routeMatcher(CONSOLE_ROUTES);
  assert.equal(console('GET', '/static/vendor/uplot.iife.min.js')?.params.file, 'vendor/uplot.iife.min.js');
  assert.equal(console('GET', '/api/runs/r1/report')?.route.operationId, 'runReport');
  assert.equal(console('GET', '/api/runs/r1')?.route.operationId, 'getRun');
});
