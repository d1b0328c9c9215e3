import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';

import { Agent, request } from 'undici';

import {
  FaultSpecError,
  ROUTE_IDS,
  startToolServer,
  type FaultSpec,
  type RecordedRequest,
  type ToolServer,
  type ToolServerOptions,
} from '../../tool-server/server.ts';
import { startMcpToolServer } from '../../tool-server/mcp-server.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

interface CallOptions {
  method?: 'GET' | 'POST' | 'DELETE' | 'PUT';
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

type Call = (path: string, opts?: CallOptions) => Promise<Reply>;

interface Ctx {
  server: ToolServer;
  call: Call;
  /** Calls and parses the JSON body. */
  json: (path: string, opts?: CallOptions) => Promise<{ status: number; body: unknown }>;
  /** Posts a fault spec through the control API and returns its id. */
  fault: (spec: Record<string, unknown>) => Promise<string>;
}

/** Starts a server on an ephemeral port with its own undici Agent; always closes both. */
async function withServer(fn: (ctx: Ctx) => Promise<void>, opts: Partial<ToolServerOptions> = {}): Promise<void> {
  const server = await startToolServer({ port: 0, ...opts });
  const agent = new Agent();
  const call: Call = async (path, o = {}) => {
    const res = await request(`${server.url}${path}`, {
      method: o.method ?? 'GET',
      headers: o.headers,
      body: o.body,
      signal: o.signal,
      dispatcher: agent,
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };
  const json: Ctx['json'] = async (path, o) => {
    const r = await call(path, o);
    assert.equal(r.headers['content-type'], 'application/json', `content-type of ${path}`);
    return { status: r.status, body: JSON.parse(r.text) as unknown };
  };
  const fault: Ctx['fault'] = async (spec) => {
    const r = await json('/__control/faults', { method: 'POST', body: JSON.stringify(spec) });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const id = (r.body as { id?: unknown }).id;
    assert.equal(typeof id, 'string');
    return id as string;
  };
  try {
    await fn({ server, call, json, fault });
  } finally {
    await agent.destroy();
    await server.close();
  }
}

/** Resolves with the next request the server counts. */
function nextRequest(server: ToolServer): Promise<RecordedRequest> {
  return once(server.events, 'request').then(([rec]) => rec as RecordedRequest);
}

/** Per-test guard so a regression fails instead of hanging the run. */
const T = { timeout: 20_000 };

const CUSTOMER = '/crm/customers/by-email/alice%40example.com';
const TIER = '/crm/customers/C-123456/tier';
const LATEST = '/orders/customers/C-123456/latest';
const TRACK = '/shipping/orders/O-12345678/tracking';

test('answers are deterministic and well-formed', T, async () => {
  const bodies: string[] = [];
  for (let round = 0; round < 2; round++) {
    // A fresh server each round: answers depend only on the inputs.
    await withServer(async ({ call, json }) => {
      for (const path of [CUSTOMER, TIER, LATEST, TRACK]) {
        const a = await call(path);
        const b = await call(path);
        assert.equal(a.status, 200, path);
        assert.equal(a.headers['content-type'], 'application/json');
        assert.equal(a.text, b.text, `same input, same body: ${path}`);
        bodies.push(a.text);
      }

      const customer = (await json(CUSTOMER)).body as Record<string, unknown>;
      assert.deepEqual(Object.keys(customer).sort(), ['customer_id', 'email', 'name']);
      assert.match(customer['customer_id'] as string, /^C-\d{6}$/);
      assert.equal(customer['email'], 'alice@example.com');
      assert.equal(typeof customer['name'], 'string');
      assert.ok((customer['name'] as string).length > 0);

      const tier = (await json(TIER)).body as Record<string, unknown>;
      assert.equal(tier['customer_id'], 'C-123456');
      assert.ok(['gold', 'silver', 'bronze'].includes(tier['tier'] as string));

      const order = (await json(LATEST)).body as Record<string, unknown>;
      assert.deepEqual(Object.keys(order).sort(), ['customer_id', 'order_id', 'placed_at', 'status', 'total_cents']);
      assert.match(order['order_id'] as string, /^O-\d{8}$/);
      assert.equal(order['customer_id'], 'C-123456');
      assert.ok(['placed', 'shipped', 'delivered'].includes(order['status'] as string));
      assert.ok(Number.isInteger(order['total_cents']) && (order['total_cents'] as number) >= 0);
      assert.match(order['placed_at'] as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+08:00$/);
      assert.ok(!Number.isNaN(Date.parse(order['placed_at'] as string)));

      // Tracking of that order agrees with its status and is after it was placed.
      const track = (await json(`/shipping/orders/${order['order_id'] as string}/tracking`)).body as Record<string, unknown>;
      assert.deepEqual(Object.keys(track).sort(), ['carrier', 'eta', 'order_id', 'state']);
      assert.equal(track['order_id'], order['order_id']);
      assert.ok(['DHL', 'UPS', 'SF'].includes(track['carrier'] as string));
      const expectedState = { placed: 'pending', shipped: 'in_transit', delivered: 'delivered' }[order['status'] as string];
      assert.equal(track['state'], expectedState);
      assert.match(track['eta'] as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      assert.ok(Date.parse(track['eta'] as string) > Date.parse(order['placed_at'] as string));
    });
  }
  assert.deepEqual(bodies.slice(0, 4), bodies.slice(4), 'identical answers across server instances');
});

test('different inputs give different ids', T, async () => {
  await withServer(async ({ json }) => {
    const emails = ['alice@example.com', 'bob@example.com', 'carol@example.org', 'dave@example.net'];
    const customerIds = new Set<string>();
    for (const e of emails) {
      const r = await json(`/crm/customers/by-email/${encodeURIComponent(e)}`);
      assert.equal(r.status, 200);
      customerIds.add((r.body as { customer_id: string }).customer_id);
    }
    assert.equal(customerIds.size, emails.length);

    const orderIds = new Set<string>();
    for (const c of ['C-000001', 'C-000002', 'C-000003', 'C-999999']) {
      const r = await json(`/orders/customers/${c}/latest`);
      orderIds.add((r.body as { order_id: string }).order_id);
    }
    assert.equal(orderIds.size, 4);

    // The email is also accepted without percent-encoding the '@'.
    const raw = await json('/crm/customers/by-email/alice@example.com');
    const enc = await json(CUSTOMER);
    assert.deepEqual(raw.body, enc.body);
  });
});

test('404 for an unknown customer and for unknown paths', T, async () => {
  await withServer(async ({ json, server }) => {
    for (const e of ['unknown@example.com', 'unknown.bob@example.com', 'Unknown_7@example.org']) {
      const r = await json(`/crm/customers/by-email/${encodeURIComponent(e)}`);
      assert.equal(r.status, 404, e);
      assert.deepEqual(r.body, { error: 'customer_not_found' });
    }
    // "unknown" elsewhere than the start of the local part is a normal customer.
    assert.equal((await json('/crm/customers/by-email/bob.unknown%40example.com')).status, 200);

    const nf = await json('/crm/customers/C-123456/tier/');
    assert.equal(nf.status, 404);
    assert.deepEqual(nf.body, { error: 'not_found' });
    const st = server.stats();
    assert.equal(st.byRoute['unmatched'], 1, 'unmatched paths are counted');
  });
});

test('400 invalid_parameter for params failing the strict pattern', T, async () => {
  await withServer(async ({ json }) => {
    const cases: Array<[string, string]> = [
      ['/crm/customers/by-email/not-an-email', 'email'],
      ['/crm/customers/by-email/a%40b', 'email'],
      ['/crm/customers/by-email/a%2Fb%40example.com', 'email'],
      ['/crm/customers/by-email/%E0%A4%A', 'email'],
      ['/crm/customers/by-email/' + 'x'.repeat(65) + '%40example.com', 'email'],
      ['/crm/customers/C-12345/tier', 'customer_id'],
      ['/crm/customers/c-123456/tier', 'customer_id'],
      ['/crm/customers/C-1234567/tier', 'customer_id'],
      ['/orders/customers/123456/latest', 'customer_id'],
      ['/orders/customers/C-12345a/latest', 'customer_id'],
      ['/shipping/orders/O-1234567/tracking', 'order_id'],
      ['/shipping/orders/O-123456789/tracking', 'order_id'],
      ['/shipping/orders/%20O-12345678/tracking', 'order_id'],
    ];
    for (const [path, field] of cases) {
      const r = await json(path);
      assert.equal(r.status, 400, path);
      assert.deepEqual(r.body, { error: 'invalid_parameter', field }, path);
    }
  });
});

test('non-GET on a tool route is 405; /health answers and is not counted', T, async () => {
  await withServer(async ({ json, server }) => {
    const r = await json(TIER, { method: 'POST', body: '{}' });
    assert.equal(r.status, 405);
    const h = await json('/health');
    assert.equal(h.status, 200);
    assert.deepEqual(h.body, { ok: true });
    const st = server.stats();
    assert.equal(st.total, 1);
    assert.equal(st.byRoute['crm.tier'], 1);
    assert.equal(st.requests[0]?.method, 'POST');
  });
});

test('fault: timeout holds the request past the client deadline', T, async () => {
  await withServer(async ({ call, fault, server }) => {
    await fault({ route: 'crm.tier', mode: 'timeout', delayMs: 200 });
    const controller = new AbortController();
    let heldSince = 0;
    let heldFault: string | null = null;
    let timer: NodeJS.Timeout | undefined;
    // Arm the 100 ms client deadline synchronously when the server counts the
    // request (before it arms its own 200 ms hold): the deadline can neither
    // fire before the request was sent nor lose the race on a starved CPU.
    server.events.once('request', (rec) => {
      heldFault = rec.fault;
      heldSince = performance.now();
      timer = setTimeout(() => controller.abort(), 100);
    });
    await assert.rejects(call(TIER, { signal: controller.signal }), (err: Error) => {
      assert.equal(err.name, 'AbortError', 'the client gave up; the server never answered');
      return true;
    });
    clearTimeout(timer);
    const held = performance.now() - heldSince;
    assert.ok(heldSince > 0 && held >= 90, `no answer during the client's 100ms wait (${held}ms)`);
    assert.equal(heldFault, 'timeout');
    assert.equal(server.stats().requests[0]?.fault, 'timeout');
    // Other routes are unaffected while the fault is active.
    assert.equal((await call(LATEST)).status, 200);
  });
});

test('fault: timeout answers 504 after delayMs if the client waits', T, async () => {
  await withServer(async ({ json, fault }) => {
    await fault({ route: 'crm.tier', mode: 'timeout', delayMs: 60, times: 1 });
    const started = performance.now();
    const r = await json(TIER);
    const elapsed = performance.now() - started;
    assert.equal(r.status, 504);
    assert.deepEqual(r.body, { error: 'timeout' });
    assert.ok(elapsed >= 55, `held for delayMs (${elapsed}ms)`);
  });
});

test('fault: rate_limit is 429 with Retry-After', T, async () => {
  await withServer(async ({ call, fault }) => {
    await fault({ route: 'orders.latest', mode: 'rate_limit', retryAfterSeconds: 7, times: 1 });
    const r = await call(LATEST);
    assert.equal(r.status, 429);
    assert.equal(r.headers['retry-after'], '7');
    assert.deepEqual(JSON.parse(r.text), { error: 'rate_limited' });

    await fault({ route: 'orders.latest', mode: 'rate_limit', times: 1 });
    assert.equal((await call(LATEST)).headers['retry-after'], '1', 'default Retry-After');
    assert.equal((await call(LATEST)).status, 200);
  });
});

test('fault: server_error, auth_failed, ok_error_body', T, async () => {
  await withServer(async ({ call, json, fault }) => {
    await fault({ route: 'shipping.track', mode: 'server_error', times: 1 });
    const se = await json(TRACK);
    assert.equal(se.status, 503);
    assert.deepEqual(se.body, { error: 'unavailable' });

    await fault({ route: 'shipping.track', mode: 'auth_failed', times: 1 });
    const af = await call(TRACK);
    assert.equal(af.status, 401);
    assert.match(String(af.headers['www-authenticate']), /^Bearer /);
    assert.deepEqual(JSON.parse(af.text), { error: 'unauthorized' });

    await fault({ route: 'shipping.track', mode: 'ok_error_body', times: 1 });
    const oe = await json(TRACK);
    assert.equal(oe.status, 200);
    assert.deepEqual(oe.body, { status: 'error', message: 'token expired' });

    assert.equal((await call(TRACK)).status, 200, 'faults used up');
  });
});

test('fault: malformed is 200 JSON with a truncated body', T, async () => {
  await withServer(async ({ call, fault }) => {
    const normal = (await call(LATEST)).text;
    await fault({ route: 'orders.latest', mode: 'malformed', times: 1 });
    const r = await call(LATEST);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.ok(r.text.length > 0 && r.text.length < normal.length);
    assert.ok(normal.startsWith(r.text), 'a prefix of the real body');
    assert.throws(() => JSON.parse(r.text), SyntaxError);
  });
});

test('fault: wrong_schema is 200 valid JSON breaking the contract, for every route', T, async () => {
  await withServer(async ({ json, fault }) => {
    const required: Record<string, [string, string[]]> = {
      'crm.find_customer': [CUSTOMER, ['customer_id', 'email', 'name']],
      'crm.tier': [TIER, ['customer_id', 'tier']],
      'orders.latest': [LATEST, ['order_id', 'customer_id', 'status', 'total_cents', 'placed_at']],
      'shipping.track': [TRACK, ['order_id', 'carrier', 'state', 'eta']],
    };
    for (const [route, [path, fields]] of Object.entries(required)) {
      await fault({ route, mode: 'wrong_schema', times: 1 });
      const r = await json(path);
      assert.equal(r.status, 200, route);
      const body = r.body as Record<string, unknown>;
      const normal = (await json(path)).body as Record<string, unknown>;
      const broken = fields.filter((f) => !(f in body) || typeof body[f] !== typeof normal[f]);
      assert.ok(broken.length > 0, `${route}: some required field missing or mistyped: ${JSON.stringify(body)}`);
    }
  });
});

test('fault: html_error is a 200 text/html page', T, async () => {
  await withServer(async ({ call, fault }) => {
    await fault({ route: 'crm.find_customer', mode: 'html_error', times: 1 });
    const r = await call(CUSTOMER);
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^text\/html/);
    assert.match(r.text, /<html>/);
    assert.throws(() => JSON.parse(r.text), SyntaxError);
  });
});

test('large_body: the normal answer plus a deterministic history, at least `bytes` long; errors stay as they are', T, async () => {
  await withServer(async ({ call, fault }) => {
    const normal = JSON.parse((await call(TRACK)).text) as Record<string, unknown>;
    await fault({ route: 'shipping.track', mode: 'large_body', bytes: 6000 });
    const a = await call(TRACK);
    const b = await call(TRACK);
    assert.equal(a.status, 200);
    assert.ok(a.text.length >= 6000 && a.text.length < 6200, `${a.text.length} characters`);
    assert.equal(a.text, b.text, 'deterministic');
    const { history, ...rest } = JSON.parse(a.text) as { history: Array<{ at: string; event: string }> };
    assert.deepEqual(rest, normal, 'every field of the normal answer, unchanged');
    assert.ok(history.length > 10 && history.every((h) => typeof h.at === 'string' && typeof h.event === 'string'));
    assert.equal((await call('/shipping/orders/O-1/tracking')).status, 400, 'a refused request is not padded');
  });
});

test('fault: slow_body sends headers, then dribbles the real body over delayMs', T, async () => {
  await withServer(async ({ call, fault, server }) => {
    const normal = (await call(CUSTOMER)).text;
    await fault({ route: 'crm.find_customer', mode: 'slow_body', delayMs: 300, times: 1 });
    const agent = new Agent();
    try {
      const res = await request(`${server.url}${CUSTOMER}`, { dispatcher: agent });
      const headersAt = performance.now();
      assert.equal(res.statusCode, 200);
      let chunks = 0;
      let text = '';
      for await (const chunk of res.body) {
        chunks += 1;
        text += (chunk as Buffer).toString('utf8');
      }
      const bodyTime = performance.now() - headersAt;
      assert.equal(text, normal, 'the full, correct body eventually arrives');
      assert.ok(chunks >= 2, `body arrived in pieces (${chunks})`);
      assert.ok(bodyTime >= 150, `body took ~delayMs after the headers (${bodyTime}ms)`);
    } finally {
      await agent.destroy();
    }
  });
});

test('times limits how many requests are faulted', T, async () => {
  await withServer(async ({ call, json, fault, server }) => {
    const id = await fault({ route: 'crm.tier', mode: 'server_error', times: 2 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(TIER)).status);
    assert.deepEqual(statuses, [503, 503, 200, 200]);
    const listed = (await json('/__control/faults')).body as { faults: Array<Record<string, unknown>> };
    assert.equal(listed.faults.length, 1);
    assert.equal(listed.faults[0]?.['id'], id);
    assert.equal(listed.faults[0]?.['applied'], 2);
    assert.equal(listed.faults[0]?.['exhausted'], true);
    assert.deepEqual(
      server.stats().requests.map((r) => r.faultId),
      [id, id, null, null],
    );
  });
});

test('rate 0.25 over 100 requests faults exactly 25, deterministically', T, async () => {
  await withServer(async ({ call, fault }) => {
    await fault({ route: 'orders.latest', mode: 'server_error', rate: 0.25 });
    const faulted: number[] = [];
    for (let i = 1; i <= 100; i++) {
      const r = await call(LATEST);
      if (r.status === 503) faulted.push(i);
      else assert.equal(r.status, 200);
    }
    assert.equal(faulted.length, 25);
    assert.deepEqual(
      faulted,
      Array.from({ length: 25 }, (_, k) => 4 * (k + 1)),
      'every 4th request',
    );
  });
});

test('rate with awkward floats and times combine exactly', T, async () => {
  await withServer(async ({ call, fault }) => {
    // 0.29 * 100 = 28.999999999999996 in floating point; still exactly 29.
    await fault({ route: 'crm.tier', mode: 'server_error', rate: 0.29 });
    let n = 0;
    for (let i = 0; i < 100; i++) if ((await call(TIER)).status === 503) n++;
    assert.equal(n, 29);

    await fault({ route: 'orders.latest', mode: 'server_error', rate: 0.5, times: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await call(LATEST)).status);
    assert.deepEqual(statuses, [200, 503, 200, 503, 200, 503, 200, 200, 200, 200]);
  });
});

test('match restricts by path substring (raw or decoded); route * covers every tool route', T, async () => {
  await withServer(async ({ call, fault }) => {
    await fault({ route: '*', mode: 'server_error', match: 'C-123456' });
    assert.equal((await call(TIER)).status, 503);
    assert.equal((await call(LATEST)).status, 503);
    assert.equal((await call('/crm/customers/C-654321/tier')).status, 200);
    assert.equal((await call(TRACK)).status, 200);

    await fault({ route: 'crm.find_customer', mode: 'auth_failed', match: 'alice@example.com' });
    assert.equal((await call(CUSTOMER)).status, 401, 'decoded path matches');
    assert.equal((await call('/crm/customers/by-email/bob%40example.com')).status, 200);
  });
});

test('DELETE /__control/faults clears all faults; in-process methods mirror it', T, async () => {
  await withServer(async ({ call, json, fault, server }) => {
    await fault({ route: '*', mode: 'server_error' });
    await fault({ route: 'crm.tier', mode: 'auth_failed' });
    assert.equal((await call(TIER)).status, 503);
    const del = await json('/__control/faults', { method: 'DELETE' });
    assert.equal(del.status, 200);
    assert.deepEqual(del.body, { cleared: 2 });
    assert.equal((await call(TIER)).status, 200);

    const id = server.setFault({ route: 'crm.tier', mode: 'ok_error_body', times: 1 });
    assert.match(id, /^fault-\d+$/);
    assert.deepEqual(JSON.parse((await call(TIER)).text), { status: 'error', message: 'token expired' });
    server.setFault({ route: 'crm.tier', mode: 'server_error' });
    server.clearFaults();
    assert.equal((await call(TIER)).status, 200);
    assert.deepEqual(server.faults(), []);
  });
});

test('bad fault specs are rejected with 400 naming the field', T, async () => {
  await withServer(async ({ json, server }) => {
    const cases: Array<[unknown, string]> = [
      [[], 'body'],
      [{ mode: 'timeout' }, 'route'],
      [{ route: 'crm.nope', mode: 'timeout' }, 'route'],
      [{ route: 'crm.tier' }, 'mode'],
      [{ route: 'crm.tier', mode: 'explode' }, 'mode'],
      [{ route: 'crm.tier', mode: 'timeout', times: 0 }, 'times'],
      [{ route: 'crm.tier', mode: 'timeout', times: 1.5 }, 'times'],
      [{ route: 'crm.tier', mode: 'timeout', rate: 1.5 }, 'rate'],
      [{ route: 'crm.tier', mode: 'timeout', rate: '0.5' }, 'rate'],
      [{ route: 'crm.tier', mode: 'rate_limit', retryAfterSeconds: -1 }, 'retryAfterSeconds'],
      [{ route: 'crm.tier', mode: 'server_error', retryAfterSeconds: 1 }, 'retryAfterSeconds'],
      [{ route: 'crm.tier', mode: 'timeout', delayMs: -5 }, 'delayMs'],
      [{ route: 'crm.tier', mode: 'server_error', delayMs: 5 }, 'delayMs'],
      [{ route: 'crm.tier', mode: 'large_body', bytes: 100 }, 'bytes'],
      [{ route: 'crm.tier', mode: 'timeout', bytes: 4096 }, 'bytes'],
      [{ route: 'crm.tier', mode: 'timeout', match: '' }, 'match'],
      [{ route: 'crm.tier', mode: 'timeout', tims: 2 }, 'tims'],
    ];
    for (const [spec, field] of cases) {
      const r = await json('/__control/faults', { method: 'POST', body: JSON.stringify(spec) });
      assert.equal(r.status, 400, JSON.stringify(spec));
      const body = r.body as { error: string; field: string; message: string };
      assert.equal(body.error, 'invalid_fault_spec');
      assert.equal(body.field, field, JSON.stringify(spec));
      assert.ok(body.message.includes(field === 'body' ? 'object' : field), body.message);
    }
    const bad = await json('/__control/faults', { method: 'POST', body: '{"route":' });
    assert.equal(bad.status, 400);
    assert.equal((bad.body as { error: string }).error, 'invalid_json');

    assert.throws(
      () => server.setFault({ route: 'crm.tier', mode: 'timeout', rate: 2 }),
      (err: unknown) => err instanceof FaultSpecError && err.field === 'rate',
    );
    assert.throws(
      () => server.setFault({ route: 'nope', mode: 'timeout' } as unknown as FaultSpec),
      (err: unknown) => err instanceof FaultSpecError && err.field === 'route',
    );
    assert.deepEqual(server.faults(), [], 'nothing registered');
  });
});

test('stats count per route, record headers, and exclude control and health', T, async () => {
  await withServer(async ({ call, json, fault, server }) => {
    await fault({ route: 'crm.tier', mode: 'server_error', times: 1 });
    await call(TIER, {
      headers: { 'idempotency-key': 'idem-1', 'x-request-id': 'req-1', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    });
    await call(TIER, { headers: { 'idempotency-key': 'idem-2' } });
    await call(LATEST);
    await call(CUSTOMER);
    await call('/health');
    await json('/__control/faults');

    const viaApi = (await json('/__control/stats')).body as ReturnType<ToolServer['stats']>;
    const st = server.stats();
    assert.deepEqual({ ...viaApi, openConnections: 0 }, { ...st, openConnections: 0 }, 'control API mirrors stats()');
    assert.equal(st.total, 4);
    assert.deepEqual(st.byRoute, {
      ...Object.fromEntries(ROUTE_IDS.map((r) => [r, 0])),
      'crm.find_customer': 1,
      'crm.tier': 2,
      'orders.latest': 1,
    });
    assert.deepEqual(
      st.requests.map((r) => r.route),
      ['crm.tier', 'crm.tier', 'orders.latest', 'crm.find_customer'],
    );
    const [first, second] = st.requests;
    assert.deepEqual(first?.headers, {
      'idempotency-key': 'idem-1',
      'x-request-id': 'req-1',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    assert.equal(first?.fault, 'server_error');
    assert.equal(first?.method, 'GET');
    assert.equal(first?.path, TIER);
    assert.equal(typeof first?.at, 'number');
    assert.deepEqual(second?.headers, { 'idempotency-key': 'idem-2', 'x-request-id': null, traceparent: null });
    assert.equal(second?.fault, null);

    const reset = await json('/__control/stats', { method: 'DELETE' });
    assert.equal(reset.status, 200);
    const after = server.stats();
    assert.equal(after.total, 0);
    assert.deepEqual(after.requests, []);
    assert.equal(after.byRoute['crm.tier'], 0);

    await call(TRACK);
    server.resetStats();
    assert.equal(server.stats().total, 0);
    // Snapshots are copies: mutating one does not change the server's state.
    await call(TRACK);
    const snap = server.stats();
    snap.requests.length = 0;
    snap.byRoute['shipping.track'] = 99;
    assert.equal(server.stats().requests.length, 1);
    assert.equal(server.stats().byRoute['shipping.track'], 1);
  });
});

/** Reads complete HTTP/1.1 responses (Content-Length framed) from a raw socket. */
function responseReader(socket: net.Socket): () => Promise<{ head: string; body: string }> {
  let buf = Buffer.alloc(0);
  let waiter: (() => void) | undefined;
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    waiter?.();
  });
  const tryParse = (): { head: string; body: string } | undefined => {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const head = buf.subarray(0, end).toString('latin1');
    const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? '0');
    if (buf.length < end + 4 + len) return undefined;
    const body = buf.subarray(end + 4, end + 4 + len).toString('utf8');
    buf = buf.subarray(end + 4 + len);
    return { head, body };
  };
  return () =>
    new Promise((resolve, reject) => {
      const attempt = (): void => {
        const r = tryParse();
        if (r) {
          waiter = undefined;
          socket.off('close', onClose);
          resolve(r);
        }
      };
      const onClose = (): void => reject(new Error('socket closed before a full response'));
      socket.once('close', onClose);
      waiter = attempt;
      attempt();
    });
}

test('idle keep-alive sockets are closed after keepAliveTimeoutMs; connections are counted', T, async () => {
  await withServer(
    async ({ server }) => {
      const socket = net.connect(server.port, '127.0.0.1');
      await once(socket, 'connect');
      const closed = once(socket, 'close');
      let endedByServer = false;
      socket.once('end', () => {
        endedByServer = true;
      });
      const next = responseReader(socket);
      const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n`;

      socket.write(get(TIER));
      const r1 = await next();
      assert.match(r1.head, /^HTTP\/1\.1 200/);
      assert.match(r1.head, /connection: keep-alive/i);
      socket.write(get(LATEST));
      const r2 = await next();
      assert.match(r2.head, /^HTTP\/1\.1 200/);
      const idleSince = performance.now();

      await closed;
      const idle = performance.now() - idleSince;
      assert.ok(endedByServer, 'the server closed the connection (FIN received)');
      assert.ok(idle >= 100, `socket stayed open while idle for ~200ms (${idle}ms)`);
      assert.ok(idle < 4000, `closed by the 200ms option, not the 5000ms default (${idle}ms)`);
      const st = server.stats();
      assert.equal(st.total, 2);
      assert.equal(st.connections, 1, 'both requests used one connection');
    },
    { keepAliveTimeoutMs: 200 },
  );
});

test('undici reuses one connection across sequential requests (default keep-alive)', T, async () => {
  await withServer(async ({ server }) => {
    // connections: 1 — otherwise undici may open a second socket when a request
    // is dispatched before the previous one's client is marked idle.
    const agent = new Agent({ connections: 1 });
    try {
      for (const path of [CUSTOMER, TIER, LATEST, TRACK]) {
        const res = await request(`${server.url}${path}`, { dispatcher: agent });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['connection'], 'keep-alive');
        await res.body.text();
      }
      const st = server.stats();
      assert.equal(st.total, 4);
      assert.equal(st.connections, 1, 'one TCP connection served all four requests');
      assert.equal(st.openConnections, 1, 'and it is still open (idle, within keepAliveTimeoutMs)');
    } finally {
      await agent.destroy();
    }
  });
});

test('close() ends promptly even with a held timeout request', T, async () => {
  const server = await startToolServer({ port: 0 });
  const agent = new Agent();
  try {
    server.setFault({ route: 'crm.tier', mode: 'timeout' }); // default 30 s hold
    const arrived = nextRequest(server);
    const pending = request(`${server.url}${TIER}`, { dispatcher: agent });
    pending.catch(() => undefined);
    assert.equal((await arrived).fault, 'timeout');
    const started = performance.now();
    await server.close();
    assert.ok(performance.now() - started < 1000, 'close did not wait for the held request');
    await assert.rejects(pending, 'the held request fails once the server is closed');
    await server.close(); // idempotent
  } finally {
    await agent.destroy();
    await server.close();
  }
});

test('invalid options are rejected and a busy port fails to start', T, async () => {
  await assert.rejects(startToolServer({ port: -1 }), RangeError);
  await assert.rejects(startToolServer({ port: 0, keepAliveTimeoutMs: 0 }), RangeError);
  const a = await startToolServer({ port: 0 });
  try {
    await assert.rejects(startToolServer({ port: a.port }), /EADDRINUSE/);
  } finally {
    await a.close();
  }
});

test('on an address other than loopback (the chart: 0.0.0.0) the control API answers 403 and injects no fault; the tools still answer', T, async () => {
  await withServer(
    async ({ call, json, server }) => {
      const post = await json('/__control/faults', { method: 'POST', body: JSON.stringify({ route: '*', mode: 'server_error' }) });
      assert.equal(post.status, 403);
      assert.match((post.body as { message: string }).message, /loopback/);
      assert.deepEqual(server.faults(), [], 'no fault was registered');
      for (const [path, method] of [
        ['/__control/faults', 'GET'],
        ['/__control/faults', 'DELETE'],
        ['/__control/stats', 'GET'],
        ['/__control/stats', 'DELETE'],
      ] as const)
        assert.equal((await call(path, { method })).status, 403, `${method} ${path}`);
      assert.equal((await call(TIER)).status, 200, 'the tool routes answer as usual');
      assert.equal((await call('/health')).status, 200);
    },
    { host: '0.0.0.0' },
  );
});

test('the MCP demo tool server on an address other than loopback refuses its control API too (403), and still answers /health', T, async () => {
  const mcp = await startMcpToolServer({ port: 0, host: '0.0.0.0' });
  try {
    const port = mcp.port;
    for (const [path, method] of [
      ['/__control/faults', 'POST'],
      ['/__control/stats', 'GET'],
      ['/__control/tools', 'POST'],
    ] as const) {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, { method, ...(method === 'POST' ? { body: '{}' } : {}) });
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.match(((await r.json()) as { message: string }).message, /loopback/);
    }
    assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
    assert.deepEqual(mcp.faults(), []);
  } finally {
    await mcp.close();
  }
});
