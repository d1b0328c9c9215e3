/**
 * The chaos report's account of lost runs: for each run with no outcome, the stage that last
 * committed something of it, so a failed chaos run says which stage stopped. No broker: the
 * committed records are written by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { whereLost } from '../../bench/lib/chaos-run.ts';

const record = (id: string, key: string, partition: number, timestamp: number) => ({ id, key, partition, timestamp });

test('a lost run is counted at its last committed record, by time, across iterations', () => {
  const records = [
    record('tasks', 'a', 0, 1),
    record('thoughtRequests', 'a', 0, 2),
    record('actionResults', 'a', 0, 3),
    record('observationResults', 'a', 0, 4),
    // Iteration 2's wave: later than iteration 1's verdicts, though an earlier stage.
    record('thoughtRequests', 'a', 0, 5),
    record('tasks', 'b', 3, 1),
    record('thoughtRequests', 'b', 3, 2),
    record('tasks', 'c', 5, 1),
    // A run that ended is not lost, whatever its records.
    record('tasks', 'done', 1, 1),
    record('outcomes', 'done', 1, 9),
  ];
  assert.deepEqual(whereLost(records, ['a', 'b', 'c', 'nowhere']), {
    thoughtRequests: { runs: 2, partitions: [0, 3] },
    tasks: { runs: 1, partitions: [5] },
    'nothing committed': { runs: 1, partitions: [] },
  });
});

test('records of two stages at the same millisecond: the run stopped at the later stage', () => {
  const records = [record('actionResults', 'a', 2, 7), record('thoughtRequests', 'a', 2, 7)];
  assert.deepEqual(whereLost(records, ['a']), { actionResults: { runs: 1, partitions: [2] } });
});

test('no lost run: nothing to account for', () => {
  assert.deepEqual(whereLost([record('tasks', 'a', 0, 1)], []), {});
});
