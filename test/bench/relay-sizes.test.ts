/**
 * The relay ceiling writes what the loop writes: one run round the relay's ring gives, per topic,
 * as many records as a loop run of the same iterations committed, each of the loop record's size
 * at that point (the snapshot Thought writes with every dispatched wave included). No broker: the
 * loop's committed records are written by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordSizes, type DecodedRecord } from '../../bench/lib/loop-log.ts';
import { KIND, relayStep, relayValue, type RelayHop, type RelaySizes } from '../../bench/relay/relay.ts';
import type { TopicId } from '../../topics/catalog.ts';

const RELAY_TOPIC: Partial<Record<TopicId, string>> = {
  tasks: 'tasks',
  thoughtRequests: 'requests',
  actionResults: 'results',
  observationResults: 'observations',
  outcomes: 'outcomes',
  thoughtRuns: 'runs',
};

/** One loop run of `iterations` waves, as the bench reads it back: topic, decoded fields and value bytes. */
function loopRun(key: string, iterations: number): DecodedRecord[] {
  const out: DecodedRecord[] = [];
  let offset = 0;
  const add = (id: TopicId, decoded: Record<string, unknown>, bytes: number) =>
    out.push({ id, decoded, topic: id, partition: 0, offset: String(offset++), key, value: Buffer.alloc(bytes), timestamp: offset, headers: {} });
  add('tasks', { thought_id: key }, 300);
  for (let i = 1; i <= iterations; i++) {
    add('thoughtRequests', { iteration: i }, 400 + i);
    add('thoughtRuns', { status: 'running', iteration: i }, 120 + i);
    add('actionResults', { iteration: i }, 900 + i);
    add('observationResults', { iteration: i }, 1500 + i);
  }
  add('outcomes', { iterations, status: 'completed' }, 700);
  add('thoughtRuns', { status: 'ended', iteration: iterations }, 130);
  return out;
}

/** The records one relay run writes, per relay topic: their value sizes in the order written. */
function relayRun(sizes: RelaySizes): Map<string, number[]> {
  const hopOf: Record<string, RelayHop | null> = {
    tasks: 'thought',
    requests: 'action',
    results: 'observation',
    observations: 'thought',
    outcomes: null,
    runs: null,
  };
  const written = new Map<string, number[]>([['tasks', [sizes.task]]]);
  const queue: Array<{ topic: string; value: Buffer }> = [{ topic: 'tasks', value: relayValue(KIND.task, 0, sizes.task) }];
  while (queue.length) {
    const { topic, value } = queue.shift()!;
    const hop = hopOf[topic];
    if (!hop) continue;
    for (const out of relayStep(hop, value, sizes)) {
      written.set(out.topic, [...(written.get(out.topic) ?? []), out.value.length]);
      queue.push(out);
    }
  }
  return written;
}

test('a relay run writes, per topic, the records a loop run committed, each of its size', () => {
  const records = [...loopRun('a', 3), ...loopRun('b', 3), ...loopRun('c', 3)];
  const sizes = recordSizes(records);
  assert.equal(sizes.iterations, 3);
  const expected = new Map<string, number[]>();
  for (const r of loopRun('a', 3)) {
    const topic = RELAY_TOPIC[r.id]!;
    expected.set(topic, [...(expected.get(topic) ?? []), r.value!.length]);
  }
  assert.deepEqual(relayRun(sizes), expected);
  // Four snapshots a run: one with each of the three waves' requests, one with the outcome.
  assert.deepEqual(expected.get('runs'), [121, 122, 123, 130]);
});

test('runs of another length do not calibrate the relay', () => {
  const sizes = recordSizes([...loopRun('a', 3), ...loopRun('b', 3), ...loopRun('short', 2)]);
  assert.equal(sizes.iterations, 3);
  assert.deepEqual(sizes.snapshot, [121, 122, 123]);
  assert.equal(relayRun(sizes).get('requests')?.length, 3);
});
