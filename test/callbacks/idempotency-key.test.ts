/**
 * Every end of a run gets its own callback: a receiver de-duplicates on the `Idempotency-Key`, so an
 * outcome that shares its task with an earlier one must not share its key. A parked run that expires
 * (its task is the parking's), and a run a dead letter ended and a re-drive resumed (its next end has
 * the same task), are announced each time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callbackIdempotencyKey } from '../../callbacks/dispatcher.ts';
import { outcome } from '../../schemas/records.ts';

const base = { thought_id: 'r', task_id: 't' };

test("a parked run's expiry is not de-duplicated against its parking", () => {
  const parking = callbackIdempotencyKey(outcome({ ...base, status: 'awaiting_input', reason_code: 'needs_input' }));
  const expiry = callbackIdempotencyKey(outcome({ ...base, status: 'expired', reason_code: 'parked_expired' }));
  assert.deepEqual([parking, expiry], ['r:t', 'r:t:expired']);
});

test("a run's end after a re-drive resumed it is not de-duplicated against its dead-letter end", () => {
  const deadLetter = callbackIdempotencyKey(outcome({ ...base, status: 'failed', reason_code: 'dead_letter', iterations: 3 }));
  const end = callbackIdempotencyKey(outcome({ ...base, status: 'completed', reason_code: 'completed', iterations: 5 }));
  assert.deepEqual([deadLetter, end], ['r:t:dead_letter:3', 'r:t']);
});
