/**
 * API keys on `POST /v1/tasks`, over a real HTTP server. The producer and the codec are stand-ins
 * that record what the ingress hands them (no broker): what is under test is which requests reach
 * them. test/ingress/auth-kafka.test.ts checks an accepted task in the real `tao.tasks`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { hashApiKey, newApiKey, type ApiKeyEntry } from '../../ingress/api-keys.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import { signGithub } from '../../runtime/signature.ts';
import type { AvroCodec } from '../../runtime/codec.ts';
import { createLogger } from '../../runtime/log.ts';
import { IngressMetrics } from '../../runtime/metrics.ts';
import type { Task } from '../../schemas/types.gen.ts';
import { parseMetrics, sample } from '../observability/metrics-text.ts';

const GH_SECRET = 'gh-auth-test-secret';

/** A producer and codec that keep every task the ingress writes. */
function recordingKafka(): { producer: Producer; codec: AvroCodec; written: Task[] } {
  const written: Task[] = [];
  const codec = {
    encode: async (_topic: string, value: Task) => Buffer.from(JSON.stringify(value)),
    topics: { name: (id: string) => `test.${id}` },
  } as unknown as AvroCodec;
  const producer = {
    send: async ({ messages }: { messages: Array<{ value: Buffer }> }) => {
      for (const m of messages) written.push(JSON.parse(m.value.toString()) as Task);
    },
  } as unknown as Producer;
  return { producer, codec, written };
}

const keys = {
  github: newApiKey(),
  any: newApiKey(),
  revoked: newApiKey(),
  slow: newApiKey(),
  wrong: newApiKey(),
};
const entries: ApiKeyEntry[] = [
  { id: 'github-bot', sha256: hashApiKey(keys.github), sources: ['github', 'cli'], rate_per_minute: 600 },
  { id: 'ops', sha256: hashApiKey(keys.any), sources: ['*'], rate_per_minute: 600 },
  { id: 'old', sha256: hashApiKey(keys.revoked), sources: ['*'], rate_per_minute: 600, revoked: true },
  // One request every 10 s, two at once.
  { id: 'slow', sha256: hashApiKey(keys.slow), sources: ['*'], rate_per_minute: 6, burst: 2 },
];

let clock = Date.now();
const lines: string[] = [];
const kafka = recordingKafka();
let ingress: Ingress;

before(async () => {
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 8192, auth: { mode: 'keys', keys: entries }, webhooks: { secrets: { github: GH_SECRET } } },
    {
      producer: kafka.producer,
      codec: kafka.codec,
      logger: createLogger({}, { level: 'debug', write: (l) => lines.push(l) }),
      now: () => clock,
      metrics: new IngressMetrics(),
    },
  );
});
after(() => ingress?.close());

function submit(task: Record<string, unknown>, authorization?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (authorization !== undefined) headers.authorization = authorization;
  return fetch(`${ingress.url}/v1/tasks`, { method: 'POST', headers, body: JSON.stringify(task) });
}
const bearer = (key: string) => `Bearer ${key}`;

/** Status, the headers a client could learn from, and the raw body. */
async function answer(res: Response): Promise<{ status: number; body: string; wwwAuthenticate: string | null; retryAfter: string | null }> {
  return { status: res.status, body: await res.text(), wwwAuthenticate: res.headers.get('www-authenticate'), retryAfter: res.headers.get('retry-after') };
}

describe('401: no key, a malformed header, a wrong key and a revoked key get one and the same answer', () => {
  test('and nothing is written', async () => {
    const before = kafka.written.length;
    const task = { text: 'where is my order', source: 'cli', external_id: randomUUID() };
    const cases = {
      none: await answer(await submit(task)),
      basic: await answer(await submit(task, `Basic ${Buffer.from('u:p').toString('base64')}`)),
      empty: await answer(await submit(task, 'Bearer ')),
      wrong: await answer(await submit(task, bearer(keys.wrong))),
      almost: await answer(await submit(task, bearer(keys.github.slice(0, -1) + (keys.github.endsWith('A') ? 'B' : 'A')))),
      revoked: await answer(await submit(task, bearer(keys.revoked))),
    };
    for (const [name, a] of Object.entries(cases)) {
      assert.deepEqual(a, { status: 401, body: '{"error":"unauthorized"}', wwwAuthenticate: 'Bearer', retryAfter: null }, name);
    }
    assert.equal(kafka.written.length, before);
  });
});

describe('403: a valid key submitting as a source it is not scoped to', () => {
  test('another source, or no source (which is "api"), is forbidden with no detail; nothing is written', async () => {
    const before = kafka.written.length;
    const other = await answer(await submit({ text: 'a jira ticket', source: 'jira' }, bearer(keys.github)));
    const defaulted = await answer(await submit({ text: 'no source given' }, bearer(keys.github)));
    for (const a of [other, defaulted]) assert.deepEqual(a, { status: 403, body: '{"error":"forbidden"}', wwwAuthenticate: null, retryAfter: null });
    assert.equal(kafka.written.length, before);
  });

  test('its own sources, and any source for a "*" key, are accepted (202), the key id riding in the metadata', async () => {
    const own = await submit({ text: 'a github issue', source: 'github', external_id: 'o/r#1' }, bearer(keys.github));
    const star = await submit({ text: 'anything', source: 'zendesk', metadata: { priority: 'high' } }, `bearer   ${keys.any}`);
    assert.deepEqual([own.status, star.status], [202, 202]);
    const ids = [(await own.json()) as { task_id: string }, (await star.json()) as { task_id: string }];
    const written = ids.map(({ task_id }) => kafka.written.find((t) => t.task_id === task_id));
    assert.deepEqual(
      written.map((t) => ({ source: t?.source, metadata: t?.metadata })),
      [
        { source: 'github', metadata: { api_key_id: 'github-bot' } },
        { source: 'zendesk', metadata: { priority: 'high', api_key_id: 'ops' } },
      ],
    );
  });

  test('a client cannot claim a key id in the metadata (400)', async () => {
    const res = await submit({ text: 'spoof', source: 'cli', metadata: { api_key_id: 'ops' } }, bearer(keys.github));
    assert.equal(res.status, 400);
    assert.match(JSON.stringify(await res.json()), /metadata\/api_key_id/);
  });
});

describe('429: per-key rate limit (token bucket on the injected clock)', () => {
  test('the burst passes, the next gets 429 with Retry-After from the bucket, and the key is accepted again once it refilled', async () => {
    const before = kafka.written.length;
    const send = async () => answer(await submit({ text: 'rate me', source: 'cli' }, bearer(keys.slow)));
    assert.deepEqual([(await send()).status, (await send()).status], [202, 202]);
    const limited = await send();
    assert.deepEqual(limited, { status: 429, body: '{"error":"rate_limited"}', wwwAuthenticate: null, retryAfter: '10' });
    // Another key is not limited by this one's bucket.
    assert.equal((await submit({ text: 'other key', source: 'cli' }, bearer(keys.any))).status, 202);

    clock += 9_000;
    const stillLimited = await send();
    assert.deepEqual([stillLimited.status, stillLimited.retryAfter], [429, '1']);
    clock += 1_000;
    assert.equal((await send()).status, 202);
    assert.equal((await send()).status, 429, 'one token came back, not a burst');
    assert.equal(kafka.written.length, before + 4, 'three of the slow key and one of the other: a 429 writes nothing');
  });
});

describe('webhooks keep their HMAC', () => {
  test('a signed GitHub delivery needs no API key', async () => {
    const body = JSON.stringify({
      action: 'opened',
      issue: {
        number: 7,
        title: 'Order never arrived',
        body: 'ada@example.com',
        html_url: 'https://github.com/o/r/issues/7',
        created_at: new Date(clock).toISOString(),
        user: { login: 'ada', type: 'User' },
      },
      repository: { full_name: 'o/r' },
      sender: { login: 'ada', type: 'User' },
    });
    const headers = {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': signGithub(GH_SECRET, body),
    };
    const res = await fetch(`${ingress.url}/v1/webhooks/github`, { method: 'POST', headers, body });
    assert.equal(res.status, 202);
    const unsigned = await fetch(`${ingress.url}/v1/webhooks/github`, {
      method: 'POST',
      headers: { ...headers, 'x-hub-signature-256': 'sha256=' + '0'.repeat(64), 'x-github-delivery': randomUUID() },
      body,
    });
    assert.equal(unsigned.status, 401);
  });
});

describe('metrics and logs', () => {
  test('GET /metrics counts POST /v1/tasks by key id and outcome', async () => {
    const all = parseMetrics(await (await fetch(`${ingress.url}/metrics`)).text());
    const n = (key_id: string, outcome: string) => sample(all, 'tao_ingress_api_key_requests_total', { key_id, outcome });
    assert.deepEqual(
      {
        none: n('none', 'unauthorized'),
        revoked: n('old', 'unauthorized'),
        forbidden: n('github-bot', 'forbidden'),
        githubAllowed: n('github-bot', 'allowed'),
        opsAllowed: n('ops', 'allowed'),
        slowAllowed: n('slow', 'allowed'),
        slowLimited: n('slow', 'rate_limited'),
      },
      { none: 5, revoked: 1, forbidden: 2, githubAllowed: 2, opsAllowed: 2, slowAllowed: 3, slowLimited: 3 },
    );
  });

  test('log lines name the key id and what happened; no key, no hash and no part of one appears in any line', () => {
    const events = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const said = (msg: string, fields: Record<string, unknown>) => events.some((e) => e.msg === msg && Object.entries(fields).every(([k, v]) => e[k] === v));
    assert.ok(said('task refused: unauthorized', { reason: 'revoked', key_id: 'old' }));
    assert.ok(said('task refused: unauthorized', { reason: 'unknown' }));
    assert.ok(said('task refused: key not scoped to the source', { key_id: 'github-bot', source: 'jira' }));
    assert.ok(said('task refused: key over its rate limit', { key_id: 'slow', retry_after_s: 10 }));
    assert.ok(said('task accepted', { key_id: 'ops', source: 'zendesk' }));

    const text = lines.join('\n');
    for (const key of Object.values(keys)) {
      const hash = hashApiKey(key);
      // Any 12-character window of the key's random part or of its digest.
      for (const secret of [key.slice(4), hash]) {
        for (let i = 0; i + 12 <= secret.length; i += 4)
          assert.ok(!text.includes(secret.slice(i, i + 12)), `a piece of ${secret === hash ? 'a hash' : 'a key'} is in the log`);
      }
    }
    assert.doesNotMatch(text, /bearer|authorization/i);
  });
});

describe('no keys', () => {
  test('on loopback the ingress runs open, and says so in a WARN line at start', async () => {
    const captured: string[] = [];
    const open = recordingKafka();
    const server = await startIngress(
      { port: 0, host: '127.0.0.1', maxBodyBytes: 4096, auth: { mode: 'open', reason: 'no API keys configured and the bind address 127.0.0.1 is loopback' } },
      { producer: open.producer, codec: open.codec, logger: createLogger({}, { level: 'info', write: (l) => captured.push(l) }) },
    );
    try {
      const warn = captured.map((l) => JSON.parse(l) as { level: string; msg: string }).find((e) => e.msg.startsWith('POST /v1/tasks is open'));
      assert.equal(warn?.level, 'warn');
      const res = await fetch(`${server.url}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'open ingress' }),
      });
      assert.equal(res.status, 202);
      assert.deepEqual(open.written[0]?.metadata, {});
    } finally {
      await server.close();
    }
  });
});
