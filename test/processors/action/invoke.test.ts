import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { buildRequest, createToolDispatcher, invokeTool, type HttpDeps, type InvokeContext } from '../../../processors/action/invoke.ts';
import { realRetryDeps } from '../../../runtime/retry.ts';
import { traceparentFor } from '../../../runtime/tracing/ids.ts';
import { matchRoute, normalResponse } from '../../../tool-server/routes.ts';
import { startToolServer, type ToolServer } from '../../../tool-server/server.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog, createContractAjv, type Tool, type ToolSpec } from '../../../tools/catalog.ts';
import { envSecrets } from '../../../tools/secrets.ts';

let server: ToolServer;
let catalog: ToolCatalog;
let deps: HttpDeps;
/** Delays the retry helper asked for, in order (the injected sleep returns at once). */
const sleeps: number[] = [];
const ajv = createContractAjv();

before(async () => {
  server = await startToolServer({ port: 0 });
  catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, { TAO_DEMO_TOOL_ORIGIN: server.url }, ajv);
  deps = {
    dispatcher: createToolDispatcher(),
    retry: {
      ...realRetryDeps,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    },
    now: () => Date.now(),
  };
});

after(async () => {
  await server?.close();
  await deps?.dispatcher.close();
});

beforeEach(() => {
  server.clearFaults();
  server.resetStats();
  sleeps.length = 0;
});

function tool(name: string): Tool {
  const t = catalog.get(name);
  assert.ok(t, `catalog has ${name}`);
  return t;
}

/** A copy of a catalog tool with spec overrides (and, when given, a replaced parameter schema). */
function variant(name: string, overrides: Partial<ToolSpec>): Tool {
  const base = tool(name);
  const spec = { ...base.spec, ...overrides };
  return { ...base, spec, validateInput: overrides.parameters ? ajv.compile(overrides.parameters) : base.validateInput };
}

const ctx = (key = 't-1:1:S1'): InvokeContext => ({ idempotencyKey: key, traceparent: traceparentFor('t-1', 'action:1'), secrets: envSecrets({}) });
const alice = { email: 'alice@example.com' };

describe('invokeTool against the tool server', () => {
  test('a normal call returns 200 with parsed data and sends idempotency-key, x-request-id and traceparent', async () => {
    const r = await invokeTool(tool('crm.find_customer'), 'S1', alice, ctx(), deps);
    assert.equal(r.error, null);
    assert.equal(r.status_code, 200);
    assert.equal(r.attempts, 1);
    assert.deepEqual([r.step_id, r.tool, r.idempotency_key, r.input_json], ['S1', 'crm.find_customer', 't-1:1:S1', JSON.stringify(alice)]);
    const data = JSON.parse(r.data_json!) as Record<string, unknown>;
    assert.match(String(data.customer_id), /^C-\d{6}$/);
    assert.equal(data.email, 'alice@example.com');
    assert.deepEqual(JSON.parse(r.response_raw!), data, 'the raw body is kept');
    assert.ok(r.response_time_ms >= 0);
    assert.deepEqual(sleeps, []);

    const stats = server.stats();
    assert.equal(stats.total, 1);
    const seen = stats.requests[0]!;
    assert.deepEqual([seen.route, seen.method, seen.path], ['crm.find_customer', 'GET', '/crm/customers/by-email/alice%40example.com']);
    assert.equal(seen.headers['idempotency-key'], 't-1:1:S1');
    assert.equal(seen.headers.traceparent, traceparentFor('t-1', 'action:1'));
    assert.match(seen.headers['x-request-id'] ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  test('input that breaks the tool contract is invalid_input with 0 attempts and no request sent', async () => {
    for (const input of [{ email: 'not-an-email' }, {}, { email: 'alice@example.com', admin: true }, 'alice@example.com']) {
      const r = await invokeTool(tool('crm.find_customer'), 'S1', input, ctx(), deps);
      assert.equal(r.error?.type, 'invalid_input', JSON.stringify(input));
      assert.equal(r.error?.retryable, false);
      assert.match(r.error?.message ?? '', /breaks the crm\.find_customer contract/);
      assert.deepEqual([r.attempts, r.status_code, r.response_raw, r.data_json], [0, null, null, null]);
    }
    const r = await invokeTool(tool('crm.find_customer'), 'S1', { email: 'not-an-email' }, ctx(), deps);
    assert.match(r.error?.message ?? '', /\/email must match format "email"/);
    assert.equal(server.stats().total, 0, 'the tool server received no request');
  });

  test('a path parameter with "/", "?" and "#" is percent-encoded into its one segment (host and route unchanged)', async () => {
    const email = 'a/b?c=d#e@example.com'; // a valid RFC 5322 address that would split a naive URL
    const r = await invokeTool(tool('crm.find_customer'), 'S1', { email }, ctx(), deps);
    const seen = server.stats().requests;
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.route, 'crm.find_customer', 'the request still hits the find-customer route');
    assert.equal(seen[0]!.path, '/crm/customers/by-email/a%2Fb%3Fc%3Dd%23e%40example.com');
    assert.equal(r.status_code, 400, 'the server judged the whole decoded address (and rejected it), not a fragment of it');
  });

  test('a path parameter containing "../" stays inside its segment on the wire', async () => {
    const loose = variant('crm.tier', { parameters: { type: 'object' } });
    await invokeTool(loose, 'S3', { customer_id: '../../__control/stats?x=1' }, ctx(), deps);
    const seen = server.stats().requests;
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.route, 'crm.tier');
    assert.equal(seen[0]!.path, '/crm/customers/..%2F..%2F__control%2Fstats%3Fx%3D1/tier');
  });

  test('a 503 once is retried and the call succeeds on attempt 2, with the same idempotency key', async () => {
    server.setFault({ route: 'crm.find_customer', mode: 'server_error', times: 1 });
    const r = await invokeTool(tool('crm.find_customer'), 'S1', alice, ctx(), deps);
    assert.equal(r.error, null);
    assert.equal(r.status_code, 200);
    assert.equal(r.attempts, 2);
    assert.ok(r.data_json);
    assert.equal(sleeps.length, 1);
    const seen = server.stats().requests;
    assert.deepEqual(
      seen.map((q) => q.fault),
      ['server_error', null],
    );
    assert.deepEqual(
      seen.map((q) => q.headers['idempotency-key']),
      ['t-1:1:S1', 't-1:1:S1'],
    );
  });

  test('a 429 with Retry-After: 1 is retried after at least 1000 ms', async () => {
    server.setFault({ route: 'crm.find_customer', mode: 'rate_limit', retryAfterSeconds: 1, times: 1 });
    const r = await invokeTool(tool('crm.find_customer'), 'S1', alice, ctx(), deps);
    assert.equal(r.status_code, 200);
    assert.equal(r.attempts, 2);
    assert.equal(sleeps.length, 1);
    assert.ok(sleeps[0]! >= 1000, `slept ${sleeps[0]} ms`);
  });

  test('a permanent 503 gives up after the tool maxAttempts, reporting http_status 503', async () => {
    server.setFault({ route: 'crm.find_customer', mode: 'server_error' });
    const t = tool('crm.find_customer');
    const r = await invokeTool(t, 'S1', alice, ctx(), deps);
    assert.equal(r.attempts, t.spec.retry.maxAttempts);
    assert.equal(r.status_code, 503);
    assert.deepEqual(r.error, { type: 'http_status', message: 'HTTP 503', retryable: true });
    assert.equal(r.data_json, null);
    assert.deepEqual(JSON.parse(r.response_raw!), { error: 'unavailable' });
    assert.equal(server.stats().total, t.spec.retry.maxAttempts);
    assert.equal(sleeps.length, t.spec.retry.maxAttempts - 1);
  });

  test('a 401 is not retried: one request, http_status 401, not retryable', async () => {
    server.setFault({ route: 'crm.find_customer', mode: 'auth_failed' });
    const r = await invokeTool(tool('crm.find_customer'), 'S1', alice, ctx(), deps);
    assert.equal(r.status_code, 401);
    assert.equal(r.attempts, 1);
    assert.deepEqual(r.error, { type: 'http_status', message: 'HTTP 401', retryable: false });
    assert.equal(server.stats().total, 1);
    assert.deepEqual(sleeps, []);
  });

  test('a server that holds the request past timeoutMs gives error type timeout, without waiting for the server', async () => {
    server.setFault({ route: 'crm.find_customer', mode: 'timeout', delayMs: 2000 });
    const fast = variant('crm.find_customer', { timeoutMs: 200 });
    const r = await invokeTool(fast, 'S1', alice, ctx(), deps);
    assert.equal(r.error?.type, 'timeout');
    assert.equal(r.error?.retryable, true);
    assert.equal(r.status_code, null);
    assert.equal(r.response_raw, null);
    assert.equal(r.attempts, fast.spec.retry.maxAttempts);
    assert.equal(server.stats().total, fast.spec.retry.maxAttempts);
    assert.ok(r.response_time_ms < 2000, `took ${r.response_time_ms} ms: the client waited for the server instead of its own timeout`);
  });

  test('a malformed JSON body is reported malformed, not retried, with the raw body kept verbatim', async () => {
    server.setFault({ route: 'crm.find_customer', mode: 'malformed' });
    const r = await invokeTool(tool('crm.find_customer'), 'S1', alice, ctx(), deps);
    const full = JSON.stringify(normalResponse(matchRoute('/crm/customers/by-email/alice%40example.com')!).body);
    assert.equal(r.response_raw, full.slice(0, Math.floor(full.length / 2)));
    assert.equal(r.error?.type, 'malformed');
    assert.equal(r.error?.retryable, false);
    assert.equal(r.status_code, 200);
    assert.equal(r.data_json, null);
    assert.equal(r.attempts, 1);
  });

  test('a response larger than maxResponseBytes is too_large and its body is not kept', async () => {
    const small = variant('crm.find_customer', { maxResponseBytes: 16 });
    const r = await invokeTool(small, 'S1', alice, ctx(), deps);
    assert.equal(r.error?.type, 'too_large');
    assert.match(r.error?.message ?? '', /16 bytes/);
    assert.equal(r.status_code, 200);
    assert.deepEqual([r.response_raw, r.data_json, r.attempts], [null, null, 1]);
  });

  test('an unreachable origin is a network error after every attempt', async () => {
    const closed = await startToolServer({ port: 0 });
    const url = closed.url;
    await closed.close();
    const gone = { ...tool('crm.find_customer'), origin: new URL(url) };
    const r = await invokeTool(gone, 'S1', alice, ctx(), deps);
    assert.equal(r.error?.type, 'network');
    assert.equal(r.status_code, null);
    assert.equal(r.attempts, gone.spec.retry.maxAttempts);
  });
});

describe('buildRequest', () => {
  test('path parameters are encoded into one segment; the origin host and port never change', () => {
    const t = tool('crm.tier');
    for (const value of ['../../admin', 'a/b', 'x?y=1', 'x#frag', '//evil.example.com', 'http://evil.example.com/', '%2e%2e']) {
      const { url, body } = buildRequest(t, { customer_id: value });
      assert.equal(url.origin, t.origin.origin, value);
      assert.equal(url.search, '', value);
      assert.equal(url.hash, '', value);
      assert.equal(url.pathname, `/crm/customers/${encodeURIComponent(value)}/tier`, value);
      assert.equal(body, null);
    }
  });

  test('a path parameter that is exactly "." or ".." is refused instead of walking up the path', () => {
    const t = tool('crm.tier');
    for (const value of ['.', '..']) {
      assert.throws(
        () => buildRequest(t, { customer_id: value }),
        (err: Error & { code?: string }) => err.code === 'CONTRACT_VIOLATION' && err.message.includes(`may not be "${value}"`),
      );
    }
  });

  test('inputs that are not path parameters go to the query string of a GET', () => {
    const { url } = buildRequest(tool('crm.tier'), { customer_id: 'C-123456', fields: ['tier'], verbose: 'yes' });
    assert.equal(url.pathname, '/crm/customers/C-123456/tier');
    assert.equal(url.searchParams.get('fields'), '["tier"]');
    assert.equal(url.searchParams.get('verbose'), 'yes');
  });

  test('a missing path parameter is a contract violation', () => {
    assert.throws(() => buildRequest(tool('crm.tier'), {}), /path parameter customer_id is missing/);
  });
});

/**
 * A tool API simulator of its own for the answers the demo tool server does not give: a body
 * trickled out in small pieces, and a redirect.
 */
describe('invokeTool against a simulated tool API that trickles or redirects', () => {
  let api: Server;
  let origin: URL;
  let hits: string[] = [];
  before(async () => {
    api = createServer((req, res) => {
      hits.push(req.url ?? '');
      if (req.url?.startsWith('/redirect')) {
        res.writeHead(302, { location: '/elsewhere', 'content-type': 'application/json' });
        res.end('{"moved":true}');
        return;
      }
      // Headers at once, then a byte every 60 ms: no gap reaches the tool's timeout, the whole answer does.
      res.writeHead(200, { 'content-type': 'application/json' });
      let sent = 0;
      const body = '{"customer_id":"C-123456"}';
      const tick = setInterval(() => {
        if (res.destroyed || sent >= body.length) {
          clearInterval(tick);
          if (!res.destroyed) res.end();
          return;
        }
        res.write(body[sent++]!);
      }, 60);
      res.on('close', () => clearInterval(tick));
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    origin = new URL(`http://127.0.0.1:${(api.address() as AddressInfo).port}`);
  });
  after(async () => {
    api.closeAllConnections();
    await new Promise((resolve) => api.close(resolve));
  });
  beforeEach(() => {
    hits = [];
  });

  const simulated = (path: string, timeoutMs: number): Tool => {
    const base = variant('crm.find_customer', { path, timeoutMs, retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 } });
    return { ...base, origin };
  };

  test('a body trickled out past timeoutMs is a timeout, though no gap between its pieces reaches it', async () => {
    const t = simulated('/trickle', 400);
    const r = await invokeTool(t, 'S1', alice, ctx(), deps);
    assert.equal(r.error?.type, 'timeout');
    assert.equal(r.status_code, null);
    assert.equal(r.response_raw, null);
    assert.ok(r.response_time_ms < 1500, `took ${r.response_time_ms} ms: the whole answer takes ~1,560 ms`);
  });

  test('a redirect is not followed: the 3xx is the answer, and its Location is never requested', async () => {
    const t = simulated('/redirect', 2000);
    const r = await invokeTool(t, 'S1', alice, ctx(), deps);
    assert.equal(r.status_code, 302);
    assert.deepEqual(r.error, { type: 'http_status', message: 'HTTP 302', retryable: false });
    assert.equal(r.response_raw, '{"moved":true}');
    assert.deepEqual(
      hits.map((h) => h.split('?')[0]),
      ['/redirect'],
    );
  });
});

describe('credentials an upstream echoes back', () => {
  const TOKEN = 'tok-echoed-7f3a9c';
  let echo: Server;
  let origin: string;
  before(async () => {
    // Answers 200 with the Authorization header it got in the body, or 401 saying it in the error body.
    echo = createServer((req, res) => {
      const auth = req.headers.authorization ?? '';
      res.writeHead(req.url === '/deny' ? 401 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(req.url === '/deny' ? { error: `token ${auth} is not valid` } : { you_sent: auth }));
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => echo.close(() => r())));

  const echoTool = (path: string): Tool => ({
    ...variant('crm.find_customer', { origin, path, method: 'GET', headers: { Authorization: 'Bearer ${ECHO_TOKEN}' }, parameters: { type: 'object' } }),
    origin: new URL(origin),
  });
  const withToken: InvokeContext = { ...ctx(), secrets: envSecrets({ ECHO_TOKEN: TOKEN }) };

  test('a token the body repeats is sent, and replaced by *** in the recorded body and data', async () => {
    const r = await invokeTool(echoTool('/echo'), 'S1', {}, withToken, deps);
    assert.equal(r.status_code, 200);
    assert.deepEqual(JSON.parse(r.data_json!), { you_sent: 'Bearer ***' }, 'the upstream got the token, the record does not keep it');
    assert.ok(!r.response_raw!.includes(TOKEN) && r.response_raw!.includes('Bearer ***'));
  });

  test('a token an error body repeats is replaced by *** too', async () => {
    const r = await invokeTool(echoTool('/deny'), 'S1', {}, withToken, deps);
    assert.equal(r.status_code, 401);
    assert.ok(!JSON.stringify(r).includes(TOKEN), JSON.stringify(r));
    assert.match(r.response_raw!, /token Bearer \*\*\* is not valid/);
  });
});
