/**
 * Thought's decision on an observation would write a record over the loop record limit (the run's
 * state has grown past what a record holds): the runner asks the stage for a smaller record, and
 * Thought ends the run as failed (`record_too_large`) with an outcome saying why, so the run is not
 * left without one; so does a reply that resumes a parked run into a wave too large. A task whose
 * decision dispatches no wave has no smaller decision: it is dead-lettered, as before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { thoughtStage } from '../../../processors/thought/stage.ts';
import { createLogger } from '../../../runtime/log.ts';
import type { InputRecord, OutputRecord } from '../../../runtime/processor.ts';
import type { Outcome, RunSnapshot } from '../../../schemas/types.gen.ts';
import { onTask } from '../../../processors/thought/core.ts';
import { allValid, loadWorld, observe, onlyRequest, onlySnapshot, reply, task, thoughtConfig } from '../fixtures.ts';

const config = thoughtConfig(loadWorld());
const stage = thoughtStage(config, createLogger({}, { level: 'error' }));
const over = { index: 0, topic: 'thoughtRequests' as const, bytes: 1_200_000, limit: 983_040 };

function input(topic: InputRecord['topic'], key: string, value: unknown): InputRecord {
  return { topic, partition: 0, offset: '7', timestampMs: 0, key, value, headers: {} };
}

test('an observation whose next record is too large ends its run as failed, record_too_large, with the sizes in the reason', () => {
  const t = task('Where is my order? alice@example.com', 'grown');
  const obs = observe(onlyRequest(onTask(t, config)), allValid);
  const outputs = stage.fitOutputs!(input('observationResults', 'grown', obs), [], over)!;
  assert.deepEqual(
    outputs.map((o) => [o.topic, o.key, o.span]),
    [
      ['outcomes', 'grown', `thought:observation:${obs.iteration}`],
      ['thoughtRuns', 'grown', `thought:observation:${obs.iteration}`],
    ],
  );
  const outcome = outputs[0]!.value as Outcome;
  assert.deepEqual([outcome.status, outcome.reason_code, outcome.task_id, outcome.iterations], ['failed', 'record_too_large', t.task_id, obs.iteration]);
  assert.equal(
    outcome.reason,
    "the run's next thoughtRequests record would be 1200000 bytes, over the 983040-byte limit of loop records: the run has grown past what a record holds (its state carries the data of every step so far)",
  );
  const snapshot = outputs[1]!.value as RunSnapshot;
  assert.deepEqual([snapshot.status, snapshot.outcome_status, snapshot.run], ['ended', 'failed', null], 'the stored run is ended and holds no state');
});

test('a reply resuming a parked run into a wave too large ends the run as failed, record_too_large, one wave short of that wave', () => {
  const parked = onlySnapshot(onTask(task('Where is my order? I forgot my details', 'parked'), config));
  const resumed = onTask(reply('It was dave@example.com', 'parked'), config, parked);
  const wave = onlyRequest(resumed);
  const outputs = stage.fitOutputs!(input('tasks', 'parked', reply('It was dave@example.com', 'parked')), records(resumed), over)!;
  assert.deepEqual(
    outputs.map((o) => [o.topic, o.key, o.span]),
    [
      ['outcomes', 'parked', 'thought:task:reply-1-parked'],
      ['thoughtRuns', 'parked', 'thought:task:reply-1-parked'],
    ],
  );
  const outcome = outputs[0]!.value as Outcome;
  assert.deepEqual(
    [outcome.status, outcome.reason_code, outcome.task_id, outcome.iterations],
    ['failed', 'record_too_large', 'reply-1-parked', wave.iteration - 1],
  );
  assert.match(outcome.reason, /^the run's next thoughtRequests record would be 1200000 bytes/);
  const snapshot = outputs[1]!.value as RunSnapshot;
  assert.deepEqual([snapshot.status, snapshot.outcome_status, snapshot.run], ['ended', 'failed', null], 'the parked state is let go');
});

test('a task whose decision dispatches no wave has no smaller decision: null, and the runner dead-letters it', () => {
  const t = task('Where is my order? I forgot my details', 'no-wave');
  assert.equal(stage.fitOutputs!(input('tasks', 'no-wave', t), records(onTask(t, config)), over), null);
});

function records(decision: ReturnType<typeof onTask>): OutputRecord[] {
  return decision.outputs.map((o) => ({ topic: o.topic, key: o.value.thought_id, value: o.value, span: 'thought:task' }));
}
