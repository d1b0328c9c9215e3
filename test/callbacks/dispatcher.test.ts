// test-needs: kafka
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { checkCallbackUrl, parseAllowedHosts } from '../../callbacks/deliver.ts';
import { callbackOptionsFromEnv } from '../../callbacks/config.ts';
import { callbackIdempotencyKey, startCallbackDispatcher, type CallbackDispatcher, type CallbackDispatcherOptions } from '../../callbacks/dispatcher.ts';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { verifyTao } from '../../runtime/signature.ts';
import { ConfigError } from '../../runtime/errors.ts';
import { createLogger } from '../../runtime/log.ts';
import type { Outcome } from '../../schemas/types.gen.ts';
import { freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { outcome as makeOutcome } from '../../schemas/records.ts';

const SECRET = 'callback-test-secret';
const logger = createLogger({}, { level: 'error' });

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/** A real HTTP receiver; `answer(path, n)` gives the status of the n-th request (1-based) on a path. */
async function receiver(answer: (path: string, n: number) => number): Promise<{ url: string; port: number; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const path = req.url ?? '/';
      const status = answer(path, received.filter((r) => r.path === path).length + 1);
      received.push({ path, headers: req.headers, body, status });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let cluster: TestCluster;
let producer: Producer;
const closers: Array<() => Promise<void>> = [];

before(async () => {
  cluster = await freshCluster();
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
});
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await producer?.disconnect();
});

/** Writes a task (with a callback URL when given) and returns its ids. */
async function task(callbackUrl?: string): Promise<{ thought_id: string; task_id: string }> {
  const t = buildTask({ text: 'where is my order?', source: 'test', external_id: randomUUID(), metadata: callbackUrl ? { callback_url: callbackUrl } : {} });
  await submitTasks(producer, cluster.codec, [t]);
  return { thought_id: t.thought_id, task_id: t.task_id };
}

async function outcome(ids: { thought_id: string; task_id: string }, status: Outcome['status'] = 'completed'): Promise<Outcome> {
  const value: Outcome = makeOutcome({
    ...ids,
    status,
    reason: 'order found',
    iterations: 2,
    steps_executed: 3,
    output_json: '{"order":"1234"}',
    flow_id: 'orders',
    result_json: '{"order_id":"O-12345678","status":"shipped"}',
  });
  await producer.send({
    topic: cluster.codec.topics.name('outcomes'),
    acks: -1,
    messages: [{ key: ids.thought_id, value: await cluster.codec.encode('outcomes', value) }],
  });
  return value;
}

async function until(what: string, check: () => boolean, timeoutMs = 60000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function assertSigned(r: Received, expected: Outcome): void {
  const check = verifyTao(r.headers['x-tao-signature'] as string, Buffer.from(r.body), SECRET, 300);
  assert.equal(check.ok, true, `signature of ${r.path}: ${JSON.stringify(check)}`);
  assert.equal(r.headers['idempotency-key'], callbackIdempotencyKey(expected));
  assert.equal(r.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(r.body), expected);
}

test(
  "outcomes are POSTed signed to their task's callback URL, retried after a 503, never sent to a host off the allow-list, and given up after maxAttempts",
  { timeout: 180000 },
  async () => {
    const good = await receiver((path, n) => (path === '/flaky' && n === 1 ? 503 : 200));
    const stranger = await receiver(() => 200);
    const broken = await receiver(() => 500);
    closers.push(good.close, stranger.close, broken.close);

    // Written before the dispatcher starts: found by replaying tao.tasks.
    const flakyIds = await task(`${good.url}/flaky`);
    const flaky = await outcome(flakyIds);
    const strangerIds = await task(`http://localhost:${stranger.port}/hook`); // localhost is not allow-listed
    await outcome(strangerIds, 'failed');
    await outcome(await task()); // no callback URL

    const options: CallbackDispatcherOptions = {
      secret: SECRET,
      allowedHosts: ['127.0.0.1'],
      fromBeginning: true,
      maxAttempts: 3,
      baseDelayMs: 50,
      maxDelayMs: 200,
      requestTimeoutMs: 2000,
    };
    let dispatcher: CallbackDispatcher = await startCallbackDispatcher(options, { kafka: cluster.kafka, codec: cluster.codec, logger, sessionTimeoutMs: 6000 });
    closers.push(() => dispatcher.stop());

    // Written after it started, outcome right behind its task: the index catches up on the miss.
    const liveIds = await task(`${good.url}/live`);
    const live = await outcome(liveIds, 'awaiting_input');
    const brokenIds = await task(`${broken.url}/down`);
    await outcome(brokenIds);

    await until('every outcome to be handled', () => {
      const s = dispatcher.stats();
      return s.delivered + s.abandoned + s.rejected + s.noCallback >= 5;
    });
    const stats = dispatcher.stats();
    assert.deepEqual({ ...stats, retries: undefined }, { delivered: 2, abandoned: 1, rejected: 1, noCallback: 1, retries: undefined, undecodable: 0 });
    assert.equal(stats.retries, 1 + 2, 'one retry for /flaky, two for /down');

    const flakyCalls = good.received.filter((r) => r.path === '/flaky');
    assert.deepEqual(
      flakyCalls.map((r) => r.status),
      [503, 200],
    );
    for (const call of flakyCalls) assertSigned(call, flaky);
    const liveCalls = good.received.filter((r) => r.path === '/live');
    assert.equal(liveCalls.length, 1);
    assertSigned(liveCalls[0]!, live);
    assert.equal(stranger.received.length, 0, 'a host off the allow-list was called');
    assert.equal(broken.received.length, 3, 'maxAttempts attempts, then given up');

    // Offsets were committed: a restarted dispatcher (same group) does not deliver them again.
    await dispatcher.stop();
    dispatcher = await startCallbackDispatcher(options, { kafka: cluster.kafka, codec: cluster.codec, logger, sessionTimeoutMs: 6000 });
    const afterIds = await task(`${good.url}/after-restart`);
    const afterRestart = await outcome(afterIds);
    await until('the outcome written after the restart', () => dispatcher.stats().delivered === 1);
    assert.deepEqual(good.received.map((r) => r.path).sort(), ['/after-restart', '/flaky', '/flaky', '/live']);
    assertSigned(
      good.received.find((r) => r.path === '/after-restart')!,
      afterRestart,
    );
    assert.equal(dispatcher.stats().rejected + dispatcher.stats().abandoned, 0);
  },
);

test('callback configuration: a secret is required, URLs must be http(s) on an allow-listed host (port optional)', async () => {
  assert.throws(() => callbackOptionsFromEnv({ TAO_CALLBACK_ALLOWED_HOSTS: 'a.example' }), ConfigError);
  assert.throws(() => callbackOptionsFromEnv({ TAO_CALLBACK_SECRET: 's', TAO_CALLBACK_MAX_ATTEMPTS: 'lots' }), /TAO_CALLBACK_MAX_ATTEMPTS/);
  const options = callbackOptionsFromEnv({ TAO_CALLBACK_SECRET: 's', TAO_CALLBACK_ALLOWED_HOSTS: ' Hooks.Example.com, 127.0.0.1:8080 ' });
  assert.deepEqual(options.allowedHosts, ['hooks.example.com', '127.0.0.1:8080']);
  await assert.rejects(startCallbackDispatcher({ secret: '', allowedHosts: [] }, { kafka: cluster.kafka, codec: cluster.codec, logger }), ConfigError);

  const allowed = parseAllowedHosts(options.allowedHosts);
  assert.equal(checkCallbackUrl('https://hooks.example.com/x?y=1', allowed).ok, true);
  assert.equal(checkCallbackUrl('http://127.0.0.1:8080/cb', allowed).ok, true);
  assert.deepEqual(checkCallbackUrl('http://127.0.0.1:9090/cb', allowed), { ok: false, reason: 'host_not_allowed', host: '127.0.0.1:9090' });
  assert.deepEqual(checkCallbackUrl('https://hooks.example.com.evil.io/', allowed), {
    ok: false,
    reason: 'host_not_allowed',
    host: 'hooks.example.com.evil.io',
  });
  assert.equal(checkCallbackUrl('ftp://hooks.example.com/', allowed).ok, false);
  assert.equal(checkCallbackUrl('https://user:pw@hooks.example.com/', allowed).ok, false);
  assert.equal(checkCallbackUrl('not a url', allowed).ok, false);
});

test(
  'a run awaiting approval is announced to its callback URL with the calls waiting; its end is a separate message (another Idempotency-Key)',
  { timeout: 120000 },
  async () => {
    const hook = await receiver(() => 200);
    closers.push(hook.close);
    const ids = await task(`${hook.url}/approvals`);
    const call = {
      step_id: 'S2',
      tool: 'refunds.create',
      input_json: '{"order_id":"O-20250002","amount_cents":127788}',
      rule: 'refunds.create:amount_cents>5000 (TAO_APPROVAL_RULES)',
      why: 'amount_cents 127788 > 5000',
      decision: null,
      decided_by: null,
      decided_at_ms: null,
      decision_reason: null,
      interrupt_id: 'i-0123456789abcdef',
      edited_input_json: null,
    };
    const parked: Outcome = makeOutcome({
      ...ids,
      status: 'awaiting_approval',
      reason_code: 'approval_required',
      reason: 'refunds.create (S2) needs approval',
      output_json: null,
      approval: { wave: 2, timeout_ms: 86_400_000, calls: [call] },
    });
    const ended: Outcome = makeOutcome({ ...ids, status: 'completed', reason: 'all 2 step(s) verified' });
    for (const value of [parked, ended])
      await producer.send({
        topic: cluster.codec.topics.name('outcomes'),
        acks: -1,
        messages: [{ key: ids.thought_id, value: await cluster.codec.encode('outcomes', value) }],
      });
    const dispatcher = await startCallbackDispatcher(
      { secret: SECRET, allowedHosts: ['127.0.0.1'], fromBeginning: true, maxAttempts: 2, baseDelayMs: 50, maxDelayMs: 200, requestTimeoutMs: 2000 },
      { kafka: cluster.kafka, codec: cluster.codec, logger, sessionTimeoutMs: 6000 },
    );
    closers.push(() => dispatcher.stop());
    await until('both outcomes of the run', () => hook.received.length >= 2);
    const [announced, end] = hook.received;
    assertSigned(announced!, parked);
    assertSigned(end!, ended);
    assert.equal(JSON.parse(announced!.body).approval.calls[0].tool, 'refunds.create');
    assert.notEqual(announced!.headers['idempotency-key'], end!.headers['idempotency-key']);
  },
);
