/**
 * whileHeartbeating: the group member stays alive through a long claim or chunk (kafkajs sends no
 * heartbeat while a batch is handled), and stops heartbeating once the work has settled. Timers are
 * mocked: the test moves the clock instead of waiting. (mapLimit: test/runtime/map-limit.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { whileHeartbeating } from '../../runtime/concurrency.ts';

function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

test('heartbeats every interval while the work runs, returns its result, and stops heartbeating after', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let beats = 0;
  const work = deferred<string>();
  const running = whileHeartbeating(work.promise, async () => void beats++, 1000);
  t.mock.timers.tick(999);
  assert.equal(beats, 0);
  t.mock.timers.tick(1);
  t.mock.timers.tick(2000);
  assert.equal(beats, 3, 'one heartbeat per elapsed interval');
  work.resolve('committed');
  assert.equal(await running, 'committed');
  t.mock.timers.tick(10000);
  assert.equal(beats, 3, 'no heartbeat once the work has settled');
});

test('a failed heartbeat does not fail the work, and a failed work stops the heartbeats and surfaces its own error', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let beats = 0;
  const work = deferred<void>();
  const running = whileHeartbeating(
    work.promise,
    async () => {
      beats++;
      throw new Error('The group is rebalancing');
    },
    500,
  );
  t.mock.timers.tick(1500);
  await new Promise((r) => setImmediate(r)); // the rejected heartbeats settle (an unhandled one would fail the test)
  assert.equal(beats, 3);
  work.reject(new Error('transaction aborted'));
  await assert.rejects(running, /transaction aborted/);
  t.mock.timers.tick(5000);
  assert.equal(beats, 3);
});
