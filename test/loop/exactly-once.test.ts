// test-needs: kafka
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { LoopRecord } from '../../client/watch.ts';
import type { ActionResult, ObservationResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd } from '../helpers/cluster.ts';

const RUNS = 120;

/** Identities of the committed records: a duplicate means a step was written twice. */
function duplicates(records: LoopRecord[]): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  const add = (id: string) => (seen.has(id) ? dups.push(id) : seen.add(id));
  for (const r of records) {
    switch (r.topic) {
      case 'tasks':
        add(`task:${r.key}`);
        break;
      case 'thoughtRequests':
        for (const s of (r.value as unknown as ThoughtRequest).steps) add(`request:${r.key}:${(r.value as unknown as ThoughtRequest).iteration}:${s.step_id}`);
        break;
      case 'actionResults':
        for (const s of (r.value as unknown as ActionResult).results) add(`result:${r.key}:${(r.value as unknown as ActionResult).iteration}:${s.step_id}`);
        break;
      case 'observationResults':
        for (const v of (r.value as unknown as ObservationResult).verdicts)
          add(`verdict:${r.key}:${(r.value as unknown as ObservationResult).iteration}:${v.step_id}`);
        break;
      case 'outcomes':
        add(`outcome:${r.key}`);
        break;
    }
  }
  return dups;
}

for (const victim of ['action', 'thought'] as const) {
  describe(`kill -9 of the ${victim} process during a ${RUNS}-run load`, () => {
    let tools: ToolServer;
    let fleet: StageFleet;

    before(async () => {
      tools = await startToolServer({ port: 0 });
    });
    after(async () => {
      await fleet?.stop();
      await tools?.close();
    });

    test('every run completes and no (thought_id, iteration, step) is committed twice', { timeout: 420000 }, async () => {
      const cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
      fleet = new StageFleet(cluster.env);
      const procs = { thought: await fleet.start('thought'), action: await fleet.start('action'), observation: await fleet.start('observation') };
      const follower = await followOutcomes(cluster);
      const tasks = Array.from({ length: RUNS }, (_, i) =>
        buildTask({ text: `order status for user${i}@example.com`, source: 'eos', external_id: `${cluster.namespace}-${i}` }),
      );
      const producer = cluster.kafka.producer({ idempotent: true });
      await producer.connect();
      // Tasks arrive in waves so the kill lands while runs are at every stage of their loop.
      for (let i = 0; i < RUNS; i += 20) await submitTasks(producer, cluster.codec, tasks.slice(i, i + 20));
      await producer.disconnect();

      await fleet.explained(follower.waitFor(RUNS / 5, 150000), cluster);
      const before = follower.outcomes.size;
      assert.ok(before < RUNS, `the kill must land mid-flight (${before} of ${RUNS} runs already done)`);
      procs[victim].child.kill('SIGKILL');
      assert.equal(await procs[victim].exited, 'SIGKILL');
      await fleet.start(victim);

      await fleet.explained(follower.waitFor(RUNS, 150000), cluster);
      await follower.stop();
      const outcomes = [...follower.outcomes.values()].map((r) => r.value as unknown as Outcome);
      assert.equal(outcomes.length, RUNS);
      assert.deepEqual(
        outcomes.filter((o) => o.status !== 'completed').map((o) => `${o.thought_id}: ${o.reason}`),
        [],
      );

      const records = await scanToEnd(cluster, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']);
      assert.equal(records.filter((r) => r.topic === 'outcomes').length, RUNS, 'one committed outcome per run');
      // Three waves per run, more when a step times out on a loaded machine and Thought plans a retry
      // wave: either way every planned wave is answered by exactly one committed result.
      const waves = records.filter((r) => r.topic === 'thoughtRequests').length;
      assert.ok(waves >= RUNS * 3, `at least three waves per run (${waves})`);
      assert.equal(records.filter((r) => r.topic === 'actionResults').length, waves, 'each planned wave answered by one committed result');
      assert.equal(records.filter((r) => r.topic === 'observationResults').length, waves, 'each result verified by one committed verdict record');
      assert.deepEqual(duplicates(records), []);
    });
  });
}
