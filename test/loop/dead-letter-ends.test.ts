// test-needs: kafka
/**
 * Every run ends, on the real broker and registry with the stages as processes: a wave a stage
 * dead-letters reaches Thought as a record written in the dead letter's own transaction, and the run
 * ends `failed` (`dead_letter`) within seconds, with the dead letter's code and its topic, partition
 * and offset in the outcome; `replay --verify` re-decides it without drift.
 *
 * The misconfiguration of issue 41: Thought runs `TAO_PLANNER=react`, and Action (started apart,
 * without TAO_PLANNER, so its start-up check can't tell) has no model endpoint: every run's first
 * wave, a model turn (`model.chat`), is dead-lettered. Since runs carry the release they started on
 * (docs/RELEASES.md), Action builds its catalog for that release (TAO_PLANNER=react in it) and
 * refuses it as CONFIG_INVALID naming the missing endpoint. Before, the run stayed `running` for
 * ever. Observation's own dead letters end their run the same way.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { KafkaMessage } from 'kafkajs';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { DLQ_HEADERS } from '../../runtime/processor.ts';
import { runState } from '../../schemas/records.ts';
import type { ActionResult, Outcome } from '../../schemas/types.gen.ts';
import { StageFleet, followOutcomes, freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';

let cluster: TestCluster;
let tools: ToolServer;
const fleets: StageFleet[] = [];

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url, TAO_PLANNER: 'react', TAO_LLM_BASE_URL: '', TAO_LLM_MODEL: '' });
  const thought = new StageFleet(cluster.env);
  // Action as a separate deployment would run it: the planner is Thought's business, not given here.
  const action = new StageFleet({ ...cluster.env, TAO_PLANNER: 'graph' });
  fleets.push(thought, action);
  await Promise.all([thought.start('thought'), action.start('action'), thought.start('observation')]);
});
after(async () => {
  for (const f of fleets) await f.stop();
  await tools?.close();
});

/** The first dead letter of `key` on `topic` (read_committed, from the beginning). */
async function deadLetterOf(topic: string, key: string, timeoutMs = 30000): Promise<KafkaMessage> {
  const consumer = cluster.kafka.consumer({ groupId: `dlq-reader-${randomUUID()}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let found!: (m: KafkaMessage) => void;
  const seen = new Promise<KafkaMessage>((r) => (found = r));
  await consumer.run({ eachMessage: async ({ message }) => void (message.key?.toString() === key && found(message)) });
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      seen,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no dead letter of ${key} on ${topic} in ${timeoutMs} ms`)), timeoutMs))),
    ]);
  } finally {
    clearTimeout(timer);
    await consumer.disconnect();
  }
}

const header = (m: KafkaMessage, name: string) => m.headers?.[name]?.toString();

test(
  "a wave Action dead-letters (CONFIG_INVALID: the release of the run needs a model endpoint) ends its run failed within seconds, with the code and the record's coordinates; replay --verify finds no drift",
  { timeout: 180000 },
  async () => {
    const follower = await followOutcomes(cluster);
    const task = buildTask({ text: 'Where is my order O-20250002? It has not arrived.', source: 'dead-letter-ends' });
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    const sentAt = Date.now();
    await submitTasks(producer, cluster.codec, [task]);
    await producer.disconnect();
    await fleets[0]!.explained(
      follower.waitUntil((o) => o.has(task.thought_id), 60000),
      cluster,
    );
    const endedAfterMs = Date.now() - sentAt;
    await follower.stop();
    const outcome = follower.outcomes.get(task.thought_id)!.value as unknown as Outcome;
    assert.equal(outcome.status, 'failed', outcome.reason);
    assert.equal(outcome.reason_code, 'dead_letter');
    assert.ok(endedAfterMs < 30000, `the run ended ${endedAfterMs} ms after its task`);
    const ref = outcome.dead_letter!;
    assert.equal(ref.code, 'CONFIG_INVALID');
    assert.equal(ref.stage, 'action');
    assert.match(ref.message, /TAO_PLANNER=react needs the model tool model\.chat.*TAO_LLM_BASE_URL is not set/);
    // The coordinates are those of the dead letter itself.
    const letter = await deadLetterOf(cluster.codec.topics.dlq('thoughtRequests'), task.thought_id);
    assert.equal(ref.topic, cluster.codec.topics.name('thoughtRequests'));
    assert.equal(String(ref.partition), header(letter, DLQ_HEADERS.sourcePartition));
    assert.equal(String(ref.offset), header(letter, DLQ_HEADERS.sourceOffset));
    assert.equal(header(letter, DLQ_HEADERS.errorCode), 'CONFIG_INVALID');
    assert.match(outcome.reason, new RegExp(`CONFIG_INVALID.*${ref.topic.replace(/\./g, '\\.')}\\[${ref.partition}\\]@${ref.offset}`));

    const { run, drift } = await verifyWithoutModel(task.thought_id, cluster.env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(drift, false, run.stdout);
  },
);

test("a wave's result Observation dead-letters ends its run failed too, and replay --verify finds no drift", { timeout: 120000 }, async () => {
  const follower = await followOutcomes(cluster);
  const thoughtId = `obs-dlq-${randomUUID()}`;
  // A result whose run carries no plan: Observation can't judge it (a ContractViolation), ever.
  const result: ActionResult = { thought_id: thoughtId, iteration: 1, run: runState({ plan_json: '{}' }), results: [], dead_letter: null };
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await producer.send({
    topic: cluster.codec.topics.name('actionResults'),
    acks: -1,
    messages: [{ key: thoughtId, value: await cluster.codec.encode('actionResults', result) }],
  });
  await producer.disconnect();
  await fleets[0]!.explained(
    follower.waitUntil((o) => o.has(thoughtId), 60000),
    cluster,
  );
  await follower.stop();
  const outcome = follower.outcomes.get(thoughtId)!.value as unknown as Outcome;
  assert.deepEqual([outcome.status, outcome.reason_code], ['failed', 'dead_letter']);
  assert.deepEqual(
    [outcome.dead_letter?.stage, outcome.dead_letter?.code, outcome.dead_letter?.topic],
    ['observation', 'CONTRACT_VIOLATION', cluster.codec.topics.name('actionResults')],
  );
  const letter = await deadLetterOf(cluster.codec.topics.dlq('actionResults'), thoughtId);
  assert.equal(String(outcome.dead_letter!.offset), header(letter, DLQ_HEADERS.sourceOffset));

  const { run, drift } = await verifyWithoutModel(thoughtId, cluster.env);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(drift, false, run.stdout);
});
