// test-needs: kafka
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runBadInputs, type BadInputReport } from '../../bench/bad-inputs.ts';

let report: BadInputReport | null = null;
const corpus = async () => (report ??= await runBadInputs({ timeoutMs: 90000, log: () => undefined }));

test('every kind of bad input is accounted for (4xx, dead letter with its reason, refusal, or outcome), no crash, no stall', { timeout: 180000 }, async () => {
  const r = await corpus();
  assert.ok(r.kinds.length >= 50, `${r.kinds.length} kinds`);
  const unaccounted = r.kinds.filter((k) => !k.accounted).map((k) => `${k.id}: expected ${k.expected}, observed ${k.observed}`);
  assert.deepEqual(unaccounted, []);
  const first = r.rounds.find((x) => x.round === 1)!;
  assert.deepEqual(
    first.stalls.filter((s) => !s.processed),
    [],
    'a good record after the bad ones is processed on every partition',
  );
  assert.deepEqual(first.crashes, []);
  assert.deepEqual(first.unhealthy, []);
  assert.equal(r.unattributedDeadLetters, 0);
});

// The kinds the corpus found broken once (invalid UTF-8 at the ingress, an oversized record stopping a stage), fixed in 9f1b575.
test(
  'found by the corpus and fixed: invalid UTF-8 refused by the ingress; oversized records dead-lettered without stopping the stage',
  { timeout: 180000 },
  async () => {
    const r = await corpus();
    assert.deepEqual(
      r.kinds.filter((k) => k.knownIssue && !k.accounted).map((k) => `${k.id}: expected ${k.expected}, observed ${k.observed}`),
      [],
    );
    const second = r.rounds.find((x) => x.round === 2);
    assert.deepEqual(second?.stalls.filter((s) => !s.processed) ?? [], []);
    assert.deepEqual(second?.unhealthy ?? [], []);
  },
);
