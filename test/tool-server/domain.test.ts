/**
 * The demo-domain routes of the tool server (orders by id, refunds, billing, identity, service
 * status, incidents, expense claims): answer shapes checked against the catalog's response schemas,
 * determinism, strict validation, idempotent POSTs, faults and stats.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Agent, request } from 'undici';

import { SERVICE_STATES, SERVICES } from '../../tool-server/data.ts';
import { POST_ROUTE_IDS, ROUTE_IDS, ROUTE_METHODS, startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog } from '../../tools/catalog.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body (`undefined` when it is not JSON). */
  body: unknown;
}

interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
}

interface Ctx {
  server: ToolServer;
  call: (path: string, opts?: CallOptions) => Promise<Reply>;
  /** POSTs a JSON value (or raw text) with `content-type: application/json` and an optional Idempotency-Key. */
  post: (path: string, body: unknown, key?: string, headers?: Record<string, string>) => Promise<Reply>;
}

const T = { timeout: 20_000 };
const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, {});

async function withServer(fn: (ctx: Ctx) => Promise<void>): Promise<void> {
  const server = await startToolServer({ port: 0 });
  const agent = new Agent();
  const call: Ctx['call'] = async (path, o = {}) => {
    const res = await request(`${server.url}${path}`, { method: o.method ?? 'GET', headers: o.headers, body: o.body, dispatcher: agent });
    const text = await res.body.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, headers: res.headers, text, body };
  };
  const post: Ctx['post'] = (path, body, key, headers = {}) =>
    call(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }), ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  try {
    await fn({ server, call, post });
  } finally {
    await agent.destroy();
    await server.close();
  }
}

/** Asserts a body satisfies the catalog's response schema of a tool. */
function assertContract(tool: string, body: unknown): void {
  const t = catalog.get(tool);
  assert.ok(t, `catalog has ${tool}`);
  assert.ok(t.validateResponse(body), `${tool}: ${JSON.stringify(body)} breaks the contract: ${JSON.stringify(t.validateResponse.errors)}`);
}

/** A delivered order (refundable), a shipped one, and a placed one (not refundable). */
const DELIVERED = 'O-12345678';
const SHIPPED = 'O-20250002';
const PLACED = 'O-20250003';
const INVOICE = 'INV-2024-0042';

const GETS: Array<[string, string]> = [
  ['orders.get', `/orders/${DELIVERED}`],
  ['billing.get_invoice', `/billing/invoices/${INVOICE}`],
  ['status.service', '/status/services/payments'],
  ['incidents.latest', '/incidents/services/payments/latest'],
  ['expenses.get_claim', '/expenses/claims/EC-123456'],
];

test('every route id is a catalog tool with the same method', () => {
  for (const id of ROUTE_IDS) {
    const tool = catalog.get(id);
    assert.ok(tool, `tool ${id}`);
    assert.equal(tool.spec.method, ROUTE_METHODS[id], id);
  }
  assert.deepEqual([...POST_ROUTE_IDS].sort(), ['billing.send_invoice_copy', 'identity.password_reset', 'refunds.create']);
});

test('GET routes: answers keep the catalog contract and are deterministic across servers', T, async () => {
  const texts: string[][] = [];
  for (let round = 0; round < 2; round++) {
    const mine: string[] = [];
    await withServer(async ({ call }) => {
      for (const [tool, path] of GETS) {
        const a = await call(path);
        const b = await call(path);
        assert.equal(a.status, 200, path);
        assert.equal(a.headers['content-type'], 'application/json');
        assert.equal(a.text, b.text, `same input, same body: ${path}`);
        assertContract(tool, a.body);
        mine.push(a.text);
      }
    });
    texts.push(mine);
  }
  assert.deepEqual(texts[0], texts[1]);
});

test('orders.get has the shape of orders.latest and agrees with it and with tracking', T, async () => {
  await withServer(async ({ call }) => {
    const latest = (await call('/orders/customers/C-123456/latest')).body as Record<string, unknown>;
    const byId = (await call(`/orders/${latest['order_id'] as string}`)).body as Record<string, unknown>;
    assert.deepEqual(Object.keys(byId).sort(), ['customer_id', 'order_id', 'placed_at', 'status', 'total_cents']);
    for (const f of ['order_id', 'status', 'total_cents', 'placed_at']) assert.deepEqual(byId[f], latest[f], f);
    assert.match(byId['customer_id'] as string, /^C-\d{6}$/);
    assert.match(byId['placed_at'] as string, /\+08:00$/);
    const expected = { [DELIVERED]: ['delivered', 'delivered'], [SHIPPED]: ['shipped', 'in_transit'], [PLACED]: ['placed', 'pending'] };
    for (const [id, [status, state]] of Object.entries(expected)) {
      assert.equal(((await call(`/orders/${id}`)).body as { status: string }).status, status, id);
      assert.equal(((await call(`/shipping/orders/${id}/tracking`)).body as { state: string }).state, state, id);
    }
  });
});

test('billing.get_invoice: issued in the year its number names; 404 for numbers ending in 9999', T, async () => {
  await withServer(async ({ call }) => {
    const inv = (await call(`/billing/invoices/${INVOICE}`)).body as Record<string, unknown>;
    assert.deepEqual(Object.keys(inv).sort(), ['amount_cents', 'customer_id', 'invoice_id', 'issued_at']);
    assert.equal(inv['invoice_id'], INVOICE);
    assert.match(inv['issued_at'] as string, /^2024-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+08:00$/);
    for (const id of ['INV-2024-9999', 'INV-0000-9999']) {
      const r = await call(`/billing/invoices/${id}`);
      assert.equal(r.status, 404, id);
      assert.deepEqual(r.body, { error: 'invoice_not_found' });
    }
    for (const id of ['INV-0000-0001', 'INV-9999-0001']) {
      const r = await call(`/billing/invoices/${id}`);
      assert.equal(r.status, 200, id);
      assertContract('billing.get_invoice', r.body);
      assert.ok((r.body as { issued_at: string }).issued_at.startsWith(id.slice(4, 8)), id);
    }
  });
});

test('status.service and incidents.latest: every service, incident state follows the service state', T, async () => {
  await withServer(async ({ call }) => {
    const follows = { outage: 'investigating', degraded: 'monitoring', operational: 'resolved' } as const;
    const states = new Set<string>();
    for (const service of SERVICES) {
      const st = await call(`/status/services/${service}`);
      assertContract('status.service', st.body);
      const body = st.body as { service: string; state: keyof typeof follows; checked_at: string };
      assert.equal(body.service, service);
      assert.equal(body.state, SERVICE_STATES[service]);
      assert.match(body.checked_at, /Z$/);
      states.add(body.state);
      const inc = await call(`/incidents/services/${service}/latest`);
      assertContract('incidents.latest', inc.body);
      const incident = inc.body as { incident_id: string; service: string; state: string };
      assert.equal(incident.service, service);
      assert.match(incident.incident_id, /^INC-\d{6}$/);
      assert.equal(incident.state, follows[body.state]);
    }
    assert.deepEqual([...states].sort(), ['degraded', 'operational', 'outage'], 'the demo shows every state');
    assert.equal(SERVICE_STATES.payments, 'outage');
  });
});

test('expenses.get_claim: shape, and different claims differ', T, async () => {
  await withServer(async ({ call }) => {
    const seen = new Set<string>();
    for (const id of ['EC-123456', 'EC-000001', 'EC-000002', 'EC-654321']) {
      const r = await call(`/expenses/claims/${id}`);
      assert.equal(r.status, 200);
      assertContract('expenses.get_claim', r.body);
      assert.equal((r.body as { claim_id: string }).claim_id, id);
      seen.add(r.text);
    }
    assert.equal(seen.size, 4);
  });
});

test('400 invalid_parameter for path params failing the strict pattern', T, async () => {
  await withServer(async ({ call }) => {
    const cases: Array<[string, string]> = [
      ['/orders/O-1234567', 'order_id'],
      ['/orders/O-123456789', 'order_id'],
      ['/orders/o-12345678', 'order_id'],
      ['/orders/%20O-12345678', 'order_id'],
      ['/orders/%E0%A4%A', 'order_id'],
      ['/billing/invoices/INV-2024-042', 'invoice_id'],
      ['/billing/invoices/inv-2024-0042', 'invoice_id'],
      ['/billing/invoices/INV-24-00042', 'invoice_id'],
      ['/status/services/Payments', 'service'],
      ['/status/services/billing', 'service'],
      ['/status/services/payments%20', 'service'],
      ['/incidents/services/API/latest', 'service'],
      ['/incidents/services/apis/latest', 'service'],
      ['/expenses/claims/EC-12345', 'claim_id'],
      ['/expenses/claims/EC-1234567', 'claim_id'],
      ['/expenses/claims/ec-123456', 'claim_id'],
    ];
    for (const [path, field] of cases) {
      const r = await call(path);
      assert.equal(r.status, 400, path);
      assert.deepEqual(r.body, { error: 'invalid_parameter', field }, path);
    }
    // The POST route's path parameter is checked too (before the body).
    const bad = await call('/billing/invoices/INV-1/copies', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { error: 'invalid_parameter', field: 'invoice_id' });
  });
});

test('wrong methods are 405 with Allow; extra path segments are 404', T, async () => {
  await withServer(async ({ call, server }) => {
    const r1 = await call('/refunds');
    assert.equal(r1.status, 405);
    assert.equal(r1.headers['allow'], 'POST');
    const r2 = await call(`/orders/${DELIVERED}`, { method: 'POST', body: '{}' });
    assert.equal(r2.status, 405);
    assert.equal(r2.headers['allow'], 'GET');
    const r3 = await call('/identity/password-resets', { method: 'PUT', body: '{}' });
    assert.equal(r3.status, 405);
    assert.equal((await call('/refunds/R-12345678')).status, 404);
    assert.equal((await call('/status/services/payments/')).status, 404);
    const st = server.stats();
    assert.equal(st.byRoute['refunds.create'], 1);
    assert.equal(st.byRoute['orders.get'], 1);
    assert.equal(st.byRoute['identity.password_reset'], 1);
    assert.equal(st.byRoute['unmatched'], 2);
    assert.deepEqual(st.effects, { 'refunds.create': 0, 'billing.send_invoice_copy': 0, 'identity.password_reset': 0 });
  });
});

test('refunds.create: 201 for a delivered or shipped order, 409 not_refundable for a placed one', T, async () => {
  await withServer(async ({ post, server }) => {
    const r = await post('/refunds', { order_id: DELIVERED, amount_cents: 1000 });
    assert.equal(r.status, 201);
    assert.equal(r.headers['content-type'], 'application/json');
    assertContract('refunds.create', r.body);
    assert.deepEqual(Object.keys(r.body as object).sort(), ['amount_cents', 'order_id', 'refund_id', 'state']);
    assert.match((r.body as { refund_id: string }).refund_id, /^R-\d{8}$/);
    assert.deepEqual({ ...(r.body as object), refund_id: 'x' }, { refund_id: 'x', order_id: DELIVERED, amount_cents: 1000, state: 'pending' });
    assert.equal((await post('/refunds', { order_id: SHIPPED, amount_cents: 1 })).status, 201);

    const placed = await post('/refunds', { order_id: PLACED, amount_cents: 1000 });
    assert.equal(placed.status, 409);
    assert.equal((placed.body as { error: string }).error, 'not_refundable');
    assert.equal(server.stats().effects['refunds.create'], 2, 'the 409 created nothing');
  });
});

test('refunds.create: refunds of one order never exceed its total', T, async () => {
  await withServer(async ({ call, post }) => {
    const total = ((await call(`/orders/${DELIVERED}`)).body as { total_cents: number }).total_cents;
    const first = await post('/refunds', { order_id: DELIVERED, amount_cents: total - 100 });
    assert.equal(first.status, 201);
    const over = await post('/refunds', { order_id: DELIVERED, amount_cents: 101 });
    assert.equal(over.status, 409);
    assert.deepEqual(over.body, { error: 'amount_exceeds_refundable', refundable_cents: 100 });
    const rest = await post('/refunds', { order_id: DELIVERED, amount_cents: 100 });
    assert.equal(rest.status, 201);
    assert.notEqual((rest.body as { refund_id: string }).refund_id, (first.body as { refund_id: string }).refund_id, 'a second refund is a new resource');
    assert.deepEqual((await post('/refunds', { order_id: DELIVERED, amount_cents: 1 })).body, { error: 'amount_exceeds_refundable', refundable_cents: 0 });
  });
});

test('POST bodies are validated strictly: 400 naming the field, 415 for non-JSON, 413 for a huge body', T, async () => {
  await withServer(async ({ call, post, server }) => {
    const cases: Array<[string, unknown, string]> = [
      ['/refunds', { amount_cents: 100 }, 'order_id'],
      ['/refunds', { order_id: DELIVERED }, 'amount_cents'],
      ['/refunds', { order_id: 'O-1', amount_cents: 100 }, 'order_id'],
      ['/refunds', { order_id: 12345678, amount_cents: 100 }, 'order_id'],
      ['/refunds', { order_id: DELIVERED, amount_cents: '100' }, 'amount_cents'],
      ['/refunds', { order_id: DELIVERED, amount_cents: 0 }, 'amount_cents'],
      ['/refunds', { order_id: DELIVERED, amount_cents: -5 }, 'amount_cents'],
      ['/refunds', { order_id: DELIVERED, amount_cents: 1.5 }, 'amount_cents'],
      ['/refunds', { order_id: DELIVERED, amount_cents: 100_000_001 }, 'amount_cents'],
      ['/refunds', { order_id: DELIVERED, amount_cents: 100, reason: 'late' }, 'reason'],
      ['/refunds', [DELIVERED, 100], 'body'],
      ['/refunds', 'null', 'body'],
      ['/refunds', '{"order_id":', 'body'],
      ['/refunds', '', 'body'],
      [`/billing/invoices/${INVOICE}/copies`, { to: 'me@example.com' }, 'to'],
      [`/billing/invoices/${INVOICE}/copies`, '"please"', 'body'],
      ['/identity/password-resets', {}, 'customer_id'],
      ['/identity/password-resets', { customer_id: 'C-12345' }, 'customer_id'],
      ['/identity/password-resets', { customer_id: 'C-123456', email: 'a@b.co' }, 'email'],
    ];
    for (const [path, body, field] of cases) {
      const r = await post(path, body);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}`);
      assert.deepEqual(r.body, { error: 'invalid_parameter', field }, `${path} ${JSON.stringify(body)}`);
    }
    const noType = await call('/refunds', { method: 'POST', body: JSON.stringify({ order_id: DELIVERED, amount_cents: 100 }) });
    assert.equal(noType.status, 415);
    assert.equal((noType.body as { error: string }).error, 'unsupported_media_type');
    const textType = await call('/refunds', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    assert.equal(textType.status, 415);
    const charset = await post('/refunds', { order_id: DELIVERED, amount_cents: 100 }, undefined, { 'content-type': 'Application/JSON; charset=utf-8' });
    assert.equal(charset.status, 201, 'media type parameters and case are fine');

    const huge = await post('/refunds', JSON.stringify({ order_id: DELIVERED, amount_cents: 100, pad: 'x'.repeat(20_000) }));
    assert.equal(huge.status, 413);
    assert.deepEqual(huge.body, { error: 'body_too_large' });

    for (const key of ['', 'x'.repeat(256), 'has space']) {
      const r = await post('/refunds', { order_id: DELIVERED, amount_cents: 100 }, key);
      assert.equal(r.status, 400, JSON.stringify(key));
      assert.deepEqual(r.body, { error: 'invalid_parameter', field: 'idempotency-key' });
    }
    assert.equal(server.stats().effects['refunds.create'], 1, 'only the one valid request had an effect');
  });
});

test('idempotency: the same key and request replays the answer and creates nothing new', T, async () => {
  await withServer(async ({ post, server }) => {
    const body = { order_id: DELIVERED, amount_cents: 2500 };
    const first = await post('/refunds', body, 'key-1');
    assert.equal(first.status, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const again = await post('/refunds', { amount_cents: 2500, order_id: DELIVERED }, 'key-1');
    assert.equal(again.status, 201);
    assert.equal(again.text, first.text, 'the same refund, byte for byte (key order of the body does not matter)');
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const third = await post('/refunds', body, 'key-1');
    assert.equal(third.text, first.text);

    // Without a key, or with another key, it is a new refund.
    const other = await post('/refunds', body, 'key-2');
    assert.equal(other.status, 201);
    assert.notEqual((other.body as { refund_id: string }).refund_id, (first.body as { refund_id: string }).refund_id);
    const keyless = await post('/refunds', body);
    assert.equal(keyless.status, 201);
    assert.notEqual(keyless.text, other.text);

    // The same key for a different request is refused and does nothing.
    const reused = await post('/refunds', { order_id: DELIVERED, amount_cents: 1 }, 'key-1');
    assert.equal(reused.status, 422);
    assert.equal((reused.body as { error: string }).error, 'idempotency_key_reused');
    const crossRoute = await post('/identity/password-resets', { customer_id: 'C-123456' }, 'key-1');
    assert.equal(crossRoute.status, 422);

    const st = server.stats();
    assert.equal(st.byRoute['refunds.create'], 6);
    assert.equal(st.effects['refunds.create'], 3, 'key-1, key-2 and the keyless one');
    assert.equal(st.effects['identity.password_reset'], 0);
    assert.deepEqual(st.idempotency, {
      storedKeys: 2,
      replays: { 'refunds.create': 2, 'billing.send_invoice_copy': 0, 'identity.password_reset': 0 },
      conflicts: 2,
    });
    assert.deepEqual(
      st.requests.map((r) => r.idempotentReplay),
      [false, true, true, false, false, false, false],
    );

    // A stats reset clears the counts but not the stored answers.
    server.resetStats();
    const after = server.stats();
    assert.deepEqual(after.idempotency, {
      storedKeys: 2,
      replays: { 'refunds.create': 0, 'billing.send_invoice_copy': 0, 'identity.password_reset': 0 },
      conflicts: 0,
    });
    assert.equal((await post('/refunds', body, 'key-1')).text, first.text);
  });
});

test('idempotency: a rejected (4xx) answer is not stored, so the key stays usable', T, async () => {
  await withServer(async ({ post, server }) => {
    const placed = await post('/refunds', { order_id: PLACED, amount_cents: 100 }, 'k');
    assert.equal(placed.status, 409);
    const ok = await post('/refunds', { order_id: DELIVERED, amount_cents: 100 }, 'k');
    assert.equal(ok.status, 201);
    assert.equal(server.stats().idempotency.storedKeys, 1);
  });
});

test('POST answers are deterministic: a fresh server replays the same ids for the same history', T, async () => {
  const run = async (): Promise<string[]> => {
    const out: string[] = [];
    await withServer(async ({ post }) => {
      out.push((await post('/refunds', { order_id: DELIVERED, amount_cents: 700 }, 'a')).text);
      out.push((await post('/refunds', { order_id: DELIVERED, amount_cents: 700 })).text);
      out.push((await post('/identity/password-resets', { customer_id: 'C-123456' }, 'b')).text);
      out.push((await post('/identity/password-resets', { customer_id: 'C-123456' }, 'c')).text);
      out.push((await post(`/billing/invoices/${INVOICE}/copies`, {}, 'd')).text);
    });
    return out;
  };
  const a = await run();
  assert.deepEqual(await run(), a);
  assert.notEqual(a[0], a[1], 'two refunds of one order have distinct ids');
  assert.notEqual(a[2], a[3], 'two resets have distinct ids');
});

test('billing.send_invoice_copy: 202 {invoice_id, sent, channel}; 404 for an unknown invoice; idempotent', T, async () => {
  await withServer(async ({ post, server }) => {
    const r = await post(`/billing/invoices/${INVOICE}/copies`, {}, 'copy-1');
    assert.equal(r.status, 202);
    assertContract('billing.send_invoice_copy', r.body);
    assert.deepEqual(r.body, { invoice_id: INVOICE, sent: true, channel: 'email' });
    const again = await post(`/billing/invoices/${INVOICE}/copies`, {}, 'copy-1');
    assert.equal(again.status, 202);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const missing = await post('/billing/invoices/INV-2024-9999/copies', {}, 'copy-2');
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { error: 'invoice_not_found' });
    // A different invoice under an already used key is a different request.
    assert.equal((await post('/billing/invoices/INV-2024-0043/copies', {}, 'copy-1')).status, 422);
    const st = server.stats();
    assert.equal(st.effects['billing.send_invoice_copy'], 1, 'one e-mail sent');
    assert.equal(st.idempotency.replays['billing.send_invoice_copy'], 1);
  });
});

test('identity.password_reset: 202 {customer_id, reset_id, expires_at}; idempotent', T, async () => {
  await withServer(async ({ post, server }) => {
    const r = await post('/identity/password-resets', { customer_id: 'C-705429' }, 'reset-1');
    assert.equal(r.status, 202);
    assertContract('identity.password_reset', r.body);
    const body = r.body as { customer_id: string; reset_id: string; expires_at: string };
    assert.equal(body.customer_id, 'C-705429');
    assert.match(body.reset_id, /^PWR-\d{8}$/);
    assert.match(body.expires_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+08:00$/);
    assert.equal((await post('/identity/password-resets', { customer_id: 'C-705429' }, 'reset-1')).text, r.text);
    const second = await post('/identity/password-resets', { customer_id: 'C-705429' }, 'reset-2');
    assert.notEqual((second.body as { reset_id: string }).reset_id, body.reset_id);
    assert.equal(server.stats().effects['identity.password_reset'], 2);
  });
});

test('faults apply to the new routes; rejecting faults leave POSTs without effect', T, async () => {
  await withServer(async ({ call, post, server }) => {
    server.setFault({ route: 'status.service', mode: 'rate_limit', retryAfterSeconds: 3, times: 1 });
    const rl = await call('/status/services/payments');
    assert.equal(rl.status, 429);
    assert.equal(rl.headers['retry-after'], '3');
    assert.equal((await call('/status/services/payments')).status, 200);

    server.setFault({ route: 'refunds.create', mode: 'server_error', times: 1 });
    const se = await post('/refunds', { order_id: DELIVERED, amount_cents: 100 }, 'k1');
    assert.equal(se.status, 503);
    assert.equal(server.stats().effects['refunds.create'], 0, 'a 503 did nothing');
    const retried = await post('/refunds', { order_id: DELIVERED, amount_cents: 100 }, 'k1');
    assert.equal(retried.status, 201);
    assert.equal(retried.headers['idempotent-replayed'], undefined, 'first real processing');

    server.setFault({ route: 'identity.password_reset', mode: 'auth_failed', times: 1 });
    assert.equal((await post('/identity/password-resets', { customer_id: 'C-123456' })).status, 401);
    server.setFault({ route: 'billing.send_invoice_copy', mode: 'html_error', times: 1 });
    const html = await post(`/billing/invoices/${INVOICE}/copies`, {});
    assert.match(String(html.headers['content-type']), /^text\/html/);
    server.setFault({ route: 'expenses.get_claim', mode: 'ok_error_body', times: 1 });
    assert.deepEqual((await call('/expenses/claims/EC-123456')).body, { status: 'error', message: 'token expired' });

    const st = server.stats();
    assert.equal(st.effects['identity.password_reset'], 0);
    assert.equal(st.effects['billing.send_invoice_copy'], 0);
    assert.deepEqual(
      st.requests.map((r) => [r.route, r.fault]),
      [
        ['status.service', 'rate_limit'],
        ['status.service', null],
        ['refunds.create', 'server_error'],
        ['refunds.create', null],
        ['identity.password_reset', 'auth_failed'],
        ['billing.send_invoice_copy', 'html_error'],
        ['expenses.get_claim', 'ok_error_body'],
      ],
    );
  });
});

test('a POST whose answer times out took effect: the retry with the same key gets the original refund', T, async () => {
  await withServer(async ({ post, server }) => {
    server.setFault({ route: 'refunds.create', mode: 'timeout', delayMs: 50, times: 1 });
    const lost = await post('/refunds', { order_id: DELIVERED, amount_cents: 900 }, 'retry-me');
    assert.equal(lost.status, 504);
    assert.equal(server.stats().effects['refunds.create'], 1, 'the refund was made before the answer was lost');
    const retry = await post('/refunds', { order_id: DELIVERED, amount_cents: 900 }, 'retry-me');
    assert.equal(retry.status, 201);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    const st = server.stats();
    assert.equal(st.effects['refunds.create'], 1, 'no second refund');
    assert.equal(st.idempotency.replays['refunds.create'], 1);

    // malformed: the effect happens, the answer is a truncated prefix of the real one.
    server.setFault({ route: 'refunds.create', mode: 'malformed', times: 1 });
    const garbled = await post('/refunds', { order_id: SHIPPED, amount_cents: 10 }, 'garbled');
    assert.equal(garbled.status, 200);
    assert.equal(garbled.body, undefined, 'not JSON');
    const real = await post('/refunds', { order_id: SHIPPED, amount_cents: 10 }, 'garbled');
    assert.equal(real.status, 201);
    assert.ok(real.text.startsWith(garbled.text) && garbled.text.length < real.text.length);
    assert.equal(server.stats().effects['refunds.create'], 2);
  });
});

test('a perKey timeout answers every retry of a call late up to perKey, applies it once, and effectsByKey counts it by key', T, async () => {
  await withServer(async ({ post, server }) => {
    // rate 0.5 picks every second new key; each picked key's first 2 requests are answered late.
    server.setFault({ route: 'refunds.create', mode: 'timeout', delayMs: 20, perKey: 2, rate: 0.5 });
    const refund = (key: string) => post('/refunds', { order_id: DELIVERED, amount_cents: 5 }, key);
    assert.equal((await refund('call-1')).status, 201, 'the first key is not picked');
    assert.deepEqual([(await refund('call-2')).status, (await refund('call-2')).status, (await refund('call-2')).status], [504, 504, 201]);
    assert.equal((await post('/refunds', { order_id: DELIVERED, amount_cents: 5 })).status, 201, 'a request without a key is never faulted by perKey');
    const st = server.stats();
    assert.deepEqual(st.effectsByKey, { 'call-1': 1, 'call-2': 1 }, 'each call applied once, at its first request; keyless effects are not listed');
    assert.equal(st.effects['refunds.create'], 3);
    assert.equal(server.faults()[0]!.applied, 2);
    assert.throws(() => server.setFault({ route: 'refunds.create', mode: 'timeout', perKey: 0 }), /perKey must be a positive integer/);
  });
});

test('fault: wrong_schema breaks the contract of every new route', T, async () => {
  await withServer(async ({ call, post, server }) => {
    const requests: Array<[string, () => Promise<unknown>]> = [
      ...GETS.map(([tool, path]): [string, () => Promise<unknown>] => [tool, async () => (await call(path)).body]),
      ['refunds.create', async () => (await post('/refunds', { order_id: DELIVERED, amount_cents: 100 })).body],
      ['billing.send_invoice_copy', async () => (await post(`/billing/invoices/${INVOICE}/copies`, {})).body],
      ['identity.password_reset', async () => (await post('/identity/password-resets', { customer_id: 'C-123456' })).body],
    ];
    for (const [tool, send] of requests) {
      server.setFault({ route: tool as 'orders.get', mode: 'wrong_schema', times: 1 });
      const body = await send();
      assert.ok(body !== null && typeof body === 'object', tool);
      const t = catalog.get(tool)!;
      assert.equal(t.validateResponse(body), false, `${tool}: ${JSON.stringify(body)} should break the contract`);
      assertContract(tool, await send());
    }
    assert.deepEqual(
      server.stats().effects,
      { 'refunds.create': 1, 'billing.send_invoice_copy': 1, 'identity.password_reset': 1 },
      'only the fault-free POSTs took effect',
    );
  });
});

test('fault: slow_body dribbles a POST answer; match selects by path or POST body; route * covers the new routes', T, async () => {
  await withServer(async ({ call, post, server }) => {
    server.setFault({ route: 'identity.password_reset', mode: 'slow_body', delayMs: 100, times: 1 });
    const slow = await post('/identity/password-resets', { customer_id: 'C-123456' }, 'slow');
    assert.equal(slow.status, 202);
    assert.equal((await post('/identity/password-resets', { customer_id: 'C-123456' }, 'slow')).text, slow.text);
    assert.equal(server.stats().effects['identity.password_reset'], 1);

    server.setFault({ route: 'refunds.create', mode: 'server_error', match: SHIPPED });
    assert.equal((await post('/refunds', { order_id: SHIPPED, amount_cents: 10 })).status, 503, 'matched in the body');
    assert.equal((await post('/refunds', { order_id: DELIVERED, amount_cents: 10 })).status, 201);
    server.clearFaults();

    server.setFault({ route: '*', mode: 'server_error', match: 'payments' });
    assert.equal((await call('/status/services/payments')).status, 503);
    assert.equal((await call('/incidents/services/payments/latest')).status, 503);
    assert.equal((await call('/status/services/search')).status, 200);
  });
});

test('stats count every new route', T, async () => {
  await withServer(async ({ call, post, server }) => {
    for (const [, path] of GETS) await call(path);
    await post('/refunds', { order_id: DELIVERED, amount_cents: 100 });
    await post(`/billing/invoices/${INVOICE}/copies`, {}, 'x');
    await post('/identity/password-resets', { customer_id: 'C-123456' }, 'y');
    await post('/identity/password-resets', { customer_id: 'C-123456' }, 'y');
    const st = server.stats();
    assert.equal(st.total, GETS.length + 4);
    for (const [tool] of GETS) assert.equal(st.byRoute[tool], 1, tool);
    assert.equal(st.byRoute['refunds.create'], 1);
    assert.equal(st.byRoute['billing.send_invoice_copy'], 1);
    assert.equal(st.byRoute['identity.password_reset'], 2);
    for (const id of ['crm.find_customer', 'crm.tier', 'orders.latest', 'shipping.track']) assert.equal(st.byRoute[id], 0);
    assert.deepEqual(st.effects, { 'refunds.create': 1, 'billing.send_invoice_copy': 1, 'identity.password_reset': 1 });
    assert.equal(st.idempotency.replays['identity.password_reset'], 1);
    const last = st.requests.at(-1)!;
    assert.equal(last.method, 'POST');
    assert.equal(last.path, '/identity/password-resets');
    assert.equal(last.headers['idempotency-key'], 'y');
    assert.equal(last.idempotentReplay, true);
    // The control API mirrors it.
    const viaApi = (await call('/__control/stats')).body as ReturnType<ToolServer['stats']>;
    assert.deepEqual(viaApi.effects, st.effects);
    assert.deepEqual(viaApi.idempotency, st.idempotency);
  });
});
