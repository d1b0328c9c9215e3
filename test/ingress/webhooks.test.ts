// test-needs: kafka
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { thoughtIdFor } from '../../client/tasks.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import { signGithub, signTao } from '../../runtime/signature.ts';
import { createLogger } from '../../runtime/log.ts';
import type { Outcome, Task } from '../../schemas/types.gen.ts';
import { freshCluster, scanToEnd, type TestCluster } from '../helpers/cluster.ts';
import { outcome as makeOutcome } from '../../schemas/records.ts';

const GH_SECRET = 'gh-test-secret';
const JIRA_SECRET = 'jira-test-secret';
const logger = createLogger({}, { level: 'error' });

let cluster: TestCluster;
let producer: Producer;
let ingress: Ingress;

before(async () => {
  cluster = await freshCluster();
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 8192, webhooks: { secrets: { github: GH_SECRET, jira: JIRA_SECRET } } },
    { producer, codec: cluster.codec, logger, kafka: cluster.kafka },
  );
});
after(async () => {
  await ingress?.close();
  await producer?.disconnect();
});

type Json = Record<string, unknown>;
const nowIso = () => new Date().toISOString();

function issueOpened(repo: string, number: number, extra: { title?: string; body?: string | null; created_at?: string; action?: string } = {}): Json {
  return {
    action: extra.action ?? 'opened',
    issue: {
      number,
      title: extra.title ?? `Order ${number} never arrived`,
      body: extra.body === undefined ? 'Ordered on Monday, still nothing. ada@example.com' : extra.body,
      html_url: `https://github.com/${repo}/issues/${number}`,
      created_at: extra.created_at ?? nowIso(),
      user: { login: 'ada', type: 'User' },
    },
    repository: { full_name: repo },
    sender: { login: 'ada', type: 'User' },
  };
}

function commentCreated(repo: string, number: number, body: string, userType = 'User'): Json {
  return {
    action: 'created',
    issue: { number, title: 'whatever' },
    comment: {
      id: 9000 + number,
      body,
      html_url: `https://github.com/${repo}/issues/${number}#issuecomment-1`,
      created_at: nowIso(),
      user: { login: 'ada', type: userType },
    },
    repository: { full_name: repo },
    sender: { login: 'ada', type: userType },
  };
}

function postGithub(body: string, options: { event?: string; delivery?: string; signature?: string | null; url?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': options.event ?? 'issues',
    'x-github-delivery': options.delivery ?? randomUUID(),
  };
  const signature = options.signature === undefined ? signGithub(GH_SECRET, body) : options.signature;
  if (signature !== null) headers['x-hub-signature-256'] = signature;
  return fetch(`${options.url ?? ingress.url}/v1/webhooks/github`, { method: 'POST', headers, body });
}

function postJira(body: string, options: { t?: number; signature?: string; identifier?: string; url?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-tao-signature': options.signature ?? signTao(JIRA_SECRET, body, options.t ?? Date.now() / 1000),
  };
  if (options.identifier) headers['x-atlassian-webhook-identifier'] = options.identifier;
  return fetch(`${options.url ?? ingress.url}/v1/webhooks/jira`, { method: 'POST', headers, body });
}

async function json<T = Json>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

/** Every task in tao.tasks, read to the log's end (each write the ingress acknowledged is in it). */
async function allTasks(): Promise<Task[]> {
  return (await scanToEnd(cluster, ['tasks'])).map((r) => r.value as unknown as Task);
}

test('the same GitHub webhook delivered 3 times starts one run; a comment on the issue replies to it', { timeout: 90000 }, async () => {
  const repo = 'octo/shop';
  const thoughtId = thoughtIdFor('github', `${repo}#7`);
  const body = JSON.stringify(issueOpened(repo, 7));
  const delivery = randomUUID();

  const sequential: Response[] = [];
  for (let i = 0; i < 3; i++) sequential.push(await postGithub(body, { delivery }));
  assert.deepEqual(
    sequential.map((r) => r.status),
    [202, 200, 200],
  );
  const [first, ...dups] = await Promise.all(sequential.map((r) => json<{ thought_id: string; task_id: string; duplicate?: boolean }>(r)));
  assert.equal(first!.thought_id, thoughtId);
  for (const d of dups) assert.deepEqual(d, { duplicate: true, thought_id: thoughtId, task_id: first!.task_id });

  // Three deliveries racing each other: one writes, the others wait for it and answer duplicate.
  const racedThought = thoughtIdFor('github', `${repo}#8`);
  const racedBody = JSON.stringify(issueOpened(repo, 8));
  const racedDelivery = randomUUID();
  const raced = await Promise.all([0, 1, 2].map(() => postGithub(racedBody, { delivery: racedDelivery })));
  assert.deepEqual(raced.map((r) => r.status).sort(), [200, 200, 202]);
  const racedIds = await Promise.all(raced.map((r) => json<{ thought_id: string; task_id: string }>(r)));
  assert.equal(new Set(racedIds.map((r) => `${r.thought_id}/${r.task_id}`)).size, 1);
  assert.equal(racedIds[0]!.thought_id, racedThought);

  const comment = await postGithub(JSON.stringify(commentCreated(repo, 7, 'It arrived broken, can I get a refund?')), { event: 'issue_comment' });
  assert.equal(comment.status, 202);
  const reply = await json<{ thought_id: string; task_id: string }>(comment);
  assert.equal(reply.thought_id, thoughtId);

  const tasks = await allTasks();
  const ofRun = tasks.filter((t) => t.thought_id === thoughtId);
  assert.deepEqual(ofRun.map((t) => t.kind).sort(), ['NEW', 'REPLY']);
  const created = ofRun.find((t) => t.kind === 'NEW')!;
  assert.equal(created.task_id, first!.task_id);
  assert.equal(created.source, 'github');
  assert.equal(created.external_id, `${repo}#7`);
  assert.equal(created.text, 'Order 7 never arrived\n\nOrdered on Monday, still nothing. ada@example.com');
  assert.equal(created.metadata.github_delivery, delivery);
  assert.equal(created.metadata.github_event, 'issues');
  assert.equal(created.metadata.issue_number, '7');
  const replied = ofRun.find((t) => t.kind === 'REPLY')!;
  assert.equal(replied.task_id, reply.task_id);
  assert.equal(replied.text, 'It arrived broken, can I get a refund?');
  assert.equal(replied.metadata.github_event, 'issue_comment');
  assert.equal(tasks.filter((t) => t.thought_id === racedThought).length, 1);
});

test('a Jira issue starts a run, its comment replies with the same thought_id, and a replayed signed request writes nothing', { timeout: 90000 }, async () => {
  const thoughtId = thoughtIdFor('jira', 'OPS-42');
  const issue = JSON.stringify({
    timestamp: Date.now(),
    webhookEvent: 'jira:issue_created',
    issue: {
      id: '10042',
      key: 'OPS-42',
      fields: {
        summary: 'Refund for order 1234',
        // Jira Cloud REST v3 shape (Atlassian Document Format).
        description: {
          type: 'doc',
          version: 1,
          content: [
            {
              type: 'paragraph',
              content: [
                { type: 'text', text: 'Customer ' },
                { type: 'text', text: 'asks for a refund.' },
              ],
            },
            { type: 'paragraph', content: [{ type: 'text', text: 'Order 1234.' }] },
          ],
        },
      },
    },
  });
  const created = await postJira(issue, { identifier: 'jira-delivery-1' });
  assert.equal(created.status, 202);
  const createdIds = await json<{ thought_id: string; task_id: string }>(created);
  assert.equal(createdIds.thought_id, thoughtId);

  // Jira retries keep X-Atlassian-Webhook-Identifier, even when re-signed later.
  const retried = await postJira(issue, { identifier: 'jira-delivery-1', t: Date.now() / 1000 - 5 });
  assert.equal(retried.status, 200);
  assert.deepEqual(await json(retried), { duplicate: true, ...createdIds });

  const commentBody = JSON.stringify({
    timestamp: Date.now(),
    webhookEvent: 'comment_created',
    issue: { key: 'OPS-42', fields: { summary: 'Refund for order 1234' } },
    comment: { id: '777', body: 'Here is the receipt: R-99', author: { accountId: 'acc-ada' } },
  });
  const signature = signTao(JIRA_SECRET, commentBody, Date.now() / 1000);
  const comment = await postJira(commentBody, { signature });
  assert.equal(comment.status, 202);
  const commentIds = await json<{ thought_id: string; task_id: string }>(comment);
  assert.equal(commentIds.thought_id, thoughtId);
  // The very same signed request again (no delivery id header): a replay, nothing written.
  const replay = await postJira(commentBody, { signature });
  assert.equal(replay.status, 200);
  assert.deepEqual(await json(replay), { duplicate: true, ...commentIds });

  const tasks = (await allTasks()).filter((t) => t.thought_id === thoughtId);
  assert.equal(tasks.length, 2);
  const newTask = tasks.find((t) => t.kind === 'NEW')!;
  assert.equal(newTask.text, 'Refund for order 1234\n\nCustomer asks for a refund.\nOrder 1234.');
  assert.equal(newTask.external_id, 'OPS-42');
  assert.equal(newTask.metadata.jira_delivery, 'jira-delivery-1');
  assert.equal(newTask.metadata.jira_event, 'jira:issue_created');
  const replyTask = tasks.find((t) => t.kind === 'REPLY')!;
  assert.equal(replyTask.task_id, commentIds.task_id);
  assert.equal(replyTask.text, 'Here is the receipt: R-99');
  assert.equal(replyTask.metadata.comment_id, '777');
});

test('bad, stale, malformed, incomplete, oversized, unknown and unhandled webhooks get their answers and write nothing', { timeout: 90000 }, async () => {
  const repo = 'octo/rejected';
  const refused = new Set<string>();
  const ghBody = (n: number, extra: Parameters<typeof issueOpened>[2] = {}) => {
    refused.add(thoughtIdFor('github', `${repo}#${n}`));
    return JSON.stringify(issueOpened(repo, n, extra));
  };
  const expect = async (res: Promise<Response>, status: number, error?: string): Promise<Json> => {
    const r = await res;
    const body = await json(r);
    assert.equal(r.status, status, JSON.stringify(body));
    if (error) assert.equal(body.error, error, JSON.stringify(body));
    return body;
  };

  await expect(postGithub(ghBody(1), { signature: signGithub('not-the-secret', ghBody(1)) }), 401, 'invalid_signature');
  await expect(postGithub(ghBody(2), { signature: null }), 401, 'invalid_signature');
  await expect(postGithub(ghBody(3), { signature: 'sha1=abc' }), 401, 'invalid_signature');
  const tampered = ghBody(4);
  await expect(postGithub(tampered.replace('never arrived', 'arrived'), { signature: signGithub(GH_SECRET, tampered) }), 401, 'invalid_signature');
  const old = await expect(postGithub(ghBody(5, { created_at: new Date(Date.now() - 8 * 24 * 3600 * 1000).toISOString() })), 401, 'stale_event');
  assert.match(String(old.message), /older than/);

  const jiraIssue = (key: string) => {
    refused.add(thoughtIdFor('jira', key));
    return JSON.stringify({ webhookEvent: 'jira:issue_created', issue: { key, fields: { summary: 'x' } } });
  };
  const stale = await expect(postJira(jiraIssue('REJ-1'), { t: Date.now() / 1000 - 301 }), 401, 'stale_signature');
  assert.match(String(stale.message), /window/);
  await expect(postJira(jiraIssue('REJ-2'), { t: Date.now() / 1000 + 400 }), 401, 'stale_signature');
  await expect(postJira(jiraIssue('REJ-3'), { signature: signTao('wrong', jiraIssue('REJ-3'), Date.now() / 1000) }), 401, 'invalid_signature');
  await expect(postJira(jiraIssue('REJ-4'), { signature: 'v1=abcdef' }), 401, 'invalid_signature');

  const malformed = await expect(postGithub('{"action": "opened", '), 400, 'invalid_json');
  assert.ok(Array.isArray(malformed.fields));
  await expect(postJira('not json at all'), 400, 'invalid_json');

  refused.add(thoughtIdFor('github', `${repo}#6`));
  const missing = await expect(
    postGithub(JSON.stringify({ action: 'opened', issue: { number: 6, created_at: nowIso() }, repository: {} })),
    400,
    'invalid_event',
  );
  const missingFields = (missing.fields as Array<{ field: string }>).map((f) => f.field).sort();
  assert.deepEqual(missingFields, ['issue/title', 'repository/full_name']);
  const noComment = await expect(
    postGithub(JSON.stringify({ action: 'created', issue: { number: 6 }, repository: { full_name: repo } }), { event: 'issue_comment' }),
    400,
    'invalid_event',
  );
  assert.deepEqual(
    (noComment.fields as Array<{ field: string }>).map((f) => f.field),
    ['comment'],
  );
  // One body for signature and request (it carries a timestamp: two calls could differ by a millisecond).
  const body9 = ghBody(9);
  const noDelivery = await fetch(`${ingress.url}/v1/webhooks/github`, {
    method: 'POST',
    headers: { 'x-github-event': 'issues', 'x-hub-signature-256': signGithub(GH_SECRET, body9) },
    body: body9,
  });
  assert.equal(noDelivery.status, 400);
  assert.deepEqual(
    ((await json(noDelivery)).fields as Array<{ field: string }>).map((f) => f.field),
    ['header:X-GitHub-Delivery'],
  );
  const badKey = await expect(
    postJira(JSON.stringify({ webhookEvent: 'comment_created', issue: { key: 'not a key' }, comment: { id: '1' } })),
    400,
    'invalid_event',
  );
  assert.deepEqual((badKey.fields as Array<{ field: string }>).map((f) => f.field).sort(), ['comment/body', 'issue/key']);

  await expect(postGithub(ghBody(10, { body: 'x'.repeat(9000) })), 413, 'payload_too_large');
  // Without Content-Length (chunked): the limit is enforced while the body streams in.
  const streamed = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      `${ingress.url}/v1/webhooks/github`,
      { method: 'POST', headers: { 'x-github-event': 'issues', 'x-github-delivery': randomUUID(), 'transfer-encoding': 'chunked' } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString())).on('end', () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on('error', reject);
    for (let i = 0; i < 10; i++) req.write('y'.repeat(1000));
    req.end();
  });
  assert.equal(streamed.status, 413);
  assert.equal((JSON.parse(streamed.body) as Json).error, 'payload_too_large');

  await expect(fetch(`${ingress.url}/v1/webhooks/zendesk`, { method: 'POST', body: '{}' }), 404, 'unknown_source');

  const closed = await expect(postGithub(ghBody(11, { action: 'closed' })), 202);
  assert.deepEqual(closed, { ignored: true, reason: 'issues action closed is not handled' });
  assert.deepEqual(await expect(postGithub('{"zen":"Keep it logically awesome."}', { event: 'ping' }), 202), { ignored: true, reason: 'ping' });
  refused.add(thoughtIdFor('github', `${repo}#12`));
  assert.equal(
    (await expect(postGithub(JSON.stringify(commentCreated(repo, 12, 'I am the agent answering', 'Bot')), { event: 'issue_comment' }), 202)).reason,
    'comment written by a bot',
  );
  const onPr = { ...commentCreated(repo, 12, 'LGTM'), issue: { number: 12, pull_request: { url: 'https://api.github.com/repos/octo/rejected/pulls/12' } } };
  assert.equal((await expect(postGithub(JSON.stringify(onPr), { event: 'issue_comment' }), 202)).reason, 'comment on a pull request');
  assert.equal((await expect(postJira(JSON.stringify({ webhookEvent: 'jira:issue_updated', issue: { key: 'REJ-5' } })), 202)).ignored, true);

  // A source without a secret is refused, even with a perfectly signed body.
  const unconfigured = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 8192, webhooks: { secrets: { github: GH_SECRET } } },
    { producer, codec: cluster.codec, logger },
  );
  try {
    const body = await expect(postJira(jiraIssue('REJ-6'), { url: unconfigured.url }), 401, 'source_not_configured');
    assert.match(String(body.message), /TAO_WEBHOOK_SECRET_JIRA/);
    assert.doesNotMatch(String(body.message), new RegExp(GH_SECRET));
  } finally {
    await unconfigured.close();
  }

  const tasks = await allTasks();
  const leaked = tasks.filter((t) => refused.has(t.thought_id));
  assert.deepEqual(leaked, [], 'a refused or ignored webhook wrote a task');
});

test(
  '429 with Retry-After once maxInFlightRuns runs have no outcome; an outcome frees a slot; a reply to a run in flight passes',
  { timeout: 90000 },
  async () => {
    const limited = await startIngress(
      { port: 0, host: '127.0.0.1', maxBodyBytes: 8192, maxInFlightRuns: 2, retryAfterSeconds: 7, webhooks: { secrets: { github: GH_SECRET } } },
      { producer, codec: cluster.codec, logger, kafka: cluster.kafka },
    );
    try {
      const submit = (externalId: string) =>
        fetch(`${limited.url}/v1/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ text: `task ${externalId}`, source: 'limit', external_id: externalId }),
        });
      const a = await submit('A');
      const b = await submit('B');
      assert.deepEqual([a.status, b.status], [202, 202]);
      const { thought_id: thoughtA, task_id: taskA } = await json<{ thought_id: string; task_id: string }>(a);
      const c = await submit('C');
      assert.equal(c.status, 429);
      assert.equal(c.headers.get('retry-after'), '7');
      assert.equal((await json(c)).error, 'too_many_runs');
      const hook = await postGithub(JSON.stringify(issueOpened('octo/limit', 1)), { url: limited.url });
      assert.equal(hook.status, 429);
      // Same run again (a second submission for A): no new slot needed.
      assert.equal((await submit('A')).status, 202);
      assert.equal(limited.inFlight(), 2);

      const outcome: Outcome = makeOutcome({ thought_id: thoughtA, task_id: taskA });
      await producer.send({
        topic: cluster.codec.topics.name('outcomes'),
        acks: -1,
        messages: [{ key: thoughtA, value: await cluster.codec.encode('outcomes', outcome) }],
      });
      const deadline = Date.now() + 30000;
      while (limited.inFlight() > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(limited.inFlight(), 1, 'the outcome was not seen');
      assert.equal((await submit('C')).status, 202);
    } finally {
      await limited.close();
    }
    const tasks = await allTasks();
    assert.equal(tasks.filter((t) => t.source === 'limit').length, 4);
    assert.equal(tasks.filter((t) => t.thought_id === thoughtIdFor('github', 'octo/limit#1')).length, 0);
  },
);

test('503 when Kafka cannot take the record, and the delivery id is not remembered', { timeout: 90000 }, async () => {
  const dead = new Kafka({
    clientId: 'dead',
    brokers: ['127.0.0.1:1'],
    connectionTimeout: 300,
    requestTimeout: 1000,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
  const deadProducer = dead.producer();
  await assert.rejects(deadProducer.connect());
  const broken = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 8192, sendTimeoutMs: 2000, webhooks: { secrets: { github: GH_SECRET } } },
    { producer: deadProducer, codec: cluster.codec, logger },
  );
  try {
    const api = await fetch(`${broken.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'lost', source: 'broken', external_id: 'B-1' }),
    });
    assert.equal(api.status, 503);
    assert.equal((await json(api)).error, 'unavailable');
    const body = JSON.stringify(issueOpened('octo/broken', 1));
    const delivery = randomUUID();
    const first = await postGithub(body, { delivery, url: broken.url });
    const again = await postGithub(body, { delivery, url: broken.url });
    assert.deepEqual([first.status, again.status], [503, 503], 'a failed write must not make the redelivery a duplicate');
  } finally {
    await broken.close();
  }
  const tasks = await allTasks();
  assert.equal(tasks.filter((t) => t.source === 'broken' || t.thought_id === thoughtIdFor('github', 'octo/broken#1')).length, 0);
});
