/**
 * Every run ends: a wave a stage dead-lettered reaches Thought as the wave's observation, marked
 * with the dead letter (Action's carried on by Observation, or Observation's own), and the run ends
 * failed with the dead letter's code and where it was, instead of waiting for ever.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { observe as judge } from '../../../processors/observation/core.ts';
import { onObservation, onTask } from '../../../processors/thought/core.ts';
import type { ActionResult, DeadLetterRef, ObservationResult, RunSnapshot } from '../../../schemas/types.gen.ts';
import { allValid, loadWorld, observationConfig, observe, onlyOutcome, onlyRequest, onlySnapshot, task, thoughtConfig } from '../fixtures.ts';

const world = loadWorld();
const config = thoughtConfig(world);
const ref: DeadLetterRef = {
  code: 'UNKNOWN_TOOL',
  message: 'step M1 names unknown tool "model.chat" (catalog has crm.find_customer)',
  stage: 'action',
  topic: 'tao.thought.requests',
  partition: 4,
  offset: 1234,
};

/** The first wave of a run, and Action's record of it dead-lettered. */
function deadLetteredWave(): { snapshot: RunSnapshot; result: ActionResult } {
  const decision = onTask(task('Where is my order? alice@example.com'), config);
  const request = onlyRequest(decision);
  const result: ActionResult = { thought_id: request.thought_id, iteration: request.iteration, run: request.run, results: [], dead_letter: ref };
  return { snapshot: onlySnapshot(decision), result };
}

test('Observation carries a dead-lettered wave on to Thought: no verdict, the dead letter named', async () => {
  const { result } = deadLetteredWave();
  const obs = await judge(result, observationConfig(world));
  assert.deepEqual(obs.verdicts, []);
  assert.deepEqual(obs.dead_letter, ref);
  assert.equal(obs.iteration, result.iteration);
});

test("a dead-lettered wave ends its run failed (dead_letter), with the code and the record's topic, partition and offset in the reason and the outcome", async () => {
  const { snapshot, result } = deadLetteredWave();
  const obs = await judge(result, observationConfig(world));
  const decision = onObservation(obs, config, snapshot);
  const outcome = onlyOutcome(decision);
  assert.equal(outcome.status, 'failed');
  assert.equal(outcome.reason_code, 'dead_letter');
  assert.deepEqual(outcome.dead_letter, ref);
  assert.match(outcome.reason, /dead-lettered by action \(UNKNOWN_TOOL: step M1 names unknown tool "model\.chat"/);
  assert.match(outcome.reason, /tao\.thought\.requests\[4\]@1234/);
  assert.equal(outcome.iterations, 1);
  assert.equal(outcome.task_id, result.run.task_id, 'the outcome carries the run as its records did');
  assert.equal(onlySnapshot(decision).status, 'ended', 'the run is over: a later record of it is ignored');
});

test("Observation's own dead letter ends the run the same way, whoever drives it (a model-driven run too)", () => {
  const { snapshot, result } = deadLetteredWave();
  const own: DeadLetterRef = { ...ref, code: 'RECORD_TOO_LARGE', stage: 'observation', topic: 'tao.action.results' };
  const obs: ObservationResult = {
    thought_id: result.thought_id,
    iteration: result.iteration,
    run: { ...result.run, driver: 'react' },
    verdicts: [],
    rules_version: null,
    classifier_model: null,
    dead_letter: own,
  };
  const outcome = onlyOutcome(onObservation(obs, config, snapshot));
  assert.deepEqual([outcome.status, outcome.reason_code, outcome.dead_letter?.stage], ['failed', 'dead_letter', 'observation']);
});

test('the same dead letter decided twice writes the same records (replay re-decides it), and after the end it is ignored', async () => {
  const { snapshot, result } = deadLetteredWave();
  const obs = await judge(result, observationConfig(world));
  const first = onObservation(structuredClone(obs), config, snapshot);
  assert.deepEqual(onObservation(structuredClone(obs), config, snapshot), first);
  const again = onObservation(obs, config, onlySnapshot(first));
  assert.deepEqual(again.outputs, []);
  assert.match(again.ignored ?? '', /ended/);
});

test('the dead-lettered wave re-driven once its cause is fixed (tao dlq redrive) resumes the run: its observation is decided as if the dead letter had not been', async () => {
  const { snapshot, result } = deadLetteredWave();
  const ended = onObservation(await judge(result, observationConfig(world)), config, snapshot);
  const endedSnapshot = onlySnapshot(ended);
  assert.deepEqual(endedSnapshot.dead_letter, ref, 'the snapshot remembers the dead letter');
  const request = { thought_id: result.thought_id, iteration: result.iteration, run: result.run, steps: [] };
  const ran = observe({ ...request, steps: onlyRequest(onTask(task('Where is my order? alice@example.com'), config)).steps }, allValid);
  const resumed = onObservation(ran, config, endedSnapshot);
  assert.equal(onlyRequest(resumed).iteration, result.iteration + 1, 'the next wave is dispatched');
  // Another wave's observation, or the dead letter again, finds the run ended.
  assert.match(onObservation({ ...ran, iteration: ran.iteration + 1 }, config, endedSnapshot).ignored ?? '', /ended/);
});
