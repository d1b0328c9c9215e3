// test-needs: kafka
/**
 * The short form of `npm run chaos -- --rollouts` (docs/BENCHMARKS.md): 100 runs on 1 instance per
 * stage, a SIGKILL of each stage, each right after a move of the release pointer through three
 * published releases (and a move between kills), read back from the committed log.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { inProcessToolControl, runChaos } from '../../bench/lib/chaos-run.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';

let tools: ToolServer;

before(async () => {
  tools = await startToolServer({ port: 0 });
});
after(async () => {
  await tools?.close();
});

test(
  'SIGKILL of each stage during a 100-run load with refunds answered late and the release pointer moving: no run lost, no step committed twice, no refund applied twice, every run on one whole pointed-at manifest',
  { timeout: 180000 },
  async () => {
    const report = await runChaos({
      runs: 100,
      kills: 3,
      killEveryMs: 4000,
      instances: 1,
      toolServerErrorRate: 0.05,
      brokerRestart: null,
      env: process.env,
      tools: inProcessToolControl(tools),
      drainTimeoutMs: 90000,
      seed: 9,
      log: () => undefined,
      rollouts: true,
    });
    assert.deepEqual(report.kills.map((k) => k.stage).sort(), ['action', 'observation', 'thought'], 'one kill of each stage');
    assert.equal(report.submitted, 100);
    assert.deepEqual(report.lostRuns, [], 'every submitted run has a committed outcome');
    assert.deepEqual(report.duplicatedSteps, [], 'no (thought_id, iteration, step) and no outcome committed twice');
    assert.equal(report.undecodable, 0);
    assert.deepEqual(
      Object.values(report.deadLetters).filter((n) => n > 0),
      [],
      'no dead letters',
    );
    assert.deepEqual(
      report.unexpectedExits.map((e) => `${e.name} exited ${e.code}`),
      [],
    );
    assert.equal(report.rates.completed, 100, `every run completed: ${JSON.stringify(report.rates.byReason)}`);
    // The side effects, counted at the tool server by Idempotency-Key: refunds were made, some answered
    // after Action's time-out on every attempt and retried by Thought, and none applied twice.
    assert.ok(report.sideEffects.runsWithEffect > 0, 'runs refunded their order');
    assert.ok(report.sideEffects.retriedByThought > 0, 'refund calls answered too late were retried by Thought');
    assert.deepEqual(report.sideEffects.appliedTwice, [], 'no refund applied twice');
    assert.equal(report.sideEffects.applied, report.sideEffects.runsWithEffect, 'one refund per refunded run');
    // The rollouts: starts, promotes and rollbacks, each kill right after one, and every run started
    // on a manifest published whole and routed to it by a pointer, named by each of its records.
    const r = report.rollouts!;
    assert.equal(r.moves.failed, 0);
    assert.deepEqual(Object.keys(r.moves.byKind).sort(), ['promote', 'rollback', 'start'], JSON.stringify(r.moves));
    assert.deepEqual(r.killsDuringMoves.byStage, { action: 1, observation: 1, thought: 1 }, 'each kill landed within 2 s of a pointer move');
    assert.equal(r.checkedRuns, 100);
    assert.deepEqual(r.violations, [], 'every run kept one whole, pointed-at manifest');
    assert.equal(
      r.manifests.reduce((a, m) => a + m.runs, 0),
      100,
      'each run names one of the published releases',
    );
    assert.ok(r.manifests.filter((m) => m.runs > 0).length >= 2, `runs on more than one release: ${JSON.stringify(r.manifests)}`);
  },
);
