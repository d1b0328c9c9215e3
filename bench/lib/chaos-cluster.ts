/**
 * Broker faults for the chaos run on a multi-broker cluster: SIGKILL of the broker that leads the
 * busiest partitions (restarted after each kill), a rolling restart (SIGTERM one broker at a time,
 * each back in every partition's ISR before the next), and a whole-cluster outage (every broker
 * SIGKILLed, restarted after a set time) during which the ingress must answer 503.
 *
 * The faults run beside the stage kills of chaos-run.ts; what they did is recorded as
 * {@link BrokerFault}s, and {@link brokerRecovery} measures from the committed log how long the
 * loop took to commit again after each.
 */
import type { Admin } from 'kafkajs';
import type { RawRecord } from './load.ts';
import { sleep } from './harness.ts';

/** How the chaos driver acts on the cluster's brokers (infra/local.ts node ids, 1-based). */
export interface ClusterControl {
  nodes: number;
  /** Stops one node (SIGKILL: a crash; SIGTERM: a clean shutdown), or every node when `node` is undefined. */
  stop(node: number | undefined, signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts one node, or every node, and resolves once they are healthy. */
  start(node?: number): Promise<void>;
}

/** Which broker faults to run, in this order. */
export interface BrokerFaultPlan {
  /** SIGKILLs of the busiest leader, each restarted after `downMs`. */
  leaderKills: number;
  /** How long a killed leader stays down before it is restarted. */
  downMs: number;
  rollingRestart: boolean;
  /** Whole-cluster outage: every broker stopped this long (null: none). */
  outageMs: number | null;
  /** Pause between two faults, after the cluster is whole again (every partition's ISR full). */
  settleMs: number;
  /** First fault after this long. */
  startAfterMs: number;
}

/** A partition of a loop topic, as `topic/partition`. */
export type PartitionRef = string;

/** One broker fault as it happened. */
export interface BrokerFault {
  kind: 'leader-kill' | 'rolling-restart' | 'outage';
  /** The node stopped (every node for an outage). */
  node: number | null;
  /** When the node (or the first node) was stopped. */
  at: number;
  /** When it was healthy again (every node, for an outage). */
  upAt: number;
  /** When every partition's ISR was full again (null: not within the wait). */
  inSyncAt: number | null;
  /** Loop-topic partitions the stopped node led at `at` (empty for an outage: all of them). */
  led: PartitionRef[];
  /** For a leader kill: records of loop topics on the partitions it led (why it was chosen). */
  ledRecords?: number;
}

/**
 * The node leading the loop-topic partitions that hold the most records (high watermarks summed),
 * with the partitions it leads. The busiest partitions are where a leader change interrupts most.
 */
export async function busiestLeader(admin: Admin, topics: string[]): Promise<{ node: number; led: PartitionRef[]; records: number }> {
  const { topics: meta } = await admin.fetchTopicMetadata({ topics });
  const load = new Map<number, { led: PartitionRef[]; records: number }>();
  for (const t of meta) {
    const offsets = await offsetsOnceLeadersAnswer(admin, t.name);
    for (const p of t.partitions) {
      const high = Number(offsets.find((o) => o.partition === p.partitionId)?.high ?? 0);
      const entry = load.get(p.leader) ?? { led: [], records: 0 };
      entry.led.push(`${t.name}/${p.partitionId}`);
      entry.records += high;
      load.set(p.leader, entry);
    }
  }
  const [node, best] = [...load].filter(([n]) => n >= 0).sort((a, b) => b[1].records - a[1].records || a[0] - b[0])[0] ?? [-1, { led: [], records: 0 }];
  if (node < 0) throw new Error(`no partition of ${topics.join(', ')} has a leader`);
  return { node, ...best };
}

/**
 * A topic's offsets. Just after topics are created or a leader moves, a broker named in the
 * metadata may not host the partition yet, and kafkajs's fetchTopicOffsets then fails (even with a
 * TypeError from inside it); the metadata converges within seconds, so ask again for up to 15 s.
 */
async function offsetsOnceLeadersAnswer(admin: Admin, topic: string): Promise<Array<{ partition: number; high: string }>> {
  const deadline = Date.now() + 15000;
  for (;;) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** The loop-topic partitions `node` leads now. */
export async function ledBy(admin: Admin, topics: string[], node: number): Promise<PartitionRef[]> {
  const { topics: meta } = await admin.fetchTopicMetadata({ topics });
  return meta.flatMap((t) => t.partitions.filter((p) => p.leader === node).map((p) => `${t.name}/${p.partitionId}`));
}

/**
 * Waits until every partition of `topics` (the loop's and Kafka's internal ones) has its whole
 * replica set in sync. Resolves with the time it happened, or null after `timeoutMs`.
 */
export async function waitInSync(admin: Admin, topics: string[], timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const { topics: meta } = await admin.fetchTopicMetadata({ topics });
      if (meta.length === topics.length && meta.every((t) => t.partitions.every((p) => p.leader >= 0 && p.isr.length === p.replicas.length))) return Date.now();
    } catch {
      // a broker still restarting: ask again
    }
    await sleep(500);
  }
  return null;
}

/** Hooks the chaos driver gives the fault runner. */
export interface BrokerFaultHooks {
  admin: Admin;
  /** Loop topics (the busiest leader is chosen among their partitions). */
  loopTopics: string[];
  log(line: string): void;
  /** Called with true when the outage starts and false once the cluster is back (the driver pauses stage kills and its liveness probe). */
  onOutage?(down: boolean): void | Promise<void>;
  /** Called every second or so while every broker is down. */
  duringOutage?(): Promise<void>;
}

const INTERNAL_TOPICS = ['__consumer_offsets', '__transaction_state'];
const IN_SYNC_TIMEOUT_MS = 120000;

/** Runs `plan` against `cluster` and returns what happened, in order. */
export async function runBrokerFaults(plan: BrokerFaultPlan, cluster: ClusterControl, hooks: BrokerFaultHooks): Promise<BrokerFault[]> {
  const { admin, log } = hooks;
  const allTopics = [...hooks.loopTopics, ...INTERNAL_TOPICS];
  const faults: BrokerFault[] = [];
  await sleep(plan.startAfterMs);

  for (let n = 1; n <= plan.leaderKills; n++) {
    const { node, led, records } = await busiestLeader(admin, hooks.loopTopics);
    const at = Date.now();
    await cluster.stop(node, 'SIGKILL');
    log(`chaos: broker kill ${n}/${plan.leaderKills}: SIGKILL node ${node} (leader of ${led.length} loop partitions holding ${records} records)`);
    await sleep(plan.downMs);
    await cluster.start(node);
    const upAt = Date.now();
    const inSyncAt = await waitInSync(admin, allTopics, IN_SYNC_TIMEOUT_MS);
    log(
      `chaos: node ${node} back after ${upAt - at} ms, every ISR full after ${inSyncAt ? inSyncAt - at : 'more than'} ${inSyncAt ? 'ms' : `${IN_SYNC_TIMEOUT_MS} ms`}`,
    );
    faults.push({ kind: 'leader-kill', node, at, upAt, inSyncAt, led, ledRecords: records });
    await sleep(plan.settleMs);
  }

  if (plan.rollingRestart) {
    for (let node = 1; node <= cluster.nodes; node++) {
      const led = await ledBy(admin, hooks.loopTopics, node);
      const at = Date.now();
      log(`chaos: rolling restart: SIGTERM node ${node} (leader of ${led.length} loop partitions)`);
      await cluster.stop(node, 'SIGTERM');
      await cluster.start(node);
      const upAt = Date.now();
      // The next broker goes down only once this one is back in every ISR: no partition loses two replicas.
      const inSyncAt = await waitInSync(admin, allTopics, IN_SYNC_TIMEOUT_MS);
      log(`chaos: node ${node} back after ${upAt - at} ms, every ISR full after ${inSyncAt ? `${inSyncAt - at} ms` : `more than ${IN_SYNC_TIMEOUT_MS} ms`}`);
      faults.push({ kind: 'rolling-restart', node, at, upAt, inSyncAt, led });
    }
    await sleep(plan.settleMs);
  }

  if (plan.outageMs !== null) {
    await hooks.onOutage?.(true);
    const at = Date.now();
    log(`chaos: whole-cluster outage: SIGKILL every broker for ${plan.outageMs / 1000} s`);
    await cluster.stop(undefined, 'SIGKILL');
    const until = Date.now() + plan.outageMs;
    while (Date.now() < until) {
      await hooks.duringOutage?.();
      await sleep(Math.min(1000, Math.max(0, until - Date.now())));
    }
    await cluster.start();
    const upAt = Date.now();
    log(`chaos: every broker back after ${upAt - at} ms`);
    await hooks.onOutage?.(false);
    const inSyncAt = await waitInSync(admin, allTopics, IN_SYNC_TIMEOUT_MS);
    faults.push({ kind: 'outage', node: null, at, upAt, inSyncAt, led: [] });
  }
  return faults;
}

/** How the loop came back after one broker fault, read from the committed log. */
export interface BrokerRecovery {
  kind: BrokerFault['kind'];
  node: number | null;
  atS: number;
  /** Node(s) stopped → healthy again. */
  downMs: number;
  /** Stop → every ISR full again (null: not seen). */
  inSyncMs: number | null;
  /** Stop → the first loop record committed after it, on any partition (the loop committing again). */
  firstCommitMs: number | null;
  /** Stop → every partition the stopped node led (for an outage: every loop partition written after it) has a record committed after it. */
  ledPartitionsCommitMs: number | null;
  /** Stop → the first outcome committed after the node(s) came back. */
  firstOutcomeAfterUpMs: number | null;
}

/**
 * Recovery of each fault from the committed records' own timestamps (CreateTime: when a stage sent
 * the record inside its transaction; only committed records are read). A partition counts as
 * committing again at its first record sent after the stop.
 */
export function brokerRecovery(faults: BrokerFault[], records: readonly RawRecord[], outcomeTopic: string, started: number): BrokerRecovery[] {
  const sorted = [...records].sort((a, b) => a.timestamp - b.timestamp);
  const outcomes = sorted.filter((r) => r.topic === outcomeTopic).map((r) => r.timestamp);
  return faults.map((f, i) => {
    const next = faults[i + 1]?.at ?? Number.POSITIVE_INFINITY;
    const after = sorted.filter((r) => r.timestamp > f.at && r.timestamp < next);
    const first = after[0];
    const firstPer = new Map<PartitionRef, number>();
    for (const r of after) {
      const ref = `${r.topic}/${r.partition}`;
      if (!firstPer.has(ref)) firstPer.set(ref, r.timestamp);
    }
    const targets = f.led.length ? f.led.filter((ref) => firstPer.has(ref)) : [...firstPer.keys()];
    const ledBack = targets.length ? Math.max(...targets.map((ref) => firstPer.get(ref)!)) - f.at : null;
    const firstOutcome = outcomes.find((t) => t > f.upAt && t < next);
    return {
      kind: f.kind,
      node: f.node,
      atS: (f.at - started) / 1000,
      downMs: f.upAt - f.at,
      inSyncMs: f.inSyncAt === null ? null : f.inSyncAt - f.at,
      firstCommitMs: first ? first.timestamp - f.at : null,
      ledPartitionsCommitMs: ledBack,
      firstOutcomeAfterUpMs: firstOutcome === undefined ? null : firstOutcome - f.at,
    };
  });
}
