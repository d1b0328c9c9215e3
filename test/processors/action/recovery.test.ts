// test-needs: kafka
/**
 * A pipelined partition whose transaction fails is read again from its last committed chunk, and
 * nothing is lost or written twice (runtime/processor.ts `recover`): the broker is made to refuse
 * Action's results (the results topic's max.message.bytes set below a result's size, so every
 * commit of Action fails with RECORD_TOO_LARGE), the loop runs into it, Action recovers the
 * partitions again and again with its backoff, and once the limit is restored every run ends,
 * with one committed result per wave. Until now only the chaos tests reached this path, by chance.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import kafkajs, { type Admin, type ConfigResourceTypes as ConfigResourceTypesT } from 'kafkajs';
import { buildTask, submitTasks } from '../../../client/tasks.ts';
import type { ActionResult, Outcome, ThoughtRequest } from '../../../schemas/types.gen.ts';
import { configVisible } from '../../../topics/apply.ts';
import { followOutcomes, scanToEnd, startLoop, type RunningLoop } from '../../helpers/cluster.ts';

// kafkajs is CommonJS: its enums are on the default export.
const { ConfigResourceTypes } = kafkajs as unknown as { ConfigResourceTypes: typeof ConfigResourceTypesT };

const RUNS = 12;

let loop: RunningLoop;
let admin: Admin;

before(async () => {
  loop = await startLoop();
  admin = loop.cluster.kafka.admin();
  await admin.connect();
});

after(async () => {
  await admin?.disconnect();
  await loop?.stop();
});

/** The topic's own (dynamic) configuration entries: kafkajs's alterConfigs replaces all of them. */
async function topicConfig(topic: string): Promise<Array<{ name: string; value: string }>> {
  const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }] });
  // configSource 1: DYNAMIC_TOPIC_CONFIG, set on this topic (the others are broker defaults).
  return resources[0]!.configEntries.filter((e) => e.configSource === 1).map((e) => ({ name: e.configName, value: e.configValue }));
}

async function setTopicConfig(topic: string, entries: Array<{ name: string; value: string }>): Promise<void> {
  await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: entries }] });
}

test(
  'failed transactions of a pipelined partition are retried from its last committed chunk: every run ends, no result twice',
  { timeout: 180000 },
  async () => {
    const { cluster, fleet } = loop;
    const results = cluster.codec.topics.name('actionResults');
    const original = await topicConfig(results);
    let restored = false;
    const restore = async () => {
      if (restored) return;
      restored = true;
      await setTopicConfig(results, original);
    };
    // A result record is 1-2 KiB: the broker refuses every one of Action's transactions.
    await setTopicConfig(results, [...original.filter((e) => e.name !== 'max.message.bytes'), { name: 'max.message.bytes', value: '256' }]);
    // The broker applies an accepted change a moment later: no task goes in before it refuses results.
    assert.equal(await configVisible(admin, results, { 'max.message.bytes': '256' }, 30000), 'done');
    const follower = await followOutcomes(cluster);
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    const tasks = Array.from({ length: RUNS }, (_, i) =>
      buildTask({ text: `Where is my order? recovery-${i}@example.com`, source: 'recovery-test', external_id: `${cluster.namespace}-${i}` }),
    );
    try {
      await submitTasks(producer, cluster.codec, tasks);
      // Action's first failed transaction, then its recovery retrying it (the backoff doubles from 300 ms).
      await fleet.explained(fleet.waitForLine('"msg":"transaction aborted; the chunk is retried', 60000));
      await fleet.explained(fleet.waitForLine('"msg":"a chunk failed; the partition is read again from its last committed chunk"', 60000));
      assert.equal(follower.outcomes.size, 0, 'no run can end while its results are refused');
      await restore();
      await fleet.explained(follower.waitUntil((o) => tasks.every((t) => o.has(t.thought_id)), 90000));
    } finally {
      await restore().catch(() => undefined);
      await producer.disconnect();
      await follower.stop();
    }
    const statuses = tasks.map((t) => (follower.outcomes.get(t.thought_id)!.value as unknown as Outcome).status);
    assert.deepEqual(statuses, Array(RUNS).fill('completed'));
    for (const p of fleet.processes) assert.equal(p.child.exitCode, null, `${p.name} is still running`);

    // The committed log as it stands (every outcome is committed, so every result before it is):
    // one result per wave, none twice, though every wave's tool call was made again after each failure.
    const records = await scanToEnd(cluster, ['thoughtRequests', 'actionResults']);
    const waves = records.filter((r) => r.topic === 'thoughtRequests').map((r) => `${r.key}:${(r.value as unknown as ThoughtRequest).iteration}`);
    const answered = records.filter((r) => r.topic === 'actionResults').map((r) => `${r.key}:${(r.value as unknown as ActionResult).iteration}`);
    assert.equal(new Set(answered).size, answered.length, 'no wave has two committed results');
    assert.deepEqual([...answered].sort(), [...waves].sort(), 'every wave has exactly one committed result');
  },
);
