// test-needs: kafka
/**
 * The A2A server on the real broker, driven by the SDK's own client (`@a2a-js/sdk/client`) through
 * the agent card: a ticket streamed to completion and read back with GetTask (a resent message is the
 * same run, written once); a refund above the approval threshold turns input-required, a wrong
 * interrupt and a key without the approve scope are refused with nothing written, and the decision
 * sent as a follow-up message completes the run with exactly one refund; a parked run followed with
 * SubscribeToTask and cancelled with CancelTask ends canceled.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import type { Producer } from 'kafkajs';
import { thoughtIdFor } from '../../client/tasks.ts';
import { a2aSkillsFrom } from '../../ingress/a2a/card.ts';
import { hashApiKey, newApiKey, type ApiKeyEntry } from '../../ingress/api-keys.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import { createLogger } from '../../runtime/log.ts';
import { startLoop, scanToEnd, type RunningLoop } from '../helpers/cluster.ts';

const keys = { agent: newApiKey(), supervisor: newApiKey() };
const entries: ApiKeyEntry[] = [
  { id: 'agent', sha256: hashApiKey(keys.agent), sources: ['a2a'], rate_per_minute: 6000, scopes: ['tasks', 'read'] },
  { id: 'supervisor', sha256: hashApiKey(keys.supervisor), sources: ['a2a'], rate_per_minute: 6000, scopes: ['tasks', 'read', 'approve'] },
];

let loop: RunningLoop;
let producer: Producer;
let ingress: Ingress;

before(async () => {
  // The router picks the flow by intent: order status completes, a refund above 50.00 waits for approval.
  loop = await startLoop({ TAO_PLANNER: 'router', TAO_APPROVAL_RULES: 'refunds.create:amount_cents>5000' });
  producer = loop.cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 65536, auth: { mode: 'keys', keys: entries }, a2a: { skills: a2aSkillsFrom() } },
    { producer, codec: loop.cluster.codec, logger: createLogger({ test: 'a2a' }, { level: 'error' }), kafka: loop.cluster.kafka },
  );
});
after(async () => {
  await ingress?.close();
  await producer?.disconnect();
  await loop?.stop();
});

/** An SDK client from the agent card, its requests carrying `key`. */
async function clientWith(key: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver(),
    }),
  );
  return factory.createFromUrl(ingress.url);
}

const send = (message: Record<string, unknown>, returnImmediately = false) =>
  SendMessageRequest.fromJSON({ message: { role: 'ROLE_USER', messageId: randomUUID(), ...message }, configuration: { returnImmediately } });

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out = [];
  for await (const e of stream) out.push(e);
  return out;
}

const stateOf = (e: StreamResponse | undefined) =>
  e?.payload?.$case === 'statusUpdate' ? e.payload.value.status?.state : e?.payload?.$case === 'task' ? e.payload.value.status?.state : undefined;
const dataParts = (task: Task) => (task.status?.message?.parts ?? []).flatMap((p) => (p.content?.$case === 'data' ? [p.content.value] : []));
const runRecords = async (id: string) => (await scanToEnd(loop.cluster, ['tasks'])).filter((r) => r.key === id).map((r) => r.value as Record<string, any>);

test(
  'a ticket streamed to completion with SendStreamingMessage, then read with GetTask; a resent message is the same run, written once',
  { timeout: 180000 },
  async () => {
    const client = await clientWith(keys.agent);
    const request = send({ parts: [{ text: 'order status for ada@example.com' }] });
    const id = thoughtIdFor('a2a', request.message!.messageId);
    const events = await loop.fleet.explained(collect(client.sendMessageStream(request)), loop.cluster);
    assert.equal(events[0]!.payload?.$case, 'task');
    assert.equal(events[0]!.payload?.$case === 'task' && events[0]!.payload.value.id, id, 'the task id is the run id');
    assert.ok(events.some((e) => e.payload?.$case === 'statusUpdate' && e.payload.value.status?.state === TaskState.TASK_STATE_WORKING));
    const answer = events.find((e) => e.payload?.$case === 'artifactUpdate');
    assert.ok(answer, 'the answer comes as an artifact');
    assert.equal(stateOf(events.at(-1)), TaskState.TASK_STATE_COMPLETED, 'the stream ends with the completed status');

    const task = await client.getTask({ id, tenant: '', historyLength: undefined });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(task.metadata?.status, 'completed');
    const output = task.artifacts[0]!.parts.find((p) => p.content?.$case === 'data')!.content!.value as { output: Record<string, unknown> };
    assert.equal(output.output.customer_id !== undefined, true, JSON.stringify(output));
    assert.equal(task.history[0]!.messageId, request.message!.messageId, "the run's first message is the client's");

    const again = (await client.sendMessage(request)) as Task;
    assert.equal(again.id, id);
    assert.equal(again.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal((await runRecords(id)).filter((t) => t.kind === 'NEW').length, 1, 'one NEW task for the message, sent twice');
    await assert.rejects(client.getTask({ id: `a2a-${randomUUID()}`, tenant: '', historyLength: undefined }), /not found|no task/i);
  },
);

test(
  'a refund that needs approval turns input-required; the decision as a follow-up message completes it with exactly one refund',
  { timeout: 180000 },
  async () => {
    const supervisor = await clientWith(keys.supervisor);
    const parked = (await loop.fleet.explained(
      supervisor.sendMessage(send({ parts: [{ text: 'Please refund my order O-20250002, it arrived broken.' }] })),
      loop.cluster,
    )) as Task;
    assert.equal(parked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, JSON.stringify(parked.status));
    const [awaiting] = dataParts(parked) as Array<{
      awaiting: string;
      calls: Array<{ interrupt_id: string; tool: string; arguments: { amount_cents: number } }>;
    }>;
    assert.equal(awaiting!.awaiting, 'approval');
    const [call] = awaiting!.calls;
    assert.equal(call!.tool, 'refunds.create');
    assert.ok(call!.arguments.amount_cents > 5000);
    assert.ok(call!.interrupt_id);

    const decision = (body: Record<string, unknown>) => send({ taskId: parked.id, parts: [{ data: body, mediaType: 'application/json' }] });
    await assert.rejects(supervisor.sendMessage(decision({ decision: 'approve', interrupt_id: 'nope' })), /interrupt nope is not pending/);
    const agent = await clientWith(keys.agent);
    await assert.rejects(agent.sendMessage(decision({ decision: 'approve', interrupt_id: call!.interrupt_id })), /no approve scope/);
    assert.deepEqual(
      (await runRecords(parked.id)).map((t) => t.kind),
      ['NEW'],
      'nothing written for the refused answers',
    );

    const events = await loop.fleet.explained(
      collect(supervisor.sendMessageStream(decision({ decision: 'approve', interrupt_id: call!.interrupt_id, reason: 'customer verified' }))),
      loop.cluster,
    );
    assert.equal(stateOf(events.at(-1)), TaskState.TASK_STATE_COMPLETED, JSON.stringify(events.at(-1)));
    const done = await supervisor.getTask({ id: parked.id, tenant: '', historyLength: undefined });
    assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
    const written = (await runRecords(parked.id)).find((t) => t.kind === 'DECISION')!;
    assert.equal(written.decision.decided_by, 'key:supervisor');
    assert.equal(written.decision.interrupt_id, call!.interrupt_id);
    assert.equal(loop.tools.stats().effects['refunds.create'], 1, 'exactly one refund');
  },
);

test('SubscribeToTask follows a parked run; CancelTask ends it canceled', { timeout: 180000 }, async () => {
  const client = await clientWith(keys.supervisor);
  const parked = (await loop.fleet.explained(
    client.sendMessage(send({ parts: [{ text: 'Please refund my order O-20250006, it arrived broken.' }] })),
    loop.cluster,
  )) as Task;
  assert.equal(parked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const subscription = client.resubscribeTask({ id: parked.id, tenant: '' });
  const first = await subscription.next();
  assert.equal(!first.done && first.value.payload?.$case, 'task');
  assert.equal(stateOf(first.value as StreamResponse), TaskState.TASK_STATE_INPUT_REQUIRED);
  const cancelled = await loop.fleet.explained(client.cancelTask({ id: parked.id, tenant: '', metadata: undefined }), loop.cluster);
  assert.equal(cancelled.status?.state, TaskState.TASK_STATE_CANCELED);
  const rest = await collect(subscription);
  assert.equal(stateOf(rest.at(-1)), TaskState.TASK_STATE_CANCELED, 'the subscription ends with the canceled status');
  assert.equal(
    (await client.cancelTask({ id: parked.id, tenant: '', metadata: undefined })).status?.state,
    TaskState.TASK_STATE_CANCELED,
    'a second cancel answers the task',
  );
  await assert.rejects(collect(client.resubscribeTask({ id: parked.id, tenant: '' })), /has ended \(cancelled\)/);
  assert.equal(loop.tools.stats().effects['refunds.create'], 1, 'no refund for the cancelled run');
});
