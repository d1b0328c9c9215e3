/**
 * The release pointer's moves (runtime/release/records.ts), which runs a canary picks
 * (runtime/release/watcher.ts), and the per-manifest rates of `tao rollout status`
 * (observability/release-rates.ts): pure functions.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { activate, promote, rollback, startRollout, type Move, type ReleasePointer } from '../../../runtime/release/records.ts';
import { pickManifest, runBucket } from '../../../runtime/release/watcher.ts';
import { ratesOf, renderRates, RunFacts } from '../../../observability/release-rates.ts';
import { runState } from '../../../schemas/records.ts';
import type { Verdict } from '../../../schemas/types.gen.ts';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const pointer = (m: Move): ReleasePointer => {
  if ('refused' in m) throw new Error(m.refused);
  return m.pointer;
};

test('activate, canary, promote, rollback: each move names what new runs start on; a move that makes no sense is refused', () => {
  assert.match((startRollout(null, B, 20, 1) as { refused: string }).refused, /no manifest is active/);
  const first = pointer(activate(null, A, 1));
  assert.match((activate(first, B, 2) as { refused: string }).refused, /already active/);
  assert.match((promote(first, 2) as { refused: string }).refused, /no rollout to promote/);
  assert.match((rollback(first, 2) as { refused: string }).refused, /nothing to roll back to/);
  assert.match((startRollout(first, B, 101, 2) as { refused: string }).refused, /0 to 100/);
  const canary = pointer(startRollout(first, B, 20, 2));
  assert.deepEqual([canary.active, canary.candidate, canary.percent], [A, B, 20]);
  // Rolling a canary back ends it: every new run on the active manifest.
  assert.deepEqual([pointer(rollback(canary, 3)).active, pointer(rollback(canary, 3)).candidate], [A, null]);
  const promoted = pointer(promote(canary, 3));
  assert.deepEqual([promoted.active, promoted.previous, promoted.candidate], [B, A, null]);
  const back = pointer(rollback(promoted, 4, 'broke order status'));
  assert.deepEqual([back.active, back.previous, back.reason], [A, null, 'rollback: broke order status']);
});

test("a run's manifest follows from its id alone: the same on every instance, the candidate for percent of the buckets", () => {
  const canary = pointer(startRollout(pointer(activate(null, A, 1)), B, 20, 2));
  const ids = Array.from({ length: 2000 }, (_, i) => `run-${i}`);
  for (const id of ids) assert.equal(pickManifest(canary, id), runBucket(id) < 20 ? B : A);
  const share = ids.filter((id) => pickManifest(canary, id) === B).length / ids.length;
  assert.ok(share > 0.17 && share < 0.23, `share ${share}`);
  assert.equal(pickManifest(null, 'x'), null, 'no release recorded: the stage decides (its deployment manifest)');
  assert.equal(pickManifest({ ...canary, percent: 0 }, ids[0]!), A);
});

test('rates per manifest count each run once, by its last outcome, ended runs only', () => {
  const o = (thought_id: string, status: 'completed' | 'escalated' | 'awaiting_input', manifest: string | null, model_cost: number | null = null) => ({
    thought_id,
    status,
    manifest,
    model_cost,
    steps_executed: 2,
  });
  const rates = ratesOf([
    o('1', 'awaiting_input', A),
    o('1', 'completed', A, 0.5),
    o('2', 'escalated', A),
    o('3', 'completed', B),
    o('4', 'awaiting_input', B),
  ]);
  const a = rates.find((r) => r.manifest === A)!;
  const b = rates.find((r) => r.manifest === B)!;
  assert.deepEqual([a.runs, a.completed, a.escalated, a.tcr, a.costPerRun], [2, 1, 1, 0.5, 0.5]);
  assert.deepEqual([b.runs, b.tcr, b.costPerRun], [1, 1, null]);
});

test('self-recovery per manifest: runs that hit a failure and completed without a person / runs that hit a failure', () => {
  const verdict = (over: Partial<Verdict>): Verdict => ({
    ...{ step_id: 'S1', tool: 't', valid: true, extracted_data_json: '{}', confidence_score: 1, error_type: 'ok', audit_trail: [] },
    ...{ status_code: 200, response_time_ms: 1, attempts: 1, fallback_from: null, ...over },
  });
  const facts = new RunFacts();
  const seen = (thought_id: string, failures_seen: number, verdicts: Verdict[], human_involved = false) =>
    facts.observation({ thought_id, run: runState({ failures_seen, human_involved }), verdicts });
  // A: 'r' recovered from a retried call on its last wave; 'f' hit a failure and failed; 'p' hit
  // one, parked for a person and then completed (not self-recovery); 'c' met no failure.
  seen('r', 0, [verdict({ attempts: 2 })]);
  seen('f', 1, [verdict({})]);
  seen('p', 0, [verdict({ valid: false, error_type: 'not_found' })]);
  seen('c', 0, [verdict({})]);
  // B: a fallback served 'b1' and it completed; 'b2' had an invalid verdict and a person's reply in its state.
  seen('b1', 0, [verdict({ fallback_from: 'orders.primary' })]);
  seen('b2', 1, [verdict({})], true);
  const o = (thought_id: string, status: 'completed' | 'failed' | 'awaiting_input', manifest: string) => ({
    ...{ thought_id, status, manifest, model_cost: null, steps_executed: 1 },
  });
  const rates = ratesOf(
    [o('r', 'completed', A), o('f', 'failed', A), o('p', 'awaiting_input', A), o('p', 'completed', A), o('c', 'completed', A)].concat([
      o('b1', 'completed', B),
      o('b2', 'completed', B),
    ]),
    facts,
  );
  const a = rates.find((r) => r.manifest === A)!;
  const b = rates.find((r) => r.manifest === B)!;
  assert.deepEqual([a.runs, a.hitFailure, a.recovered, a.srr], [4, 3, 1, 1 / 3]);
  assert.deepEqual([b.runs, b.hitFailure, b.recovered, b.srr], [2, 2, 1, 0.5]);
  const none = ratesOf([o('c', 'completed', A)], new RunFacts());
  assert.equal(none[0]!.srr, null, 'no run hit a failure: the rate is unknown, not 0 or 1');

  const lines = renderRates(rates, { active: A, candidate: B, previous: null, percent: 20, changed_at: 1, reason: '' });
  assert.match(lines[0]!, /^aaaaaaaaaaaa {2}active .* TCR 75\.0% {2}self-recovery 33\.3% \(1\/3\)/);
  assert.match(lines[1]!, /candidate .* self-recovery 50\.0% \(1\/2\)/);
  assert.match(renderRates(none, null)[0]!, /self-recovery - \(0\/0\)/);
});
