/**
 * The serial strategy's batch logic, without a broker: a StageRunner on fakes (./fakes.ts) whose
 * consumer the test hands batches to, one log of every transactional call and offset resolved.
 * Each test is named after the failure it guards against; the broker-level proofs are
 * test/runtime/handover.test.ts and test/loop/exactly-once.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TransientError } from '../../../runtime/errors.ts';
import { DLQ_HEADERS, type HandledRecord } from '../../../runtime/processor.ts';
import { OUTCOMES, TASKS, TASKS_DLQ, fakeBroker, fence, latch, record, stage, startRunner } from './fakes.ts';

const FENCE = fence(0);

describe('serial strategy', () => {
  test("each chunk's outputs and the offset after it commit in one transaction, and the chunk is resolved only after its commit", async () => {
    const { deliver, log, broker } = await startRunner(stage({ maxRecordsPerTransaction: 2 }));
    await deliver([record(0, 'a'), record(1, 'b'), record(2, 'c')]).done;
    assert.deepEqual(log, [
      FENCE,
      `send ${OUTCOMES}:a,b`,
      `offsets ${TASKS}[0]=2`,
      'commit',
      'resolve 1',
      `send ${OUTCOMES}:c`,
      `offsets ${TASKS}[0]=3`,
      'commit',
      'resolve 2',
    ]);
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b', 'c'],
    );
    assert.equal(broker.committed.get(`${TASKS}[0]`), 3n);
  });

  test('a failed commit aborts, drops the claim and resolves nothing; the batch fails as retriable, and its redelivery is claimed again and committed once', async () => {
    const { deliver, log, broker } = await startRunner(stage());
    broker.failCommits = 1;
    const batch = [record(0, 'a'), record(1, 'b')];
    await assert.rejects(deliver(batch).done, (err: TransientError) => err.retriable && /failed and was aborted/.test(err.message));
    assert.deepEqual(log, [FENCE, `send ${OUTCOMES}:a,b`, `offsets ${TASKS}[0]=2`, 'commit failed', 'abort']);
    assert.equal(broker.written.length, 0, 'nothing of the aborted transaction is visible');

    // kafkajs retries the batch from the last resolved offset: the dropped claim is taken again
    // (a new producer fences the old one) before anything is committed.
    log.length = 0;
    await deliver(batch).done;
    assert.deepEqual(log, [FENCE, `send ${OUTCOMES}:a,b`, `offsets ${TASKS}[0]=2`, 'commit', 'resolve 1']);
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b'],
    );
  });

  test("a failed commit of a batch's second chunk leaves the first committed and resolved; the redelivered batch skips it below the committed offset", async () => {
    const handled: string[] = [];
    const { deliver, log, broker } = await startRunner(
      stage({
        maxRecordsPerTransaction: 1,
        handle: async (r) => (handled.push(r.key), [{ topic: 'outcomes', key: r.key, value: { thought_id: r.key }, span: 'unit' }]),
      }),
    );
    broker.refuseCommit = (n) => n === 2;
    const batch = [record(0, 'a'), record(1, 'b')];
    await assert.rejects(deliver(batch).done, /failed and was aborted/);
    assert.deepEqual(
      log.filter((l) => l.startsWith('resolve')),
      ['resolve 0'],
      'only the committed chunk is resolved',
    );
    assert.equal(broker.committed.get(`${TASKS}[0]`), 1n);

    log.length = 0;
    await deliver(batch).done;
    assert.deepEqual(log, [FENCE, 'resolve 0', `send ${OUTCOMES}:b`, `offsets ${TASKS}[0]=2`, 'commit', 'resolve 1']);
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b'],
      'each record committed once',
    );
    assert.deepEqual(handled, ['a', 'b', 'b'], 'only the aborted chunk was handled again');
  });

  test('a record that fails to decode is dead-lettered in the same transaction and the partition moves on', async () => {
    const reported: HandledRecord[] = [];
    const { deliver, log, broker } = await startRunner(stage({ maxRecordsPerTransaction: 3, committed: (records) => void reported.push(...records) }));
    await deliver([record(0, 'a'), record(1, 'b', 'not json'), record(2, 'c')]).done;
    assert.deepEqual(log, [FENCE, `send ${OUTCOMES}:a,c ${TASKS_DLQ}:b`, `offsets ${TASKS}[0]=3`, 'commit', 'resolve 2']);
    const dead = broker.written.find((w) => w.topic === TASKS_DLQ);
    assert.ok(dead, 'the dead letter committed with the outputs');
    assert.equal(dead.headers[DLQ_HEADERS.errorCode], 'DECODE_FAILED');
    assert.equal(dead.headers[DLQ_HEADERS.sourceOffset], '1');
    assert.deepEqual(
      reported.map((r) => r.input.key),
      ['a', 'c'],
      'the committed hook sees the handled records, not the dead letter',
    );
  });

  test('a retriable handler error commits nothing and resolves nothing: the batch throws for kafkajs to retry it, under the same claim', async () => {
    let down = true;
    const { deliver, log, broker } = await startRunner(
      stage({
        handle: async (r) => {
          if (r.key === 'b' && down) throw new TransientError('tool down');
          return [{ topic: 'outcomes', key: r.key, value: { thought_id: r.key }, span: 'unit' }];
        },
      }),
    );
    const batch = [record(0, 'a'), record(1, 'b')];
    await assert.rejects(deliver(batch).done, /tool down/);
    assert.deepEqual(log, [FENCE], 'no transaction was begun');
    down = false;
    await deliver(batch).done;
    assert.deepEqual(log, [FENCE, `send ${OUTCOMES}:a,b`, `offsets ${TASKS}[0]=2`, 'commit', 'resolve 1'], 'the claim held (no second fence)');
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b'],
    );
  });

  test("records below a previous owner's committed offset are skipped and resolved, not handled again", async () => {
    const handled: string[] = [];
    const broker = fakeBroker([[`${TASKS}[0]`, 2n]]);
    const { deliver, log } = await startRunner(stage({ handle: async (r) => (handled.push(r.key), []) }), { broker });
    await deliver([record(0, 'a'), record(1, 'b'), record(2, 'c'), record(3, 'd')]).done;
    assert.deepEqual(handled, ['c', 'd']);
    assert.deepEqual(log, [FENCE, 'resolve 1', `offsets ${TASKS}[0]=4`, 'commit', 'resolve 3']);
  });

  test('a chunk that committed while the partition was reassigned resolves nothing, and the batch stops before its next chunk', async () => {
    const handling = latch();
    const release = latch();
    const { deliver, log, join } = await startRunner(
      stage({
        maxRecordsPerTransaction: 1,
        handle: async (r) => {
          handling.open();
          await release.wait;
          return [{ topic: 'outcomes', key: r.key, value: { thought_id: r.key }, span: 'unit' }];
        },
      }),
    );
    const { done } = deliver([record(0, 'a'), record(1, 'b')]);
    await handling.wait;
    join([0]); // a rebalance: the same partition, a new assignment
    release.open();
    await done;
    assert.deepEqual(log, [FENCE, `send ${OUTCOMES}:a`, `offsets ${TASKS}[0]=1`, 'commit'], 'committed, not resolved; the second chunk not handled');
  });

  test('records delivered again by a second batch while the first is in flight (a leader change) are not committed twice', async () => {
    const release = latch();
    const handled: string[] = [];
    const { deliver, log, broker } = await startRunner(
      stage({
        handle: async (r) => {
          handled.push(r.key);
          await release.wait;
          return [{ topic: 'outcomes', key: r.key, value: { thought_id: r.key }, span: 'unit' }];
        },
      }),
    );
    const first = deliver([record(0, 'a'), record(1, 'b')]).done;
    const again = deliver([record(0, 'a'), record(1, 'b')]).done;
    release.open();
    await Promise.all([first, again]);
    assert.deepEqual(handled, ['a', 'b'], 'the second chunk found both records below the floor when its turn came');
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b'],
    );
    assert.deepEqual(log, [FENCE, `send ${OUTCOMES}:a,b`, `offsets ${TASKS}[0]=2`, 'commit', 'resolve 1', 'resolve 1']);
  });

  test('a batch of a partition this instance does not own is neither claimed nor handled', async () => {
    const { deliver, log } = await startRunner(stage(), { assigned: [0] });
    await deliver([record(0, 'a')], { partition: 1 }).done;
    assert.deepEqual(log, []);
  });

  test('a batch that went stale (a rebalance began) stops before its next chunk', async () => {
    const { deliver, log } = await startRunner(stage({ maxRecordsPerTransaction: 1 }));
    const { done, delivery } = deliver([record(0, 'a'), record(1, 'b')], { delivery: { onResolve: () => void (delivery.stale = true) } });
    await done;
    assert.deepEqual(log, [FENCE, `send ${OUTCOMES}:a`, `offsets ${TASKS}[0]=1`, 'commit', 'resolve 0']);
  });

  test("the batch's last chunk commits past its trailing transaction markers (no lag of 1 on an idle partition)", async () => {
    const { deliver, log } = await startRunner(stage());
    await deliver([record(0, 'a')], { lastOffset: 1, highWatermark: 2 }).done;
    assert.deepEqual(log, [FENCE, `send ${OUTCOMES}:a`, `offsets ${TASKS}[0]=2`, 'commit', 'resolve 0']);
  });
});
