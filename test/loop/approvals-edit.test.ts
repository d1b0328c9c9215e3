// test-needs: kafka
/**
 * Approvals that edit, end to end on the real broker: the three stages as processes, TAO_PLANNER=react
 * with the scripted model SIMULATOR (model-sim/: answers from scenario files, not a model; a skill's
 * policies apply to runs a model drives), the demo tool server (which counts each side effect by
 * Idempotency-Key), and the HTTP ingress in this process with API keys and the edit checks the
 * ingress loads at start (processors/wiring `editChecks`). The simulated model proposes refunding
 * an order's total; the approval rule parks it. Then, by the parked call's interrupt id:
 *
 * - an edit over the order's total is refused with the policy's name: 422 over HTTP, and the same
 *   decision written straight to tao.tasks is dead-lettered DECISION_REFUSED naming the policy;
 * - an edited approval (a smaller amount) runs with the edited arguments, once, and the records keep
 *   both the proposed and the edited arguments (the run's stream shows the interrupt and the edit);
 * - the same interrupt decided again is stale: 409 over HTTP, dead-lettered when it arrives by topic;
 * - a parked run is cancelled over HTTP (409 once it has ended).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { KafkaMessage, Producer } from 'kafkajs';
import { hashApiKey, newApiKey } from '../../ingress/api-keys.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import { decisionTask, submitTasks } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { editChecks } from '../../processors/wiring/index.ts';
import { DLQ_HEADERS } from '../../runtime/dead-letter.ts';
import { followFromBeginning } from '../../runtime/follow.ts';
import { createLogger } from '../../runtime/log.ts';
import type { Outcome, Task, ThoughtRequest, ActionResult } from '../../schemas/types.gen.ts';
import { orderById } from '../../tool-server/data.ts';
import { followOutcomes, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';

const ORDER = orderById('O-12345678');
const KEY = newApiKey();
let sim: ModelSim;
let loop: RunningLoop;
let ingress: Ingress;
let producer: Producer;

before(async () => {
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_LLM_BASE_URL: `${sim.url}/v1`,
    TAO_LLM_MODEL: 'sim-1',
    TAO_LLM_TIMEOUT_MS: '10000',
    TAO_APPROVAL_RULES: 'refunds.create:amount_cents>5000',
  });
  producer = loop.cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  ingress = await startIngress(
    {
      port: 0,
      host: '127.0.0.1',
      maxBodyBytes: 65536,
      auth: { mode: 'keys', keys: [{ id: 'approver', sha256: hashApiKey(KEY), sources: ['*'], rate_per_minute: 6000, scopes: ['tasks', 'approve', 'read'] }] },
    },
    {
      producer,
      codec: loop.cluster.codec,
      logger: createLogger({ test: 'approvals-edit' }, { level: 'error' }),
      kafka: loop.cluster.kafka,
      edits: await editChecks(loop.cluster.env),
    },
  );
});
after(async () => {
  await ingress?.close();
  await producer?.disconnect();
  await loop?.stop();
  await sim?.close();
});

async function http(path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const res = await fetch(`${ingress.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, text, body: (res.headers.get('content-type') ?? '').includes('json') ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** Submits a ticket over HTTP and resolves with its thought_id once the run has an outcome matching `until`. */
async function runUntil(text: string, until: (o: Outcome) => boolean): Promise<{ id: string; outcome: Outcome }> {
  const follower = await followOutcomes(loop.cluster);
  try {
    const accepted = await http('/v1/tasks', { text, source: 'test', external_id: randomUUID() });
    assert.equal(accepted.status, 202, accepted.text);
    const id = String(accepted.body.thought_id);
    await loop.fleet.explained(
      follower.waitUntil((o) => o.has(id) && until(o.get(id)!.value as unknown as Outcome), 120000),
      loop.cluster,
    );
    return { id, outcome: follower.outcomes.get(id)!.value as unknown as Outcome };
  } finally {
    await follower.stop();
  }
}

/** Waits for run `id`'s outcome to satisfy `until` (read_committed, from the beginning). */
async function outcomeOf(id: string, until: (o: Outcome) => boolean): Promise<Outcome> {
  const follower = await followOutcomes(loop.cluster);
  try {
    await loop.fleet.explained(
      follower.waitUntil((o) => o.has(id) && until(o.get(id)!.value as unknown as Outcome), 120000),
      loop.cluster,
    );
    return follower.outcomes.get(id)!.value as unknown as Outcome;
  } finally {
    await follower.stop();
  }
}

/** The dead letters of tao.tasks for run `id`, once there are `n` of them. */
async function taskDeadLetters(id: string, n: number): Promise<KafkaMessage[]> {
  const letters: KafkaMessage[] = [];
  let enough!: () => void;
  const done = new Promise<void>((r) => (enough = r));
  const reader = await followFromBeginning(loop.cluster.kafka, [loop.cluster.codec.topics.dlq('tasks')], {
    groupPrefix: `${loop.cluster.namespace}-dlq`,
    onMessage: (_t, _p, m) => {
      if (m.key?.toString() !== id) return;
      letters.push(m);
      if (letters.length >= n) enough();
    },
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      done,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${letters.length} of ${n} dead letters of run ${id}`)), 60000))),
    ]);
    return letters;
  } finally {
    clearTimeout(timer);
    await reader.stop();
  }
}
const header = (m: KafkaMessage, name: string) => m.headers?.[name]?.toString();
const byTopic = async (task: Task) => submitTasks(producer, loop.cluster.codec, [task]);
/** Refunds the tool server applied for run `id`, by Idempotency-Key (the key starts with the run's id). */
const appliedRefunds = (id: string) => Object.entries(loop.tools.stats().effectsByKey).filter(([key]) => key.startsWith(`${id}:`));

test(
  'an edit over the policy is refused by name (422; DECISION_REFUSED by topic); the edited approval runs once with the edit; the interrupt decided again is stale (409; DECISION_REFUSED by topic)',
  { timeout: 300000 },
  async () => {
    const { id, outcome: parked } = await runUntil(`I want a refund for order ${ORDER.order_id}`, (o) => o.status === 'awaiting_approval');
    const [call] = parked.approval!.calls;
    assert.equal(parked.approval!.calls.length, 1);
    assert.equal(call!.tool, 'refunds.create');
    assert.match(call!.interrupt_id ?? '', /^i-[0-9a-f]{16}$/);
    assert.deepEqual(JSON.parse(call!.input_json), { order_id: ORDER.order_id, amount_cents: ORDER.total_cents });
    const interrupt = call!.interrupt_id!;

    // Over the order's total: the skill's policy refund_within_order_total refuses it, over HTTP at once ...
    const over = { order_id: ORDER.order_id, amount_cents: ORDER.total_cents + 1000 };
    const refused = await http(`/v1/runs/${id}/approve`, { interrupt, arguments: over });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error, 'edit_refused');
    assert.equal(refused.body.policy, 'refund_within_order_total');
    assert.match(String(refused.body.message), /refund_within_order_total/);
    // ... and Thought refuses the same decision arriving by topic: dead-lettered with the policy's name.
    await byTopic(decisionTask(id, 'approve', 'user:test', { interrupt, arguments: over, source: 'test' }));
    const [overLetter] = await taskDeadLetters(id, 1);
    assert.equal(header(overLetter!, DLQ_HEADERS.errorCode), 'DECISION_REFUSED');
    assert.match(header(overLetter!, DLQ_HEADERS.errorMessage) ?? '', /refund_within_order_total/);
    assert.deepEqual(appliedRefunds(id), [], 'nothing reached the tool server');

    // A smaller amount: accepted, and the refund runs with it, once.
    const edit = { order_id: ORDER.order_id, amount_cents: 20000 };
    const approved = await http(`/v1/runs/${id}/approve`, { interrupt, arguments: edit, reason: 'half now, half after the return' });
    assert.equal(approved.status, 202, approved.text);
    const ended = await outcomeOf(id, (o) => o.status !== 'awaiting_approval');
    assert.equal(ended.status, 'completed', ended.reason);
    const [applied, ...more] = appliedRefunds(id);
    assert.deepEqual(more, [], `one refund key for the run: ${JSON.stringify(appliedRefunds(id))}`);
    assert.equal(applied![1], 1, 'applied once under its key');
    const sent = loop.tools.stats().requests.filter((r) => r.route === 'refunds.create' && r.headers['idempotency-key']?.startsWith(`${id}:`));
    assert.equal(sent.length, 1, 'one refund request reached the tool server');

    // The records keep both: the parked outcome the proposed arguments, the decision the edit, the wave the edited call.
    const records = (await scanToEnd(loop.cluster, ['tasks', 'thoughtRequests', 'actionResults'])).filter((r) => r.key === id);
    const decisions = records
      .filter((r) => r.topic === 'tasks' && (r.value as unknown as Task).kind === 'DECISION')
      .map((r) => (r.value as unknown as Task).decision!);
    const accepted = decisions.find((d) => d.edited_input_json !== null && JSON.parse(d.edited_input_json).amount_cents === 20000)!;
    assert.deepEqual([accepted.interrupt_id, accepted.decided_by, accepted.reason], [interrupt, 'key:approver', 'half now, half after the return']);
    const refundSteps = records
      .filter((r) => r.topic === 'thoughtRequests')
      .flatMap((r) => (r.value as unknown as ThoughtRequest).steps)
      .filter((s) => s.tool === 'refunds.create');
    assert.equal(refundSteps.length, 1);
    assert.deepEqual(JSON.parse(refundSteps[0]!.input_json), edit);
    assert.equal(refundSteps[0]!.idempotency_key, applied![0], 'the tool server applied the edited call, under its key');
    const result = records
      .filter((r) => r.topic === 'actionResults')
      .flatMap((r) => (r.value as unknown as ActionResult).results)
      .find((x) => x.tool === 'refunds.create')!;
    assert.equal((JSON.parse(result.data_json!) as { amount_cents: number }).amount_cents, 20000, 'the refund applied is the edited amount');

    // The run's stream carries the interrupt on the parked call and on the decision, with the edit.
    const stream = await http(`/v1/runs/${id}/events`);
    assert.equal(stream.status, 200);
    const events = stream.text
      .split('\n\n')
      .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1], data: /^data: (.*)$/m.exec(block)?.[1] }))
      .filter((e) => e.event && e.data)
      .map((e) => ({ event: e.event!, data: JSON.parse(e.data!) as Record<string, any> }));
    assert.equal(events.find((e) => e.event === 'approval')?.data.approval.calls[0].interrupt_id, interrupt);
    const decided = events.filter((e) => e.event === 'decision').map((e) => e.data.decision);
    assert.ok(
      decided.some((d) => d.interrupt_id === interrupt && JSON.parse(d.edited_input_json).amount_cents === 20000),
      JSON.stringify(decided),
    );

    // The interrupt decided again: stale, over HTTP and by topic.
    for (const verdict of ['approve', 'deny'] as const) {
      const stale = await http(`/v1/runs/${id}/${verdict}`, { interrupt });
      assert.equal(stale.status, 409, stale.text);
      assert.equal(stale.body.error, 'stale_decision');
      assert.deepEqual(stale.body.pending, []);
    }
    await byTopic(decisionTask(id, 'approve', 'user:test', { interrupt, source: 'test' }));
    const [, staleLetter] = await taskDeadLetters(id, 2);
    assert.equal(header(staleLetter!, DLQ_HEADERS.errorCode), 'DECISION_REFUSED');
    assert.match(header(staleLetter!, DLQ_HEADERS.errorMessage) ?? '', new RegExp(`interrupt ${interrupt} .*not pending`));
    assert.equal(appliedRefunds(id).length, 1, 'still one refund');
  },
);

test('a parked run is cancelled over HTTP: it ends cancelled without its refund; a second cancel is 409', { timeout: 240000 }, async () => {
  const { id } = await runUntil(`I want a refund for order ${ORDER.order_id}, please`, (o) => o.status === 'awaiting_approval');
  const cancelled = await http(`/v1/runs/${id}/cancel`, { reason: 'the customer withdrew the request' });
  assert.equal(cancelled.status, 202, cancelled.text);
  const ended = await outcomeOf(id, (o) => o.status !== 'awaiting_approval');
  assert.equal(ended.status, 'cancelled', ended.reason);
  assert.match(ended.reason, /the customer withdrew the request/);
  assert.deepEqual(appliedRefunds(id), []);
  const again = await http(`/v1/runs/${id}/cancel`, {});
  assert.equal(again.status, 409, again.text);
  assert.equal(again.body.error, 'run_ended');
});
