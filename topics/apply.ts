import type { Admin, ConfigResourceTypes as ConfigResourceTypesT } from 'kafkajs';
import kafkajs from 'kafkajs';
import type { TopicNames, TopicSpec } from './catalog.ts';

const { ConfigResourceTypes } = kafkajs as unknown as { ConfigResourceTypes: typeof ConfigResourceTypesT };

/** What `apply` did or found for one topic. */
export interface TopicReport {
  topic: string;
  action: 'created' | 'unchanged' | 'updated' | 'drift';
  details: string[];
}

/**
 * Makes the cluster match the catalog, idempotently: creates missing topics, adds partitions,
 * sets retention, cleanup policy and the spec's other configs. Differences it cannot fix (fewer partitions wanted than exist,
 * a replication factor the cluster can't give) are reported as drift, never applied destructively.
 */
export async function applyTopics(admin: Admin, names: TopicNames, replicationFactor = 1): Promise<TopicReport[]> {
  const wanted = names.all();
  const existing = new Set(await admin.listTopics());
  const reports: TopicReport[] = [];
  const configOf = (spec: TopicSpec): Record<string, string> => ({ 'retention.ms': String(spec.retentionMs), 'cleanup.policy': spec.cleanupPolicy, ...spec.configs });

  const missing = wanted.filter((t) => !existing.has(t.name));
  if (missing.length) {
    await admin.createTopics({
      waitForLeaders: false,
      topics: missing.map(({ name, spec }) => ({ topic: name, numPartitions: spec.partitions, replicationFactor, configEntries: Object.entries(configOf(spec)).map(([n, value]) => ({ name: n, value })) })),
    });
    await waitForLeaders(admin, missing.map((t) => t.name));
    for (const t of missing) reports.push({ topic: t.name, action: 'created', details: [`${t.spec.partitions} partitions, retention ${t.spec.retentionMs} ms, cleanup ${t.spec.cleanupPolicy}`] });
  }

  const present = wanted.filter((t) => existing.has(t.name));
  if (present.length === 0) return reports;
  const metadata = await admin.fetchTopicMetadata({ topics: present.map((t) => t.name) });
  const configs = await admin.describeConfigs({ includeSynonyms: false, resources: present.map((t) => ({ type: ConfigResourceTypes.TOPIC, name: t.name, configNames: Object.keys(configOf(t.spec)) })) });
  for (const { name, spec } of present) {
    const details: string[] = [];
    let action: TopicReport['action'] = 'unchanged';
    const partitions = metadata.topics.find((t) => t.name === name)?.partitions.length ?? 0;
    if (partitions < spec.partitions) {
      await admin.createPartitions({ topicPartitions: [{ topic: name, count: spec.partitions }] });
      details.push(`partitions ${partitions} -> ${spec.partitions}`);
      action = 'updated';
    } else if (partitions > spec.partitions) {
      details.push(`has ${partitions} partitions, catalog says ${spec.partitions} (Kafka cannot shrink a topic; left as is)`);
      action = 'drift';
    }
    const actual = Object.fromEntries((configs.resources.find((r) => r.resourceName === name)?.configEntries ?? []).map((e) => [e.configName, e.configValue]));
    const wantedConfig = configOf(spec);
    const changed = Object.entries(wantedConfig).filter(([k, v]) => actual[k] !== v);
    if (changed.length) {
      await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name, configEntries: Object.entries(wantedConfig).map(([n, value]) => ({ name: n, value })) }] });
      for (const [k, v] of changed) details.push(`${k} ${actual[k]} -> ${v}`);
      if (action === 'unchanged') action = 'updated';
    }
    reports.push({ topic: name, action, details });
  }
  return reports;
}

/**
 * Waits until every partition of `topics` has a leader that serves it: metadata names a leader and
 * the leader answers an offsets request. Right after creation a broker can still answer
 * UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_FOR_PARTITION (kafkajs' own `waitForLeaders` gives up on
 * these); kafkajs marks such errors `retriable`, and this waits them out.
 */
export async function waitForLeaders(admin: Admin, topics: string[], timeoutMs = 30000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics });
      if (found.length === topics.length && found.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) {
        for (const topic of topics) await admin.fetchTopicOffsets(topic);
        return;
      }
    } catch (err) {
      if ((err as { retriable?: boolean }).retriable !== true) throw err;
    }
    if (Date.now() > deadline) throw new Error(`topics ${topics.join(', ')} have no leaders after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Creates a topic unless it exists, and waits for its leaders. */
export async function ensureTopic(admin: Admin, topic: string, numPartitions: number): Promise<void> {
  if (!(await admin.listTopics()).includes(topic)) await admin.createTopics({ waitForLeaders: false, topics: [{ topic, numPartitions }] });
  await waitForLeaders(admin, [topic]);
}
