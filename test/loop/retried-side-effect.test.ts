// test-needs: kafka
/**
 * A side effect applied once across Thought's retries (issue 41, "one key per call").
 *
 * The stand-in is a payment API, a real HTTP server started here, that de-duplicates refunds by
 * `Idempotency-Key` the way payment APIs do: the first request under a key is applied and its
 * answer stored; a request repeating the key gets the stored answer and applies nothing. Its first
 * refund is applied at once but answered only after the call's time-out, so Action records a
 * `timeout` and Thought retries the step in a later wave. The retry is the same call: it carries
 * the same key, the stand-in answers it from what it stored, and exactly one refund is applied.
 * (With a key built from the wave number, the retry came under a new key and the stand-in paid
 * the refund twice.)
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import type { ThoughtRequest } from '../../schemas/types.gen.ts';
import { catalogCopy } from '../helpers/catalog.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';

/** refunds.create's time-out here: one attempt per wave, so a late answer is Thought's retry to make. */
const REFUND_TIMEOUT_MS = 1000;
const ORDER = { order_id: 'O-20250002', customer_id: 'C-100200', status: 'shipped', total_cents: 12_788, placed_at: '2025-03-14T09:26:53+08:00' };

/** The stand-in payment API: orders to look up, refunds de-duplicated by Idempotency-Key. */
interface PaymentApi {
  url: string;
  /** Refunds applied, per Idempotency-Key. */
  applied: Map<string, number>;
  /** Refund requests received, per Idempotency-Key. */
  received: Map<string, number>;
  close(): Promise<void>;
}

async function startPaymentApi(): Promise<PaymentApi> {
  const applied = new Map<string, number>();
  const received = new Map<string, number>();
  const stored = new Map<string, string>();
  let refunds = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (status: number, body: string) => {
        if (res.destroyed) return; // the caller gave up: the answer is lost on the way, as a late answer is
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (req.method === 'GET' && req.url === `/orders/${ORDER.order_id}`) return answer(200, JSON.stringify(ORDER));
      if (req.method !== 'POST' || req.url !== '/refunds') return answer(404, '{"error":"not_found"}');
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string') return answer(400, '{"error":"idempotency_key_required"}');
      received.set(key, (received.get(key) ?? 0) + 1);
      const replay = stored.get(key);
      if (replay !== undefined) return answer(200, replay);
      // A new key: the refund is applied now.
      const { order_id, amount_cents } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { order_id: string; amount_cents: number };
      refunds++;
      applied.set(key, (applied.get(key) ?? 0) + 1);
      const body = JSON.stringify({ refund_id: `R-${String(refunds).padStart(8, '0')}`, order_id, amount_cents, state: 'pending' });
      stored.set(key, body);
      // The first refund is answered only after the caller's time-out (an upstream slow to answer what it did).
      if (refunds === 1) setTimeout(() => answer(200, body), REFUND_TIMEOUT_MS + 1000);
      else answer(200, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    applied,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let api: PaymentApi;
let loop: RunningLoop;

before(async () => {
  api = await startPaymentApi();
  // One attempt per wave and a short time-out: Action gives the call up, Thought retries it.
  const catalog = catalogCopy('tao-retried-refund', (spec) => {
    if (spec.name === 'refunds.create') Object.assign(spec, { timeoutMs: REFUND_TIMEOUT_MS, retry: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 10 } });
  });
  loop = await startLoop({ TAO_FLOW: 'refund-request@1', TAO_TOOL_CATALOG_DIR: catalog, TAO_DEMO_TOOL_ORIGIN: api.url });
});

after(async () => {
  await loop?.stop();
  await api?.close();
});

test(
  'a refund the upstream applied but answered after the time-out is retried by Thought under the same key: exactly one refund applied',
  { timeout: 120000 },
  async () => {
    const task = buildTask({
      text: `Please refund my order ${ORDER.order_id}, it arrived broken.`,
      source: 'retried-refund',
      external_id: `${loop.cluster.namespace}-1`,
    });
    const outcomes = await loop.fleet.explained(runTasks(loop.cluster, [task], 90000), loop.cluster);
    const outcome = outcomes.get(task.thought_id)!;
    assert.equal(outcome.status, 'completed', outcome.reason);

    // Thought retried the refund: the step went out in two waves, attempts 1 and 2, with one key.
    const records = await scanToEnd(loop.cluster, ['thoughtRequests']);
    const refundCalls = records
      .map((r) => r.value as unknown as ThoughtRequest)
      .flatMap((w) => w.steps.filter((s) => s.tool === 'refunds.create').map((s) => ({ wave: w.iteration, attempt: s.attempt, key: s.idempotency_key })));
    assert.deepEqual(
      refundCalls.map((c) => [c.wave, c.attempt]),
      [
        [2, 1],
        [3, 2],
      ],
      'the timed-out refund was retried in the next wave',
    );

    // At the upstream, counted by key: exactly one refund applied, both requests under one key.
    const total = [...api.applied.values()].reduce((a, b) => a + b, 0);
    assert.equal(total, 1, `exactly one refund applied (applied per key: ${JSON.stringify([...api.applied])})`);
    assert.equal(new Set(refundCalls.map((c) => c.key)).size, 1, `one idempotency key for the call and its retry: ${refundCalls.map((c) => c.key).join(', ')}`);
    const key = refundCalls[0]!.key;
    assert.deepEqual([...api.received], [[key, 2]], 'the stand-in received the refund twice, under one key');
    assert.deepEqual([...api.applied], [[key, 1]]);
    const output = JSON.parse(outcome.output_json!) as { refund_id: string; refund_amount_cents: number };
    assert.deepEqual([output.refund_id, output.refund_amount_cents], ['R-00000001', ORDER.total_cents], 'the run reports the refund the upstream applied');
  },
);
