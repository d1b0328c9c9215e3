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

/** A pipeline whose transactions are recorded: each commit is the list of chunks it took. */
function recorded(options: { maxRecords?: number; lingerMs?: number; failCommit?: (chunks: string[]) => boolean } = {}) {
  const commits: string[][] = [];
  const started: string[] = [];
  let gate: Promise<void> | null = null;
  const pipeline = new PartitionPipeline<string>({
    maxRecords: options.maxRecords ?? 100,
    lingerMs: options.lingerMs ?? 0,
    mergeable: (a, b) => a.split(':')[0] === b.split(':')[0],
    commit: async (chunks) => {
      started.push(chunks.join('+'));
      if (gate) await gate;
      if (options.failCommit?.(chunks)) throw new Error('transaction fenced');
      commits.push(chunks);
    },
  });
  return { pipeline, commits, started, hold: (g: Promise<void> | null) => void (gate = g) };
}

test('a later chunk is handled while an earlier one still waits, and commits only after it', async () => {
  const { pipeline, commits } = recorded();
  const slow = deferred<string>();
  const handled: string[] = [];
  const a = pipeline.add(2, 0n, 2n, () => (handled.push('0-1'), slow.promise));
  const b = pipeline.add(1, 2n, 3n, async () => (handled.push('2'), 'c:2'));
  await turn();
  assert.deepEqual(handled, ['0-1', '2'], 'both chunks are being handled at once');
  assert.equal(pipeline.records, 3);
  assert.deepEqual(commits, [], 'the later chunk does not commit before the earlier one');
  slow.resolve('c:0-1');
  await Promise.all([a, b]);
  assert.deepEqual(commits.flat(), ['c:0-1', 'c:2'], 'commits in offset order');
  assert.equal(pipeline.records, 0);
  assert.equal(pipeline.failure, null);
  assert.equal(pipeline.resumeAt, 3n, 'the offset after the last committed chunk');
});

test('chunks handled while a transaction commits go together in the next one, up to maxRecords', async () => {
  const { pipeline, commits, hold } = recorded({ maxRecords: 10 });
  const gate = deferred();
  hold(gate.promise);
  const first = pipeline.add(4, 0n, 4n, async () => 'c:0');
  await turn();
  const rest = [pipeline.add(4, 4n, 8n, async () => 'c:4'), pipeline.add(4, 8n, 12n, async () => 'c:8'), pipeline.add(4, 12n, 16n, async () => 'c:12')];
  await turn();
  hold(null);
  gate.resolve();
  await Promise.all([first, ...rest]);
  assert.deepEqual(commits, [['c:0'], ['c:4', 'c:8'], ['c:12']], 'one transaction for the first, then as many as 10 records allow');
  assert.equal(pipeline.resumeAt, 16n);
});

test('chunks that may not share a transaction (another claim) commit apart, in order', async () => {
  const { pipeline, commits, hold } = recorded();
  const gate = deferred();
  hold(gate.promise);
  const all = [pipeline.add(1, 0n, 1n, async () => 'old:0')];
  await turn();
  all.push(
    pipeline.add(1, 1n, 2n, async () => 'old:1'),
    pipeline.add(1, 2n, 3n, async () => 'new:2'),
  );
  await turn();
  hold(null);
  gate.resolve();
  await Promise.all(all);
  assert.deepEqual(commits, [['old:0'], ['old:1'], ['new:2']]);
});

test('after a chunk fails, no later chunk commits, earlier ones still do, and the partition resumes after the last commit', async () => {
  const { pipeline, commits } = recorded();
  const first = deferred<string>();
  pipeline.add(5, 10n, 15n, () => first.promise);
  pipeline.add(5, 15n, 20n, async () => {
    throw new Error('tool dependency down');
  });
  pipeline.add(5, 20n, 25n, async () => 'c:third');
  await turn();
  first.resolve('c:first');
  await pipeline.drained();
  assert.deepEqual(commits, [['c:first']], 'the chunk before the failure commits; the ones from it on do not');
  assert.match(String(pipeline.failure), /tool dependency down/);
  assert.equal(pipeline.resumeAt, 15n, 'read again from the failed chunk');
  assert.equal(pipeline.records, 0);
  pipeline.reset();
  assert.equal(pipeline.failure, null);
  await pipeline.add(5, 15n, 20n, async () => 'c:retried');
  assert.deepEqual(commits, [['c:first'], ['c:retried']]);
  assert.equal(pipeline.resumeAt, 20n);
});

test('a given-up chunk settles only once its handling has (the claim waits for its tool calls)', async () => {
  const { pipeline } = recorded();
  const slow = deferred<string>();
  let slowSettled = false;
  pipeline.add(1, 0n, 1n, async () => {
    throw new Error('tool dependency down');
  });
  void pipeline.add(1, 1n, 2n, () => slow.promise).then(() => (slowSettled = true));
  await turn();
  assert.equal(slowSettled, false, 'still handling');
  assert.equal(pipeline.records, 1);
  slow.resolve('c:1');
  await pipeline.drained();
  assert.equal(slowSettled, true);
  assert.equal(pipeline.records, 0);
});

test('a failed commit stops the chunks after it; with nothing committed the partition resumes at the first chunk', async () => {
  const { pipeline, commits } = recorded({ failCommit: (chunks) => chunks.includes('c:7') });
  pipeline.add(1, 7n, 8n, async () => 'c:7');
  pipeline.add(1, 8n, 9n, async () => 'c:8');
  await pipeline.drained();
  assert.deepEqual(commits, []);
  assert.match(String(pipeline.failure), /fenced/);
  assert.equal(pipeline.resumeAt, 7n);
});

test("a run's records are handled one after another across chunks; other runs do not wait", async () => {
  const { pipeline } = recorded();
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
  await assert.rejects(
    pipeline.inKeyOrder('run-a', async () => {
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(await pipeline.inKeyOrder('run-a', async () => 'after'), 'after');
});

test('below(n) resolves once the uncommitted records drop under n: the back-pressure on kafkajs', async () => {
  const { pipeline } = recorded();
  const gate = deferred<string>();
  pipeline.add(150, 0n, 150n, () => gate.promise);
  pipeline.add(100, 150n, 250n, async () => 'c:150');
  let released = false;
  const waiting = pipeline.below(200).then(() => (released = true));
  await turn();
  assert.equal(released, false, '250 records held, the batch waits');
  await pipeline.below(300);
  gate.resolve('c:0');
  await waiting;
  assert.ok(pipeline.records < 200);
});

test('with a linger, a handled chunk waits for the chunk behind it still being handled and they share a transaction', async () => {
  const { pipeline, commits } = recorded({ lingerMs: 60000 });
  const second = deferred<string>();
  const a = pipeline.add(1, 0n, 1n, async () => 'c:0');
  const b = pipeline.add(1, 1n, 2n, () => second.promise);
  await turn();
  assert.deepEqual(commits, [], 'the first waits: the second is still being handled');
  second.resolve('c:1');
  await Promise.all([a, b]);
  assert.deepEqual(commits, [['c:0', 'c:1']]);
  // Nothing behind it: a chunk commits at once, whatever the linger.
  await pipeline.add(1, 2n, 3n, async () => 'c:2');
  assert.deepEqual(commits, [['c:0', 'c:1'], ['c:2']]);
});

test('the linger is a bound: once it has passed the handled chunk commits without waiting any longer', async () => {
  const { pipeline, commits } = recorded({ lingerMs: 1 });
  const never = deferred<string>();
  const a = pipeline.add(1, 0n, 1n, async () => 'c:0');
  pipeline.add(1, 1n, 2n, () => never.promise);
  await a;
  assert.deepEqual(commits, [['c:0']], 'committed after the linger, alone');
  never.resolve('c:1');
  await pipeline.drained();
  assert.deepEqual(commits, [['c:0'], ['c:1']]);
});
