/**
 * A CANCEL task ends a run that has not ended, where it stands: parked or running, it ends
 * `cancelled` with who and why; the observation of a wave that was in flight then finds the run
 * ended and dispatches nothing; a cancel of an ended or unknown run changes nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cancelTask } from '../../../client/tasks.ts';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import { allValid, loadWorld, observe, onlyOutcome, onlyRequest, onlySnapshot, task, thoughtConfig } from '../fixtures.ts';

const world = loadWorld();
const config = thoughtConfig(world);
const cancel = (thoughtId: string) => ({
  ...cancelTask(thoughtId, 'key:ops', { reason: 'duplicate ticket', source: 'api' }, 1_700_000_000_000),
  task_id: 'c-1',
});

test('a parked run ends cancelled, with who and why, and what it waited for', () => {
  const parked = onlySnapshot(onTask(task('Where is my order?'), config));
  assert.equal(parked.status, 'awaiting_input');
  const decision = onTask(cancel(parked.thought_id), config, parked);
  const outcome = onlyOutcome(decision);
  assert.deepEqual([outcome.status, outcome.reason_code], ['cancelled', 'cancelled']);
  assert.match(outcome.reason, /^cancelled \(awaiting_input\): cancelled by key:ops: duplicate ticket$/);
  assert.deepEqual([onlySnapshot(decision).status, onlySnapshot(decision).outcome_status], ['ended', 'cancelled']);
});

test('a running run ends cancelled at once; the observation of its wave in flight dispatches nothing', () => {
  const started = onTask(task('Where is my order O-20250002? alice@example.com'), config);
  const wave = onlyRequest(started);
  const running = onlySnapshot(started);
  const cancelled = onTask(cancel(running.thought_id), config, running);
  const outcome = onlyOutcome(cancelled);
  assert.equal(outcome.status, 'cancelled');
  assert.match(outcome.reason, /wave 1 was in flight and is not followed up/);
  const late = onObservation(observe(wave, allValid), config, onlySnapshot(cancelled));
  assert.deepEqual(late.outputs, [], 'no next wave, no second outcome');
});

test('a cancel of an ended or unknown run changes nothing', () => {
  const parked = onlySnapshot(onTask(task('Where is my order?'), config));
  const ended = onlySnapshot(onTask(cancel(parked.thought_id), config, parked));
  const again = onTask(cancel(parked.thought_id), config, ended);
  assert.deepEqual(again.outputs, []);
  assert.match(again.ignored!, /which is ended \(cancelled\): nothing to cancel/);
  assert.deepEqual(onTask(cancel('t-unknown'), config, undefined).outputs, []);
});
