// test-needs: kafka
/**
 * A GitHub issue without the order id parks its run awaiting input; the customer's comment with the
 * id, delivered as a signed webhook, resumes the same run to completed.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { startIngress } from '../../ingress/server.ts';
import { signGithub } from '../../runtime/signature.ts';
import { createLogger } from '../../runtime/log.ts';
import type { Outcome } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, type TestCluster } from '../helpers/cluster.ts';

const SECRET = `gh-${randomUUID()}`;
let cluster: TestCluster;
let tools: ToolServer;
let fleet: StageFleet;
let producer: Producer;
let ingress: Awaited<ReturnType<typeof startIngress>>;

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url, TAO_PLANNER: 'router' });
  fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 65536, webhooks: { secrets: { github: SECRET } } },
    { producer, codec: cluster.codec, logger: createLogger({}, { level: 'error' }) },
  );
});
after(async () => {
  await ingress?.close();
  await producer?.disconnect();
  await fleet?.stop();
  await tools?.close();
});

function github(event: 'issues' | 'issue_comment', payload: unknown): Promise<Response> {
  const body = JSON.stringify(payload);
  return fetch(`${ingress.url}/v1/webhooks/github`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': signGithub(SECRET, body),
    },
    body,
  });
}

test('a comment webhook with the missing order id resumes the awaiting_input run to completed', { timeout: 120000 }, async () => {
  const repo = `shop/${cluster.namespace}`;
  const user = { login: 'ada', type: 'User' };
  const follower = await followOutcomes(cluster);
  const opened = await github('issues', {
    action: 'opened',
    issue: { number: 7, title: 'Where is my order?', body: 'I ordered last week and nothing has arrived.', created_at: new Date().toISOString(), user },
    repository: { full_name: repo },
    sender: user,
  });
  assert.equal(opened.status, 202);
  const { thought_id } = (await opened.json()) as { thought_id: string };
  await follower.waitFor(1, 60000);
  const parked = follower.outcomes.get(thought_id)!.value as unknown as Outcome;
  assert.equal(parked.status, 'awaiting_input');
  assert.deepEqual([...parked.missing_fields], ['order_id']);

  const comment = await github('issue_comment', {
    action: 'created',
    issue: { number: 7, title: 'Where is my order?' },
    comment: { id: 1, body: 'Sorry — it is O-12345678.', created_at: new Date().toISOString(), user },
    repository: { full_name: repo },
    sender: user,
  });
  assert.equal(comment.status, 202);
  assert.equal(((await comment.json()) as { thought_id: string }).thought_id, thought_id, 'the comment maps to the same run');
  await follower.waitUntil((o) => (o.get(thought_id)!.value as unknown as Outcome).status !== 'awaiting_input', 60000);
  await follower.stop();
  const resumed = follower.outcomes.get(thought_id)!.value as unknown as Outcome;
  assert.equal(resumed.status, 'completed', resumed.reason);
  assert.equal(JSON.parse(resumed.output_json!).order_id, 'O-12345678');
});
