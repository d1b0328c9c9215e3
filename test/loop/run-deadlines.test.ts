// test-needs: kafka
/**
 * Every run ends, by the scheduler's timers, on the real broker and registry with Thought,
 * Observation and `tao run scheduler` as processes (no Action: a dispatched wave is never observed).
 * A run parked awaiting input expires on its deadline (TAO_PARKED_RUN_TTL) with an `expired`
 * outcome; a run whose wave has no observation by TAO_OBSERVATION_DEADLINE ends `failed`. Each end
 * comes from a TIMER task the scheduler wrote (Thought reads no clock), so `replay --verify`
 * re-decides both runs from the log without drift.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { LoopRecord } from '../../client/watch.ts';
import type { Outcome, Task } from '../../schemas/types.gen.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd, type TestCluster } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';

const TTL_MS = 4000;
let cluster: TestCluster;
let fleet: StageFleet;

before(async () => {
  cluster = await freshCluster({ TAO_PARKED_RUN_TTL: `${TTL_MS}ms`, TAO_OBSERVATION_DEADLINE: `${TTL_MS}ms`, TAO_SCHEDULER_TICK_MS: '200ms' });
  fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('observation'), fleet.start('scheduler')]);
});
after(async () => {
  await fleet?.stop();
});

/** Submits `task` and resolves with the run's outcome records, in order, once the last has `status`. */
async function runUntil(task: Task, status: Outcome['status']): Promise<LoopRecord[]> {
  const follower = await followOutcomes(cluster);
  try {
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, [task]);
    await producer.disconnect();
    await fleet.explained(
      follower.waitUntil((o) => (o.get(task.thought_id)?.value as unknown as Outcome | undefined)?.status === status, 60000),
      cluster,
    );
  } finally {
    await follower.stop();
  }
  const log = await scanToEnd(cluster, ['outcomes', 'tasks']);
  return log.filter((r) => r.key === task.thought_id);
}

test(
  'a run parked awaiting input expires on its deadline: outcome expired (parked_expired), from a TIMER task of the scheduler; replay --verify finds no drift',
  { timeout: 120000 },
  async () => {
    const task = buildTask({ text: 'Where is my order? I have waited for weeks.', source: 'deadlines' });
    const records = await runUntil(task, 'expired');
    const outcomes = records.filter((r) => r.topic === 'outcomes');
    const [parked, expired] = outcomes.map((r) => r.value as unknown as Outcome);
    assert.equal(outcomes.length, 2, JSON.stringify(outcomes.map((o) => o.value)));
    assert.deepEqual([parked!.status, parked!.reason_code], ['awaiting_input', 'needs_input']);
    assert.deepEqual([expired!.status, expired!.reason_code], ['expired', 'parked_expired']);
    assert.deepEqual(expired!.missing_fields, parked!.missing_fields);
    assert.match(expired!.reason, /waited for input longer than its time-to-live of 4s/);
    // On its deadline: not before the time-to-live (counted from the record time of the input that
    // parked the run, its task), and within a few ticks after it.
    const parkedBy = records.find((r) => r.topic === 'tasks' && (r.value as unknown as Task).kind === 'NEW')!;
    const waited = outcomes[1]!.timestampMs! - parkedBy.timestampMs!;
    assert.ok(waited >= TTL_MS && waited < TTL_MS + 10000, `expired ${waited} ms after it parked`);
    const timers = records.filter((r) => r.topic === 'tasks' && (r.value as unknown as Task).kind === 'TIMER').map((r) => r.value as unknown as Task);
    assert.equal(timers.length, 1, 'one TIMER task');
    assert.deepEqual([timers[0]!.source, timers[0]!.timer?.reason, timers[0]!.timer?.status], ['scheduler', 'parked_expired', 'awaiting_input']);

    const { run, drift } = await verifyWithoutModel(task.thought_id, cluster.env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(drift, false, run.stdout);
  },
);

test(
  'a run whose wave is never observed is ended failed (observation_deadline) by the scheduler; replay --verify finds no drift',
  { timeout: 120000 },
  async () => {
    const task = buildTask({ text: 'Where is my order? deadline@example.com', source: 'deadlines' });
    const records = await runUntil(task, 'failed');
    const outcomes = records.filter((r) => r.topic === 'outcomes').map((r) => r.value as unknown as Outcome);
    assert.equal(outcomes.length, 1);
    assert.deepEqual([outcomes[0]!.status, outcomes[0]!.reason_code, outcomes[0]!.iterations], ['failed', 'observation_deadline', 1]);
    assert.match(outcomes[0]!.reason, /wave 1 had no observation by/);
    const timer = records.find((r) => r.topic === 'tasks' && (r.value as unknown as Task).kind === 'TIMER')?.value as unknown as Task | undefined;
    assert.deepEqual([timer?.timer?.reason, timer?.timer?.status, timer?.timer?.wave], ['observation_deadline', 'running', 1]);

    const { run, drift } = await verifyWithoutModel(task.thought_id, cluster.env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(drift, false, run.stdout);
  },
);
