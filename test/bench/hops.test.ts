/**
 * The bench's probe splits each iteration by the hop that ends it (request → result → verdicts →
 * Thought's next record), from the records' timestamps, the same way for the loop's log and the
 * relay's; the three hops add up to the iteration. No broker: the committed records are written by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hopLatencies, iterationLatencies, type RawRecord } from '../../bench/lib/load.ts';
import { loopTimelines, type DecodedRecord } from '../../bench/lib/loop-log.ts';
import { KIND, relayTimelines, relayTopics, relayValue } from '../../bench/relay/relay.ts';
import type { TopicId } from '../../topics/catalog.ts';

// Two waves: request at 100, result 104, verdicts 111, next request 130, result 131, verdicts 139, outcome 160.
const TIMES = {
  task: 90,
  waves: [
    [100, 104, 111],
    [130, 131, 139],
  ],
  outcome: 160,
};
const EXPECTED = { action: [4, 1], observation: [7, 8], thought: [19, 21] };

test('a loop run: each iteration split into Action, Observation and Thought hops that add up to it', () => {
  const records: DecodedRecord[] = [];
  const add = (id: TopicId, decoded: Record<string, unknown>, timestamp: number) =>
    records.push({ id, decoded, topic: id, partition: 0, offset: String(records.length), key: 'run-1', value: Buffer.alloc(1), timestamp, headers: {} });
  add('tasks', { thought_id: 'run-1' }, TIMES.task);
  TIMES.waves.forEach(([request, result, verdicts], i) => {
    add('thoughtRequests', { iteration: i + 1 }, request!);
    add('thoughtRuns', { status: 'running', iteration: i + 1 }, request!);
    add('actionResults', { iteration: i + 1 }, result!);
    add('observationResults', { iteration: i + 1 }, verdicts!);
  });
  add('outcomes', { iterations: 2, status: 'completed' }, TIMES.outcome);
  const timelines = [...loopTimelines(records).values()];
  const hops = hopLatencies(timelines);
  assert.deepEqual(hops, EXPECTED);
  assert.deepEqual(
    hops.action.map((a, i) => a + hops.observation[i]! + hops.thought[i]!),
    iterationLatencies(timelines),
    'the hops add up to the iteration',
  );
});

test('a relay run gives the same split from its records, and a run without an outcome gives none', () => {
  const topics = relayTopics('ns');
  const records: RawRecord[] = [];
  const add = (topic: string, key: string, kind: number, iteration: number, timestamp: number) =>
    records.push({ topic, partition: 0, offset: String(records.length), key, value: relayValue(kind, iteration, 8), timestamp, headers: {} });
  for (const key of ['done', 'unfinished']) {
    add(topics.tasks, key, KIND.task, 0, TIMES.task);
    TIMES.waves.forEach(([request, result, verdicts], i) => {
      add(topics.requests, key, KIND.request, i + 1, request!);
      add(topics.results, key, KIND.result, i + 1, result!);
      add(topics.observations, key, KIND.observation, i + 1, verdicts!);
    });
  }
  add(topics.outcomes, 'done', KIND.outcome, 2, TIMES.outcome);
  const timelines = relayTimelines(records, 'ns');
  assert.deepEqual(hopLatencies([timelines.get('done')!]), EXPECTED);
  assert.deepEqual(hopLatencies([timelines.get('unfinished')!]), { action: [], observation: [], thought: [] });
});
