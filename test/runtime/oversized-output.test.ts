// test-needs: kafka
/**
 * A handler whose output is larger than the topics accept (the broker's 1 MiB max.message.bytes):
 * the broker would refuse it and fail the transaction at every retry, blocking the partition. The
 * input is dead-lettered as RECORD_TOO_LARGE instead, and the records after it are processed; a
 * stage's `fitOutputs` may write a smaller record instead (Action, Thought), and what it gives is
 * checked against the limit again.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StageMetrics } from '../../runtime/metrics.ts';
import { createLogger } from '../../runtime/log.ts';
import { DLQ_HEADERS, StageRunner, type InputRecord } from '../../runtime/processor.ts';
import { outcome } from '../../schemas/records.ts';
import type { Task } from '../../schemas/types.gen.ts';
import { freshCluster, scan, type TestCluster } from '../helpers/cluster.ts';

let cluster: TestCluster;
let runner: StageRunner | null = null;

before(async () => {
  cluster = await freshCluster();
});

after(async () => {
  await runner?.stop();
});

test(
  'an input whose output would exceed the topic limit is dead-lettered as RECORD_TOO_LARGE, unless the stage fits it, and the partition moves on',
  { timeout: 90000 },
  async () => {
    const { kafka, codec, namespace } = cluster;
    // huge: no smaller record; shrinkable: fitOutputs gives a small one; stubborn: fitOutputs gives one still too large.
    const ids = ['before', 'huge', 'shrinkable', 'stubborn', 'after'].map((n) => `${namespace}-${n}`);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: codec.topics.name('tasks'),
      messages: await Promise.all(
        ids.map(async (id) => ({
          key: id,
          partition: 0,
          value: await codec.encode('tasks', {
            thought_id: id,
            task_id: `task-${id}`,
            kind: 'NEW',
            text: 'x',
            source: 'test',
            external_id: null,
            metadata: {},
            submitted_at_ms: 0,
            decision: null,
            timer: null,
          } satisfies Task),
        })),
      ),
    });
    await producer.disconnect();

    runner = new StageRunner(
      {
        stage: 'oversized',
        inputs: ['tasks'],
        outputs: ['outcomes'],
        concurrency: 1,
        maxRecordsPerTransaction: 10,
        maxInputBytes: 1024 * 1024,
        async handle(record: InputRecord) {
          const task = record.value as Task;
          const reason = /-(huge|shrinkable|stubborn)$/.test(task.thought_id) ? 'x'.repeat(2 * 1024 * 1024) : 'fits';
          return [{ topic: 'outcomes', key: task.thought_id, value: outcome({ thought_id: task.thought_id, task_id: task.task_id, reason }), span: 'test' }];
        },
        fitOutputs(record: InputRecord, outputs, over) {
          const task = record.value as Task;
          if (task.thought_id.endsWith('-huge')) return null;
          const reason = task.thought_id.endsWith('-shrinkable')
            ? `shrunk from ${over.bytes} bytes of ${over.topic} (limit ${over.limit})`
            : 'y'.repeat(over.bytes);
          return [{ ...outputs[0]!, value: outcome({ thought_id: task.thought_id, task_id: task.task_id, reason }) }];
        },
      },
      { kafka, codec, logger: createLogger({}, { level: 'error' }), metrics: new StageMetrics('oversized'), sessionTimeoutMs: 6000 },
    );
    await runner.start();

    const outcomes = await scan(cluster, ['outcomes'], { until: (rs) => rs.length >= 3, timeoutMs: 60000 });
    assert.deepEqual(
      outcomes.map((r) => r.key).sort(),
      [ids[0]!, ids[2]!, ids[4]!].sort(),
      'the records before and after the oversized ones were processed, and the fitted one written',
    );
    assert.match(String(outcomes.find((r) => r.key === ids[2])!.value.reason), /^shrunk from \d+ bytes of outcomes \(limit \d+\)$/);

    const consumer = kafka.consumer({ groupId: `${namespace}.dlq-reader` });
    const letters: Array<{ key: string; code: string; message: string }> = [];
    await consumer.connect();
    await consumer.subscribe({ topic: codec.topics.dlq('tasks'), fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) =>
        void letters.push({
          key: String(message.key),
          code: String(message.headers?.[DLQ_HEADERS.errorCode]),
          message: String(message.headers?.[DLQ_HEADERS.errorMessage]),
        }),
    });
    const deadline = Date.now() + 20000;
    while (letters.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await consumer.disconnect();
    // Dead letters are keyed by thought_id, so the two may sit on different partitions of the dead-letter topic: compared unordered.
    assert.deepEqual(
      letters.map((l) => [l.key, l.code]).sort(),
      [ids[1]!, ids[3]!].sort().map((id) => [id, 'RECORD_TOO_LARGE']),
      'the input without a smaller record, and the one whose smaller record is still too large',
    );
    for (const l of letters) assert.match(l.message, /the outcomes record this input produces is \d+ bytes, over the \d+-byte limit/);
    assert.equal(runner.health().running, true);
  },
);
