/**
 * The chaos harness's rollout checks (bench/lib/chaos-rollouts.ts): a run must start on a manifest
 * published whole before it and routed to it by a pointer written before it, and name that one
 * manifest, with its iteration bound, in every record. No broker: the release log and the runs'
 * records are written by hand, each breach once, to show the check names it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkRunManifests, runManifestRecords, type ReleaseLogEntry, type RunManifestRecord } from '../../bench/lib/chaos-rollouts.ts';
import type { DecodedRecord } from '../../bench/lib/loop-log.ts';
import { runBucket } from '../../runtime/release/watcher.ts';
import type { ReleasePointer } from '../../runtime/release/records.ts';

const D = 'd'.repeat(64);
const A = 'a'.repeat(64);
const X = 'e'.repeat(64);
const pointer = (p: Partial<ReleasePointer>): ReleasePointer => ({ active: D, previous: null, candidate: null, percent: 0, changed_at: 0, reason: '', ...p });

// At 50%: run-a (bucket 47) goes to the candidate, run-b (bucket 91) to the active manifest.
const LOG: ReleaseLogEntry[] = [
  { at: 100, manifest: { digest: D, maxIterations: 10 } },
  { at: 110, manifest: { digest: A, maxIterations: 12 } },
  { at: 120, pointer: pointer({}) },
  { at: 300, pointer: pointer({ candidate: A, percent: 50 }) },
  { at: 500, pointer: pointer({}) },
  { at: 600, manifest: { digest: X, maxIterations: 10 } },
];

/** A run's wave 1, its verdicts and its outcome, from `at`, all naming `manifest`. */
const run = (id: string, manifest: string | null, at: number, bound = manifest === A ? 12 : 10): RunManifestRecord[] => [
  { run: id, what: 'thoughtRequests 1', at, manifest, maxIterations: bound },
  { run: id, what: 'observationResults 1', at: at + 5, manifest },
  { run: id, what: 'outcomes', at: at + 10, manifest },
];

test('the bucket ids the cases rely on', () => {
  assert.ok(runBucket('run-a') < 50 && runBucket('run-b') >= 50);
});

test('runs on the manifest the pointer in force routed them to, kept through later moves: no violation', () => {
  // run-a before the canary, run-b (outside the canary's buckets) during it, run-c after the rollback.
  const records = [...run('run-a', D, 200), ...run('run-b', D, 350), ...run('run-c', D, 520)];
  const result = checkRunManifests(LOG, records, new Set(['run-a', 'run-b', 'run-c']));
  assert.deepEqual(result.violations, []);
  assert.deepEqual(result.runsByManifest, { [D]: 3 });
  assert.equal(result.checkedRuns, 3);

  // On the candidate while it was at 50%, finishing after the rollback (at 500) on it still.
  const canary = checkRunManifests(
    LOG,
    [...run('run-a', A, 350), { run: 'run-a', what: 'thoughtRequests 2', at: 700, manifest: A, maxIterations: 12 }],
    new Set(['run-a']),
  );
  assert.deepEqual(canary.violations, []);
  assert.deepEqual(canary.runsByManifest, { [A]: 1 });
});

test('a run whose records name two manifests is a violation', () => {
  const records = [...run('run-a', A, 350), { run: 'run-a', what: 'thoughtRequests 2', at: 600, manifest: D, maxIterations: 12 }];
  const { violations } = checkRunManifests(LOG, records, new Set(['run-a']));
  assert.equal(violations.length, 1, violations.join('\n'));
  assert.match(violations[0]!, /^run-a: its records name aaaaaaaaaaaa and dddddddddddd/);
});

test('a record without a manifest is a violation', () => {
  const records = [...run('run-b', D, 200), { run: 'run-b', what: 'actionResults 1', at: 203, manifest: null }];
  const { violations } = checkRunManifests(LOG, records, new Set(['run-b']));
  assert.deepEqual(violations.length, 1);
  assert.match(violations[0]!, /its records name dddddddddddd and no manifest/);
});

test('a digest never published, or published only after the run started, is a violation', () => {
  const never = checkRunManifests(LOG, run('run-b', 'f'.repeat(64), 400), new Set(['run-b']));
  assert.deepEqual(never.violations, ['run-b: starts on manifest ffffffffffff, never published whole']);
  const late = checkRunManifests(LOG, run('run-b', X, 550), new Set(['run-b']));
  assert.deepEqual(late.violations, ['run-b: starts on manifest eeeeeeeeeeee, published only after its first record']);
});

test('a published digest no pointer routed the run to is a violation: never pointed at, outside its bucket, or before the canary', () => {
  const never = checkRunManifests(LOG, run('run-b', X, 700), new Set(['run-b']));
  assert.deepEqual(never.violations, ['run-b: starts on manifest eeeeeeeeeeee, which no pointer written before its first record routed it to']);
  // run-b's bucket (91) is above the canary's 50%: the candidate is not its manifest.
  const bucket = checkRunManifests(LOG, run('run-b', A, 350), new Set(['run-b']));
  assert.equal(bucket.violations.length, 1);
  assert.match(bucket.violations[0]!, /no pointer written before its first record routed it to/);
  // Published at 110, but the canary starts at 300.
  const early = checkRunManifests(LOG, run('run-a', A, 200), new Set(['run-a']));
  assert.equal(early.violations.length, 1);
});

test("a snapshot's time is its input's (the task's, before the pointer that routed the run): not the run's start", () => {
  const state = { manifest: A, max_iterations: 12 };
  const records = runManifestRecords([
    // The run's first snapshot, stamped with its task's time (200), before the canary (300) that routed the run.
    { id: 'thoughtRuns', key: 'run-a', timestamp: 200, decoded: { status: 'running', manifest: A, run: state } },
    { id: 'thoughtRequests', key: 'run-a', timestamp: 350, decoded: { iteration: 1, run: state } },
    { id: 'outcomes', key: 'run-a', timestamp: 400, decoded: { manifest: A } },
  ] as unknown as DecodedRecord[]);
  assert.deepEqual(checkRunManifests(LOG, records, new Set(['run-a'])).violations, []);
});

test('before any pointer, a run starts on a published manifest (the deployment Thought published)', () => {
  const log: ReleaseLogEntry[] = [{ at: 100, manifest: { digest: D, maxIterations: 10 } }];
  assert.deepEqual(checkRunManifests(log, run('run-b', D, 200), new Set(['run-b'])).violations, []);
});

test("a wave decided with another release's iteration bound is a violation (a half-applied manifest)", () => {
  const { violations } = checkRunManifests(LOG, run('run-a', A, 350, 10), new Set(['run-a']));
  assert.deepEqual(violations, ['run-a: thoughtRequests 1 carries iteration bound 10; its manifest aaaaaaaaaaaa says 12']);
});

test('runs outside the checked set are not checked', () => {
  const result = checkRunManifests(LOG, run('other', 'f'.repeat(64), 400), new Set(['run-a']));
  assert.deepEqual(result, { checkedRuns: 0, runsByManifest: {}, violations: [] });
});

test('the records that name a manifest: waves with their bound, results, verdicts, snapshots and their run state, outcomes', () => {
  const state = { manifest: A, max_iterations: 12 };
  const rec = (id: string, decoded: Record<string, unknown>, timestamp = 1) => ({ id, key: 'r', timestamp, decoded }) as unknown as DecodedRecord;
  const out = runManifestRecords([
    rec('tasks', { task_id: 't' }),
    rec('thoughtRequests', { iteration: 1, run: state }),
    rec('actionResults', { iteration: 1, run: state }),
    rec('observationResults', { iteration: 1, run: state }),
    rec('thoughtRuns', { status: 'completed', manifest: A, run: null }),
    rec('thoughtRuns', { status: 'running', manifest: A, run: state }),
    rec('outcomes', { manifest: D }),
  ]);
  assert.deepEqual(
    out.map((r) => [r.what, r.manifest?.[0] ?? null, r.maxIterations ?? null, r.at]),
    [
      ['thoughtRequests 1', 'a', 12, 1],
      ['actionResults 1', 'a', null, 1],
      ['observationResults 1', 'a', null, 1],
      ['snapshot completed', 'a', null, null],
      ['snapshot running', 'a', null, null],
      ['snapshot running run', 'a', null, null],
      ['outcomes', 'd', null, 1],
    ],
  );
});
