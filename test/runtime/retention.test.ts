/**
 * The retention rules of a state store, without a broker: which entries a sweep tombstones, and
 * which inputs of an unknown key are too late to act on. Everything is in record time (the numbers
 * below are record timestamps in ms), never the wall clock.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { expiredKeys, lateInput, noteWrite, type ExpiryIndex } from '../../runtime/retention.ts';

const RETENTION = 1000;

describe('expiredKeys', () => {
  test('an entry expires once its write is a whole retention behind the stream time, not a millisecond before', () => {
    const index: ExpiryIndex = new Map([['run-a', 5000]]);
    assert.deepEqual(expiredKeys(index, 5999, RETENTION, 10), []);
    assert.deepEqual(expiredKeys(index, 6000, RETENTION, 10), ['run-a']);
  });

  test('oldest first, at most `limit` per sweep: the rest wait for the next transaction', () => {
    const index: ExpiryIndex = new Map();
    for (let i = 0; i < 5; i++) noteWrite(index, `run-${i}`, 1000 + i, true);
    assert.deepEqual(expiredKeys(index, 10_000, RETENTION, 2), ['run-0', 'run-1']);
  });

  test('only expirable values are indexed; a key written again (a parked run resumed, then ended) counts from its last write', () => {
    const index: ExpiryIndex = new Map();
    noteWrite(index, 'parked', 1000, false);
    noteWrite(index, 'ended-early', 1100, true);
    noteWrite(index, 'resumed', 1200, true);
    noteWrite(index, 'resumed', 4000, true);
    assert.deepEqual(expiredKeys(index, 3000, RETENTION, 10), ['ended-early'], 'a parked run is never swept; the resumed run ended at 4000');
    noteWrite(index, 'ended-early', 3000, false);
    assert.deepEqual(expiredKeys(index, 3000, RETENTION, 10), [], 'a tombstone or a non-expirable write takes the key out');
  });

  test('a key the transaction in progress writes is left for a later sweep, and does not stop the others', () => {
    const index: ExpiryIndex = new Map([
      ['busy', 1000],
      ['idle', 1001],
    ]);
    assert.deepEqual(
      expiredKeys(index, 5000, RETENTION, 10, (k) => k === 'busy'),
      ['idle'],
    );
  });

  test('the sweep stops at the first entry written too recently (write order is record order, roughly)', () => {
    const index: ExpiryIndex = new Map([
      ['late-stamped', 9000],
      ['older', 1000],
    ]);
    assert.deepEqual(expiredKeys(index, 5000, RETENTION, 10), [], 'taken once the entry in front of it has expired');
    assert.deepEqual(expiredKeys(index, 10_000, RETENTION, 10), ['late-stamped', 'older']);
  });
});

describe('lateInput', () => {
  test('an input a whole retention behind the stream time is late, with a reason naming both times and the retention', () => {
    const reason = lateInput(1000, 1000 + 7 * 86_400_000, 7 * 86_400_000);
    assert.match(
      reason ?? '',
      /^record time 1970-01-01T00:00:01\.000Z is 7 d behind the partition's record time 1970-01-08T00:00:01\.000Z, at or beyond the run retention \(7 d\)/,
    );
  });

  test('an input within the retention, or on a partition with no record time yet, is not late', () => {
    assert.equal(lateInput(1001, 2000, RETENTION), null);
    assert.equal(lateInput(0, null, RETENTION), null);
  });

  test('late exactly when a run it could have started could have been swept (both use written + retention <= stream time)', () => {
    // A task at t starts a run that ends at e >= t; the run is swept once e + R <= s, so then t + R <= s too.
    for (const [t, e, s] of [
      [1000, 1000, 2000],
      [1000, 1500, 2500],
      [1000, 1999, 2999],
    ] as const) {
      const swept = expiredKeys(new Map([['run', e]]), s, RETENTION, 1).length === 1;
      assert.equal(swept, true);
      assert.notEqual(lateInput(t, s, RETENTION), null, `task at ${t}, run ended at ${e}, swept at stream time ${s}`);
    }
  });
});
