/**
 * A run whose next record would be over the loop records' limit ends `failed` / `record_too_large`,
 * and the outcome says which record and by how much in fields, so `replay --verify` re-decides it
 * from data, not from the wording of a message. Outcomes written before those fields existed are
 * still read from their reason text.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callKey, endTooLarge, tooLargeOf } from '../../../processors/thought/run-end.ts';
import type { Outcome } from '../../../schemas/types.gen.ts';
import { flowPlan, keyOf, loadWorld, runState } from '../fixtures.ts';

const over = { topic: 'thoughtRequests' as const, bytes: 1_300_000, limit: 1_000_000 };

test('the outcome of a run grown too large carries the record, its size and the limit as fields', () => {
  const value = {
    thought_id: 't-1',
    iteration: 2,
    run: runState(flowPlan(loadWorld())),
    verdicts: [],
    rules_version: null,
    classifier_model: null,
    dead_letter: null,
  };
  const decision = endTooLarge({ topic: 'observationResults', value }, [], over);
  const outcome = decision!.outputs.find((o) => o.topic === 'outcomes')!.value as Outcome;
  assert.deepEqual([outcome.status, outcome.reason_code, outcome.too_large], ['failed', 'record_too_large', over]);
  assert.deepEqual(tooLargeOf(outcome), over);
});

test('the fields are read whatever the reason says: rewording the message does not change what replay re-decides', () => {
  assert.deepEqual(tooLargeOf({ reason: 'the run outgrew its records', too_large: over }), over);
});

test('an outcome recorded before the fields is read from its reason; any other outcome has nothing to read', () => {
  const legacy =
    "the run's next outcomes record would be 2000000 bytes, over the 1000000-byte limit of loop records: the run has grown past what a record holds";
  assert.deepEqual(tooLargeOf({ reason: legacy, too_large: null }), { topic: 'outcomes', bytes: 2_000_000, limit: 1_000_000 });
  assert.equal(tooLargeOf({ reason: 'done', too_large: null }), null);
});

test("a call's idempotency key is the run, the step and the call (tool, canonical input): not the wave, not the key order", () => {
  const run = { thoughtId: 'r-1' };
  const refund = { order_id: 'O-1', amount_cents: 500 };
  const key = callKey(run, 'S2', 'refunds.create', refund);
  assert.equal(key, keyOf('r-1', 'S2', 'refunds.create', refund));
  assert.equal(callKey(run, 'S2', 'refunds.create', { amount_cents: 500, order_id: 'O-1' }), key, 'the same input written in another key order');
  const others = [
    callKey({ thoughtId: 'r-2' }, 'S2', 'refunds.create', refund),
    callKey(run, 'S3', 'refunds.create', refund),
    callKey(run, 'S2', 'refunds.create_v2', refund),
    callKey(run, 'S2', 'refunds.create', { ...refund, amount_cents: 501 }),
    callKey(run, 'S2', 'refunds.create', refund, 2),
  ];
  assert.equal(new Set([key, ...others]).size, 6, 'another run, step, tool, input or polling round is another call');
  assert.equal(callKey(run, 'S2', 'refunds.create', refund, 1), key, 'round 1 is the call itself');
});
