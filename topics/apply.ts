import type { Admin, ConfigResourceTypes as ConfigResourceTypesT, PartitionMetadata } from 'kafkajs';
import kafkajs from 'kafkajs';
import { replicationFor, type Replication, type TopicNames, type TopicSpec } from './catalog.ts';

const { ConfigResourceTypes } = kafkajs as unknown as { ConfigResourceTypes: typeof ConfigResourceTypesT };

/** What `apply` did or found for one topic. */
export interface TopicReport {
  topic: string;
  action: 'created' | 'unchanged' | 'updated' | 'drift';
  details: string[];
}

/**
 * Makes the cluster match the catalog, idempotently: creates missing topics, adds partitions,
 * sets retention, cleanup policy, `min.insync.replicas` and the spec's other configs, and raises a replication factor below
 * the wanted one. The replication defaults to {@link replicationFor} the number of brokers the
 * cluster lists (describeCluster: the live ones), so topics get 3 replicas and 2 in sync on a
 * cluster of 3 or more, and 1/1 on the single development broker.
 *
 * A topic with fewer replicas than wanted is reassigned (kafkajs alterPartitionReassignments: each
 * partition keeps its replicas and gains the least-used other brokers; Kafka copies the data in the
 * background) and reported as `updated`; its `min.insync.replicas` is raised only once the new
 * replicas are in sync, so writes with acks=all are never refused meanwhile (when that takes over
 * `reassignTimeoutMs` it stays at the topic's old factor and the report says to apply again).
 * Differences it cannot fix are reported as drift, never applied destructively: fewer partitions
 * wanted than exist, more replicas than wanted (Kafka would drop copies), a factor the cluster
 * cannot give.
 */
export async function applyTopics(
  admin: Admin,
  names: TopicNames,
  replication?: Replication,
  options: { reassignTimeoutMs?: number } = {},
): Promise<TopicReport[]> {
  const brokers = (await admin.describeCluster()).brokers.map((b) => b.nodeId).sort((a, b) => a - b);
  const want = replication ?? replicationFor(Math.max(1, brokers.length));
  const wanted = names.all();
  const existing = new Set(await admin.listTopics());
  const reports: TopicReport[] = [];
  const configOf = (spec: TopicSpec, minInsync: number): Record<string, string> => ({
    'retention.ms': String(spec.retentionMs),
    'cleanup.policy': spec.cleanupPolicy,
    'min.insync.replicas': String(minInsync),
    ...spec.configs,
  });

  const missing = wanted.filter((t) => !existing.has(t.name));
  if (missing.length) {
    await admin.createTopics({
      waitForLeaders: false,
      topics: missing.map(({ name, spec }) => ({
        topic: name,
        numPartitions: spec.partitions,
        replicationFactor: want.replicationFactor,
        configEntries: Object.entries(configOf(spec, want.minInsyncReplicas)).map(([n, value]) => ({ name: n, value })),
      })),
    });
    await waitForLeaders(
      admin,
      missing.map((t) => t.name),
    );
    for (const t of missing)
      reports.push({
        topic: t.name,
        action: 'created',
        details: [
          `${t.spec.partitions} partitions, replication factor ${want.replicationFactor}, min.insync.replicas ${want.minInsyncReplicas}, retention ${t.spec.retentionMs} ms, cleanup ${t.spec.cleanupPolicy}`,
        ],
      });
  }

  const present = wanted.filter((t) => existing.has(t.name));
  if (present.length === 0) return reports;
  const metadata = await admin.fetchTopicMetadata({ topics: present.map((t) => t.name) });
  const configs = await admin.describeConfigs({
    includeSynonyms: false,
    resources: present.map((t) => ({ type: ConfigResourceTypes.TOPIC, name: t.name, configNames: Object.keys(configOf(t.spec, 1)) })),
  });
  for (const { name, spec } of present) {
    const details: string[] = [];
    let action: TopicReport['action'] = 'unchanged';
    const partitions = metadata.topics.find((t) => t.name === name)?.partitions ?? [];
    if (partitions.length < spec.partitions) {
      await admin.createPartitions({ topicPartitions: [{ topic: name, count: spec.partitions }] });
      details.push(`partitions ${partitions.length} -> ${spec.partitions}`);
      action = 'updated';
    } else if (partitions.length > spec.partitions) {
      details.push(`has ${partitions.length} partitions, catalog says ${spec.partitions} (Kafka cannot shrink a topic; left as is)`);
      action = 'drift';
    }
    // The factor of the topic is its smallest partition's; min.insync.replicas never exceeds what the topic has in sync.
    let factor = Math.min(...partitions.map((p) => p.replicas.length));
    if (factor > want.replicationFactor) {
      details.push(`replication factor ${factor}, wanted ${want.replicationFactor} for ${brokers.length} broker(s) (copies are never dropped; left as is)`);
      action = 'drift';
    } else if (factor < want.replicationFactor) {
      const raised = await raiseReplication(admin, name, partitions, brokers, want.replicationFactor, options.reassignTimeoutMs ?? 60000);
      if (raised === 'done') {
        details.push(`replication factor ${factor} -> ${want.replicationFactor} (partitions reassigned)`);
        factor = want.replicationFactor;
        if (action === 'unchanged') action = 'updated';
      } else {
        details.push(`replication factor ${factor}, wanted ${want.replicationFactor}: ${raised}`);
        action = 'drift';
      }
    }
    const actual = Object.fromEntries((configs.resources.find((r) => r.resourceName === name)?.configEntries ?? []).map((e) => [e.configName, e.configValue]));
    const wantedConfig = configOf(spec, Math.min(want.minInsyncReplicas, factor));
    const changed = Object.entries(wantedConfig).filter(([k, v]) => actual[k] !== v);
    if (changed.length) {
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name, configEntries: Object.entries(wantedConfig).map(([n, value]) => ({ name: n, value })) }],
      });
      for (const [k, v] of changed) details.push(`${k} ${actual[k]} -> ${v}`);
      if (action === 'unchanged') action = 'updated';
      const visible = await configVisible(admin, name, wantedConfig, 15000);
      if (visible !== 'done') {
        details.push(visible);
        action = 'drift';
      }
    }
    reports.push({ topic: name, action, details });
  }
  return reports;
}

/**
 * Gives every partition of `topic` `factor` replicas: its current ones first (the leader stays),
 * then the brokers holding the fewest replicas of this topic. Resolves `'done'` once Kafka reports
 * no reassignment of the topic in progress and the metadata shows the new replicas, or says why it
 * did not get there.
 */
async function raiseReplication(
  admin: Admin,
  topic: string,
  partitions: PartitionMetadata[],
  brokers: number[],
  factor: number,
  timeoutMs: number,
): Promise<'done' | string> {
  if (brokers.length < factor) return `the cluster lists ${brokers.length} broker(s) (left as is)`;
  const load = new Map(brokers.map((b) => [b, 0]));
  for (const p of partitions) for (const r of p.replicas) load.set(r, (load.get(r) ?? 0) + 1);
  const assignments = partitions.map((p) => {
    const replicas = [...p.replicas];
    while (replicas.length < factor) {
      const next = brokers.filter((b) => !replicas.includes(b)).sort((a, b) => load.get(a)! - load.get(b)! || a - b)[0]!;
      load.set(next, load.get(next)! + 1);
      replicas.push(next);
    }
    return { partition: p.partitionId, replicas };
  });
  await admin.alterPartitionReassignments({ topics: [{ topic, partitionAssignment: assignments }] });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { topics } = await admin.listPartitionReassignments({ topics: [{ topic, partitions: partitions.map((p) => p.partitionId) }] });
    if (topics.every((t) => t.partitions.length === 0)) {
      // The controller has finished; the brokers' metadata (what clients and the next apply read)
      // follows a moment later, and the report says "reassigned" only once it shows the new replicas.
      const [meta] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
      if (meta?.partitions.every((p) => p.replicas.length >= factor)) return 'done';
    }
    if (Date.now() > deadline) return `reassignment still in progress after ${timeoutMs} ms (min.insync.replicas left as is; apply again once it is done)`;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Resolves `'done'` once describeConfigs shows `wanted` for `topic`. An accepted alterConfigs
 * reaches the broker that answers describeConfigs a moment later (KRaft's metadata log), and the
 * report says the config was changed only once a reader sees it; otherwise it says why not.
 */
export async function configVisible(admin: Admin, topic: string, wanted: Record<string, string>, timeoutMs: number): Promise<'done' | string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: Object.keys(wanted) }],
    });
    const seen = Object.fromEntries((described.resources[0]?.configEntries ?? []).map((e) => [e.configName, e.configValue]));
    const pending = Object.entries(wanted).filter(([k, v]) => seen[k] !== v);
    if (!pending.length) return 'done';
    if (Date.now() > deadline)
      return `config change accepted but not visible after ${timeoutMs} ms (${pending.map(([k]) => k).join(', ')}; apply again to check)`;
    await new Promise((r) => setTimeout(r, 200));
  }
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
