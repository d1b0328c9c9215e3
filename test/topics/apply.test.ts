// test-needs: kafka
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { loadRuntimeConfig } from '../../runtime/config.ts';
import { createKafka } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';
import { applyTopics, waitForLeaders } from '../../topics/apply.ts';
import { TOPICS, topicNames } from '../../topics/catalog.ts';

const { ConfigResourceTypes } = kafkajs as unknown as { ConfigResourceTypes: { TOPIC: number } };

test('topics apply creates every catalog topic, is idempotent, repairs what it can and reports the drift it cannot', { timeout: 60000 }, async () => {
  const config = loadRuntimeConfig(process.env);
  const kafka = createKafka(config, 'test-topics', createLogger({}, { level: 'error' }));
  const admin = kafka.admin();
  await admin.connect();
  try {
    const names = topicNames(`t${randomUUID().slice(0, 8)}`);
    // Pre-existing topics that differ from the catalog: too few partitions + wrong retention, and too many partitions.
    await admin.createTopics({
      waitForLeaders: false,
      topics: [
        { topic: names.name('tasks'), numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '1000' }] },
        { topic: names.name('outcomes'), numPartitions: TOPICS.outcomes.partitions + 2 },
      ],
    });

    await waitForLeaders(admin, [names.name('tasks'), names.name('outcomes')]);
    const first = await applyTopics(admin, names);
    const byTopic = new Map(first.map((r) => [r.topic, r]));
    assert.equal(first.length, names.all().length, 'one report per catalog topic, dead-letter topics included');
    assert.equal(byTopic.get(names.dlq('actionResults'))?.action, 'created');
    const tasks = byTopic.get(names.name('tasks'))!;
    assert.equal(tasks.action, 'updated');
    assert.ok(tasks.details.some((d) => d.includes(`partitions 2 -> ${TOPICS.tasks.partitions}`)));
    assert.ok(tasks.details.some((d) => d.includes(`retention.ms 1000 -> ${TOPICS.tasks.retentionMs}`)));
    const outcomes = byTopic.get(names.name('outcomes'))!;
    assert.equal(outcomes.action, 'drift');
    assert.match(outcomes.details.join(), /cannot shrink/);

    const metadata = await admin.fetchTopicMetadata({ topics: [names.name('tasks')] });
    assert.equal(metadata.topics[0]!.partitions.length, TOPICS.tasks.partitions);
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: names.name('tasks'), configNames: ['retention.ms'] }],
    });
    assert.equal(described.resources[0]!.configEntries[0]!.configValue, String(TOPICS.tasks.retentionMs));

    const second = await applyTopics(admin, names);
    assert.deepEqual(
      second.filter((r) => r.action !== 'unchanged').map((r) => `${r.topic}: ${r.action}`),
      [`${names.name('outcomes')}: drift`],
      'a second apply changes nothing',
    );
  } finally {
    await admin.disconnect();
  }
});
