// test-needs: kafka
/**
 * The console against its OpenAPI document (docs/openapi/console.json, generated from
 * console/routes.ts): every route is driven through its answers on the real broker, behind API
 * keys (a bind on 0.0.0.0), and every status observed must be declared for its route, and every
 * declared route must answer something else than the 404 fallback. The document it serves at
 * `GET /openapi.json`, without a key, is the committed one.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { startConsole, type RunningConsole } from '../../console/cli.ts';
import { hashApiKey, newApiKey } from '../../ingress/api-keys.ts';
import { withProducer } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';
import { freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { committedDoc, driftProblems, RouteRecorder } from '../helpers/openapi-drift.ts';

const keys = { ops: newApiKey(), boss: newApiKey(), slow: newApiKey() };
const recorder = new RouteRecorder((status, body) => status === 404 && body.startsWith('{"error":"no route '));
let cluster: TestCluster;
let ui: RunningConsole;
let base = '';
const run = buildTask({ text: 'Where is my order O-77?', source: 'api', external_id: randomUUID() });

before(async () => {
  cluster = await freshCluster();
  const entries = [
    { id: 'ops', sha256: hashApiKey(keys.ops), sources: ['*'], scopes: ['console'], rate_per_minute: 6000 },
    { id: 'boss', sha256: hashApiKey(keys.boss), sources: ['*'], scopes: ['console', 'approve'], rate_per_minute: 6000 },
    { id: 'slow', sha256: hashApiKey(keys.slow), sources: ['*'], scopes: ['console'], rate_per_minute: 1, burst: 1 },
  ];
  ui = await startConsole(
    { ...cluster.env, TAO_INGRESS_API_KEYS: JSON.stringify(entries) },
    { host: '0.0.0.0', port: 0, readTimeoutMs: 30000, logger: createLogger({ test: 'console-openapi' }, { level: 'error' }) },
  );
  base = `http://127.0.0.1:${new URL(ui.url).port}`;
  await withProducer(cluster.kafka, (producer) => submitTasks(producer, cluster.codec, [run]));
  await ui.feed.ready;
  for (const deadline = Date.now() + 30000; !ui.feed.index.get(run.thought_id);) {
    assert.ok(Date.now() < deadline, 'the run never reached the index');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});
after(async () => {
  await ui?.stop();
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const get = (path: string, key: string | null = keys.ops) => recorder.send(base, path, { headers: key ? auth(key) : {} });
const post = (path: string, body: string, key: string | null = keys.ops, headers: Record<string, string> = {}) =>
  recorder.send(base, path, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? auth(key) : {}), ...headers }, body });
const runPath = `/api/runs/${encodeURIComponent(run.thought_id)}`;
const unknown = '/api/runs/no-such-run';

test('every route answers 401 without a key but /login and /openapi.json, which is the committed document', async () => {
  for (const path of ['/', '/runs/x', '/dead-letters', '/health', '/static/app.js', '/report.css', '/api/events', '/api/runs', runPath])
    assert.equal((await get(path, null)).status, 401, path);
  for (const path of [`${runPath}/report`, '/api/dead-letters', '/api/health', '/releases', '/api/manifests'])
    assert.equal((await get(path, null)).status, 401, path);
  for (const what of ['verify', 'fork', 'approve', 'deny', 'reply']) assert.equal((await post(`${runPath}/${what}`, '{}', null)).status, 401, what);
  assert.equal((await post('/api/dead-letters/redrive', '{}', null)).status, 401);
  const served = await get('/openapi.json', null);
  assert.equal(served.status, 200);
  assert.deepEqual(JSON.parse(served.text), committedDoc('console'));
});

test('pages, assets, the event stream, the login form and the rate limit', async () => {
  for (const path of [
    '/',
    `/runs/${encodeURIComponent(run.thought_id)}`,
    '/dead-letters',
    '/health',
    '/releases',
    '/static/app.js',
    '/report.css',
    '/api/events',
  ])
    assert.equal((await get(path)).status, 200, path);
  assert.equal((await get('/static/no-such.js')).status, 404);
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  assert.equal((await recorder.send(base, '/login', { method: 'POST', headers: form, body: 'key=tao_wrong', redirect: 'manual' })).status, 401);
  assert.equal((await recorder.send(base, '/login', { method: 'POST', headers: form, body: `key=${keys.ops}`, redirect: 'manual' })).status, 303);
  assert.equal((await recorder.send(base, '/login', { method: 'POST', headers: { ...form, origin: 'https://elsewhere.example' }, body: 'key=x' })).status, 403);
  assert.equal((await recorder.send(base, '/login', { method: 'POST', headers: form, body: `key=${'x'.repeat(70000)}` })).status, 413);
  assert.equal((await get('/api/runs', keys.slow)).status, 200);
  assert.equal((await get('/api/runs', keys.slow)).status, 429);
});

test('the runs API through its answers', async () => {
  assert.equal((await get('/api/runs?status=running')).status, 200);
  assert.equal((await get('/api/runs?from=yesterday')).status, 400);
  assert.equal((await get(runPath)).status, 200);
  assert.equal((await get(unknown)).status, 404);
  assert.equal((await get('/api/runs/%E0%A4%A')).status, 400);
  assert.equal((await get(`${runPath}/report`)).status, 200);
  assert.equal((await get(`${unknown}/report`)).status, 404);
  assert.equal((await post(`${unknown}/verify`, '{}')).status, 404);
  assert.equal((await post(`${runPath}/verify`, '{}')).status, 200);
  assert.equal((await post(`${runPath}/fork`, '{}')).status, 400);
  assert.equal((await post(`${unknown}/fork`, '{"point": 1}')).status, 404);
  assert.equal((await post(`${runPath}/fork`, '{"point": "S99"}')).status, 409);
  // A JSON body over 64 KiB is read as no body (400); only the login form answers 413.
  assert.equal((await post(`${runPath}/fork`, JSON.stringify({ point: 'x'.repeat(70000) }))).status, 400);
  assert.equal((await post(`${runPath}/fork`, '{}', keys.ops, { 'content-type': 'text/plain' })).status, 415);
  assert.equal((await post(`${runPath}/fork`, '{}', keys.ops, { origin: 'https://elsewhere.example' })).status, 403);
  for (const what of ['approve', 'deny', 'reply']) {
    assert.equal((await post(`${runPath}/${what}`, '{}')).status, 403, `${what} without the approve scope`);
    assert.equal((await post(`${unknown}/${what}`, '{}', keys.boss)).status, 404, what);
    assert.equal((await post(`${runPath}/${what}`, '{}', keys.boss)).status, 409, `${what} of a run that does not wait`);
  }
});

test('dead letters, health and releases', async () => {
  assert.equal((await get('/api/dead-letters')).status, 200);
  assert.equal((await post('/api/dead-letters/redrive', '{}')).status, 400);
  assert.equal((await post('/api/dead-letters/redrive', '{"topic": "nope", "offsets": [{"partition": 0, "offset": "0"}]}')).status, 409);
  assert.equal((await post('/api/dead-letters/redrive', '{"topic": "tasks", "offsets": [{"partition": 0, "offset": "0"}]}')).status, 200);
  assert.equal((await get('/api/health')).status, 200);
  assert.equal((await get('/api/manifests')).status, 200);
  assert.equal((await get('/no-such-page')).status, 404);
  assert.ok(recorder.observed.at(-1)!.fallback);
});

test('every answer observed is declared in docs/openapi/console.json, and every declared route answered', () => {
  assert.deepEqual(driftProblems(committedDoc('console'), recorder.observed), []);
});
