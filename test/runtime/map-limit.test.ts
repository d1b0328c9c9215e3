import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mapLimit } from '../../runtime/concurrency.ts';

test('mapLimit keeps input order with at most `limit` calls in flight', async () => {
  let inFlight = 0;
  let most = 0;
  const out = await mapLimit([5, 1, 4, 2, 3], 2, async (n) => {
    most = Math.max(most, ++inFlight);
    await new Promise((r) => setTimeout(r, n * 5));
    inFlight--;
    return n * 10;
  });
  assert.deepEqual(out, [50, 10, 40, 20, 30]);
  assert.equal(most, 2);
});

test('after a call fails mapLimit starts no new call, and throws the first error only once the calls in flight have settled', async () => {
  const started: number[] = [];
  const settled: number[] = [];
  await assert.rejects(
    mapLimit([1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n);
      await new Promise((r) => setTimeout(r, n === 1 ? 5 : 40));
      settled.push(n);
      if (n === 1) throw new Error('first fails');
      return n;
    }).finally(() => assert.deepEqual(settled.sort(), [1, 2], 'the call in flight when the first failed had settled before the error surfaced')),
    /first fails/,
  );
  assert.deepEqual(started, [1, 2], 'nothing started after the failure');
});
