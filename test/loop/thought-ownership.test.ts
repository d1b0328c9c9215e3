// test-needs: kafka
/**
 * Thought's partitions moving between instances under load, and each instance's store holding only
 * its own partitions' runs (runtime/state-store.ts). Two Thought instances run the loop with Action
 * and Observation; while runs are in flight a third one joins (each of the first two lets a
 * partition go, the newcomer restores its partitions from thought.runs), then the first one stops
 * (the two left restore the partitions it had). Runs parked awaiting input before the moves are
 * answered after them, so their new owner must have restored their snapshots. Every run ends once,
 * no step is committed twice, and each instance's store holds exactly the runs of the partitions it
 * is assigned.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { LoopRecord } from '../../client/watch.ts';
import type { ActionResult, ObservationResult, Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd, type TestCluster } from '../helpers/cluster.ts';

/** Runs submitted at most while the partitions move (the test fails if the moves take longer). */
const MAX_RUNS = 200;
const PARKED = 12;
const PARTITIONS = 6;

/** Identities of the committed records: a duplicate means a step (or an outcome of one status) was written twice. */
function duplicates(records: LoopRecord[]): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  const add = (id: string) => (seen.has(id) ? dups.push(id) : seen.add(id));
  for (const r of records) {
    if (r.topic === 'thoughtRequests') {
      const v = r.value as unknown as ThoughtRequest;
      for (const s of v.steps) add(`request:${r.key}:${v.iteration}:${s.step_id}`);
    } else if (r.topic === 'actionResults') {
      const v = r.value as unknown as ActionResult;
      for (const s of v.results) add(`result:${r.key}:${v.iteration}:${s.step_id}`);
    } else if (r.topic === 'observationResults') {
      const v = r.value as unknown as ObservationResult;
      for (const s of v.verdicts) add(`verdict:${r.key}:${v.iteration}:${s.step_id}`);
    } else if (r.topic === 'outcomes') add(`outcome:${r.key}:${(r.value as unknown as Outcome).status}`);
  }
  return dups;
}

type Health = { assigned: Record<string, number[]>; store?: { partitions: number[]; entries: number } };

async function health(opsPort: number): Promise<Health> {
  return (await (await fetch(`http://127.0.0.1:${opsPort}/health`, { signal: AbortSignal.timeout(5000) })).json()) as Health;
}

let tools: ToolServer;
let fleet: StageFleet;
let cluster: TestCluster;

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  fleet = new StageFleet(cluster.env);
});
after(async () => {
  await fleet?.stop();
  await tools?.close();
});

test(
  'partitions moving between Thought instances under load lose no run and duplicate no step; each store holds only its partitions',
  { timeout: 480000 },
  async () => {
    const first = await fleet.start('thought');
    const second = await fleet.start('thought');
    await Promise.all([fleet.start('action'), fleet.start('observation')]);
    const follower = await followOutcomes(cluster);
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    const status = (id: string) => (follower.outcomes.get(id)?.value as unknown as Outcome | undefined)?.status;

    // Runs parked awaiting input (no e-mail in the text) before any partition moves.
    const parked = Array.from({ length: PARKED }, (_, i) =>
      buildTask({ text: `Where is my order? (${i})`, source: 'own', external_id: `${cluster.namespace}-p${i}` }),
    );
    await submitTasks(producer, cluster.codec, parked);
    await fleet.explained(
      follower.waitUntil(() => parked.every((t) => status(t.thought_id) === 'awaiting_input'), 120000),
      cluster,
    );

    // Runs keep coming (2 every 500 ms) from before the third instance joins until the first one has
    // stopped, so both moves happen with runs in flight.
    const tasks: Task[] = [];
    const completed = () => tasks.filter((t) => status(t.thought_id) === 'completed').length;
    const inFlight = () => tasks.length - completed();
    let submitting = true;
    const submitter = (async () => {
      while (submitting) {
        assert.ok(tasks.length < MAX_RUNS, `the moves took longer than ${MAX_RUNS} runs' submission`);
        const batch = [0, 1].map((i) => buildTask({ text: `order status for user${tasks.length + i}@example.com`, source: 'own' }));
        tasks.push(...batch);
        await submitTasks(producer, cluster.codec, batch);
        await new Promise((r) => setTimeout(r, 500));
      }
    })();

    await fleet.explained(
      follower.waitUntil(() => completed() >= 8, 150000),
      cluster,
    );
    // Before each move, a burst of runs, so it happens with runs in flight whatever the machine's
    // speed (the steady submission alone can drain between two batches).
    const burst = async (name: string) => {
      const runs = Array.from({ length: 6 }, (_, i) => buildTask({ text: `order status for ${name}${i}@example.com`, source: 'own' }));
      tasks.push(...runs);
      await submitTasks(producer, cluster.codec, runs);
      return inFlight();
    };
    const inFlightAtJoin = await burst('join');
    const third = await fleet.start('thought');
    assert.ok(inFlightAtJoin > 0, 'runs in flight when the third instance joined');
    const before = completed();
    await fleet.explained(
      follower.waitUntil(() => completed() >= before + 8, 150000),
      cluster,
    );
    const inFlightAtStop = await burst('stop');
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    assert.ok(inFlightAtStop > 0, 'runs in flight when the first instance stopped');
    submitting = false;
    await submitter;

    // The parked runs' partitions have moved at least once since they parked: their new owners must have restored them.
    await submitTasks(
      producer,
      cluster.codec,
      parked.map((t, i) => buildTask({ text: `it is user${1000 + i}@example.com`, thought_id: t.thought_id })),
    );
    await producer.disconnect();
    const all = [...tasks, ...parked];
    await fleet.explained(
      follower.waitUntil(() => all.every((t) => status(t.thought_id) === 'completed'), 240000),
      cluster,
    );
    await follower.stop();

    const records = await scanToEnd(cluster, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']);
    const outcomes = records.filter((r) => r.topic === 'outcomes');
    assert.equal(outcomes.length, tasks.length + 2 * PARKED, 'one outcome per run, and one more per parked run (its awaiting_input)');
    assert.deepEqual(
      outcomes.map((r) => r.value as unknown as Outcome).filter((o) => o.status !== 'completed' && o.status !== 'awaiting_input'),
      [],
    );
    const waves = records.filter((r) => r.topic === 'thoughtRequests').length;
    assert.equal(records.filter((r) => r.topic === 'actionResults').length, waves, 'each planned wave answered by one committed result');
    assert.equal(records.filter((r) => r.topic === 'observationResults').length, waves, 'each result verified by one committed verdict record');
    assert.deepEqual(duplicates(records), []);

    // Each instance's store: the runs of the partitions it is assigned, and nothing else.
    const partitionOf = new Map(records.filter((r) => r.topic === 'tasks').map((r) => [r.key, r.partition]));
    const runsOn = (partitions: number[]) => [...partitionOf.values()].filter((p) => partitions.includes(p)).length;
    let last = '';
    const deadline = Date.now() + 60000;
    for (;;) {
      const reports = await Promise.all([second, third].map((i) => health(i.opsPort)));
      const views = reports.map((h) => {
        const assigned = [...new Set(Object.values(h.assigned).flat())].sort((a, b) => a - b);
        return { assigned, held: h.store?.partitions ?? [], entries: h.store?.entries ?? -1, expected: runsOn(assigned) };
      });
      last = JSON.stringify(views);
      const covered = views.flatMap((v) => v.assigned).sort((a, b) => a - b);
      const settled =
        covered.length === PARTITIONS && covered.every((p, i) => p === i) && views.every((v) => v.assigned.length > 0 && v.assigned.length < PARTITIONS);
      if (settled && views.every((v) => JSON.stringify(v.held) === JSON.stringify(v.assigned) && v.entries === v.expected)) break;
      assert.ok(Date.now() < deadline, `each store should hold exactly its assigned partitions' runs (${tasks.length + PARKED} in all): ${last}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  },
);
