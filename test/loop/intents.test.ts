// test-needs: kafka
/**
 * The demo domain end to end with the ONNX intent router as planner: each intent's ticket, in English
 * or Chinese, is routed to its flow, the flow's input patterns fill its inputs, the real tools run, and
 * the run ends as the flow says. An off-domain ticket is escalated to a person, never guessed; a ticket
 * whose id the tools would refuse waits for it (awaiting_input naming the field).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';

import { followOutcomes, scan, startLoop, type RunningLoop, type TestCluster } from '../helpers/cluster.ts';

let loop: RunningLoop;
let cluster: TestCluster;

before(async () => {
  // npm test runs the other files' stages from the compiled dist/; these run the TypeScript sources
  // through tsx, as `npm ci && npm run demo` does on a fresh clone, so both ways stay covered.
  loop = await startLoop({ TAO_PLANNER: 'router', TAO_RUN_FROM: 'source' });
  ({ cluster } = loop);
});
after(async () => {
  await loop?.stop();
});

const TICKETS: Array<{ text: string; flow: string; status: Outcome['status']; output?: Record<string, unknown>; missing?: string[] }> = [
  { text: '我的订单 O-12345678 到哪了', flow: 'order-lookup', status: 'completed', output: { order_id: 'O-12345678' } },
  { text: 'Where is my order? My e-mail is grace.hopper@example.org', flow: 'order-status', status: 'completed' },
  { text: 'I want a refund for order O-12345678', flow: 'refund-request', status: 'completed' },
  { text: '请给我发票 INV-2024-0042 的副本', flow: 'invoice-copy', status: 'completed' },
  { text: "I can't log in, my email is li.lei@example.com", flow: 'account-access', status: 'completed' },
  { text: 'payments 服务是不是挂了', flow: 'outage-report', status: 'completed' },
  { text: "What's the status of expense claim EC-123456?", flow: 'expense-claim-status', status: 'completed' },
  { text: 'Tell me a joke about penguins', flow: 'none', status: 'escalated' },
  // An id in a shape the tools do not take: routed by its wording, then asked for by name, no tool called.
  { text: 'Where is my order PO-2024-00017-B? It was due last week.', flow: 'order-lookup', status: 'awaiting_input', missing: ['order_id'] },
];

test('each intent is routed to its flow and completes; an off-domain ticket is escalated', { timeout: 180000 }, async () => {
  const follower = await followOutcomes(cluster);
  const tasks = TICKETS.map((t, i) => buildTask({ text: t.text, source: 'intents', external_id: `${cluster.namespace}-${i}` }));
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, tasks);
  await producer.disconnect();
  await follower.waitFor(TICKETS.length, 120000);
  await follower.stop();

  TICKETS.forEach((ticket, i) => {
    const outcome = follower.outcomes.get(tasks[i]!.thought_id)!.value as unknown as Outcome;
    assert.equal(outcome.status, ticket.status, `${ticket.text}: ${outcome.reason}`);
    assert.equal(outcome.flow_id, ticket.flow, ticket.text);
    if (ticket.missing) assert.deepEqual(outcome.missing_fields, ticket.missing, ticket.text);
    if (ticket.status === 'escalated') {
      assert.equal(outcome.reason_code, 'unroutable');
      assert.match(outcome.planner, /^router\(intent-router@/);
    } else {
      assert.match(outcome.planner, /^router\(\w+ [01]\.\d{3}\)$/);
    }
    for (const [k, v] of Object.entries(ticket.output ?? {})) assert.equal(JSON.parse(outcome.output_json!)[k], v);
  });
  const refund = JSON.parse((follower.outcomes.get(tasks[2]!.thought_id)!.value as unknown as Outcome).output_json!) as Record<string, unknown>;
  assert.match(String(refund.refund_id), /^R-\d{8}$/, 'the refund was created');

  // The routing decision is in the log, so a replay can re-plan without the model.
  const requests = await scan(cluster, ['thoughtRequests'], { until: (rs) => rs.some((r) => r.key === tasks[0]!.thought_id) });
  const record = (requests.find((r) => r.key === tasks[0]!.thought_id)!.value as unknown as ThoughtRequest).run.planner_record;
  assert.equal(JSON.parse(record!).intent, 'order_status');
});
