// test-needs: kafka
/**
 * Tasks from an existing topic: a source process maps good records to exactly one task each, in the
 * same transaction as the source offset, and puts every bad record in the source's dead-letter topic.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import type { KafkaMessage } from 'kafkajs';
import { spawnStage, stopAll, type StageProcess } from '../../cli/processes.ts';
import { thoughtIdFor } from '../../client/tasks.ts';
import { DLQ_HEADERS } from '../../runtime/processor.ts';
import type { Task } from '../../schemas/types.gen.ts';
import { freshCluster, scan, type TestCluster } from '../helpers/cluster.ts';
import { ensureTopic } from '../../topics/apply.ts';

let cluster: TestCluster;
const procs: StageProcess[] = [];
const lines: string[] = [];

before(async () => {
  cluster = await freshCluster();
});
after(async () => {
  await stopAll(procs);
});

async function startSource(config: Record<string, unknown>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tao-source-'));
  const file = join(dir, 'source.json');
  writeFileSync(file, JSON.stringify(config));
  let ready!: () => void;
  const started = new Promise<void>((r) => (ready = r));
  const proc = spawnStage(
    'source',
    { ...cluster.env, TAO_OPS_PORT: '0' },
    (who, line) => {
      lines.push(line);
      if (line.includes('"msg":"stage started"')) ready();
    },
    [file],
  );
  procs.push(proc);
  await Promise.race([
    started,
    proc.exited.then((code) => {
      throw new Error(`source exited (${code}):\n${lines.slice(-10).join('\n')}`);
    }),
  ]);
}

async function createTopic(topic: string, partitions: number): Promise<void> {
  const admin = cluster.kafka.admin();
  await admin.connect();
  try {
    await ensureTopic(admin, topic, partitions);
  } finally {
    await admin.disconnect();
  }
}

async function deadLetters(topic: string, count: number): Promise<KafkaMessage[]> {
  const consumer = cluster.kafka.consumer({ groupId: `dlq-${Date.now()}-${Math.random()}` });
  const seen: KafkaMessage[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let done!: () => void;
  const enough = new Promise<void>((r) => (done = r));
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push(message);
      if (seen.length >= count) done();
    },
  });
  await Promise.race([enough, new Promise((_, reject) => setTimeout(() => reject(new Error(`${seen.length} of ${count} dead letters`)), 30000))]);
  await consumer.disconnect();
  return seen;
}

test('a JSON source topic with good and bad records: each good record is exactly one task, each bad one a dead letter', { timeout: 120000 }, async () => {
  const topic = `${cluster.namespace}.legacy.requests`;
  await createTopic(topic, 2);
  const good = Array.from({ length: 20 }, (_, i) => ({
    request_id: `REQ-${i}`,
    subject: `Order O-1234567${i % 10}`,
    body: `where is it? user${i}@example.com`,
    customer: { tier: 'gold' },
  }));
  const bad: Array<[string, Buffer]> = [
    ['not-json', Buffer.from('{"request_id": "REQ-x", ')],
    ['no-id', Buffer.from(JSON.stringify({ subject: 'hi', body: 'there' }))],
    ['empty-subject', Buffer.from(JSON.stringify({ request_id: 'REQ-y', subject: '', body: 'x' }))],
    ['bad-utf8', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ];
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  // Good and bad interleaved on the same partitions: the bad ones must not stop the good ones after them.
  await producer.send({
    topic,
    acks: -1,
    messages: [
      ...bad.map(([key, value]) => ({ key, value, partition: 0 })),
      ...good.map((g, i) => ({ key: g.request_id, value: JSON.stringify(g), partition: i % 2 })),
      { key: 'REQ-0-again', value: JSON.stringify(good[0]), partition: 1 }, // the same request sent twice
    ],
  });
  await producer.disconnect();

  await startSource({
    name: 'legacy',
    topic,
    format: 'json',
    source: 'legacy-crm',
    text: '{{/subject}}\n{{/body}}',
    externalId: '/request_id',
    metadata: { tier: '/customer/tier' },
  });
  const tasks = await scan(cluster, ['tasks'], { until: (rs) => rs.length >= 21 });
  assert.equal(tasks.length, 21, 'twenty records and one re-send became tasks');
  const byExternal = new Map<string, Task[]>();
  for (const r of tasks) {
    const t = r.value as unknown as Task;
    byExternal.set(t.external_id!, [...(byExternal.get(t.external_id!) ?? []), t]);
  }
  assert.equal(byExternal.size, 20, 'one external id per good record');
  const first = byExternal.get('REQ-0')!;
  assert.equal(first.length, 2, 'the re-sent record is a second task for the same run');
  assert.ok(
    first.every((t) => t.thought_id === thoughtIdFor('legacy-crm', 'REQ-0')),
    'both map to the same thought_id, so Thought starts one run',
  );
  assert.equal(first[0]!.text, 'Order O-12345670\nwhere is it? user0@example.com');
  assert.equal(first[0]!.metadata.tier, 'gold');

  const letters = await deadLetters(`${topic}.dlq`, 4);
  const reasons = Object.fromEntries(letters.map((m) => [m.key!.toString(), m.headers?.[DLQ_HEADERS.errorCode]?.toString()]));
  assert.deepEqual(reasons, { 'not-json': 'DECODE_FAILED', 'no-id': 'CONTRACT_VIOLATION', 'empty-subject': 'CONTRACT_VIOLATION', 'bad-utf8': 'DECODE_FAILED' });
  assert.match(letters.find((m) => m.key!.toString() === 'no-id')!.headers![DLQ_HEADERS.errorMessage]!.toString(), /external id \/request_id is missing/);
});

test('an Avro source topic is decoded through the registry', { timeout: 120000 }, async () => {
  const topic = `${cluster.namespace}.legacy.avro`;
  await createTopic(topic, 1);
  const schema = {
    type: 'record',
    name: 'Ticket',
    namespace: 'legacy',
    fields: [
      { name: 'id', type: 'long' },
      { name: 'summary', type: 'string' },
    ],
  };
  const { id } = await cluster.codec.registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: `${topic}-value` });
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await producer.send({
    topic,
    acks: -1,
    messages: [
      { key: 'a', value: await cluster.codec.registry.encode(id, { id: 4711, summary: 'refund O-12345678 please' }) },
      { key: 'b', value: Buffer.from([0, 0x7f, 0xff, 0xff, 0xfe, 1, 2]) },
    ],
  });
  await producer.disconnect();
  await startSource({ name: 'legacy-avro', topic, format: 'avro', source: 'legacy-avro', text: '{{/summary}}', externalId: '/id' });
  const tasks = (await scan(cluster, ['tasks'], { until: (rs) => rs.some((r) => (r.value as unknown as Task).source === 'legacy-avro') })).filter(
    (r) => (r.value as unknown as Task).source === 'legacy-avro',
  );
  assert.equal(tasks.length, 1);
  assert.equal((tasks[0]!.value as unknown as Task).external_id, '4711');
  const [letter] = await deadLetters(`${topic}.dlq`, 1);
  assert.equal(letter!.headers?.[DLQ_HEADERS.errorCode]?.toString(), 'UNKNOWN_SCHEMA');
});
