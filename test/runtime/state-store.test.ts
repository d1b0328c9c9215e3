/**
 * The changelog state store without a broker: its tail consumer and the claim's producers are fakes
 * the test drives, so the test decides when the tail reads what. What a handler reads is the
 * transaction's own writes, then this instance's committed writes, then every committed record the
 * tail has read of the partitions the store holds; a catch-up waits until the tail has read its
 * barriers before dropping the own layer. The store holds only the partitions it is given: the tail
 * pauses the others, and one taken on is read again from its beginning.
 * (Against the real broker the store is exercised by test/runtime/handover.test.ts and the loop tests.)
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Consumer, ConsumerRunConfig, Kafka, KafkaMessage, Message, Producer } from 'kafkajs';
import type { AvroCodec } from '../../runtime/codec.ts';
import type { Logger } from '../../runtime/log.ts';
import { ChangelogStore } from '../../runtime/state-store.ts';

type Value = { status: string };
const TOPIC = 'ns.thought.runs';

/** Every partition of the fake changelog. */
const ALL = [0, 1, 2, 3, 4, 5];

/**
 * A store over a fake tail consumer, holding `hold` (default: every partition, as a single instance
 * does); `deliver` plays the tail reading a committed record, `join` its consumer joining its group.
 * `gate`, while set, holds every decode until it resolves.
 */
async function startStore(options: { hold?: number[] } = {}) {
  let eachMessage: ConsumerRunConfig['eachMessage'];
  let crash: ((e: { payload: { error: Error; restart: boolean } }) => void) | undefined;
  let joined: ((e: { payload: { memberAssignment: Record<string, number[]> } }) => void) | undefined;
  let offset = 0;
  const errors: string[] = [];
  const fatal: Error[] = [];
  /** What the store asked of its tail consumer, in order: seeks, pauses and resumes. */
  const calls: string[] = [];
  const seeks: Array<{ partition: number; offset: string }> = [];
  let consumers = 0;
  const consumer = {
    events: { CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' },
    on: (event: string, listener: () => void) => {
      if (event === 'consumer.crash') crash = listener as typeof crash;
      else joined = listener as typeof joined;
    },
    connect: async () => undefined,
    subscribe: async () => undefined,
    run: async (config: ConsumerRunConfig) => void (eachMessage = config.eachMessage),
    seek: ({ partition, offset }: { partition: number; offset: string }) => {
      seeks.push({ partition, offset });
      calls.push(`seek ${partition} ${offset}`);
    },
    pause: (tps: Array<{ partitions: number[] }>) => void calls.push(`pause ${tps.flatMap((t) => t.partitions).join(',')}`),
    resume: (tps: Array<{ partitions: number[] }>) => void calls.push(`resume ${tps.flatMap((t) => t.partitions).join(',')}`),
    disconnect: async () => undefined,
  } as unknown as Consumer;
  // every consumer the store makes is this one fake (a replacement re-registers its handlers)
  const kafka = { consumer: () => (consumers++, consumer) } as unknown as Kafka;
  const decoded: string[] = [];
  const gate: { until: Promise<void> | null } = { until: null };
  const codec = {
    topics: { name: (id: string) => (id === 'thoughtRuns' ? TOPIC : `ns.${id}`), group: (s: string) => `ns.${s}` },
    decode: async (_id: string, bytes: Buffer) => {
      decoded.push(bytes.toString('utf8'));
      if (gate.until) await gate.until;
      return JSON.parse(bytes.toString('utf8')) as unknown;
    },
  } as unknown as AvroCodec;
  const quiet = () => undefined;
  const logger: Logger = { debug: quiet, info: quiet, warn: quiet, error: (msg) => void errors.push(msg), child: () => logger };
  const store = new ChangelogStore<Value>(
    kafka,
    codec,
    'thoughtRuns',
    logger,
    (e) => fatal.push(e),
    (v) => v.status === 'ended',
    async () => undefined, // no pause before a replacement
  );
  await store.start();
  for (const p of options.hold ?? ALL) store.hold(p);
  const deliver = async (partition: number, message: Pick<Message, 'key' | 'value' | 'headers' | 'timestamp'>, at?: number) => {
    if (at !== undefined) offset = at;
    const m = {
      key: Buffer.from(String(message.key)),
      value: message.value ?? null,
      headers: message.headers ?? {},
      offset: String(offset++),
      timestamp: message.timestamp ?? '0',
      attributes: 0,
    } as KafkaMessage;
    await eachMessage!({ topic: TOPIC, partition, message: m, heartbeat: async () => undefined, pause: () => () => undefined });
  };
  const committed = (partition: number, key: string, value: Value | null, timestampMs = 0, at?: number) =>
    deliver(partition, { key, value: value === null ? null : Buffer.from(JSON.stringify(value)), timestamp: String(timestampMs) }, at);
  return {
    store,
    deliver,
    committed,
    errors,
    fatal,
    decoded,
    nextOffset: () => BigInt(offset),
    crash: (error: Error, restart: boolean) => crash!({ payload: { error, restart } }),
    seeks,
    calls,
    gate,
    consumers: () => consumers,
    /** The latest consumer joins its group, assigned `partitions` of the changelog (every one by default). */
    join: (partitions: number[] = ALL) => joined!({ payload: { memberAssignment: { [TOPIC]: partitions } } }),
  };
}

/** A claim's transactional producer; the barriers it commits are kept for the test to deliver. */
function producer(options: { failSend?: boolean } = {}) {
  const barriers: { partition: number; message: Message }[] = [];
  const log: string[] = [];
  const p = {
    transaction: async () => ({
      send: async ({ topic, messages }: { topic: string; messages: Message[] }) => {
        if (options.failSend) throw new Error('producer fenced');
        assert.equal(topic, TOPIC);
        for (const m of messages) barriers.push({ partition: m.partition!, message: m });
        log.push('send');
      },
      commit: async () => void log.push('commit'),
      abort: async () => void log.push('abort'),
    }),
  } as unknown as Producer;
  return { producer: p, barriers, log };
}

/** Lets the fakes' already-resolved promises settle (nothing here waits on a timer). */
const settle = () => new Promise((r) => setImmediate(r));

/** Settles until `made` tail consumers were made (a replacement does not pause here), or fails. */
async function untilConsumers(consumers: () => number, made: number): Promise<void> {
  for (let turn = 0; consumers() < made; turn++) {
    assert.ok(turn < 1000, `no replacement tail consumer: ${consumers()} made, ${made} expected`);
    await settle();
  }
}

describe('ChangelogStore reads', () => {
  test('a write staged in the transaction in progress is read at once; abort drops it, commit keeps it', async () => {
    const { store } = await startStore();
    store.stage(1, 'run-a', { status: 'running' }, 0);
    assert.deepEqual(store.get(1, 'run-a'), { status: 'running' });
    store.abort(1);
    assert.equal(store.get(1, 'run-a'), undefined, 'an aborted transaction leaves nothing behind');
    store.stage(1, 'run-a', { status: 'ended' }, 0);
    store.commit(1);
    assert.deepEqual(store.get(1, 'run-a'), { status: 'ended' });
  });

  test('the mirror takes every committed record the tail reads, whoever wrote it; a tombstone removes the key', async () => {
    const { store, committed } = await startStore();
    await committed(2, 'run-b', { status: 'running' });
    assert.deepEqual(store.get(2, 'run-b'), { status: 'running' });
    await committed(2, 'run-b', null);
    assert.equal(store.get(2, 'run-b'), undefined);
  });

  test('own committed writes sit on top of a mirror that lags behind them, and the transaction in progress on top of both', async () => {
    const { store, committed } = await startStore();
    await committed(0, 'run-c', { status: 'wave 1' });
    store.stage(0, 'run-c', { status: 'wave 2' }, 0);
    store.commit(0);
    await committed(0, 'run-c', { status: 'wave 1 (read late)' });
    assert.deepEqual(store.get(0, 'run-c'), { status: 'wave 2' }, 'the tail has not read our commit yet');
    store.stage(0, 'run-c', { status: 'wave 3' }, 0);
    assert.deepEqual(store.get(0, 'run-c'), { status: 'wave 3' });
    store.abort(0);
    assert.deepEqual(store.get(0, 'run-c'), { status: 'wave 2' });
  });

  test('an entry that does not decode is logged and skipped; the key keeps its last good value', async () => {
    const { store, committed, deliver, errors } = await startStore();
    await committed(1, 'run-f', { status: 'good' });
    await deliver(1, { key: 'run-f', value: Buffer.from('{not json') });
    assert.deepEqual(store.get(1, 'run-f'), { status: 'good' });
    assert.deepEqual(errors, ['state store entry undecodable; ignored']);
  });

  test('a tail consumer kafkajs stops for good is replaced where it stopped: what it read is not read again, and the stage goes on', async () => {
    const { store, committed, fatal, crash, seeks, consumers, join } = await startStore({ hold: [0, 1] });
    crash(new Error('rebalancing'), true); // kafkajs restarts this one itself
    assert.equal(consumers(), 1);
    await committed(0, 'k', { status: 'running' }, 0, 0);
    await committed(0, 'k', { status: 'ended' }, 0, 1);
    await committed(1, 'j', { status: 'running' }, 0, 0);
    crash(new Error('Failed to find group coordinator'), false);
    await untilConsumers(consumers, 2);
    await settle();
    seeks.length = 0;
    join(); // the replacement joins its group: its seeks are those of the held partitions
    assert.deepEqual(seeks, [
      { partition: 0, offset: '2' },
      { partition: 1, offset: '1' },
    ]);
    // the replacement reads from the beginning until its seeks apply: an older record changes nothing
    await committed(0, 'k', { status: 'running' }, 0, 0);
    assert.deepEqual(store.get(0, 'k'), { status: 'ended' });
    await committed(0, 'k', { status: 'reopened' }, 0, 2);
    assert.deepEqual(store.get(0, 'k'), { status: 'reopened' });
    assert.deepEqual(fatal, []);
  });

  test('replaced five times in a row without joining its group, the tail stops the stage (onFatal); a join starts the count again', async () => {
    const { fatal, crash, consumers, join } = await startStore();
    for (let replaced = 1; replaced <= 4; replaced++) {
      crash(new Error('Failed to find group coordinator'), false);
      await untilConsumers(consumers, replaced + 1);
    }
    join();
    for (let replaced = 5; replaced <= 9; replaced++) {
      crash(new Error('Failed to find group coordinator'), false);
      await untilConsumers(consumers, replaced + 1);
    }
    assert.equal(fatal.length, 0, 'replaced, not stopped: the join reset the count');
    crash(new Error('Failed to find group coordinator'), false);
    assert.deepEqual(
      fatal.map((e) => e.message),
      ['Failed to find group coordinator'],
    );
  });
});

describe('ChangelogStore holds only its partitions', () => {
  test('records of a partition it does not hold are neither decoded nor kept; at a join the tail pauses those and reads on the held ones', async () => {
    const { store, committed, calls, decoded, join } = await startStore({ hold: [0, 1] });
    assert.deepEqual(calls, ['seek 0 0', 'resume 0', 'seek 1 0', 'resume 1'], 'each partition taken on is read from its beginning');
    calls.length = 0;
    join();
    assert.deepEqual(calls, ['pause 2,3,4,5', 'resume 0,1', 'seek 0 0', 'seek 1 0']);
    await committed(2, 'other', { status: 'running' }); // fetched before a pause took effect
    assert.deepEqual(decoded, [], 'not even decoded');
    assert.equal(store.get(2, 'other'), undefined);
    await committed(0, 'a', { status: 'running' });
    await committed(1, 'b', { status: 'awaiting_input' });
    assert.deepEqual(store.partitions(), [0, 1]);
    assert.equal(store.size(), 2);
    assert.equal(
      store.count(() => true, new Set(ALL)),
      2,
    );
  });

  test('a partition let go is forgotten (entries, own writes, retention); taken on again, it is read anew from its beginning', async () => {
    const { store, committed, calls } = await startStore({ hold: [0] });
    await committed(0, 'a', { status: 'running' }, 1000, 0);
    await committed(0, 'b', { status: 'ended' }, 2000, 1);
    store.stage(0, 'c', { status: 'own' }, 2500);
    store.commit(0);
    store.stage(0, 'd', { status: 'pending' }, 2500);
    calls.length = 0;
    store.release([0]);
    assert.deepEqual(calls, ['pause 0']);
    for (const key of ['a', 'b', 'c', 'd']) assert.equal(store.get(0, key), undefined, key);
    assert.deepEqual([store.size(), store.partitions(), store.streamTime(0), store.expired(0, 1e9, 1, 10)], [0, [], null, []]);
    await committed(0, 'late', { status: 'running' }, 3000, 2); // fetched before the pause took effect
    assert.equal(store.size(), 0);

    store.hold(0);
    assert.deepEqual(calls, ['pause 0', 'seek 0 0', 'resume 0']);
    await committed(0, 'a', { status: 'running' }, 1000, 0);
    await committed(0, 'b', { status: 'ended' }, 2000, 1);
    await committed(0, 'late', { status: 'running' }, 3000, 2);
    assert.equal(store.size(), 3, 'restored from the changelog, offset 0 on, though the tail had read past it before');
    assert.equal(store.streamTime(0), 3000);
    assert.deepEqual(store.expired(0, 3000, 1000, 10), ['b'], 'the retention index is rebuilt from the records read');
  });

  test('a record still being decoded when its partition is let go and taken on again is not applied, and is read again from the new position', async () => {
    const { store, committed, gate } = await startStore({ hold: [0] });
    let open!: () => void;
    gate.until = new Promise<void>((r) => (open = r));
    const stale = committed(0, 'a', { status: 'running' }, 0, 0);
    await settle();
    store.release([0]);
    store.hold(0);
    gate.until = null;
    open();
    await stale;
    assert.equal(store.get(0, 'a'), undefined, 'the stale read is dropped');
    await committed(0, 'a', { status: 'running' }, 0, 0);
    assert.deepEqual(store.get(0, 'a'), { status: 'running' }, 'the position did not move past it');
  });

  test('a catch-up of a partition it does not hold takes it on: its barrier is read after the partition, from its beginning', async () => {
    const { store, committed, deliver, calls } = await startStore({ hold: [] });
    const a = producer();
    let done = false;
    const caughtUp = store.catchUp(3, [a.producer]).then(() => (done = true));
    await settle();
    assert.deepEqual(calls, ['seek 3 0', 'resume 3']);
    assert.deepEqual(store.partitions(), [3]);
    await committed(3, 'parked', { status: 'awaiting_input' }, 0, 0);
    await settle();
    assert.equal(done, false);
    await deliver(3, a.barriers[0]!.message);
    await caughtUp;
    assert.deepEqual(store.get(3, 'parked'), { status: 'awaiting_input' });
  });
});

describe('ChangelogStore.catchUp', () => {
  test('commits one barrier per producer to the partition, and drops the own layer only once the tail has read every barrier', async () => {
    const { store, committed, deliver } = await startStore();
    store.stage(4, 'run-g', { status: 'own' }, 0);
    store.commit(4);
    const a = producer();
    const b = producer();
    let done = false;
    const caughtUp = store.catchUp(4, [a.producer, b.producer]).then(() => (done = true));
    await settle();
    assert.deepEqual(
      [a.log, b.log],
      [
        ['send', 'commit'],
        ['send', 'commit'],
      ],
    );
    const barriers = [...a.barriers, ...b.barriers];
    assert.deepEqual(
      barriers.map((x) => [x.partition, x.message.value]),
      [
        [4, null],
        [4, null],
      ],
      'an empty value in the claimed partition',
    );
    assert.equal(done, false, 'committed barriers are not enough: the tail must have read them');

    await committed(4, 'run-g', { status: 'own (read by the tail)' });
    await deliver(4, barriers[0]!.message);
    await settle();
    assert.equal(done, false, 'one barrier of two read');
    assert.deepEqual(store.get(4, 'run-g'), { status: 'own' }, 'the own layer stays until the catch-up is complete');
    await deliver(4, barriers[1]!.message);
    await caughtUp;
    assert.deepEqual(store.get(4, 'run-g'), { status: 'own (read by the tail)' }, 'read from the mirror now');
    assert.equal(store.get(4, String(barriers[0]!.message.key)), undefined, 'a barrier is not an entry');
  });

  test('a barrier the tail does not read in time fails the catch-up (the claim is retried) and keeps the own layer', async () => {
    const { store, deliver } = await startStore();
    store.stage(5, 'run-h', { status: 'own' }, 0);
    store.commit(5);
    const a = producer();
    await assert.rejects(store.catchUp(5, [a.producer], 20), /state store ns\.thought\.runs\[5\] did not catch up within 20 ms/);
    assert.deepEqual(store.get(5, 'run-h'), { status: 'own' });
    await deliver(5, a.barriers[0]!.message); // read late: nobody waits for it any more, and nothing breaks
  });

  test('a barrier that cannot be written aborts its transaction and fails the catch-up', async () => {
    const { store } = await startStore();
    store.stage(0, 'run-i', { status: 'own' }, 0);
    store.commit(0);
    const fenced = producer({ failSend: true });
    await assert.rejects(store.catchUp(0, [fenced.producer]), /producer fenced/);
    assert.deepEqual(fenced.log, ['abort']);
    assert.deepEqual(store.get(0, 'run-i'), { status: 'own' });
  });
});

describe('ChangelogStore tombstones and retention', () => {
  test('a staged tombstone hides the key at once; committed, it stays hidden; read back by the tail, the mirror drops the entry', async () => {
    const { store, committed, nextOffset } = await startStore();
    await committed(1, 'run-t', { status: 'ended' }, 1000);
    assert.equal(store.size(), 1);
    store.stage(1, 'run-t', null, 5000);
    assert.equal(store.get(1, 'run-t'), undefined);
    const at = nextOffset();
    store.commit(1, at);
    assert.equal(store.get(1, 'run-t'), undefined, 'the mirror still has it, the own tombstone hides it');
    await committed(1, 'run-t', null, 5000);
    assert.equal(store.get(1, 'run-t'), undefined);
    assert.equal(store.size(), 0, 'nothing of the run is left in memory');
  });

  test('an own write leaves the own layer once the tail has read the offset it was committed at (the layer does not grow with every run)', async () => {
    const { store, committed, nextOffset, decoded } = await startStore();
    store.stage(0, 'run-o', { status: 'ended' }, 1000);
    store.commit(0, nextOffset());
    await committed(0, 'run-o', { status: 'ended' }, 1000);
    assert.deepEqual(decoded, [], 'the tail took the value of its own write instead of decoding it again');
    assert.deepEqual(store.get(0, 'run-o'), { status: 'ended' });
    // A later write by another owner (after a hand-over) is read from the mirror: the own copy is gone.
    await committed(0, 'run-o', { status: 'running (another owner)' }, 2000);
    assert.deepEqual(store.get(0, 'run-o'), { status: 'running (another owner)' });
    assert.equal(decoded.length, 1);
  });

  test('a later own write of the key stays on top when the tail reads an earlier one', async () => {
    const { store, committed, nextOffset } = await startStore();
    store.stage(0, 'run-p', { status: 'running' }, 1000);
    const first = nextOffset();
    store.commit(0, first);
    store.stage(0, 'run-p', { status: 'ended' }, 2000);
    store.commit(0, first + 1n);
    await committed(0, 'run-p', { status: 'running' }, 1000);
    assert.deepEqual(store.get(0, 'run-p'), { status: 'ended' });
  });

  test('only ended entries expire, oldest first, once a retention of stream time has passed; tombstoned, they are not offered again', async () => {
    const { store, committed } = await startStore();
    await committed(2, 'ended-1', { status: 'ended' }, 1000);
    await committed(2, 'parked', { status: 'awaiting_input' }, 1000);
    await committed(2, 'running', { status: 'running' }, 1000);
    await committed(2, 'ended-2', { status: 'ended' }, 1500);
    assert.equal(store.streamTime(2), 1500, 'the changelog record times restore the stream time');
    assert.deepEqual(store.expired(2, 1999, 1000, 10), []);
    assert.deepEqual(store.expired(2, 2600, 1000, 10), ['ended-1', 'ended-2']);
    assert.deepEqual(store.expired(2, 2600, 1000, 1), ['ended-1']);
    store.stage(2, 'ended-1', null, 2600);
    assert.deepEqual(store.expired(2, 2600, 1000, 10), ['ended-2'], 'a key the transaction in progress writes is not offered');
    store.commit(2);
    assert.deepEqual(store.expired(2, 2600, 1000, 10), ['ended-2']);
    assert.equal(store.streamTime(2), 2600);
    assert.deepEqual(store.expired(3, 2600, 1000, 10), [], 'per partition');
  });

  test('the stream time only moves forward', async () => {
    const { store } = await startStore();
    assert.equal(store.streamTime(4), null);
    store.observe(4, 2000);
    store.observe(4, 1000);
    store.observe(4, Number.NaN);
    assert.equal(store.streamTime(4), 2000);
  });
});
