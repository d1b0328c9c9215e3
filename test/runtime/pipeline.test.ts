/**
 * PartitionPipeline: the chunks of one partition of a pipelined stage (Action) are handled at the
 * same time but commit in offset order, and nothing after a failed chunk commits, so the committed
 * log is what one-chunk-at-a-time processing writes. Orders are forced with gates, not sleeps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PartitionPipeline } from '../../runtime/pipeline.ts';

function deferred<T = void>(): { promise: Promise<T>; resolve(value: T): void; reject(err: Error): void } {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const turn = () => new Promise((r) => setImmediate(r));

test('a later chunk is handled while an earlier one still waits, and commits only after it', async () => {
  const pipeline = new PartitionPipeline();
  const slow = deferred<string>();
  const events: string[] = [];
  const a = pipeline.add(2, 0n, 2n, () => (events.push('handle 0-1'), slow.promise), async (r) => void events.push(`commit ${r}`));
  const b = pipeline.add(1, 2n, 3n, async () => (events.push('handle 2'), 'chunk 2'), async (r) => void events.push(`commit ${r}`));
  await turn();
  assert.deepEqual(events, ['handle 0-1', 'handle 2'], 'both chunks are being handled at once');
  assert.equal(pipeline.records, 3);
  slow.resolve('chunk 0-1');
  await Promise.all([a, b]);
  assert.deepEqual(events, ['handle 0-1', 'handle 2', 'commit chunk 0-1', 'commit chunk 2'], 'commits in offset order');
  assert.equal(pipeline.records, 0);
  assert.equal(pipeline.failure, null);
  assert.equal(pipeline.resumeAt, 3n, 'the offset after the last committed chunk');
});

test('after a chunk fails, no later chunk commits, earlier ones still do, and the partition resumes after the last commit', async () => {
  const pipeline = new PartitionPipeline();
  const first = deferred<string>();
  const commits: string[] = [];
  const commit = async (r: string) => void commits.push(r);
  pipeline.add(5, 10n, 15n, () => first.promise, commit);
  pipeline.add(5, 15n, 20n, async () => {
    throw new Error('tool dependency down');
  }, commit);
  pipeline.add(5, 20n, 25n, async () => 'third', commit);
  await turn();
  first.resolve('first');
  await pipeline.drained();
  assert.deepEqual(commits, ['first'], 'the chunk before the failure commits; the ones from it on do not');
  assert.match(String(pipeline.failure), /tool dependency down/);
  assert.equal(pipeline.resumeAt, 15n, 'read again from the failed chunk');
  assert.equal(pipeline.records, 0);
  pipeline.reset();
  assert.equal(pipeline.failure, null);
  await pipeline.add(5, 15n, 20n, async () => 'retried', commit);
  assert.deepEqual(commits, ['first', 'retried']);
  assert.equal(pipeline.resumeAt, 20n);
});

test('a failed commit stops the chunks after it; with nothing committed the partition resumes at the first chunk', async () => {
  const pipeline = new PartitionPipeline();
  const committed: number[] = [];
  pipeline.add(1, 7n, 8n, async () => 7, async () => {
    throw new Error('transaction fenced');
  });
  pipeline.add(1, 8n, 9n, async () => 8, async (n) => void committed.push(n));
  await pipeline.drained();
  assert.deepEqual(committed, []);
  assert.match(String(pipeline.failure), /fenced/);
  assert.equal(pipeline.resumeAt, 7n);
});

test("a run's records are handled one after another across chunks; other runs do not wait", async () => {
  const pipeline = new PartitionPipeline();
  const gate = deferred();
  const order: string[] = [];
  const first = pipeline.inKeyOrder('run-a', async () => {
    order.push('a1 start');
    await gate.promise;
    order.push('a1 end');
  });
  const second = pipeline.inKeyOrder('run-a', async () => void order.push('a2'));
  const other = pipeline.inKeyOrder('run-b', async () => void order.push('b1'));
  await other;
  assert.deepEqual(order, ['a1 start', 'b1'], 'run-b ran while run-a waits; a2 has not started');
  gate.resolve();
  await Promise.all([first, second]);
  assert.deepEqual(order, ['a1 start', 'b1', 'a1 end', 'a2']);
  // A failure of a run's record does not stop its next one (the runner decides what a failure means).
  await assert.rejects(pipeline.inKeyOrder('run-a', async () => {
    throw new Error('boom');
  }), /boom/);
  assert.equal(await pipeline.inKeyOrder('run-a', async () => 'after'), 'after');
});
