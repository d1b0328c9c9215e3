/**
 * The run stream's order (runtime/run-stream/order.ts) and cursor: a pure merge, so the same records
 * give the same sequence however they were read, and a merge started from any cursor goes on with
 * exactly the rest.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeCursor, encodeCursor } from '../../runtime/run-stream/cursor.ts';
import { RunMerge, STREAM_TOPICS, type Positions, type RunRecord, type StreamTopic } from '../../runtime/run-stream/order.ts';

const ZERO: Positions = { tasks: 0n, thoughtRequests: 0n, actionResults: 0n, observationResults: 0n, outcomes: 0n };
const ALL: Positions = { tasks: 99n, thoughtRequests: 99n, actionResults: 99n, observationResults: 99n, outcomes: 99n };

const rec = (topic: StreamTopic, offset: number, cause: [StreamTopic, number] | null, value: Record<string, unknown> = {}): RunRecord => ({
  topic,
  partition: 0,
  offset: BigInt(offset),
  timestamp: 1000 + offset,
  cause: cause && { topic: cause[0], partition: 0, offset: BigInt(cause[1]) },
  value,
});

// A run: task 0 → wave 1 → results → verdicts → parked outcome; an ignored task (1), a reply (2) → wave 2 → ... → outcome.
const RUN: RunRecord[] = [
  rec('tasks', 0, null),
  rec('thoughtRequests', 0, ['tasks', 0]),
  rec('actionResults', 0, ['thoughtRequests', 0]),
  rec('observationResults', 0, ['actionResults', 0]),
  rec('outcomes', 0, ['observationResults', 0], { status: 'awaiting_input' }),
  rec('tasks', 1, null),
  rec('tasks', 2, null),
  rec('thoughtRequests', 1, ['tasks', 2]),
  rec('actionResults', 1, ['thoughtRequests', 1]),
  rec('observationResults', 1, ['actionResults', 1]),
  rec('outcomes', 1, ['observationResults', 1], { status: 'completed' }),
];
const EXPECTED = [
  'tasks:0',
  'thoughtRequests:0',
  'actionResults:0',
  'observationResults:0',
  'outcomes:0',
  'tasks:1',
  'tasks:2',
  'thoughtRequests:1',
  'actionResults:1',
  'observationResults:1',
  'outcomes:1',
];
const name = (r: RunRecord) => `${r.topic}:${r.offset}`;

test('causal order: each record after its cause, a task right before what it (or a later task) caused, whatever order the topics were read in', () => {
  const byTopicFirst = new RunMerge(ZERO);
  for (const t of [...STREAM_TOPICS].reverse()) for (const r of RUN.filter((x) => x.topic === t)) byTopicFirst.add(r);
  assert.deepEqual(
    byTopicFirst.take(ALL).map((x) => name(x.record)),
    EXPECTED,
  );

  // Read live, one record at a time in the order they were written: the same sequence.
  const live = new RunMerge(ZERO);
  const out: string[] = [];
  for (const r of RUN) {
    live.add(r);
    out.push(...live.take(ALL).map((x) => name(x.record)));
  }
  assert.deepEqual(out, EXPECTED);
});

test('a merge started from any cursor goes on with exactly the rest; the cursor survives its text form', () => {
  const whole = new RunMerge(ZERO);
  for (const r of RUN) whole.add(r);
  const taken = whole.take(ALL);
  for (let cut = 0; cut < taken.length; cut++) {
    const cursor = decodeCursor(encodeCursor(taken[cut]!.positions))!;
    assert.deepEqual(cursor, taken[cut]!.positions);
    const resumed = new RunMerge(cursor);
    for (const r of RUN) resumed.add(r);
    assert.deepEqual(
      resumed.take(ALL).map((x) => name(x.record)),
      EXPECTED.slice(cut + 1),
      `resumed after event ${cut}`,
    );
  }
  assert.equal(decodeCursor('r1.1.2'), null);
  assert.equal(decodeCursor('something else'), null);
});

test('nothing at or beyond the frontier is streamed: a wave waits for its sibling outcome of the same transaction', () => {
  const m = new RunMerge(ZERO);
  for (const r of RUN) m.add(r);
  const frontier = { ...ALL, actionResults: 1n };
  const got = m.take(frontier).map((x) => name(x.record));
  assert.deepEqual(got, EXPECTED.slice(0, 8), 'stops before the second results, which is beyond the frontier');
  assert.deepEqual(
    m.take(ALL).map((x) => name(x.record)),
    EXPECTED.slice(8),
  );
});

test('a task that caused nothing and has no later task is held, not streamed', () => {
  const m = new RunMerge(ZERO);
  for (const r of [...RUN.slice(0, 5), rec('tasks', 1, null)]) m.add(r);
  assert.deepEqual(
    m.take(ALL).map((x) => name(x.record)),
    EXPECTED.slice(0, 5),
  );
  assert.equal(m.pending, 1);
});
