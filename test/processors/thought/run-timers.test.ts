/**
 * Every run ends, by the scheduler's timers (TIMER tasks), decided by Thought from the records alone:
 * a parked run carries its time-to-live in its snapshot and ends `expired` when its timer comes; a
 * running run whose wave had no observation by its deadline ends `failed`; a timer set for a
 * standing the run has left (a reply came, a wave was dispatched) changes nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import { withParkedTtl } from '../../../processors/thought/forced-end.ts';
import type { SkillSet } from '../../../processors/thought/skills.ts';
import { parkingSettings } from '../../../processors/wiring/index.ts';
import type { RunSnapshot, RunState, RunTimer, Task } from '../../../schemas/types.gen.ts';
import { allValid, loadWorld, observe, onlyOutcome, onlyRequest, onlySnapshot, reply, task, thoughtConfig } from '../fixtures.ts';

const world = loadWorld();
const HOUR = 3_600_000;
const config = thoughtConfig(world, { parking: { ttlMs: 48 * HOUR, skill: () => undefined } });

/** The scheduler's TIMER task for the run as `snapshot` stands. */
function timerFor(snapshot: RunSnapshot, reason: RunTimer['reason'], n = 1): Task {
  const timer: RunTimer = { reason, status: snapshot.status, wave: snapshot.iteration, run_task_id: snapshot.task_id, due_at_ms: 1_700_100_000_000 };
  return { ...task('timer', snapshot.thought_id), task_id: `timer-${n}`, kind: 'TIMER', source: 'scheduler', timer };
}

/** A run parked awaiting input: the task names no e-mail address. */
function parked(): RunSnapshot {
  return onlySnapshot(onTask(task('Where is my order?'), config));
}

test("a parked run carries its time-to-live in its snapshot: the deployment's, or its skill's", () => {
  const snapshot = parked();
  assert.equal(snapshot.status, 'awaiting_input');
  assert.equal(snapshot.parked_ttl_ms, 48 * HOUR);
  assert.equal(onlySnapshot(onTask(task('Where is my order?'), thoughtConfig(world))).parked_ttl_ms, null, 'no parking configured: none named');
  // A running run's snapshot names none.
  assert.equal(onlySnapshot(onTask(task('Where is my order? alice@example.com'), config)).parked_ttl_ms, null);
});

test("a parked run's timer ends it expired (parked_expired), with what it still waited for; decided twice the same", () => {
  const snapshot = parked();
  const decision = onTask(timerFor(snapshot, 'parked_expired'), config, snapshot);
  const outcome = onlyOutcome(decision);
  assert.deepEqual([outcome.status, outcome.reason_code], ['expired', 'parked_expired']);
  assert.match(outcome.reason, /waited for input longer than its time-to-live of 2d .*expired at 2023-11-16T/);
  assert.deepEqual(outcome.missing_fields, ['email']);
  assert.equal(outcome.task_id, snapshot.task_id);
  const ended = onlySnapshot(decision);
  assert.deepEqual([ended.status, ended.outcome_status], ['ended', 'expired']);
  assert.deepEqual(onTask(timerFor(snapshot, 'parked_expired'), config, snapshot), decision);
  // The same timer again, now that the run has ended: nothing.
  assert.deepEqual(onTask(timerFor(snapshot, 'parked_expired'), config, ended).outputs, []);
});

test('a timer set before a reply resumed the run is stale: ignored', () => {
  const snapshot = parked();
  const resumed = onTask(reply('my e-mail is alice@example.com'), config, snapshot);
  const running = onlySnapshot(resumed);
  assert.equal(running.status, 'running');
  const stale = onTask(timerFor(snapshot, 'parked_expired'), config, running);
  assert.deepEqual(stale.outputs, []);
  assert.match(stale.ignored ?? '', /is stale: the run is running at wave 1/);
});

test("a running run's observation deadline ends it failed (observation_deadline), unless the wave was observed in time", () => {
  const decision = onTask(task('Where is my order? alice@example.com'), config);
  const snapshot = onlySnapshot(decision);
  const outcome = onlyOutcome(onTask(timerFor(snapshot, 'observation_deadline'), config, snapshot));
  assert.deepEqual([outcome.status, outcome.reason_code, outcome.iterations], ['failed', 'observation_deadline', 1]);
  assert.match(outcome.reason, /wave 1 had no observation by .*TAO_OBSERVATION_DEADLINE/);
  // The observation came first: the run is at wave 2, and the timer of wave 1 changes nothing.
  const next = onObservation(observe(onlyRequest(decision), allValid), config, snapshot);
  const moved = onlySnapshot(next);
  assert.equal(moved.iteration, 2);
  assert.deepEqual(onTask(timerFor(snapshot, 'observation_deadline'), config, moved).outputs, []);
});

test("a skill's metadata.parked-ttl overrides the deployment's for its runs (a model-driven run names its skill)", () => {
  const skills = {
    list: () => [
      { name: 'refund-request', metadata: { 'parked-ttl': '2h' } },
      { name: 'order-status', metadata: {} },
    ],
  } as unknown as SkillSet;
  const parking = parkingSettings({ TAO_PARKED_RUN_TTL: '3d' }, skills);
  assert.deepEqual([parking.ttlMs, parking.skill('refund-request'), parking.skill('order-status')], [3 * 24 * HOUR, 2 * HOUR, undefined]);
  const snapshot = parked();
  const modelRun: RunState = { ...snapshot.run!, driver: 'react', model_state_json: JSON.stringify({ skill: 'refund-request@1' }) };
  const stamp = (run: RunState) =>
    onlySnapshot(withParkedTtl({ outputs: [{ topic: 'thoughtRuns', value: { ...snapshot, run, parked_ttl_ms: null } }] }, parking)).parked_ttl_ms;
  assert.equal(stamp(modelRun), 2 * HOUR);
  assert.equal(stamp(snapshot.run!), 3 * 24 * HOUR, 'a flow run: the deployment’s');
  assert.throws(
    () => parkingSettings({}, { list: () => [{ name: 'x', metadata: { 'parked-ttl': 'soon' } }] } as unknown as SkillSet),
    /skill x: metadata.parked-ttl must be a duration/,
  );
});
