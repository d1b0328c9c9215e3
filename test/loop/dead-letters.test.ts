// test-needs: kafka
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { KafkaMessage } from 'kafkajs';
import { DLQ_HEADERS } from '../../runtime/processor.ts';
import type { ThoughtRequest } from '../../schemas/types.gen.ts';
import type { TopicId } from '../../topics/catalog.ts';

import { scan, startLoop, type RunningLoop, type TestCluster } from '../helpers/cluster.ts';
import { runState } from '../../schemas/records.ts';

let loop: RunningLoop;
let cluster: TestCluster;

before(async () => {
  loop = await startLoop();
  ({ cluster } = loop);
});
after(async () => {
  await loop?.stop();
});

/** Reads raw (undecoded) records of a dead-letter topic until `count` have arrived. */
async function readDeadLetters(topic: string, count: number, timeoutMs = 30000): Promise<KafkaMessage[]> {
  const consumer = cluster.kafka.consumer({ groupId: `dlq-reader-${randomUUID()}`, readUncommitted: false });
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
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    enough,
    new Promise(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`${topic}: ${seen.length} of ${count} dead letters after ${timeoutMs} ms`)), timeoutMs)),
    ),
  ]);
  clearTimeout(timer);
  await consumer.disconnect();
  return seen;
}

function request(thoughtId: string, tool: string): ThoughtRequest {
  const run = runState({
    planner: 'graph',
    flow_id: 'order-status',
    plan_json: '{"flow":{"id":"order-status","version":1},"steps":[{"id":"S1","tool":"crm.find_customer","input":{},"depends_on":[]}],"output":{}}',
    step_attempts: { S1: 1 },
  });
  return {
    thought_id: thoughtId,
    iteration: 1,
    run,
    steps: [{ step_id: 'S1', tool, input_json: '{"email":"dlq@example.com"}', idempotency_key: `${thoughtId}:1:S1`, attempt: 1 }],
  };
}

test(
  'garbage bytes, an unknown schema id and a contract-breaking record land in the dead-letter topic with error headers, and the partition moves on',
  { timeout: 90000 },
  async () => {
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    const topic = cluster.codec.topics.name('thoughtRequests');
    const unknownSchema = Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0x00]), Buffer.from('whatever')]);
    const good = `good-${randomUUID()}`;
    // All on partition 0, bad ones first: the good record is only processed if the bad ones do not block the partition.
    const sent = await producer.send({
      topic,
      acks: -1,
      messages: [
        { partition: 0, key: 'garbage', value: Buffer.from('this is not avro at all') },
        { partition: 0, key: 'unknown-schema', value: unknownSchema },
        { partition: 0, key: 'unknown-tool', value: await cluster.codec.encode('thoughtRequests', request('unknown-tool', 'billing.refund_everything')) },
        { partition: 0, key: good, value: await cluster.codec.encode('thoughtRequests', request(good, 'crm.find_customer')) },
      ],
    });
    await producer.disconnect();
    const firstOffset = Number(sent[0]!.baseOffset);

    const letters = await readDeadLetters(cluster.codec.topics.dlq('thoughtRequests'), 3);
    const byKey = new Map(letters.map((m) => [m.key!.toString(), m]));
    const header = (m: KafkaMessage, name: string) => m.headers?.[name]?.toString();
    const expected: Array<[string, string, number]> = [
      ['garbage', 'DECODE_FAILED', 0],
      ['unknown-schema', 'UNKNOWN_SCHEMA', 1],
      ['unknown-tool', 'UNKNOWN_TOOL', 2],
    ];
    for (const [key, code, i] of expected) {
      const m = byKey.get(key);
      assert.ok(m, `${key} is dead-lettered`);
      assert.equal(header(m, DLQ_HEADERS.errorCode), code);
      assert.equal(header(m, DLQ_HEADERS.sourceTopic), topic);
      assert.equal(header(m, DLQ_HEADERS.sourcePartition), '0');
      assert.equal(header(m, DLQ_HEADERS.sourceOffset), String(firstOffset + i));
      assert.equal(header(m, DLQ_HEADERS.stage), 'action');
      assert.equal(header(m, DLQ_HEADERS.attempt), '1');
      assert.ok(header(m, DLQ_HEADERS.errorClass));
      assert.ok((header(m, DLQ_HEADERS.errorMessage) ?? '').length > 10);
    }
    assert.deepEqual(byKey.get('garbage')!.value, Buffer.from('this is not avro at all'), 'the original bytes are kept');
    assert.deepEqual(byKey.get('unknown-schema')!.value, unknownSchema);
    assert.match(header(byKey.get('unknown-tool')!, DLQ_HEADERS.errorMessage)!, /billing\.refund_everything/);

    const results = await scan(cluster, ['actionResults'], { until: (rs) => rs.some((r) => r.key === good) });
    assert.equal(results.filter((r) => r.key === good).length, 1, 'the good record after the bad ones is processed');
  },
);

test('each consumed topic has its own dead-letter topic', { timeout: 60000 }, async () => {
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  const cases: Array<[TopicId, string]> = [
    ['tasks', 'thought'],
    ['actionResults', 'observation'],
    ['observationResults', 'thought'],
  ];
  for (const [id] of cases)
    await producer.send({ topic: cluster.codec.topics.name(id), acks: -1, messages: [{ key: `bad-${id}`, value: Buffer.from([0, 0, 0]) }] });
  await producer.disconnect();
  for (const [id, stage] of cases) {
    const [letter] = await readDeadLetters(cluster.codec.topics.dlq(id), 1);
    assert.equal(letter!.key!.toString(), `bad-${id}`);
    assert.equal(letter!.headers?.[DLQ_HEADERS.stage]?.toString(), stage);
    assert.equal(letter!.headers?.[DLQ_HEADERS.errorCode]?.toString(), 'DECODE_FAILED');
  }
});
