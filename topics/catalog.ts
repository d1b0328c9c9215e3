/**
 * Every topic of the loop, in one typed catalog: name, partitions, retention, cleanup policy, key
 * and value contract. `tao topics apply` creates or updates them from this file; processors take
 * their topic names from it. A namespace (TAO_NAMESPACE) prefixes every name so tests and tenants
 * can share a cluster without sharing topics.
 */

export type TopicId = 'tasks' | 'thoughtRequests' | 'actionResults' | 'observationResults' | 'outcomes' | 'thoughtRuns' | 'manifests';

export interface TopicSpec {
  /** Base name, before the namespace prefix. */
  name: string;
  partitions: number;
  /** -1: kept forever (compacted topics). */
  retentionMs: number;
  cleanupPolicy: 'delete' | 'compact';
  /** More topic configs `topics apply` sets and checks for drift (Kafka names and string values). */
  configs?: Readonly<Record<string, string>>;
  /** What the key holds. Every topic of the loop is keyed by the run's thought_id; the manifests topic by release. */
  key: 'thought_id (UTF-8)' | 'manifest:<digest> | release (UTF-8)';
  /** The Avro schema file in schemas/avro/ of the value (null for dead-letter topics, whose values are the original bytes). */
  valueSchema: string | null;
  doc: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const LOOP_PARTITIONS = 6;

export const TOPICS: Readonly<Record<TopicId, TopicSpec>> = {
  tasks: {
    name: 'tao.tasks',
    partitions: LOOP_PARTITIONS,
    retentionMs: 7 * DAY_MS,
    cleanupPolicy: 'delete',
    key: 'thought_id (UTF-8)',
    valueSchema: 'task.avsc',
    doc: 'Tasks entering the loop (new runs and replies).',
  },
  thoughtRequests: {
    name: 'thought.requests',
    partitions: LOOP_PARTITIONS,
    retentionMs: 7 * DAY_MS,
    cleanupPolicy: 'delete',
    key: 'thought_id (UTF-8)',
    valueSchema: 'thought-request.avsc',
    doc: 'Waves of tool calls planned by Thought.',
  },
  actionResults: {
    name: 'action.results',
    partitions: LOOP_PARTITIONS,
    retentionMs: 7 * DAY_MS,
    cleanupPolicy: 'delete',
    key: 'thought_id (UTF-8)',
    valueSchema: 'action-result.avsc',
    doc: 'Normalized tool results written by Action.',
  },
  observationResults: {
    name: 'observation.results',
    partitions: LOOP_PARTITIONS,
    retentionMs: 7 * DAY_MS,
    cleanupPolicy: 'delete',
    key: 'thought_id (UTF-8)',
    valueSchema: 'observation-result.avsc',
    doc: 'Verdicts written by Observation.',
  },
  thoughtRuns: {
    name: 'thought.runs',
    partitions: LOOP_PARTITIONS,
    retentionMs: -1,
    cleanupPolicy: 'compact',
    configs: {
      // Retention is measured in record time, which Thought writes as each record's CreateTime
      // (the input's time; a tombstone's: its sweep's stream time). LogAppendTime would replace it.
      'message.timestamp.type': 'CreateTime',
      // Compaction never touches the active segment: rolling daily bounds how much of the log a
      // restarting Thought reads that compaction has not yet reduced to live runs and tombstones.
      'segment.ms': String(DAY_MS),
      // A tombstone stays readable this long after compaction: a store restoring reads it long before.
      'delete.retention.ms': String(DAY_MS),
    },
    key: 'thought_id (UTF-8)',
    valueSchema: 'run-snapshot.avsc',
    doc: "Thought's state store changelog: the latest snapshot of each run (compacted); ended runs are tombstoned after TAO_RUN_RETENTION of record time. Co-partitioned with Thought's inputs.",
  },
  outcomes: {
    name: 'tao.outcomes',
    partitions: LOOP_PARTITIONS,
    retentionMs: 30 * DAY_MS,
    cleanupPolicy: 'delete',
    key: 'thought_id (UTF-8)',
    valueSchema: 'outcome.avsc',
    doc: 'How each run ended.',
  },
  manifests: {
    name: 'tao.manifests',
    // One partition: the release pointer and the manifests it names are read in the order they were written.
    partitions: 1,
    retentionMs: -1,
    cleanupPolicy: 'compact',
    configs: { 'max.message.bytes': String(1024 * 1024) },
    key: 'manifest:<digest> | release (UTF-8)',
    valueSchema: 'manifest-record.avsc',
    doc: 'Releases (compacted): each published manifest under manifest:<digest>, and the release pointer (active, previous, candidate and its percent) under release (docs/RELEASES.md).',
  },
};

/** How many copies of each partition a cluster keeps, and how many must have a write before it is acknowledged. */
export interface Replication {
  replicationFactor: number;
  /** `min.insync.replicas`: with producers on acks=all, a write needs this many in-sync copies. */
  minInsyncReplicas: number;
}

/**
 * The replication a cluster of `brokers` brokers gives every topic: 3 copies and 2 in sync from 3
 * brokers up (one broker may be down, or restarting, with no write refused and none acknowledged on
 * a single copy); otherwise one copy per broker and 1 in sync (the single development broker).
 */
export function replicationFor(brokers: number): Replication {
  if (!Number.isInteger(brokers) || brokers < 1) throw new RangeError(`brokers must be a positive integer, got ${String(brokers)}`);
  return brokers >= 3 ? { replicationFactor: 3, minInsyncReplicas: 2 } : { replicationFactor: brokers, minInsyncReplicas: 1 };
}

/** Topics a stage consumes get a dead-letter topic `<name>.dlq` (outcomes and the store changelog are not consumed by a stage). */
export const DEAD_LETTERED: readonly TopicId[] = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults'];

const DLQ_SPEC = { partitions: 3, retentionMs: 30 * DAY_MS, cleanupPolicy: 'delete' as const };

/** Topic names resolved for one namespace. */
export interface TopicNames {
  readonly namespace: string;
  name(id: TopicId): string;
  dlq(id: TopicId): string;
  /** Every topic of the catalog with its spec, dead-letter topics included. */
  all(): Array<{ name: string; spec: TopicSpec }>;
  group(stage: string): string;
}

export function topicNames(namespace: string): TopicNames {
  const prefix = namespace ? `${namespace}.` : '';
  const name = (id: TopicId) => prefix + TOPICS[id].name;
  const dlq = (id: TopicId) => `${name(id)}.dlq`;
  return {
    namespace,
    name,
    dlq,
    group: (stage) => `${prefix}tao-${stage}`,
    all: () => [
      ...Object.entries(TOPICS).map(([id, spec]) => ({ name: name(id as TopicId), spec })),
      ...DEAD_LETTERED.map((id) => ({
        name: dlq(id),
        spec: {
          ...DLQ_SPEC,
          name: `${TOPICS[id].name}.dlq`,
          key: 'thought_id (UTF-8)' as const,
          valueSchema: null,
          doc: `Records of ${TOPICS[id].name} that could not be processed: original bytes, error in headers.`,
        },
      })),
    ],
  };
}
