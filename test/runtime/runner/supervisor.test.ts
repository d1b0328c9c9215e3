/**
 * The consumer supervisor without a broker: kafkajs's consumer events are emitted by hand on fake
 * consumers (./fakes.ts), and the rebuild pauses go to a recording sleep.
 */
import { errorMessage } from '../../../runtime/errors.ts';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../../../runtime/log.ts';
import { ConsumerSupervisor, MAX_REBUILDS_IN_A_ROW } from '../../../runtime/runner/supervisor.ts';
import { TASKS, fakeKafka, settle, until } from './fakes.ts';

function supervised() {
  const fakes = fakeKafka();
  const pauses: number[] = [];
  const fatal: Error[] = [];
  const assignments: Array<Record<string, number[]>> = [];
  const errors: string[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const supervisor = new ConsumerSupervisor(
    {
      kafka: fakes.kafka,
      group: 'g',
      topics: [TASKS],
      sessionTimeoutMs: 10000,
      heartbeatIntervalMs: 2000,
      rebalanceTimeoutMs: 30000,
      partitionsConcurrently: 3,
      logger: createLogger({}, { level: 'info', write: (l) => void lines.push(JSON.parse(l) as Record<string, unknown>) }),
      onFatal: (e) => void fatal.push(e),
      sleep: async (ms) => void pauses.push(ms),
    },
    {
      assigned: (a) => void assignments.push(a),
      emptyFetch: () => undefined,
      eachBatch: async () => undefined,
      noteError: (e) => void errors.push(errorMessage(e)),
    },
  );
  const crash = (restart: boolean, i = fakes.consumers.length - 1) =>
    fakes.consumers[i]!.emit('consumer.crash', { error: new Error(`crash ${i}`), restart, groupId: 'g' });
  return { ...fakes, supervisor, pauses, fatal, assignments, errors, lines, crash };
}

describe('ConsumerSupervisor', () => {
  test('runs the consumer without auto-commit, with the partitions it was given to consume at once', async () => {
    const { supervisor, consumers } = supervised();
    await supervisor.start();
    const config = consumers[0]!.runConfig!;
    assert.equal(config.autoCommit, false);
    assert.equal(config.eachBatchAutoResolve, false);
    assert.equal(config.partitionsConsumedConcurrently, 3);
    assert.equal(supervisor.isRunning, true);
  });

  test('a consumer kafkajs stopped for good is replaced after a pause, and a join resets the count of rebuilds in a row', async () => {
    const { supervisor, consumers, pauses, crash, assignments, fatal } = supervised();
    await supervisor.start();
    crash(false);
    assert.equal(supervisor.isRunning, false);
    await until('a new consumer runs', () => consumers.length === 2 && supervisor.isRunning);
    assert.equal(consumers[0]!.disconnected, true, 'the stopped consumer is disconnected');
    crash(false);
    await until('a third consumer runs', () => consumers.length === 3 && supervisor.isRunning);
    assert.deepEqual(pauses, [2000, 4000], 'a growing pause while no consumer has joined');
    consumers[2]!.emit('consumer.group_join', { memberAssignment: { [TASKS]: [0, 1] } });
    assert.deepEqual(assignments, [{ [TASKS]: [0, 1] }]);
    crash(false);
    await until('a fourth consumer runs', () => consumers.length === 4 && supervisor.isRunning);
    assert.deepEqual(pauses, [2000, 4000, 2000], 'the count starts again after a join');
    assert.deepEqual(fatal, []);
  });

  test(`gives up through onFatal after ${MAX_REBUILDS_IN_A_ROW} rebuilds in a row that did not run`, async () => {
    const { supervisor, consumers, pauses, crash, fatal, kafka } = supervised();
    await supervisor.start();
    // Every consumer made from now on fails to connect.
    const make = kafka.consumer.bind(kafka);
    (kafka as { consumer: typeof kafka.consumer }).consumer = (config) => {
      const c = make(config);
      consumers[consumers.length - 1]!.failConnect = new Error('no coordinator');
      return c;
    };
    crash(false);
    await until('onFatal', () => fatal.length === 1);
    assert.deepEqual(pauses, [2000, 4000, 6000, 8000, 10000]);
    assert.equal(consumers.length, 1 + MAX_REBUILDS_IN_A_ROW);
    assert.equal(supervisor.isRunning, false);
  });

  test('a crash kafkajs restarts from is left to kafkajs, and a crash of a consumer already replaced is ignored', async () => {
    const { supervisor, consumers, crash, pauses, errors } = supervised();
    await supervisor.start();
    crash(true);
    await settle();
    assert.equal(consumers.length, 1);
    assert.equal(supervisor.isRunning, true);
    assert.deepEqual(errors, ['crash 0']);
    crash(false);
    await until('a new consumer runs', () => consumers.length === 2 && supervisor.isRunning);
    crash(false, 0);
    await settle();
    assert.equal(consumers.length, 2);
    assert.deepEqual(pauses, [2000]);
  });

  test('a stopping supervisor rebuilds nothing', async () => {
    const { supervisor, consumers, crash } = supervised();
    await supervisor.start();
    await supervisor.stop();
    crash(false);
    await settle();
    assert.equal(consumers.length, 1);
    assert.equal(supervisor.isStopping, true);
  });

  test('pause, seek and resume that kafkajs refuses (a consumer restarting) are skipped with an info line', async () => {
    const { supervisor, consumers, lines, log } = supervised();
    await supervisor.start();
    consumers[0]!.refuse = new Error('not running');
    supervisor.onConsumer('seek', TASKS, 0, (c) => c.seek({ topic: TASKS, partition: 0, offset: '5' }));
    assert.deepEqual(log, ['refused seek']);
    assert.match(String(lines.at(-1)?.msg), /seek skipped/);
    consumers[0]!.refuse = null;
    log.length = 0;
    supervisor.onConsumer('seek', TASKS, 0, (c) => c.seek({ topic: TASKS, partition: 0, offset: '5' }));
    assert.deepEqual(log, [`seek ${TASKS}[0]=5`]);
  });
});
