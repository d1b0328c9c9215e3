// test-needs: kafka
/**
 * A partition moving to another instance while its old owner is still alive, mid-chunk: the case
 * behind the duplicated steps the chaos bench found at a fast kill pace. Two StageRunners of one
 * group run in this process on the real broker; their handlers are held open by the test to force
 * the interleaving: the old owner (A) is removed from the group while handling (it heartbeats, but
 * cannot rejoin within the group's rebalance timeout, 12 s here, while its batch is held), the new
 * owner (B) takes every partition over and is handling too, then A tries to commit, then B.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Admin } from 'kafkajs';
import { StageMetrics } from '../../runtime/metrics.ts';
import { createLogger } from '../../runtime/log.ts';
import { StageRunner, type InputRecord, type StageDefinition } from '../../runtime/processor.ts';
import type { Task } from '../../schemas/types.gen.ts';
import { freshCluster, scanToEnd, type TestCluster } from '../helpers/cluster.ts';
import { outcome } from '../../schemas/records.ts';

const PARTITIONS = 6;

/** A latch the test opens. */
function latch(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Transactions a runner ended, committed or aborted. */
async function transactions(metrics: StageMetrics): Promise<number> {
  return (await metrics.transactions.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/** A stage that turns each task into an outcome, holding every record until `release` opens. */
function heldStage(name: string, release: Promise<void>, seen: string[], committed: string[]): StageDefinition {
  return {
    stage: 'handover',
    inputs: ['tasks'],
    outputs: ['outcomes'],
    concurrency: 1,
    partitionsConcurrently: PARTITIONS,
    maxRecordsPerTransaction: 10,
    maxInputBytes: 1024 * 1024,
    async handle(record: InputRecord) {
      seen.push(record.key);
      await release;
      const task = record.value as Task;
      return [
        {
          topic: 'outcomes',
          key: task.thought_id,
          value: outcome({ thought_id: task.thought_id, task_id: task.task_id, reason: `handled by ${name}` }),
          span: name,
        },
      ];
    },
    committed(records) {
      for (const r of records) committed.push(r.input.key);
    },
  };
}

let cluster: TestCluster;
const runners: StageRunner[] = [];

before(async () => {
  cluster = await freshCluster();
});

after(async () => {
  await Promise.all(runners.map((r) => r.stop().catch(() => undefined)));
});

/** Whether `group` has committed the end offset of every tasks partition, asked through `admin`. */
async function groupAtEnd(admin: Admin, group: string): Promise<boolean> {
  const topic = cluster.codec.topics.name('tasks');
  const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId: group, topics: [topic] })]);
  const at = new Map(committed!.partitions.map((p) => [p.partition, p.offset]));
  return ends.every((e) => at.get(e.partition) === e.high);
}

test('a partition taken over from a live owner mid-chunk is committed once: every commit follows a fence and a fresh read of the committed offsets, and the fenced owner rejoins instead of stopping', async () => {
  const { kafka, codec } = cluster;
  const metrics = { A: new StageMetrics('handover-A'), B: new StageMetrics('handover-B') };
  const resources = (name: 'A' | 'B') => ({
    kafka,
    codec,
    logger: createLogger({ runner: name }, { level: 'error' }),
    metrics: metrics[name],
    sessionTimeoutMs: 6000,
    rebalanceTimeoutMs: 12000,
  });
  const releaseA = latch();
  const releaseB = latch();
  const seenA: string[] = [];
  const seenB: string[] = [];
  const committedA: string[] = [];
  const committedB: string[] = [];

  // One task on every partition.
  const producer = kafka.producer();
  await producer.connect();
  const ids = Array.from({ length: PARTITIONS }, (_, p) => `handover-${cluster.namespace}-${p}`);
  await producer.send({
    topic: codec.topics.name('tasks'),
    messages: await Promise.all(
      ids.map(async (id, p) => ({
        key: id,
        partition: p,
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

  // A owns every partition and is handling every task when B joins.
  const a = new StageRunner(heldStage('A', releaseA.wait, seenA, committedA), resources('A'));
  runners.push(a);
  await a.start();
  await until('A to handle all six tasks', () => seenA.length === PARTITIONS, 60000);

  // A cannot rejoin while its batch is held, so after the rebalance timeout the group removes it and
  // B gets every partition.
  const b = new StageRunner(heldStage('B', releaseB.wait, seenB, committedB), resources('B'));
  runners.push(b);
  await b.start();
  await until('B to handle all six tasks', () => seenB.length === PARTITIONS, 90000);

  // Now the removed A finishes its chunks and tries to commit each of them, then B.
  releaseA.open();
  await until('A to commit or abort each chunk', async () => (await transactions(metrics.A)) >= PARTITIONS, 30000);
  releaseB.open();

  // Every task committed by one of them, and the group's committed offsets at the end of the tasks:
  // nothing is left to handle, so the outcomes log, read to its end, is final.
  await until('every task to be committed', () => new Set([...committedA, ...committedB]).size === PARTITIONS, 60000);
  const admin = kafka.admin();
  await admin.connect();
  try {
    await until('the group to have committed every task', () => groupAtEnd(admin, a.health().group), 60000);
  } finally {
    await admin.disconnect();
  }
  const records = await scanToEnd(cluster, ['outcomes']);
  const byRun = new Map<string, string[]>();
  for (const r of records) byRun.set(r.key, [...(byRun.get(r.key) ?? []), (r.value as unknown as { reason: string }).reason]);
  assert.deepEqual([...byRun.keys()].sort(), [...ids].sort(), 'every task has an outcome');
  assert.deepEqual(
    [...byRun].filter(([, reasons]) => reasons.length > 1),
    [],
    'no task was committed twice',
  );
  // Each task committed once, by whichever instance held the partition's latest fence when it committed.
  assert.deepEqual([...committedA, ...committedB].sort(), [...ids].sort());

  // The fenced instance rejoins the group (kafkajs would stop its consumer for good on a
  // non-retriable error) and gets partitions again.
  await until('A to be running with partitions again', () => a.health().running && Object.values(a.health().assigned).flat().length > 0, 60000);
});
