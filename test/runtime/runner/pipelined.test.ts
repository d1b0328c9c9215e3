/**
 * The pipelined strategy's batch logic, without a broker: a StageRunner of a pipelined stage on
 * fakes (./fakes.ts). Chunks are resolved as they are handed on, commit in offset order, and a
 * failure pauses the partition, seeks it back to its first uncommitted offset and resumes it (after
 * the first recovery's 300 ms). The broker-level proofs are test/processors/action/recovery.test.ts
 * and pipeline.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TransientError } from '../../../runtime/errors.ts';
import type { InputRecord, OutputRecord } from '../../../runtime/processor.ts';
import { OUTCOMES, TASKS, fence, latch, record, settle, stage, startRunner, until } from './fakes.ts';

const FENCE = fence(0);
/** Waits out the first recovery (300 ms): until the partition is resumed, or fails showing the log. */
const recovered = (log: readonly string[]) => until('the partition to be resumed after the recovery', () => log.includes(`resume ${TASKS}[0]`), 1500, log);
const outcome = (r: InputRecord): OutputRecord[] => [{ topic: 'outcomes', key: r.key, value: { thought_id: r.key }, span: 'unit' }];
const pipelined = (handle: (r: InputRecord) => Promise<OutputRecord[]> = async (r) => outcome(r)) =>
  stage({ pipelined: { lingerMs: 0 }, maxRecordsPerTransaction: 1, handle });

describe('pipelined strategy', () => {
  test('the pipelined strategy commits offsets as a watermark in order: chunks handled early wait for the ones before them', async () => {
    const slow = latch();
    const { deliver, log, broker } = await startRunner(
      pipelined(async (r) => {
        if (r.key === 'a') await slow.wait;
        return outcome(r);
      }),
    );
    let returned = false;
    const { done } = deliver([record(0, 'a'), record(1, 'b'), record(2, 'c')]);
    void done.then(() => (returned = true));
    await until('every chunk handed on', () => log.includes('resolve 2'));
    await settle();
    // b and c are handled, but a is not: nothing commits, and the batch holds kafkajs's next fetch
    // (three uncommitted records, at least two transactions' worth).
    assert.deepEqual(log, [FENCE, 'resolve 0', 'resolve 1', 'resolve 2']);
    assert.equal(broker.committed.size, 0);
    assert.equal(returned, false, 'the batch waits while the partition holds two transactions of uncommitted records');

    slow.open();
    await done;
    await until('every chunk committed', () => broker.committed.get(`${TASKS}[0]`) === 3n, 1500, log);
    assert.deepEqual(log.slice(4), [
      `send ${OUTCOMES}:a`,
      `offsets ${TASKS}[0]=1`,
      'commit',
      `send ${OUTCOMES}:b`,
      `offsets ${TASKS}[0]=2`,
      'commit',
      `send ${OUTCOMES}:c`,
      `offsets ${TASKS}[0]=3`,
      'commit',
    ]);
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b', 'c'],
    );
  });

  test('a failed commit aborts, seeks back to the first uncommitted offset and resumes; the chunks after it never commit, and the re-read ones commit once', async () => {
    const { deliver, log, broker } = await startRunner(pipelined());
    broker.refuseCommit = (n) => n === 2;
    await deliver([record(0, 'a'), record(1, 'b'), record(2, 'c')]).done;
    await recovered(log);
    assert.deepEqual(log, [
      FENCE,
      'resolve 0',
      'resolve 1',
      'resolve 2',
      `send ${OUTCOMES}:a`,
      `offsets ${TASKS}[0]=1`,
      'commit',
      `send ${OUTCOMES}:b`,
      `offsets ${TASKS}[0]=2`,
      'commit failed',
      'abort',
      `pause ${TASKS}[0]`,
      `seek ${TASKS}[0]=1`,
      `resume ${TASKS}[0]`,
    ]);
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a'],
    );

    // kafkajs reads on from the seek: the failed transaction dropped the claim, so it is claimed again.
    log.length = 0;
    await deliver([record(1, 'b'), record(2, 'c')]).done;
    await until('every chunk committed', () => broker.committed.get(`${TASKS}[0]`) === 3n, 1500, log);
    assert.deepEqual(log, [
      FENCE,
      'resolve 1',
      'resolve 2',
      `send ${OUTCOMES}:b`,
      `offsets ${TASKS}[0]=2`,
      'commit',
      `send ${OUTCOMES}:c`,
      `offsets ${TASKS}[0]=3`,
      'commit',
    ]);
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b', 'c'],
      'each record committed once',
    );
  });

  test('a retriable handler error gives up the chunks after it: nothing commits past the failed record, and the partition is read again from it under the same claim', async () => {
    let down = true;
    const { deliver, log, broker } = await startRunner(
      pipelined(async (r) => {
        if (r.key === 'a' && down) throw new TransientError('tool down');
        return outcome(r);
      }),
    );
    await deliver([record(0, 'a'), record(1, 'b')]).done;
    await recovered(log);
    assert.deepEqual(
      log,
      [FENCE, 'resolve 0', 'resolve 1', `pause ${TASKS}[0]`, `seek ${TASKS}[0]=0`, `resume ${TASKS}[0]`],
      'no transaction: b, handled, was given up',
    );

    down = false;
    log.length = 0;
    await deliver([record(0, 'a'), record(1, 'b')]).done;
    await until('every chunk committed', () => broker.committed.get(`${TASKS}[0]`) === 2n, 1500, log);
    assert.deepEqual(
      log,
      ['resolve 0', 'resolve 1', `send ${OUTCOMES}:a`, `offsets ${TASKS}[0]=1`, 'commit', `send ${OUTCOMES}:b`, `offsets ${TASKS}[0]=2`, 'commit'],
      "the claim's floor went back with the seek (no skip), and the claim held (no fence)",
    );
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b'],
    );
  });

  test('a batch delivered while a failed partition waits to be read again is not handled, and the partition is paused again', async () => {
    const { deliver, log, broker } = await startRunner(pipelined());
    broker.failCommits = 1;
    await deliver([record(0, 'a')]).done;
    await until('the partition paused', () => log.includes(`pause ${TASKS}[0]`), 1500, log);
    log.length = 0;
    // Fetched before the pause (or by a consumer kafkajs restarted since, which lost it).
    await deliver([record(1, 'b')]).done;
    assert.deepEqual(log, [`pause ${TASKS}[0]`]);
    await recovered(log);
    assert.deepEqual(log, [`pause ${TASKS}[0]`, `seek ${TASKS}[0]=0`, `resume ${TASKS}[0]`]);
  });

  test('a failed partition the instance lost meanwhile is resumed without a seek (its next owner reads it from the committed offset)', async () => {
    const { deliver, log, broker, join } = await startRunner(pipelined());
    broker.failCommits = 1;
    await deliver([record(0, 'a')]).done;
    await until('the partition paused', () => log.includes(`pause ${TASKS}[0]`), 1500, log);
    join([1]);
    await recovered(log);
    assert.equal(log.filter((l) => l.startsWith('seek')).length, 0);
  });

  test('pause, seek and resume refused by a restarting consumer are skipped, not fatal', async () => {
    const { deliver, log, broker, consumer, fatal } = await startRunner(pipelined());
    broker.failCommits = 1;
    consumer.refuse = new Error('consumer is restarting');
    await deliver([record(0, 'a'), record(1, 'b')]).done;
    // The recovery's resume is refused (the consumer is restarting)...
    await until('the recovery to try to resume', () => log.includes('refused resume'), 1500, log);
    // ...and it recovers all the same: the next batch is handled (it is claimed again and commits).
    consumer.refuse = null;
    log.length = 0;
    await deliver([record(0, 'a'), record(1, 'b')]).done;
    await until('every chunk committed', () => broker.committed.get(`${TASKS}[0]`) === 2n, 1500, log);
    assert.deepEqual(fatal, []);
    assert.deepEqual(
      broker.written.map((w) => w.key),
      ['a', 'b'],
    );
  });
});
