// test-needs: kafka
/**
 * The bounded run store against the real broker (the short form of `npm run soak`): with a tiny
 * TAO_RUN_RETENTION, a few hundred runs end, Thought tombstones them in thought.runs (read back with
 * read_committed) and its store shrinks (tao_thought_store_runs), while a parked run is kept; a
 * NEW task redelivered within the retention is still ignored, and one re-read with its original
 * record time after its run was swept is ignored as late. Record time moves only with input
 * records, so the test drives it with "ticker" tasks on every partition, not with sleeps.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { followFromBeginning } from '../../runtime/follow.ts';
import { partitionForKey } from '../../runtime/partition.ts';
import { traceparentFor } from '../../runtime/tracing/ids.ts';
import type { Outcome, RunSnapshot, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { TOPICS } from '../../topics/catalog.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scan, type TestCluster } from '../helpers/cluster.ts';
import { parseMetrics, samples } from '../observability/metrics-text.ts';

const RUNS = 200;
const RETENTION_MS = 4000;
const PARTITIONS = TOPICS.tasks.partitions;

let tools: ToolServer;
let cluster: TestCluster;
let fleet: StageFleet;
let thoughtPort: number;
let producer: Producer;

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url, TAO_RUN_RETENTION: `${RETENTION_MS}ms` });
  await cluster.codec.register(['thoughtRuns']);
  fleet = new StageFleet(cluster.env);
  const [thought] = await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
  thoughtPort = thought.opsPort;
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
});
after(async () => {
  await producer?.disconnect();
  await fleet?.stop();
  await tools?.close();
});

/** A task whose run lands on `partition` of every loop topic. */
function taskOn(partition: number, text = 'Order status please: tick@example.com'): Task {
  for (;;) {
    const t = buildTask({ text, source: 'retention-test' });
    if (partitionForKey(t.thought_id, PARTITIONS) === partition) return t;
  }
}

async function storeRuns(): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${thoughtPort}/metrics`);
  const [gauge] = samples(parseMetrics(await res.text()), 'tao_thought_store_runs');
  assert.ok(gauge, 'Thought exports tao_thought_store_runs');
  return gauge.value;
}

/** The committed thought.runs records, raw (tombstones are null values), by key, in log order. */
async function changelog(): Promise<Map<string, Array<RunSnapshot | null>>> {
  const byKey = new Map<string, Array<RunSnapshot | null>>();
  const pending: Array<Promise<void>> = [];
  const follower = await followFromBeginning(cluster.kafka, [cluster.codec.topics.name('thoughtRuns')], {
    groupPrefix: cluster.codec.topics.group('retention-test'),
    onMessage: (_topic, _partition, m) => {
      const key = m.key?.toString('utf8') ?? '';
      const list = byKey.get(key) ?? [];
      byKey.set(key, list);
      const at = list.push(null) - 1;
      if (m.value !== null) pending.push(cluster.codec.decode<RunSnapshot>('thoughtRuns', m.value).then((v) => void (list[at] = v)));
    },
  });
  try {
    await follower.reachedEnd;
    await Promise.all(pending);
  } finally {
    await follower.stop();
  }
  return byKey;
}

/** Waits until `check` holds, submitting one ticker task per partition each round so record time moves on. */
async function tickUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let tickers = 0;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms (${tickers} tickers sent)`);
    await submitTasks(
      producer,
      cluster.codec,
      Array.from({ length: PARTITIONS }, (_, p) => taskOn(p)),
    );
    tickers += PARTITIONS;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return tickers;
}

/** Wave-1 requests and outcomes of `thoughtId`, once a later run on its partition has dispatched its first wave (so every task before it has been decided). */
async function decidedAfter(thoughtId: string): Promise<{ firstWaves: number; outcomes: number }> {
  const marker = taskOn(partitionForKey(thoughtId, PARTITIONS));
  await submitTasks(producer, cluster.codec, [marker]);
  const records = await scan(cluster, ['thoughtRequests', 'outcomes'], {
    until: (rs) => rs.some((r) => r.key === marker.thought_id && r.topic === 'thoughtRequests'),
    timeoutMs: 60000,
  });
  const mine = records.filter((r) => r.key === thoughtId);
  return {
    firstWaves: mine.filter((r) => r.topic === 'thoughtRequests' && (r.value as unknown as ThoughtRequest).iteration === 1).length,
    outcomes: mine.filter((r) => r.topic === 'outcomes').length,
  };
}

test(
  `${RUNS} runs with a ${RETENTION_MS} ms retention: ended runs are tombstoned and leave the store, a parked run stays, redeliveries are still ignored`,
  { timeout: 300000 },
  async () => {
    const follower = await followOutcomes(cluster);
    const parked = buildTask({ text: 'Where is my order? It never arrived.', source: 'retention-test' });
    await submitTasks(producer, cluster.codec, [parked]);
    await follower.waitUntil((o) => o.has(parked.thought_id), 60000);
    assert.equal((follower.outcomes.get(parked.thought_id)!.value as unknown as Outcome).status, 'awaiting_input');

    const runs = Array.from({ length: RUNS }, (_, i) => buildTask({ text: `Order status please: user${i}@example.com`, source: 'retention-test' }));
    // Sent as the loop would get them: in small bursts (the first write of each keeps its record time for the re-read below).
    for (let i = 0; i < runs.length; i += 20) await submitTasks(producer, cluster.codec, runs.slice(i, i + 20));
    await follower.waitUntil((o) => runs.every((t) => o.has(t.thought_id)), 240000);
    const statuses = runs.map((t) => (follower.outcomes.get(t.thought_id)!.value as unknown as Outcome).status);
    assert.ok(
      statuses.every((s) => s === 'completed'),
      `every run completed: ${[...new Set(statuses)].join(', ')}`,
    );

    // A NEW task redelivered right after its run ended (well within the retention): ignored, as before retention existed.
    const last = runs[runs.length - 1]!;
    await submitTasks(producer, cluster.codec, [{ ...last, task_id: `${last.task_id}-again` }]);
    assert.deepEqual(await decidedAfter(last.thought_id), { firstWaves: 1, outcomes: 1 }, 'the redelivery within the retention started nothing');
    await follower.stop();

    const before = await storeRuns();

    // Record time moves on: every ended run gets its tombstone, written by Thought in its transactions.
    await tickUntil(async () => {
      const log = await changelog();
      return runs.every((t) => log.get(t.thought_id)?.at(-1) === null);
    }, 120000);
    const log = await changelog();
    for (const t of runs) {
      const history = log.get(t.thought_id)!;
      assert.equal(history.at(-2)?.status, 'ended', `run ${t.thought_id}: the tombstone follows its ended snapshot`);
      assert.equal(history.filter((v) => v === null).length, 1, `run ${t.thought_id}: one tombstone`);
    }
    const parkedHistory = log.get(parked.thought_id)!;
    assert.equal(parkedHistory.at(-1)?.status, 'awaiting_input', 'the parked run was written before every swept run, and is not swept');
    assert.ok(!parkedHistory.includes(null));

    // The store follows: the swept runs are out of memory (what is left: the parked run and the tickers of the last seconds).
    await tickUntil(async () => (await storeRuns()) < RUNS / 4, 60000);
    const afterSweep = await storeRuns();
    assert.ok(afterSweep < RUNS / 4, `the store held ${before} runs after the ${RUNS} ended, ${afterSweep} once record time moved on`);

    // The first run's task read again with its original time (an offset reset, a re-read of the topic) after its run was swept: ignored as late.
    const first = runs[0]!;
    await producer.send({
      topic: cluster.codec.topics.name('tasks'),
      acks: -1,
      messages: [
        {
          key: first.thought_id,
          value: await cluster.codec.encode('tasks', first),
          timestamp: String(first.submitted_at_ms),
          headers: { traceparent: traceparentFor(first.thought_id, 'task:reread') },
        },
      ],
    });
    assert.deepEqual(await decidedAfter(first.thought_id), { firstWaves: 1, outcomes: 1 }, 'the late re-read started nothing');
  },
);
