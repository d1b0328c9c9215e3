// test-needs: kafka
/**
 * Rollouts while Thought instances are killed (docs/RELEASES.md): 2 Thought instances, Action and
 * Observation as processes, 300 runs; meanwhile a canary is started, promoted and rolled back, and a
 * Thought instance is SIGKILLed (and replaced) around each move. Every run ends, and every run was
 * decided from its first wave to its outcome by one whole manifest: each of its records names the
 * same published manifest, with that manifest's settings.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { releaseCommand } from '../../cli/release-command.ts';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd, type TestCluster } from '../helpers/cluster.ts';

let cluster: TestCluster;
let tools: ToolServer;
let fleet: StageFleet;

async function tao(command: 'manifest' | 'rollout', args: string[]): Promise<string> {
  const out: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = (...a: unknown[]) => void out.push(a.join(' '));
  console.error = () => undefined;
  try {
    assert.equal(await releaseCommand(command, args, cluster.env), 0, `tao ${command} ${args.join(' ')}`);
  } finally {
    [console.log, console.error] = [log, error];
  }
  return out.join('\n').trim();
}

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
});

after(async () => {
  await fleet?.stop();
  await tools?.close();
});

test('kill -9 of Thought instances during a canary, a promote and a rollback: every run ends on one whole manifest', { timeout: 600000 }, async () => {
  // No release recorded yet: the first runs start on the deployment's manifest, which Thought published.
  const deployment = (await tao('manifest', ['list'])).split(/\s+/)[0]!;
  assert.match(deployment, /^[0-9a-f]{64}$/);
  const folder = mkdtempSync(join(tmpdir(), 'tao-kill-'));
  writeFileSync(join(folder, 'settings.json'), JSON.stringify({ TAO_MAX_ITERATIONS: 9 }));
  const candidate = await tao('manifest', ['publish', '--folder', folder]);
  const bound = new Map([
    [deployment, 10],
    [candidate, 9],
  ]);

  const tasks = Array.from({ length: 300 }, (_, i) =>
    buildTask({ thought_id: `kill-${i}`, kind: 'NEW', text: `Where is my order? kill${i}@example.com`, source: 'test' }),
  );
  const outcomes = await followOutcomes(cluster);
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  const killOne = async () => {
    const alive = fleet.processes.filter((p) => p.name === 'thought' && p.child.exitCode === null && p.child.signalCode === null);
    alive[0]!.child.kill('SIGKILL');
    await alive[0]!.exited;
    await fleet.start('thought');
  };
  const moves: Array<() => Promise<unknown>> = [
    () => tao('manifest', ['publish', '--activate']),
    () => tao('rollout', ['start', candidate, '--percent', '50']),
    () => tao('rollout', ['promote']),
    () => tao('rollout', ['rollback']),
  ];
  for (const [i, move] of moves.entries()) {
    await submitTasks(producer, cluster.codec, tasks.slice(i * 75, (i + 1) * 75));
    // The move and the kill race the runs of this batch.
    await Promise.all([move(), killOne()]);
  }
  await producer.disconnect();
  await fleet.explained(
    outcomes.waitUntil((o) => tasks.every((t) => o.has(t.thought_id)), 300000),
    cluster,
  );
  await outcomes.stop();

  const outcomeOf = (id: string) => outcomes.outcomes.get(id)!.value as unknown as Outcome;
  for (const t of tasks) {
    const o = outcomeOf(t.thought_id);
    assert.equal(o.status, 'completed', `${t.thought_id}: ${o.reason}`);
    assert.ok(bound.has(o.manifest ?? ''), `${t.thought_id} names a published manifest (${o.manifest})`);
  }
  for (const record of await scanToEnd(cluster, ['thoughtRequests'])) {
    const r = record.value as unknown as ThoughtRequest;
    const manifest = outcomeOf(r.thought_id).manifest!;
    assert.equal(r.run.manifest, manifest, `${r.thought_id} wave ${r.iteration} is on its run's manifest`);
    assert.equal(r.run.max_iterations, bound.get(manifest), `${r.thought_id} wave ${r.iteration} is decided by its manifest's settings`);
  }
  const onCandidate = tasks.filter((t) => outcomeOf(t.thought_id).manifest === candidate).length;
  assert.ok(onCandidate > 0 && onCandidate < tasks.length, `${onCandidate} runs on the candidate: both releases took runs`);
});
