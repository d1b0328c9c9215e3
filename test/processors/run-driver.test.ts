/**
 * Who drives a run is a field of the run state (`RunState.driver`), set when the run starts; runs
 * recorded before the field are read by the one compatibility path (processors/run-driver.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isModelStep, modelTurnOf, runDriver } from '../../processors/run-driver.ts';
import { onTask, type ThoughtDecision } from '../../processors/thought/core.ts';
import { ContractViolation } from '../../runtime/errors.ts';
import type { ThoughtRequest } from '../../schemas/types.gen.ts';
import { loadWorld, task, thoughtConfig } from './fixtures.ts';

const state = (mode?: string) => JSON.stringify({ skill: 'order-status@1', turns: 1, ...(mode ? { mode } : {}) });

test('a run with the field is driven as the field says, whatever its model state', () => {
  assert.equal(runDriver({ driver: 'flow', model_state_json: null }), 'flow');
  assert.equal(runDriver({ driver: 'react', model_state_json: state('react') }), 'react');
  assert.equal(runDriver({ driver: 'plan-replan', model_state_json: state('react') }), 'plan-replan');
  assert.throws(
    () => runDriver({ driver: 'oracle', model_state_json: null }),
    (err: unknown) => err instanceof ContractViolation && /run\.driver is "oracle"/.test(err.message),
  );
});

test('a run recorded before the field (driver null) is read as before: by its model state, react when the state names no mode', () => {
  assert.equal(runDriver({ driver: null, model_state_json: null }), 'flow');
  assert.equal(runDriver({ driver: null, model_state_json: state('plan-replan') }), 'plan-replan');
  assert.equal(runDriver({ driver: null, model_state_json: state('react') }), 'react');
  assert.equal(runDriver({ driver: null, model_state_json: state() }), 'react');
  assert.throws(() => runDriver({ driver: null, model_state_json: '[' }), ContractViolation);
});

test("a model turn's step is M<n>; its calls and the steps of a plan it wrote are not", () => {
  assert.deepEqual(['M1', 'M12', 'M1_S1', 'M2_0', 'S1', 'm1', 'M'].map(isModelStep), [true, true, false, false, false, false, false]);
  assert.deepEqual(['M1', 'M12', 'M1_S1', 'S1'].map(modelTurnOf), [1, 12, null, null]);
});

test("Thought records a flow's run as driven by its flow when the run starts", () => {
  const world = loadWorld();
  const d: ThoughtDecision = onTask(task('Where is my order? alice@example.com'), thoughtConfig(world));
  const wave = d.outputs.find((o) => o.topic === 'thoughtRequests')?.value as ThoughtRequest;
  assert.equal(wave.run.driver, 'flow');
});
