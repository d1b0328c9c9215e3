// test-needs: kafka
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { startIngress } from '../../ingress/server.ts';
import { createLogger } from '../../runtime/log.ts';
import type { Task } from '../../schemas/types.gen.ts';
import { freshCluster, scan, type TestCluster } from '../helpers/cluster.ts';
import { parseMetrics, sample, samples } from '../observability/metrics-text.ts';

let cluster: TestCluster;
let producer: Producer;
let ingress: Awaited<ReturnType<typeof startIngress>>;

before(async () => {
  cluster = await freshCluster();
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 4096 },
    { producer, codec: cluster.codec, logger: createLogger({}, { level: 'error' }) },
  );
});
after(async () => {
  await ingress?.close();
  await producer?.disconnect();
});

const post = (body: string) => fetch(`${ingress.url}/v1/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

test(
  'POST /v1/tasks answers 202 with the thought_id once the task is in tao.tasks; the same source and external_id give the same thought_id',
  { timeout: 60000 },
  async () => {
    const a = await post(
      JSON.stringify({ text: 'where is my order? ada@example.com', source: 'zendesk', external_id: 'T-100', metadata: { priority: 'high' } }),
    );
    const b = await post(JSON.stringify({ text: 'second delivery of the same ticket', source: 'zendesk', external_id: 'T-100' }));
    const c = await post(JSON.stringify({ text: 'same id, other source', source: 'jira', external_id: 'T-100' }));
    assert.deepEqual([a.status, b.status, c.status], [202, 202, 202]);
    const [ja, jb, jc] = (await Promise.all([a.json(), b.json(), c.json()])) as Array<{ thought_id: string; task_id: string }>;
    assert.equal(ja!.thought_id, jb!.thought_id);
    assert.notEqual(ja!.thought_id, jc!.thought_id);

    const tasks = await scan(cluster, ['tasks'], { until: (rs) => rs.length >= 3 });
    const first = tasks.find((r) => (r.value as unknown as Task).task_id === ja!.task_id)!;
    assert.equal(first.key, ja!.thought_id);
    assert.deepEqual({ ...(first.value as unknown as Task).metadata }, { priority: 'high' });
    assert.equal((first.value as unknown as Task).source, 'zendesk');
  },
);

test('invalid requests get 400 with field-level errors, 413 above the size limit, and nothing is written', { timeout: 60000 }, async () => {
  const badJson = await post('{"text": ');
  assert.equal(badJson.status, 400);
  assert.equal(((await badJson.json()) as { error: string }).error, 'invalid_json');

  const missing = await post(JSON.stringify({ source: 'x' }));
  assert.equal(missing.status, 400);
  const body = (await missing.json()) as { fields: Array<{ field: string; message: string }> };
  assert.ok(
    body.fields.some((f) => f.field === 'text'),
    JSON.stringify(body),
  );

  const extra = await post(JSON.stringify({ text: 'hi', priority: 1 }));
  assert.equal(extra.status, 400);
  assert.ok(((await extra.json()) as { fields: Array<{ field: string }> }).fields.some((f) => f.field === 'priority'));

  const big = await post(JSON.stringify({ text: 'x'.repeat(5000) }));
  assert.equal(big.status, 413);

  const wrongMethod = await fetch(`${ingress.url}/v1/tasks`);
  assert.equal(wrongMethod.status, 405);

  const marker = await post(JSON.stringify({ text: 'marker after the bad requests', source: 'test', external_id: 'marker' }));
  assert.equal(marker.status, 202);
  const { thought_id } = (await marker.json()) as { thought_id: string };
  const tasks = await scan(cluster, ['tasks'], { until: (rs) => rs.some((r) => r.key === thought_id) });
  assert.equal(tasks.length, 4, 'only the three tasks of the first test and the marker were written');
});

test('GET /metrics counts the answers above by route and status (routes as labels, never raw paths)', async () => {
  await fetch(`${ingress.url}/v1/nothing-here/${'x'.repeat(20)}`);
  await fetch(`${ingress.url}/v1/webhooks/gitlab`, { method: 'POST', body: '{}' });
  const res = await fetch(`${ingress.url}/metrics`);
  assert.equal(res.status, 200);
  const all = parseMetrics(await res.text());
  const count = (route: string, status: string) => sample(all, 'tao_ingress_requests_total', { route, status });
  assert.deepEqual(
    {
      accepted: count('tasks', '202'),
      invalid: count('tasks', '400'),
      tooLarge: count('tasks', '413'),
      wrongMethod: count('tasks', '405'),
      otherPath: count('other', '404'),
      unknownSource: count('webhooks/unknown', '404'),
    },
    { accepted: 4, invalid: 3, tooLarge: 1, wrongMethod: 1, otherPath: 1, unknownSource: 1 },
  );
  assert.ok(
    samples(all, 'tao_ingress_requests_total').every((s) => !s.labels.route?.includes('nothing-here')),
    'no raw path became a label',
  );
  assert.equal(sample(all, 'tao_ingress_request_seconds_count', { route: 'tasks' }), 9);
});

test('on an IPv6 host the ingress says a URL that works: the host in brackets', async () => {
  const v6 = await startIngress({ port: 0, host: '::1', maxBodyBytes: 4096 }, { producer, codec: cluster.codec, logger: createLogger({}, { level: 'error' }) });
  try {
    assert.equal(v6.url, `http://[::1]:${v6.port}`);
    const health = await fetch(`${v6.url}/health`);
    assert.equal(health.status, 200);
  } finally {
    await v6.close();
  }
});
