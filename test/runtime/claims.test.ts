/**
 * The order of the claim protocol's steps, driven with fakes of its collaborators that write every
 * call to one log: fence every input's transactional id, then catch the store up, and only then
 * read the committed offsets; this instance's chunks in flight settle and the previous claim's
 * producers are gone before a new fence; a failed claim leaves nothing connected and is tried again.
 * Whether that order is enough against a live old owner on a real broker is
 * test/runtime/handover.test.ts's question (it forces the bad interleaving); this file pins the order.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Producer, ProducerConfig } from 'kafkajs';
import { PartitionClaims, advanceFloor, below, type ClaimResources } from '../../runtime/claims.ts';

type Offsets = Record<string, Record<number, string>>;

/** The claim's collaborators, logging each call. `committed` is what the group has committed. */
function world(
  options: {
    store?: boolean;
    serialChunks?: boolean;
    committed?: Offsets;
    failFence?: string;
    failOffsets?: boolean;
    catchUpWaits?: Promise<void>;
    onWarn?: (msg: string, fields: Record<string, unknown>) => void;
    onInfo?: (msg: string, fields: Record<string, unknown>) => void;
  } = {},
) {
  const log: string[] = [];
  const configs: ProducerConfig[] = [];
  const res: ClaimResources = {
    group: 'g',
    topics: ['ns.a', 'ns.b'],
    kafka: {
      producer(config?: ProducerConfig) {
        configs.push(config!);
        const id = config!.transactionalId!;
        return {
          connect: async () => void log.push(`connect ${id}`),
          transaction: async () => {
            if (options.failFence === id) throw new Error(`fencing ${id} failed`);
            log.push(`fence ${id}`);
            return { abort: async () => undefined };
          },
          disconnect: async () => void log.push(`disconnect ${id}`),
        } as unknown as Producer;
      },
    },
    admin: {
      async fetchOffsets({ topics }) {
        log.push('read offsets');
        if (options.failOffsets) throw new Error('coordinator not available');
        return (topics ?? []).map((topic) => ({
          topic,
          partitions: Object.entries(options.committed?.[topic] ?? {}).map(([p, offset]) => ({ partition: Number(p), offset, metadata: null })),
        }));
      },
    },
    store: options.store
      ? {
          async catchUp(partition: number, producers: Producer[]) {
            log.push(`catch up ${partition} with ${producers.length} producers`);
            await options.catchUpWaits;
          },
        }
      : null,
    serialChunks: options.serialChunks,
    logger: {
      warn: (msg: string, fields?: Record<string, unknown>) => options.onWarn?.(msg, fields ?? {}),
      info: (msg: string, fields?: Record<string, unknown>) => options.onInfo?.(msg, fields ?? {}),
    },
    slowClaimMs: 20,
  };
  return { log, configs, claims: new PartitionClaims(res) };
}

function deferred(): { promise: Promise<void>; resolve(): void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets every promise the fakes resolved at once settle (they never wait on a timer). */
const settle = () => new Promise((r) => setImmediate(r));

describe('PartitionClaims.claim', () => {
  test('fences partition p of every input, then catches the store up, then reads the committed offsets', async () => {
    const { log, configs, claims } = world({ store: true, committed: { 'ns.a': { 2: '17', 3: '99' }, 'ns.b': { 2: '-1' } } });
    const claim = await claims.claim(2);
    assert.deepEqual(log, ['connect g.ns.a.2', 'connect g.ns.b.2', 'fence g.ns.a.2', 'fence g.ns.b.2', 'catch up 2 with 2 producers', 'read offsets']);
    assert.deepEqual(
      configs.map((c) => [c.transactionalId, c.idempotent, c.maxInFlightRequests]),
      [
        ['g.ns.a.2', true, 1],
        ['g.ns.b.2', true, 1],
      ],
    );
    assert.deepEqual([...claim.producers.keys()], ['ns.a', 'ns.b']);
    assert.deepEqual(claim.floors, new Map([['ns.a', 17n]]), "this partition's committed offsets only; none committed (-1) is no floor");
  });

  test('is made once per assignment: chunks share it until a failed transaction drops it', async () => {
    const { log, claims } = world();
    const first = claims.claim(0);
    assert.equal(claims.claim(0), first);
    assert.equal(claims.current(0), first);
    await first;
    log.length = 0;
    claims.drop(0, first);
    assert.equal(claims.current(0), undefined);
    const second = claims.claim(0);
    assert.notEqual(second, first);
    await second;
    assert.deepEqual(
      log,
      ['disconnect g.ns.a.0', 'disconnect g.ns.b.0', 'connect g.ns.a.0', 'connect g.ns.b.0', 'fence g.ns.a.0', 'fence g.ns.b.0', 'read offsets'],
      "the failed claim's producers go before the new fence, and the offsets are read again after it",
    );
  });

  test('dropping a claim that is no longer current leaves the current one alone', async () => {
    const { claims } = world();
    const old = claims.claim(0);
    await old;
    claims.reassigned();
    const now = claims.claim(0);
    claims.drop(0, old);
    assert.equal(claims.current(0), now);
    await now;
  });

  test("waits for this instance's chunks in flight on the partition before it fences", async () => {
    const { log, claims } = world();
    const first = claims.claim(1);
    await first;
    const chunk = deferred();
    const running = claims.runChunk(1, () => chunk.promise);
    claims.drop(1, first);
    log.length = 0;
    const second = claims.claim(1);
    await settle();
    assert.deepEqual([...log], [], 'nothing is disconnected or fenced while a chunk of the partition runs');
    chunk.resolve();
    await running;
    await second;
    assert.equal(log[0], 'disconnect g.ns.a.1');
    assert.ok(log.includes('fence g.ns.a.1'));
  });

  test('a claim of a new assignment waits for the previous claim of the partition, then replaces its producers', async () => {
    const { log, claims } = world();
    const first = claims.claim(4);
    claims.reassigned();
    const second = claims.claim(4);
    assert.notEqual(second, first);
    await second;
    const firstFence = log.indexOf('fence g.ns.b.4');
    assert.deepEqual(
      log.slice(firstFence + 1, firstFence + 4),
      ['read offsets', 'disconnect g.ns.a.4', 'disconnect g.ns.b.4'],
      'the second claim starts once the first is done, by disconnecting its producers',
    );
    assert.equal(log.filter((l) => l === 'read offsets').length, 2);
  });

  test('a fence that fails disconnects every producer the claim made; the claim is forgotten and the next call claims again', async () => {
    const w = world({ failFence: 'g.ns.b.5' });
    await assert.rejects(w.claims.claim(5), /fencing g.ns.b.5 failed/);
    assert.deepEqual(w.log, ['connect g.ns.a.5', 'connect g.ns.b.5', 'fence g.ns.a.5', 'disconnect g.ns.a.5', 'disconnect g.ns.b.5']);
    assert.ok(!w.log.includes('read offsets'), 'no offsets are read without a complete fence');
    assert.equal(w.claims.current(5), undefined);
    w.log.length = 0;
    await assert.rejects(w.claims.claim(5));
    assert.equal(w.log[0], 'connect g.ns.a.5', 'tried again from the start');
  });

  test('an offset read that fails disconnects the fenced producers too', async () => {
    const { log, claims } = world({ failOffsets: true });
    await assert.rejects(claims.claim(0), /coordinator not available/);
    assert.deepEqual(log.slice(-3), ['read offsets', 'disconnect g.ns.a.0', 'disconnect g.ns.b.0']);
    assert.equal(claims.current(0), undefined);
  });

  test('a claim that takes long says so, naming the step it waits in, and still completes', async () => {
    const catchUp = deferred();
    let warned!: (w: { msg: string; fields: Record<string, unknown> }) => void;
    const warning = new Promise<{ msg: string; fields: Record<string, unknown> }>((r) => (warned = r));
    let ended: (msg: string, fields: Record<string, unknown>) => void = () => undefined;
    const { claims } = world({
      store: true,
      catchUpWaits: catchUp.promise,
      onWarn: (msg, fields) => warned({ msg, fields }),
      onInfo: (msg, fields) => ended(msg, fields),
    });
    const claim = claims.claim(4);
    const { msg, fields } = await warning;
    assert.match(msg, /^partition claim slow/);
    assert.deepEqual(fields, { partition: 4, step: 'catching the state store up', waited_ms: 20 });
    const { msg: endMsg, fields: endFields } = await new Promise<{ msg: string; fields: Record<string, unknown> }>((r) => {
      ended = (m, f) => r({ msg: m, fields: f });
      catchUp.resolve();
    });
    assert.ok((await claim).producers.size === 2);
    assert.equal(endMsg, 'partition claim ended after a slow wait', 'the slow line has an end');
    assert.deepEqual([endFields.partition, endFields.status], [4, 'claimed']);
    assert.ok((endFields.waited_ms as number) >= 20, `waited_ms ${String(endFields.waited_ms)} counts the whole claim`);
  });
});

/** Chunk a of partition 0 (held until `release()`), then chunk b of partition 0 and chunk c of partition 1; `order` says what ran. */
function threeChunks(claims: PartitionClaims) {
  const order: string[] = [];
  const first = deferred();
  const a = claims.runChunk(0, async () => {
    order.push('a starts');
    await first.promise;
    order.push('a ends');
  });
  const b = claims.runChunk(0, async () => void order.push('b runs'));
  const c = claims.runChunk(1, async () => void order.push('c runs (partition 1)'));
  return { order, release: first.resolve, b, c, all: Promise.all([a, b, c]) };
}

describe('PartitionClaims.runChunk', () => {
  for (const [what, options] of [
    ['with a state store', { store: true }],
    ['without a store but with serialChunks (a stage that is not pipelined)', { serialChunks: true }],
  ] as const) {
    test(`${what}, chunks of one partition run one after another; other partitions are not held`, async () => {
      const { order, release, c, all } = threeChunks(world(options).claims);
      await c;
      await settle();
      assert.deepEqual(order, ['a starts', 'c runs (partition 1)']);
      release();
      await all;
      assert.deepEqual(order, ['a starts', 'c runs (partition 1)', 'a ends', 'b runs']);
    });
  }

  test('without a store or serialChunks (a pipelined stage), chunks of one partition run side by side', async () => {
    const { order, release, b, c, all } = threeChunks(world().claims);
    await Promise.all([b, c]);
    assert.deepEqual(order, ['a starts', 'b runs', 'c runs (partition 1)']);
    release();
    await all;
  });

  test("a failed chunk's error reaches its caller, and the chunk no longer holds up a claim", async () => {
    const { log, claims } = world();
    const first = claims.claim(0);
    await first;
    await assert.rejects(
      claims.runChunk(0, async () => Promise.reject(new Error('tool down'))),
      /tool down/,
    );
    claims.drop(0, first);
    await claims.claim(0);
    assert.equal(log.filter((l) => l.startsWith('fence')).length, 4, 'claimed again after the failed chunk settled');
  });
});

describe("a claim's floor", () => {
  test('moves on with what the claim hands on, never back, per input topic', async () => {
    const { claims } = world({ committed: { 'ns.a': { 0: '100' } } });
    const claim = await claims.claim(0);
    advanceFloor(claim, 'ns.a', 150n);
    advanceFloor(claim, 'ns.a', 120n);
    advanceFloor(claim, 'ns.b', 7n);
    assert.deepEqual(
      [...claim.floors],
      [
        ['ns.a', 150n],
        ['ns.b', 7n],
      ],
    );
  });

  test('a batch delivered again skips exactly the records below it', () => {
    const batch = ['148', '149', '150', '151'].map((offset) => ({ offset }));
    assert.equal(below(batch, 150n), 2);
    assert.equal(below(batch, 100n), 0);
    assert.equal(below(batch, 152n), 4);
  });
});

describe('PartitionClaims.retire and stop', () => {
  test('a lost partition keeps its producers until its chunks in flight settle, then disconnects them', async () => {
    const { log, claims } = world();
    await claims.claim(3);
    const chunk = deferred();
    const running = claims.runChunk(3, () => chunk.promise);
    log.length = 0;
    const retired = claims.retire(3);
    await settle();
    assert.deepEqual([...log], [], 'a chunk still running may be committing with them');
    chunk.resolve();
    await Promise.all([running, retired]);
    assert.deepEqual(log, ['disconnect g.ns.a.3', 'disconnect g.ns.b.3']);
  });

  test('a partition claimed again while it was being retired keeps the new claim', async () => {
    const { log, claims } = world();
    await claims.claim(3);
    const chunk = deferred();
    const running = claims.runChunk(3, () => chunk.promise);
    const retired = claims.retire(3);
    claims.reassigned();
    const again = claims.claim(3);
    chunk.resolve();
    await Promise.all([running, retired, again]);
    log.length = 0;
    await claims.stop();
    assert.deepEqual(log, ['disconnect g.ns.a.3', 'disconnect g.ns.b.3'], 'the new claim was left connected by the retirement, and stop disconnects it');
  });

  test('stop disconnects the producers of every claim', async () => {
    const { log, claims } = world();
    await Promise.all([claims.claim(0), claims.claim(1)]);
    log.length = 0;
    await claims.stop();
    assert.deepEqual(log.sort(), ['disconnect g.ns.a.0', 'disconnect g.ns.a.1', 'disconnect g.ns.b.0', 'disconnect g.ns.b.1']);
    assert.equal(claims.current(0), undefined);
  });
});
