/**
 * The scheduler's run deadlines without a broker: a parked run is due its time-to-live after it
 * parked, a running run's wave its observation deadline after it was dispatched (never earlier than
 * the scheduler read it), each once per process, and a run that moved on drops or replaces its timer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RunTimers } from '../../scheduler/run-timers.ts';
import type { RunSnapshot } from '../../schemas/types.gen.ts';

const T0 = 1_760_000_000_000;
const H = 3_600_000;

function snapshot(status: RunSnapshot['status'], over: Partial<RunSnapshot> = {}): RunSnapshot {
  return {
    thought_id: 'r',
    status,
    iteration: 1,
    task_id: 't1',
    task_text: 'x',
    missing_fields: [],
    run: null,
    outcome_status: null,
    approval: null,
    parked_steps: [],
    dead_letter: null,
    parked_ttl_ms: null,
    manifest: null,
    ...over,
  };
}

test("a parked run is due its snapshot's time-to-live after it parked; a later snapshot of the same parking keeps the first deadline; once per process", () => {
  const timers = new RunTimers({ parkedTtlMs: 7 * 24 * H, observationDeadlineMs: 0 });
  timers.onSnapshot('r', snapshot('awaiting_input', { parked_ttl_ms: 2 * H }), T0, T0);
  timers.onSnapshot('r', snapshot('awaiting_input', { parked_ttl_ms: 2 * H }), T0 + H, T0 + H);
  assert.deepEqual(timers.due(T0 + 2 * H - 1), []);
  const [due] = timers.due(T0 + 2 * H);
  assert.deepEqual(due, {
    thoughtId: 'r',
    timer: { reason: 'parked_expired', status: 'awaiting_input', wave: 1, run_task_id: 't1', due_at_ms: T0 + 2 * H },
  });
  timers.markFired(due!);
  assert.deepEqual(timers.due(T0 + 3 * H), [], 'written once');
});

test("a snapshot without parked_ttl_ms (written before the field) takes the scheduler's TAO_PARKED_RUN_TTL; 0 never expires", () => {
  const timers = new RunTimers({ parkedTtlMs: 5 * H, observationDeadlineMs: 0 });
  timers.onSnapshot('a', snapshot('awaiting_approval'), T0, T0);
  timers.onSnapshot('b', snapshot('awaiting_input', { parked_ttl_ms: 0 }), T0, T0);
  assert.deepEqual(
    timers.due(T0 + 100 * H).map((d) => [d.thoughtId, d.timer.due_at_ms]),
    [['a', T0 + 5 * H]],
  );
  assert.deepEqual(new RunTimers({ parkedTtlMs: 0, observationDeadlineMs: 0 }).due(T0), []);
});

test('a reply (a new task), another wave, an end or a tombstone replaces or drops the timer', () => {
  const timers = new RunTimers({ parkedTtlMs: H, observationDeadlineMs: 0 });
  timers.onSnapshot('r', snapshot('awaiting_input'), T0, T0);
  // The reply resumed the run and it parked again at the same wave: a new parking, a new deadline.
  timers.onSnapshot('r', snapshot('awaiting_input', { task_id: 't2' }), T0 + 30 * 60_000, T0 + 30 * 60_000);
  assert.deepEqual(
    timers.due(T0 + 2 * H).map((d) => [d.timer.run_task_id, d.timer.due_at_ms]),
    [['t2', T0 + 90 * 60_000]],
  );
  timers.onSnapshot('r', snapshot('ended', { outcome_status: 'completed' }), T0 + H, T0 + H);
  assert.equal(timers.size, 0);
  timers.onSnapshot('s', snapshot('awaiting_input'), T0, T0);
  timers.onSnapshot('s', null, T0, T0);
  assert.equal(timers.size, 0);
});

test("a running run's wave is due its observation deadline after the later of its record time and when the scheduler read it", () => {
  const timers = new RunTimers({ parkedTtlMs: 0, observationDeadlineMs: H });
  timers.onSnapshot('r', snapshot('running', { iteration: 3 }), T0, T0 + 1000);
  // A backlog Thought dispatched late (an old record time) is not due before it has had its hour.
  timers.onSnapshot('old', snapshot('running'), T0 - 10 * H, T0);
  assert.deepEqual(
    timers.due(T0 + H + 1000).map((d) => [d.thoughtId, d.timer.reason, d.timer.wave, d.timer.due_at_ms]),
    [
      ['old', 'observation_deadline', 1, T0 + H],
      ['r', 'observation_deadline', 3, T0 + H + 1000],
    ],
  );
  // The next wave replaces the deadline; no deadline at all with 0.
  timers.onSnapshot('r', snapshot('running', { iteration: 4 }), T0 + 2000, T0 + 2000);
  assert.equal(
    timers.due(T0 + H + 1000).find((d) => d.thoughtId === 'r'),
    undefined,
  );
  const off = new RunTimers({ parkedTtlMs: 0, observationDeadlineMs: 0 });
  off.onSnapshot('r', snapshot('running'), T0, T0);
  assert.equal(off.size, 0);
});
