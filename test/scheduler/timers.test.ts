import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApprovalTimers } from '../../scheduler/timers.ts';
import type { RunSnapshot } from '../../schemas/types.gen.ts';

const T0 = 1_760_000_000_000;

function parked(wave: number, timeoutMs: number | null): RunSnapshot {
  return {
    thought_id: 'r',
    status: 'awaiting_approval',
    iteration: wave - 1,
    task_id: 't',
    task_text: 'x',
    missing_fields: [],
    run: null,
    outcome_status: null,
    approval: { wave, timeout_ms: timeoutMs, calls: [] },
    parked_steps: [],
    dead_letter: null,
    parked_ttl_ms: null,
    manifest: null,
  };
}
const running = (): RunSnapshot => ({ ...parked(2, 1000), status: 'running', approval: null });

test('a parked wave is due at its first snapshot time plus its time-out, once per process', () => {
  const timers = new ApprovalTimers();
  timers.onSnapshot('r', parked(2, 60_000), T0);
  // A partial decision rewrites the snapshot of the same parked wave: the deadline stands.
  timers.onSnapshot('r', parked(2, 60_000), T0 + 30_000);
  assert.deepEqual(timers.due(T0 + 59_999), []);
  const [due] = timers.due(T0 + 60_000);
  assert.deepEqual(due, { thoughtId: 'r', wave: 2, dueMs: T0 + 60_000 });
  timers.markFired(due!);
  assert.deepEqual(timers.due(T0 + 120_000), [], 'a written time-out is not written again by this process');
});

test('a run that moved on (approved, ended, swept) or parks without a time-out has no deadline; a later parking gets its own', () => {
  const timers = new ApprovalTimers();
  timers.onSnapshot('r', parked(2, 1000), T0);
  timers.onSnapshot('r', running(), T0 + 10);
  assert.deepEqual(timers.due(T0 + 10_000), []);
  timers.onSnapshot('r', parked(4, 1000), T0 + 20);
  assert.deepEqual(
    timers.due(T0 + 10_000).map((d) => d.wave),
    [4],
  );
  timers.onSnapshot('r', null, T0 + 30);
  assert.equal(timers.size, 0);
  timers.onSnapshot('q', parked(2, null), T0);
  assert.equal(timers.size, 0, 'timeout_ms null: never times out');
});
