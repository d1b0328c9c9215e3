// test-needs: kafka
/**
 * The real Action stage (a separate process) against real HTTP tool servers, with every record read
 * back from Kafka: contracts, retries by class, circuit breaker and fallback, keep-alive, SSRF,
 * secrets, idempotency keys across a kill -9, and tools imported from OpenAPI.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { AddressInfo } from 'node:net';
import { startToolServer, type ToolServer } from '../../../tool-server/server.ts';
import { StageFleet, freshCluster, scan, type TestCluster } from '../../helpers/cluster.ts';
import { WaveProbe } from '../../helpers/waves.ts';
import type { ActionResult } from '../../../schemas/types.gen.ts';
import { followFromBeginning } from '../../../runtime/follow.ts';

const SECRET = `s3cr3t-${Math.random().toString(36).slice(2)}-token`;
const CUSTOMER_ID = { type: 'string', pattern: '^C-[0-9]{6}$' };
const TIER_RESPONSE = {
  type: 'object',
  required: ['customer_id', 'tier'],
  properties: { customer_id: { type: 'string' }, tier: { enum: ['gold', 'silver', 'bronze'] } },
};

let tools: ToolServer; // primary upstream
let backup: ToolServer; // the fallback's upstream
let evil: Server; // must never be reached
let evilHits = 0;
let secured: Server; // requires the secret
let securedAuth: string[] = [];
let cluster: TestCluster;
let fleet: StageFleet;
let probe: WaveProbe;
let actionOps: number;

function tool(name: string, fields: Record<string, unknown>): Record<string, unknown> {
  return {
    name,
    description: name,
    origin: '${TAO_DEMO_TOOL_ORIGIN}',
    method: 'GET',
    timeoutMs: 2000,
    retry: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 3000 },
    maxResponseBytes: 65536,
    ...fields,
  };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

before(async () => {
  tools = await startToolServer({ port: 0, keepAliveTimeoutMs: 5000 });
  backup = await startToolServer({ port: 0 });
  evil = createServer((_, res) => (evilHits++, res.end('{}')));
  secured = createServer((req, res) => {
    securedAuth.push(req.headers.authorization ?? '');
    const ok = req.headers.authorization === `Bearer ${SECRET}`;
    res
      .writeHead(ok ? 200 : 401, { 'content-type': 'application/json' })
      .end(JSON.stringify(ok ? { customer_id: 'C-000001', tier: 'gold' } : { error: 'unauthorized' }));
  });
  const [evilUrl, securedUrl] = [await listen(evil), await listen(secured)];

  const dir = mkdtempSync(join(tmpdir(), 'tao-action-catalog-'));
  const specs = [
    tool('t.customer', {
      path: '/crm/customers/by-email/{email}',
      parameters: { type: 'object', additionalProperties: false, required: ['email'], properties: { email: { type: 'string', format: 'email' } } },
      response: { type: 'object', required: ['customer_id'] },
    }),
    // A deliberately loose contract, so hostile strings reach URL building.
    tool('t.loose', {
      path: '/crm/customers/by-email/{email}',
      parameters: { type: 'object', required: ['email'], properties: { email: { type: 'string' } } },
      response: { type: 'object' },
      retry: { maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
    }),
    tool('t.slow', {
      path: '/crm/customers/by-email/{email}',
      timeoutMs: 300,
      retry: { maxAttempts: 2, baseDelayMs: 50, maxDelayMs: 100 },
      parameters: { type: 'object', required: ['email'], properties: { email: { type: 'string' } } },
      response: { type: 'object' },
    }),
    tool('t.tier', {
      path: '/crm/customers/{customer_id}/tier',
      parameters: { type: 'object', required: ['customer_id'], properties: { customer_id: CUSTOMER_ID } },
      response: TIER_RESPONSE,
      retry: { maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
      breaker: { failureThreshold: 3, coolDownMs: 2500 },
      fallbackTool: 't.tier_backup',
    }),
    tool('t.tier_backup', {
      origin: backup.url,
      path: '/crm/customers/{customer_id}/tier',
      parameters: { type: 'object', required: ['customer_id'], properties: { customer_id: CUSTOMER_ID } },
      response: TIER_RESPONSE,
    }),
    tool('t.secured', {
      origin: securedUrl,
      path: '/tier/{customer_id}',
      headers: { Authorization: 'Bearer ${TAO_TEST_TOOL_TOKEN}' },
      parameters: { type: 'object', required: ['customer_id'], properties: { customer_id: CUSTOMER_ID } },
      response: TIER_RESPONSE,
    }),
  ];
  for (const spec of specs) writeFileSync(join(dir, `${spec.name}.json`), JSON.stringify(spec));
  copyFileSync(new URL('./demo-tools.openapi.json', import.meta.url), join(dir, 'demo-tools.openapi.json'));
  // The shipped rules name demo tools this catalog doesn't have; these keep only the defaults.
  const rules = JSON.parse(readFileSync(new URL('../../../rules/observation.json', import.meta.url), 'utf8')) as Record<string, unknown>;
  const rulesFile = join(dir, '..', `${dir.split('/').pop()}-rules.json`);
  writeFileSync(rulesFile, JSON.stringify({ ...rules, tools: {} }));

  cluster = await freshCluster({
    TAO_DEMO_TOOL_ORIGIN: tools.url,
    TAO_TOOL_CATALOG_DIR: dir,
    TAO_TEST_TOOL_TOKEN: SECRET,
    TAO_TEST_EVIL_URL: evilUrl,
    TAO_OBSERVATION_RULES: rulesFile,
  });
  fleet = new StageFleet(cluster.env);
  const [action] = await Promise.all([fleet.start('action'), fleet.start('observation')]);
  actionOps = action.opsPort;
  probe = await WaveProbe.start(cluster);
});

after(async () => {
  await probe?.close();
  await fleet?.stop();
  await Promise.all([tools?.close(), backup?.close(), new Promise((r) => evil?.close(r)), new Promise((r) => secured?.close(r))]);
});

const requestsFor = (server: ToolServer, key: string) => server.stats().requests.filter((r) => r.headers['idempotency-key']?.startsWith(key));

describe('contracts', () => {
  test('inputs that break the contract become invalid_input results naming the field, and no request is sent', async () => {
    const before = tools.stats().total;
    const result = await probe.run([
      { tool: 't.customer', input: { email: 'not-an-email' } },
      { tool: 't.tier', input: { customer_id: 'C-12' } },
      { tool: 't.customer', input: { email: 'a@example.com', extra: 1 } },
    ]);
    assert.deepEqual(
      result.results.map((r) => r.error?.type),
      ['invalid_input', 'invalid_input', 'invalid_input'],
    );
    assert.match(result.results[0]!.error!.message, /\/email must match format "email"/);
    assert.match(result.results[1]!.error!.message, /\/customer_id must match pattern/);
    assert.ok(result.results.every((r) => r.attempts === 0));
    assert.equal(tools.stats().total, before, 'the tool server received zero requests');
  });

  test('tools imported from an OpenAPI 3 document are called with their contracts enforced on input and response', async () => {
    const ok = await probe.run([
      { tool: 'demoapi.find_customer', input: { email: 'openapi@example.com' } },
      { tool: 'demoapi.get_tier', input: { customer_id: 'C-123456' } },
    ]);
    assert.deepEqual(
      ok.results.map((r) => r.status_code),
      [200, 200],
    );
    const verdicts = await probe.observation(ok.thought_id);
    assert.deepEqual(
      verdicts.verdicts.map((v) => v.valid),
      [true, true],
    );

    const before = tools.stats().total;
    const bad = await probe.run([{ tool: 'demoapi.get_tier', input: { customer_id: '../x' } }]);
    assert.equal(bad.results[0]!.error?.type, 'invalid_input');
    assert.equal(tools.stats().total, before);

    tools.setFault({ route: 'crm.tier', mode: 'wrong_schema', times: 1 });
    const wrong = await probe.run([{ tool: 'demoapi.get_tier', input: { customer_id: 'C-654321' } }]);
    const verdict = (await probe.observation(wrong.thought_id)).verdicts[0]!;
    assert.equal(verdict.error_type, 'schema_mismatch', 'the OpenAPI response schema is enforced');
  });
});

describe('retries by error class', () => {
  test('429 with Retry-After: 2 is retried no earlier than 2 s later (server-side timestamps), with the same idempotency key', async () => {
    tools.setFault({ route: 'crm.find_customer', mode: 'rate_limit', retryAfterSeconds: 2, times: 1, match: 'ratelimited' });
    const result = await probe.run([{ tool: 't.customer', input: { email: 'ratelimited@example.com' } }]);
    assert.equal(result.results[0]!.status_code, 200);
    assert.equal(result.results[0]!.attempts, 2);
    const seen = requestsFor(tools, result.thought_id);
    assert.equal(seen.length, 2);
    assert.ok(seen[1]!.at - seen[0]!.at >= 2000, `retried after ${seen[1]!.at - seen[0]!.at} ms`);
    assert.equal(seen[0]!.headers['idempotency-key'], seen[1]!.headers['idempotency-key']);
  });

  test('an auth failure is not retried', async () => {
    tools.setFault({ route: 'crm.find_customer', mode: 'auth_failed', times: 1, match: 'authfail' });
    const result = await probe.run([{ tool: 't.customer', input: { email: 'authfail@example.com' } }]);
    assert.equal(result.results[0]!.status_code, 401);
    assert.equal(result.results[0]!.error?.retryable, false);
    assert.equal(requestsFor(tools, result.thought_id).length, 1);
    assert.equal((await probe.observation(result.thought_id)).verdicts[0]!.error_type, 'auth_failed');
  });

  test('a timeout is retried per policy (2 attempts) and then reported as timeout', async () => {
    tools.setFault({ route: 'crm.find_customer', mode: 'timeout', delayMs: 2000, match: 'slowpoke' });
    const result = await probe.run([{ tool: 't.slow', input: { email: 'slowpoke@example.com' } }]);
    assert.equal(result.results[0]!.error?.type, 'timeout');
    assert.equal(result.results[0]!.attempts, 2);
    assert.equal(requestsFor(tools, result.thought_id).length, 2);
    assert.equal((await probe.observation(result.thought_id)).verdicts[0]!.error_type, 'timeout');
    tools.clearFaults();
  });
});

describe('circuit breaker and fallback', () => {
  test('after 3 failures the breaker opens: no request reaches the tool during cool-down, the fallback serves, and a half-open probe closes it on recovery', async () => {
    const faultId = tools.setFault({ route: 'crm.tier', mode: 'server_error' });
    const all: ActionResult[] = [];
    const runTier = async (customer_id: string) => {
      const r = await probe.run([{ tool: 't.tier', input: { customer_id } }]);
      all.push(r);
      return r;
    };
    const failing = [];
    for (let i = 0; i < 3; i++) failing.push(await runTier(`C-00000${i}`));
    for (const r of failing) {
      assert.equal(r.results[0]!.fallback_from, 't.tier', 'the fallback served while the primary failed');
      assert.equal(r.results[0]!.tool, 't.tier_backup');
      assert.equal(r.results[0]!.status_code, 200);
      assert.match(r.results[0]!.fallback_reason!, /HTTP 503/);
    }
    const primaryBefore = tools.stats().byRoute['crm.tier'];
    const open = await runTier('C-000009');
    assert.equal(tools.stats().byRoute['crm.tier'], primaryBefore, 'no request reached the failing tool while open');
    assert.equal(open.results[0]!.tool, 't.tier_backup');
    assert.match(open.results[0]!.fallback_reason!, /circuit_open/);
    assert.equal((await probe.observation(open.thought_id)).verdicts[0]!.valid, true, 'the fallback answer is verified against its own contract');

    assert.ok(faultId);
    tools.clearFaults(); // the tool recovers
    const deadline = Date.now() + 10000;
    let probed = null;
    while (Date.now() < deadline) {
      const r = await runTier('C-000010');
      if (r.results[0]!.tool === 't.tier') {
        probed = r;
        break;
      }
      await new Promise((res) => setTimeout(res, 500)); // waiting out the 2.5 s cool-down
    }
    assert.ok(probed, 'a half-open probe reached the recovered tool');
    assert.equal(probed.results[0]!.status_code, 200);
    assert.equal(probed.results[0]!.fallback_from, null);
    const closed = await runTier('C-000011');
    assert.equal(closed.results[0]!.tool, 't.tier', 'the breaker is closed again');

    const health = (await (await fetch(`http://127.0.0.1:${actionOps}/health`)).json()) as { breakers: Record<string, string> };
    assert.equal(health.breakers['t.tier'], 'closed');
    const metrics = await (await fetch(`http://127.0.0.1:${actionOps}/metrics`)).text();
    const served = all.filter((r) => r.results[0]!.fallback_from === 't.tier').length;
    assert.match(
      metrics,
      new RegExp(`tao_fallbacks_total\\{tool="t\\.tier",fallback="t\\.tier_backup"[^}]*\\} ${served}\\n`),
      `the ${served} steps served by the fallback are counted`,
    );
    assert.match(metrics, /tao_breaker_state\{tool="t\.tier"[^}]*\} 0\n/);
  });
});

describe('security', () => {
  test('SSRF attempts in inputs never reach any origin but the catalog one, and never leave their path segment', async () => {
    const attacks = [
      '../../__control/stats',
      '@evil.example.com',
      'http://127.0.0.1:1/x',
      `${cluster.env.TAO_TEST_EVIL_URL}/steal`,
      '%2F..%2F__control',
      'a%2fb',
      'x\r\nHost: evil.example.com',
      '..',
      '.',
      '//evil.example.com/a',
      '?q=1#frag',
    ];
    const before = tools.stats().requests.length;
    const result = await probe.run(attacks.map((email) => ({ tool: 't.loose', input: { email } })));
    assert.equal(evilHits, 0, 'the other server was never called');
    const seen = tools.stats().requests.slice(before);
    for (const r of seen) {
      const segments = r.path.split('?')[0]!.split('/');
      assert.equal(segments.length, 5, `one segment per parameter: ${r.path}`);
      assert.deepEqual(segments.slice(0, 4), ['', 'crm', 'customers', 'by-email'], r.path);
    }
    const refused = result.results.filter((r) => r.error?.type === 'invalid_input').length;
    assert.equal(refused, 2, '"." and ".." are refused outright');
    assert.equal(seen.length + refused, attacks.length, 'everything else went to the catalog origin only');
  });

  test('a secret from the environment is used in calls and appears in no record and no log line', async () => {
    securedAuth = [];
    const result = await probe.run([{ tool: 't.secured', input: { customer_id: 'C-424242' } }]);
    assert.equal(result.results[0]!.status_code, 200, 'the upstream accepted the secret');
    assert.deepEqual(securedAuth, [`Bearer ${SECRET}`]);
    await probe.observation(result.thought_id);

    // Every committed record of every topic, to the end each partition had once the run was observed.
    const topics = cluster.codec.topics.all().map((t) => t.name);
    let bytes = 0;
    let found = 0;
    const reader = await followFromBeginning(cluster.kafka, topics, {
      groupPrefix: `${cluster.namespace}-secret-scan`,
      onMessage: (_topic, _partition, message) => {
        const raw = Buffer.concat([
          message.key ?? Buffer.alloc(0),
          message.value ?? Buffer.alloc(0),
          ...Object.values(message.headers ?? {}).map((h) => Buffer.from(String(h))),
        ]);
        bytes += raw.length;
        if (raw.includes(SECRET)) found++;
      },
    });
    await reader.reachedEnd;
    await reader.stop();
    assert.ok(bytes > 10000, `scanned ${bytes} bytes of records`);
    assert.equal(found, 0, 'no record in any topic contains the secret');
    assert.equal(fleet.lines.filter((l) => l.includes(SECRET)).length, 0, 'no log line contains the secret');
  });
});

describe('keep-alive', () => {
  test(
    'an upstream that closes idle sockets after 5 s, called 200 times in bursts with 6 s idle gaps: zero connection resets',
    { timeout: 120000 },
    async () => {
      const before = tools.stats().connections;
      const results = [];
      for (let burst = 0; burst < 5; burst++) {
        if (burst > 0) await new Promise((r) => setTimeout(r, 6000)); // the idle gap is the point of the test
        const requests = Array.from({ length: 40 }, (_, i) => probe.request([{ tool: 't.customer', input: { email: `ka${burst}-${i}@example.com` } }]));
        await probe.send(...requests);
        results.push(...(await Promise.all(requests.map((r) => probe.actionResult(r.thought_id)))));
      }
      assert.equal(results.length, 200);
      assert.deepEqual(
        results
          .map((r) => r.results[0]!)
          .filter((s) => s.status_code !== 200)
          .map((s) => s.error?.message),
        [],
      );
      assert.ok(
        results.every((r) => r.results[0]!.attempts === 1),
        'no call needed a retry',
      );
      assert.ok(tools.stats().connections - before < 200, 'connections are reused within a burst');
    },
  );
});

describe('idempotency across a crash', () => {
  test('the idempotency key is the same on the retry after kill -9 of the action stage mid-call', { timeout: 90000 }, async () => {
    tools.setFault({ route: 'crm.find_customer', mode: 'timeout', delayMs: 1500, times: 1, match: 'crashme' });
    const request = probe.request([{ tool: 't.customer', input: { email: 'crashme@example.com' } }]);
    const arrived = new Promise<void>((resolve) => tools.events.on('request', (r) => r.path.includes('crashme') && resolve()));
    await probe.send(request);
    await arrived; // the call is in flight in the action process
    const action = fleet.processes.find((p) => p.name === 'action')!;
    action.child.kill('SIGKILL');
    assert.equal(await action.exited, 'SIGKILL');
    await fleet.start('action');
    const result = await probe.actionResult(request.thought_id, 60000);
    assert.equal(result.results[0]!.status_code, 200);
    const seen = requestsFor(tools, request.thought_id);
    assert.ok(seen.length >= 2, `the call was made again after the crash (${seen.length} requests)`);
    assert.deepEqual([...new Set(seen.map((r) => r.headers['idempotency-key']))], [`${request.thought_id}:1:S1`]);
    const committed = (await scan(cluster, ['actionResults'], { until: (rs) => rs.some((r) => r.key === request.thought_id) })).filter(
      (r) => r.key === request.thought_id,
    );
    assert.equal(committed.length, 1, 'the wave result is committed once');
  });
});
