/**
 * Limiter: an instance-wide cap on records handled at once (Action's TAO_ACTION_CONCURRENCY),
 * shared by the chunks of all the instance's partitions.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limiter } from '../../runtime/concurrency.ts';

function deferred(): { promise: Promise<void>; resolve(): void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test('never runs more than the limit at once, across callers, and starts waiters in arrival order', async () => {
  const limiter = new Limiter(2);
  const gates = Array.from({ length: 5 }, deferred);
  const started: number[] = [];
  let peak = 0;
  const calls = gates.map((g, i) =>
    limiter.run(async () => {
      started.push(i);
      peak = Math.max(peak, limiter.inProgress);
      await g.promise;
      return i;
    }),
  );
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(started, [0, 1], 'only two start');
  gates[1]!.resolve();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(started, [0, 1, 2], 'a freed place goes to the first waiter');
  for (const g of gates) g.resolve();
  assert.deepEqual(await Promise.all(calls), [0, 1, 2, 3, 4]);
  assert.equal(peak, 2);
  assert.equal(limiter.inProgress, 0, 'every place given back');
});

test('a call that throws frees its place and its error reaches the caller', async () => {
  const limiter = new Limiter(1);
  await assert.rejects(
    limiter.run(async () => {
      throw new Error('tool down');
    }),
    /tool down/,
  );
  assert.equal(await limiter.run(async () => 'next'), 'next');
  assert.equal(limiter.inProgress, 0);
});

test('refuses a limit that is not a positive integer, naming it', () => {
  assert.throws(() => new Limiter(0), /limit must be a positive integer, got 0/);
  assert.throws(() => new Limiter(1.5), /limit must be a positive integer/);
});
