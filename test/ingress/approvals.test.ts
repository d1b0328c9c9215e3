/**
 * `POST /v1/runs/{thought_id}/approve|deny` over a real HTTP server, behind API keys with the
 * `approve` scope. The producer and the codec are stand-ins that record what the ingress hands them
 * (no broker): what is under test is which requests become decision records, and what they say.
 * Thought applying them on the real broker: test/loop/approvals.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { hashApiKey, newApiKey, parseApiKeys, type ApiKeyEntry } from '../../ingress/api-keys.ts';
import { startIngress, type Ingress } from '../../ingress/server.ts';
import type { AvroCodec } from '../../runtime/codec.ts';
import { createLogger } from '../../runtime/log.ts';
import { IngressMetrics } from '../../runtime/metrics.ts';
import type { Task } from '../../schemas/types.gen.ts';

function recordingKafka(): { producer: Producer; codec: AvroCodec; written: Task[] } {
  const written: Task[] = [];
  const codec = {
    encode: async (_topic: string, value: Task) => Buffer.from(JSON.stringify(value)),
    topics: { name: (id: string) => `test.${id}` },
  } as unknown as AvroCodec;
  const producer = {
    send: async ({ messages }: { messages: Array<{ value: Buffer }> }) => void messages.forEach((m) => written.push(JSON.parse(m.value.toString()) as Task)),
  } as unknown as Producer;
  return { producer, codec, written };
}

const keys = { approver: newApiKey(), submitter: newApiKey(), both: newApiKey() };
const entries: ApiKeyEntry[] = [
  { id: 'approver', sha256: hashApiKey(keys.approver), sources: ['*'], rate_per_minute: 600, scopes: ['approve'] },
  { id: 'submitter', sha256: hashApiKey(keys.submitter), sources: ['*'], rate_per_minute: 600 },
  { id: 'both', sha256: hashApiKey(keys.both), sources: ['*'], rate_per_minute: 600, scopes: ['tasks', 'approve'] },
];
const NOW = 1_760_000_000_000;
const kafka = recordingKafka();
let ingress: Ingress;
let open: Ingress;

before(async () => {
  const logger = createLogger({}, { level: 'error' });
  ingress = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 8192, auth: { mode: 'keys', keys: entries } },
    { producer: kafka.producer, codec: kafka.codec, logger, now: () => NOW, metrics: new IngressMetrics() },
  );
  open = await startIngress(
    { port: 0, host: '127.0.0.1', maxBodyBytes: 8192, auth: { mode: 'open', reason: 'test' } },
    { producer: kafka.producer, codec: kafka.codec, logger, now: () => NOW, metrics: new IngressMetrics() },
  );
});
after(async () => {
  await ingress?.close();
  await open?.close();
});

async function post(base: Ingress, path: string, key: string | null, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('a key with the approve scope writes a DECISION task saying who (the key), when, what, which step and why', async () => {
  const before = kafka.written.length;
  const res = await post(ingress, '/v1/runs/run-42/deny', keys.approver, { step: 'S2', reason: 'over the goodwill limit' });
  assert.equal(res.status, 202);
  assert.equal(res.body.verdict, 'deny');
  const [task] = kafka.written.slice(before);
  assert.equal(task!.thought_id, 'run-42');
  assert.equal(task!.kind, 'DECISION');
  assert.equal(res.body.task_id, task!.task_id);
  assert.deepEqual(task!.decision, {
    verdict: 'deny',
    step_id: 'S2',
    wave: null,
    reason: 'over the goodwill limit',
    decided_by: 'key:approver',
    decided_at_ms: NOW,
    interrupt_id: null,
    edited_input_json: null,
  });
  const approved = await post(ingress, '/v1/runs/run-42/approve', keys.both, {});
  assert.equal(approved.status, 202);
  assert.equal(kafka.written.at(-1)!.decision!.verdict, 'approve');
});

test('without the approve scope, without a key, or on an ingress running open: refused, nothing written', async () => {
  const before = kafka.written.length;
  assert.equal((await post(ingress, '/v1/runs/run-42/approve', keys.submitter, {})).status, 403, 'a tasks-only key may not decide');
  assert.equal((await post(ingress, '/v1/runs/run-42/approve', null, {})).status, 401);
  assert.equal((await post(ingress, '/v1/runs/run-42/approve', 'tao_not-a-key', {})).status, 401);
  const openAnswer = await post(open, '/v1/runs/run-42/approve', null, {});
  assert.equal(openAnswer.status, 403);
  assert.match(String(openAnswer.body.message), /need an API key with the approve scope/);
  assert.equal(kafka.written.length, before);
});

test('an approve-only key may not submit tasks; a body that is not {step?, reason?} is a 400', async () => {
  const before = kafka.written.length;
  assert.equal((await post(ingress, '/v1/tasks', keys.approver, { text: 'refund O-20250002' })).status, 403);
  const bad = await post(ingress, '/v1/runs/run-42/approve', keys.approver, { verdict: 'approve' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error, 'invalid_decision');
  assert.equal(kafka.written.length, before);
  assert.equal((await post(ingress, '/v1/tasks', keys.both, { text: 'refund O-20250002' })).status, 202, 'a key with both scopes submits tasks too');
});

test('an approval names an interrupt and may carry edited arguments; arguments go only with approve and an interrupt', async () => {
  const before = kafka.written.length;
  const edited = await post(ingress, '/v1/runs/run-43/approve', keys.approver, {
    interrupt: 'i-0123456789abcdef',
    arguments: { order_id: 'O-20250002', amount_cents: 2000 },
    reason: 'half now',
  });
  assert.equal(edited.status, 202);
  assert.equal(edited.body.interrupt, 'i-0123456789abcdef');
  const [task] = kafka.written.slice(before);
  assert.equal(task!.decision!.interrupt_id, 'i-0123456789abcdef');
  assert.deepEqual(JSON.parse(task!.decision!.edited_input_json!), { order_id: 'O-20250002', amount_cents: 2000 });
  assert.match(task!.text, /^approve with edited arguments i-0123456789abcdef by key:approver: half now$/);
  for (const [verdict, body] of [
    ['approve', { arguments: { amount_cents: 1 } }],
    ['deny', { interrupt: 'i-0123456789abcdef', arguments: { amount_cents: 1 } }],
    ['approve', { interrupt: 'i-0123456789abcdef', step: 'S2' }],
    ['approve', { interrupt: 'i-1', arguments: [1, 2] }],
  ] as const) {
    const bad = await post(ingress, `/v1/runs/run-43/${verdict}`, keys.approver, body);
    assert.equal(bad.status, 400, JSON.stringify(body));
    assert.equal(bad.body.error, 'invalid_decision');
  }
  assert.equal(kafka.written.length, before + 1, 'nothing written for a refused body');
});

test('scopes in a keys file: known scopes only, a non-empty list', () => {
  const entry = { id: 'a', sha256: 'a'.repeat(64), sources: ['*'], rate_per_minute: 60 };
  assert.deepEqual(parseApiKeys(JSON.stringify([{ ...entry, scopes: ['approve'] }]), 'f')[0]!.scopes, ['approve']);
  assert.throws(
    () => parseApiKeys(JSON.stringify([{ ...entry, scopes: ['admin'] }]), 'f'),
    /f: entry 0 \("a"\): \/scopes\/0 must be a non-empty list of distinct scopes: tasks, console, approve/,
  );
  assert.throws(() => parseApiKeys(JSON.stringify([{ ...entry, scopes: [] }]), 'f'), /scopes/);
});
