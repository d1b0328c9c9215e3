// test-needs: kafka
/**
 * Canary and rollback on the real broker (docs/RELEASES.md), with 2 Thought instances, Action and
 * Observation as processes: a candidate release at 20% takes its share of 500 new runs (by the hash
 * of each run id; every outcome names its manifest, and each run is decided by its manifest's
 * settings); `tao rollout rollback` reaches both Thought instances within 5 s of its record, measured
 * on their logs, after which every new run starts on the previous manifest; runs in flight at the
 * rollback finish on the manifest they started on, and `replay --verify` of one of them, its
 * manifest no longer active, re-decides it with that manifest and finds no drift.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { replayCommand } from '../../replay/cli.ts';
import { runCli } from '../replay/helpers.ts';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { packagePath } from '../../runtime/paths.ts';
import { readReleases } from '../../runtime/release/records.ts';
import { runBucket } from '../../runtime/release/watcher.ts';
import type { Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd, type TestCluster } from '../helpers/cluster.ts';
import { tao as taoCommand } from '../../bench/lib/chaos-rollouts.ts';

let cluster: TestCluster;
let tools: ToolServer;
let fleet: StageFleet;
let active: string;
let candidate: string;
let thoughtPids: number[];

const tao = (command: 'manifest' | 'rollout', args: string[]) => taoCommand(command, args, cluster.env);

const newRuns = (prefix: string, n: number): Task[] =>
  Array.from({ length: n }, (_, i) =>
    buildTask({ thought_id: `${prefix}-${i}`, kind: 'NEW', text: `Where is my order? ${prefix}${i}@example.com`, source: 'test' }),
  );

async function submit(tasks: Task[]): Promise<void> {
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, tasks);
  await producer.disconnect();
}

/** The time (ms) each Thought instance logged a release in force whose reason matches `reason`. */
function appliedAt(reason: RegExp): Map<number, number> {
  const at = new Map<number, number>();
  for (const line of fleet.lines) {
    if (!line.startsWith('thought: ') || !line.includes('"msg":"release in force"')) continue;
    const entry = JSON.parse(line.slice('thought: '.length)) as { ts: string; pid: number; reason: string };
    if (reason.test(entry.reason) && !at.has(entry.pid)) at.set(entry.pid, Date.parse(entry.ts));
  }
  return at;
}

/** Resolves once both Thought instances have logged the release in force for `reason`. */
async function bothApplied(reason: RegExp): Promise<Map<number, number>> {
  const deadline = Date.now() + 30000;
  while (thoughtPids.some((pid) => !appliedAt(reason).has(pid))) {
    if (Date.now() > deadline) throw new Error(`the Thought instances did not both log a release in force for ${reason}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return appliedAt(reason);
}

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  active = await tao('manifest', ['publish', '--activate']);
  // The candidate: the same release, decided with another iteration bound (visible on each of its runs' records).
  const folder = mkdtempSync(join(tmpdir(), 'tao-canary-'));
  cpSync(packagePath('flows'), join(folder, 'flows'), { recursive: true });
  writeFileSync(join(folder, 'settings.json'), JSON.stringify({ TAO_MAX_ITERATIONS: 9 }));
  candidate = await tao('manifest', ['publish', '--folder', folder]);
  assert.notEqual(candidate, active);
  fleet = new StageFleet(cluster.env);
  const started = await Promise.all([fleet.start('thought'), fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
  thoughtPids = started.slice(0, 2).map((p) => p.child.pid!);
});

after(async () => {
  await fleet?.stop();
  await tools?.close();
});

test(
  'a 20% canary, then a rollback: shares by run id, every run on one manifest, the rollback in force on both instances within 5 s',
  { timeout: 600000 },
  async () => {
    await tao('rollout', ['start', candidate, '--percent', '20']);
    await fleet.explained(bothApplied(/^rollout start 20%/));

    // 500 new runs on the canary.
    const canary = newRuns('canary', 500);
    const outcomes = await followOutcomes(cluster);
    await submit(canary);
    await fleet.explained(
      outcomes.waitUntil((o) => canary.every((t) => o.has(t.thought_id)), 300000),
      cluster,
    );
    const outcomeOf = (id: string) => outcomes.outcomes.get(id)!.value as unknown as Outcome;
    const onCandidate = canary.filter((t) => outcomeOf(t.thought_id).manifest === candidate).length;
    assert.ok(onCandidate >= 75 && onCandidate <= 125, `${onCandidate} of 500 runs on the candidate (15-25%)`);
    for (const t of canary) {
      const o = outcomeOf(t.thought_id);
      assert.equal(o.status, 'completed', `${t.thought_id}: ${o.reason}`);
      assert.equal(o.manifest, runBucket(t.thought_id) < 20 ? candidate : active, `${t.thought_id} starts on the manifest its bucket names`);
    }

    // 150 more runs; the rollback is written while some are in flight.
    const inFlight = newRuns('flight', 150);
    await submit(inFlight);
    await outcomes.waitUntil((o) => inFlight.filter((t) => o.has(t.thought_id)).length >= 30, 120000);
    // The runs without an outcome when the rollback is written: in flight, or not started yet.
    const pendingAtRollback = inFlight.filter((t) => !outcomes.outcomes.has(t.thought_id));
    await tao('rollout', ['rollback', '--reason', 'canary check']);
    const rolledBack = (await readReleases(cluster.kafka, cluster.codec)).pointer!;
    assert.deepEqual([rolledBack.active, rolledBack.candidate], [active, null]);
    const applied = await fleet.explained(bothApplied(/^rollback/));
    for (const pid of thoughtPids) {
      const lag = applied.get(pid)! - Number(rolledBack.changed_at);
      assert.ok(lag < 5000, `Thought ${pid} put the rollback in force ${lag} ms after its record`);
    }

    // Runs started after both instances applied it are all on the previous manifest.
    const later = newRuns('after', 100);
    await submit(later);
    await fleet.explained(
      outcomes.waitUntil((o) => [...inFlight, ...later].every((t) => o.has(t.thought_id)), 300000),
      cluster,
    );
    await outcomes.stop();
    assert.deepEqual(
      later.filter((t) => outcomeOf(t.thought_id).manifest !== active).map((t) => t.thought_id),
      [],
      'every run started after the rollback is on the previous manifest',
    );

    // Every run keeps its manifest to its end: each of its waves names it, with its manifest's iteration bound.
    const requests = await scanToEnd(cluster, ['thoughtRequests']);
    for (const record of requests) {
      const r = record.value as unknown as ThoughtRequest;
      const o = outcomeOf(r.thought_id);
      assert.equal(r.run.manifest, o.manifest, `${r.thought_id} wave ${r.iteration} is on its run's manifest`);
      assert.equal(r.run.max_iterations, o.manifest === candidate ? 9 : 10, `${r.thought_id} is decided by its manifest's settings`);
    }
    // Runs still without an outcome when the rollback was written that had started on the candidate
    // (a run starts on it only before its instance applies the rollback): they finished on it.
    const crossing = pendingAtRollback.filter((t) => outcomeOf(t.thought_id).manifest === candidate);
    assert.ok(crossing.length > 0, `some candidate runs were in flight at the rollback (${pendingAtRollback.length} runs had no outcome then)`);

    // tao rollout status: each manifest's runs and rates, from the outcomes.
    const status = JSON.parse(await tao('rollout', ['status', '--json'])) as { manifests: Array<{ manifest: string; runs: number; tcr: number }> };
    const all = [...canary, ...inFlight, ...later];
    for (const digest of [active, candidate]) {
      const rates = status.manifests.find((m) => m.manifest === digest)!;
      assert.equal(rates.runs, all.filter((t) => outcomeOf(t.thought_id).manifest === digest).length, `${digest.slice(0, 12)}'s runs`);
      assert.equal(rates.tcr, 1, 'every run completed');
    }

    // replay --verify of a run made on the candidate, no longer active: re-decided with its own manifest, no drift.
    const verified = await runCli(replayCommand, [crossing[0]!.thought_id, '--verify', '--format', 'json'], cluster.env);
    const report = JSON.parse(verified.stdout) as { drift: boolean; notes: string[] };
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.equal(report.drift, false);
    assert.ok(
      report.notes.some((n) => n.includes(`manifest ${candidate.slice(0, 12)}`)),
      report.notes.join('\n'),
    );
  },
);
