// test-needs: kafka
/**
 * The ingress against its OpenAPI document (docs/openapi/ingress.json, generated from
 * ingress/routes.ts): every route is driven through its answers on the real broker, and every
 * status observed must be declared for its route, and every declared route must answer something
 * else than the 404 fallback. The document it serves at `GET /openapi.json` is the committed one.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { hashApiKey, newApiKey, type ApiKeyEntry } from '../../ingress/api-keys.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import { createLogger } from '../../runtime/log.ts';
import { signGithub } from '../../runtime/signature.ts';
import { freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { committedDoc, driftProblems, RouteRecorder } from '../helpers/openapi-drift.ts';

const SECRET = 'gh-secret';
const keys = { both: newApiKey(), submitter: newApiKey(), slow: newApiKey(), reader: newApiKey() };
const entries: ApiKeyEntry[] = [
  { id: 'both', sha256: hashApiKey(keys.both), sources: ['*'], rate_per_minute: 6000, scopes: ['tasks', 'approve'] },
  { id: 'submitter', sha256: hashApiKey(keys.submitter), sources: ['api'], rate_per_minute: 6000 },
  { id: 'reader', sha256: hashApiKey(keys.reader), sources: ['*'], rate_per_minute: 6000, scopes: ['read'] },
  { id: 'slow', sha256: hashApiKey(keys.slow), sources: ['*'], rate_per_minute: 1, burst: 1, scopes: ['tasks', 'approve'] },
];
const recorder = new RouteRecorder((status, body) => status === 404 && body.includes('"error":"not_found"'));
let cluster: TestCluster;
let producer: Producer;
/** With keys and the webhook secret: most answers. */
let main: Ingress;
/** Open, with an in-flight limit of 0: 429 too_many_runs, and decisions refused 403. */
let full: Ingress;
/** With keys, its producer never connected: 503. */
let down: Ingress;

before(async () => {
  cluster = await freshCluster();
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  const logger = createLogger({}, { level: 'error' });
  const deps = { producer, codec: cluster.codec, logger, kafka: cluster.kafka };
  const base = { port: 0, host: '127.0.0.1', maxBodyBytes: 4096 };
  main = await startIngress({ ...base, auth: { mode: 'keys', keys: entries }, webhooks: { secrets: { github: SECRET } } }, deps);
  full = await startIngress({ ...base, maxInFlightRuns: 0, auth: { mode: 'open', reason: 'test' }, webhooks: { secrets: { github: SECRET } } }, deps);
  down = await startIngress(
    { ...base, sendTimeoutMs: 500, auth: { mode: 'keys', keys: entries }, webhooks: { secrets: { github: SECRET } } },
    { ...deps, producer: cluster.kafka.producer({ idempotent: true }), kafka: undefined },
  );
});
after(async () => {
  await main?.close();
  await full?.close();
  await down?.close();
  await producer?.disconnect();
});

const post = (ingress: Ingress, path: string, body: string, headers: Record<string, string> = {}) =>
  recorder.send(ingress.url, path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const issue = (n: number) =>
  JSON.stringify({
    action: 'opened',
    issue: { number: n, title: 'Where is my order?', body: 'It never came.', created_at: new Date().toISOString() },
    repository: { full_name: `acme/shop-${randomUUID().slice(0, 8)}` },
  });
const github = (ingress: Ingress, body: string, headers: Record<string, string> = {}) =>
  post(ingress, '/v1/webhooks/github', body, {
    'x-github-event': 'issues',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': signGithub(SECRET, body),
    ...headers,
  });

test('POST /v1/tasks through its answers', async () => {
  const task = JSON.stringify({ text: 'Where is my order O-1?' });
  assert.equal((await post(main, '/v1/tasks', task, bearer(keys.both))).status, 202);
  assert.equal((await post(main, '/v1/tasks', '{not json', bearer(keys.both))).status, 400);
  assert.equal((await post(main, '/v1/tasks', task)).status, 401);
  assert.equal((await post(main, '/v1/tasks', JSON.stringify({ text: 'hi', source: 'crm' }), bearer(keys.submitter))).status, 403);
  assert.equal((await recorder.send(main.url, '/v1/tasks')).status, 405);
  assert.equal((await post(main, '/v1/tasks', JSON.stringify({ text: 'x'.repeat(5000) }), bearer(keys.both))).status, 413);
  assert.equal((await post(main, '/v1/tasks', task, bearer(keys.slow))).status, 202);
  assert.equal((await post(main, '/v1/tasks', task, bearer(keys.slow))).status, 429);
  assert.equal((await post(full, '/v1/tasks', JSON.stringify({ text: 'one more run' }))).status, 429);
  assert.equal((await post(down, '/v1/tasks', task, bearer(keys.both))).status, 503);
});

test('POST /v1/webhooks/{source} through its answers', async () => {
  const body = issue(1);
  const delivery = randomUUID();
  assert.equal((await github(main, body, { 'x-github-delivery': delivery })).status, 202);
  assert.equal((await github(main, body, { 'x-github-delivery': delivery })).status, 200);
  assert.equal((await github(main, '{}', { 'x-github-event': 'ping' })).status, 202);
  assert.equal((await github(main, '{not json')).status, 400);
  assert.equal((await github(main, body, { 'x-hub-signature-256': signGithub('wrong', body) })).status, 401);
  assert.equal((await post(main, '/v1/webhooks/jira', '{}')).status, 401);
  assert.equal((await post(main, '/v1/webhooks/gitlab', '{}')).status, 404);
  assert.equal((await recorder.send(main.url, '/v1/webhooks/github')).status, 405);
  assert.equal((await github(main, JSON.stringify({ pad: 'x'.repeat(5000) }))).status, 413);
  assert.equal((await github(full, issue(2))).status, 429);
  assert.equal((await github(down, issue(3))).status, 503);
});

test('POST /v1/runs/{thought_id}/approve and /deny through their answers', async () => {
  for (const verdict of ['approve', 'deny']) {
    const path = `/v1/runs/api:${randomUUID()}/${verdict}`;
    assert.equal((await post(main, path, JSON.stringify({ reason: 'checked' }), bearer(keys.both))).status, 202);
    assert.equal((await post(main, path, JSON.stringify({ step: 'not a step!' }), bearer(keys.both))).status, 400);
    const unknown = `/v1/runs/api:${randomUUID()}/${verdict}`;
    assert.equal(
      (await post(main, unknown, JSON.stringify({ interrupt: 'i-0' }), bearer(keys.both))).status,
      404,
      'an interrupt of a run the log has no record of',
    );
    assert.equal((await post(main, path, JSON.stringify({ interrupt: 'i-0' }), bearer(keys.both))).status, 409, 'an interrupt of a run not awaiting approval');
    assert.equal((await post(main, path, '{}')).status, 401);
    assert.equal((await post(main, path, '{}', bearer(keys.submitter))).status, 403);
    assert.equal((await post(full, path, '{}')).status, 403);
    assert.equal((await recorder.send(main.url, path)).status, 405);
    assert.equal((await post(main, path, JSON.stringify({ reason: 'x'.repeat(5000) }), bearer(keys.both))).status, 413);
    assert.equal((await post(down, path, '{}', bearer(keys.both))).status, 503);
  }
  // The slow key's one token went to /v1/tasks above.
  assert.equal((await post(main, `/v1/runs/api:${randomUUID()}/approve`, '{}', bearer(keys.slow))).status, 429);
});

test('POST /v1/runs/{thought_id}/cancel through its answers', async () => {
  const accepted = await post(main, '/v1/tasks', JSON.stringify({ text: 'Where is my order O-1?' }), bearer(keys.both));
  const path = `/v1/runs/${(JSON.parse(accepted.text) as { thought_id: string }).thought_id}/cancel`;
  assert.equal((await post(main, path, JSON.stringify({ reason: 'sent by mistake' }), bearer(keys.both))).status, 202);
  assert.equal((await post(main, path, JSON.stringify({ why: 'no' }), bearer(keys.both))).status, 400);
  assert.equal((await post(main, `/v1/runs/api:${randomUUID()}/cancel`, '{}', bearer(keys.both))).status, 404);
  assert.equal((await post(main, path, '{}')).status, 401);
  assert.equal((await post(main, path, '{}', bearer(keys.submitter))).status, 403);
  assert.equal((await recorder.send(main.url, path)).status, 405);
  assert.equal((await post(down, path, '{}', bearer(keys.both))).status, 503);
});

test('GET /v1/runs/... through their answers other than a stream (test/ingress/run-stream.test.ts streams)', async () => {
  const id = `api:${randomUUID()}`;
  const get = (ingress: Ingress, path: string, headers: Record<string, string> = {}) => recorder.send(ingress.url, path, { headers });
  assert.equal((await get(main, `/v1/runs/${id}`, bearer(keys.reader))).status, 404);
  assert.equal((await get(main, `/v1/runs/${id}`)).status, 401);
  assert.equal((await get(main, `/v1/runs/${id}`, bearer(keys.both))).status, 403);
  assert.equal((await get(down, `/v1/runs/${id}`, bearer(keys.reader))).status, 503);
  assert.equal((await get(main, `/v1/runs/${id}/events`, { ...bearer(keys.reader), 'last-event-id': 'not-a-cursor' })).status, 400);
  assert.equal((await get(main, `/v1/runs/${id}/events`)).status, 401);
  assert.equal((await get(main, `/v1/runs/${id}/events`, bearer(keys.both))).status, 403);
  assert.equal((await get(down, `/v1/runs/${id}/events`, bearer(keys.reader))).status, 503);
  assert.equal((await get(main, '/v1/runs/events?source=jira', bearer(keys.reader))).status, 400);
  assert.equal((await get(main, '/v1/runs/events?source=jira&external_id=X-1')).status, 401);
});

test('the A2A routes through their answers (test/ingress/a2a.test.ts drives the protocol)', async () => {
  const rpc = (method: string) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { id: `a2a-${randomUUID()}` } });
  const a2a = (ingress: Ingress, body: string, headers: Record<string, string> = {}) => post(ingress, '/a2a', body, { 'a2a-version': '1.0', ...headers });
  assert.equal((await recorder.send(main.url, '/.well-known/agent-card.json')).status, 200);
  const missing = await a2a(main, rpc('GetTask'), bearer(keys.reader));
  assert.equal(missing.status, 200);
  assert.equal((JSON.parse(missing.text) as { error: { code: number } }).error.code, -32001, 'TaskNotFound');
  assert.equal((await a2a(main, rpc('GetTask'))).status, 401);
  assert.equal((await a2a(main, rpc('SendMessage'), bearer(keys.reader))).status, 403);
  assert.equal((await a2a(main, JSON.stringify({ pad: 'x'.repeat(5000) }), bearer(keys.reader))).status, 413);
  // The slow key's one token went to /v1/tasks above.
  assert.equal((await a2a(main, rpc('GetTask'), bearer(keys.slow))).status, 429);
  assert.equal((await a2a(down, rpc('GetTask'), bearer(keys.reader))).status, 503);
});

test('GET /health, /metrics and /openapi.json answer; other methods and unknown paths answer the 404 fallback', async () => {
  assert.equal((await recorder.send(main.url, '/health')).status, 200);
  assert.equal((await recorder.send(main.url, '/metrics')).status, 200);
  const served = await recorder.send(main.url, '/openapi.json');
  assert.equal(served.status, 200);
  assert.deepEqual(JSON.parse(served.text), committedDoc('ingress'), 'the served document is the committed docs/openapi/ingress.json');
  assert.equal((await recorder.send(main.url, '/health', { method: 'POST' })).status, 404);
  assert.equal((await recorder.send(main.url, '/no/such/route')).status, 404);
  assert.ok(recorder.observed.at(-1)!.fallback, 'an unknown path answers the fallback');
});

test('every answer observed is declared in docs/openapi/ingress.json, and every declared route answered', () => {
  assert.deepEqual(driftProblems(committedDoc('ingress'), recorder.observed), []);
});
