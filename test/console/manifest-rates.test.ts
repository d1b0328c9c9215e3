// test-needs: kafka
/**
 * Per-release rates (observability/release-rates.ts) on real runs, on the real broker and registry
 * with the three stages as processes and the demo tool server: a canary splits new runs between two
 * releases by run id; the active one completes its runs, one of them after a tool call that failed
 * once and was retried (self-recovery); the candidate, decided with an iteration bound of 1, ends
 * its runs before they complete. The console's `GET /api/manifests` and `tao rollout status --json`
 * give the same runs, TCR and self-recovery per release, with the pointer's roles, and the runs
 * list filters by release.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { startConsole, type RunningConsole } from '../../console/cli.ts';
import type { ManifestRates } from '../../observability/release-rates.ts';
import { createLogger } from '../../runtime/log.ts';
import { packagePath } from '../../runtime/paths.ts';
import { runBucket } from '../../runtime/release/watcher.ts';
import type { Outcome, Task } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { tao as taoCommand } from '../../bench/lib/chaos-rollouts.ts';

let cluster: TestCluster;
let tools: ToolServer;
let fleet: StageFleet;
let ui: RunningConsole | undefined;
let active: string;
let candidate: string;

const tao = (command: 'manifest' | 'rollout', args: string[]) => taoCommand(command, args, cluster.env);

/** `n` new runs whose ids the canary at 50% sends to the candidate (`toCandidate`) or to the active release. */
function runsFor(toCandidate: boolean, n: number): Task[] {
  const tasks: Task[] = [];
  for (let i = 0; tasks.length < n; i++) {
    const id = `rates-${process.pid}-${i}`;
    if (runBucket(id) < 50 === toCandidate)
      tasks.push(buildTask({ thought_id: id, kind: 'NEW', text: `Where is my order? ${id}@example.com`, source: 'test' }));
  }
  return tasks;
}

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  active = await tao('manifest', ['publish', '--activate']);
  // The candidate: the same release with an iteration bound of 1, too few waves for the order-status flow.
  const folder = mkdtempSync(join(tmpdir(), 'tao-rates-'));
  cpSync(packagePath('flows'), join(folder, 'flows'), { recursive: true });
  writeFileSync(join(folder, 'settings.json'), JSON.stringify({ TAO_MAX_ITERATIONS: 1 }));
  candidate = await tao('manifest', ['publish', '--folder', folder]);
  // Written before the stages start: each reads tao.manifests to its end before it joins its group.
  await tao('rollout', ['start', candidate, '--percent', '50']);
  fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
});

after(async () => {
  await ui?.stop();
  await fleet?.stop();
  await tools?.close();
});

test('two releases with different outcomes: the console and tao rollout status give each its runs, TCR and self-recovery', { timeout: 300000 }, async () => {
  const onActive = runsFor(false, 4);
  const onCandidate = runsFor(true, 3);
  // One run on the active release meets a 503 on its first call; Action retries it and the run goes on.
  const recovering = onActive[0]!.thought_id;
  tools.setFault({ route: '*', mode: 'server_error', match: recovering, times: 1 });

  const outcomes = await followOutcomes(cluster);
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, [...onActive, ...onCandidate]);
  await producer.disconnect();
  const all = [...onActive, ...onCandidate];
  await fleet.explained(
    outcomes.waitUntil((o) => all.every((t) => o.has(t.thought_id)), 180000),
    cluster,
  );
  await outcomes.stop();
  const outcomeOf = (t: Task) => outcomes.outcomes.get(t.thought_id)!.value as unknown as Outcome;
  for (const t of onActive) assert.deepEqual([outcomeOf(t).manifest, outcomeOf(t).status], [active, 'completed'], `${t.thought_id}: ${outcomeOf(t).reason}`);
  for (const t of onCandidate)
    assert.deepEqual([outcomeOf(t).manifest, outcomeOf(t).reason_code], [candidate, 'max_iterations'], `${t.thought_id}: ${outcomeOf(t).reason}`);

  ui = await startConsole(cluster.env, {
    host: '127.0.0.1',
    port: 0,
    readTimeoutMs: 30000,
    logger: createLogger({ test: 'console-rates' }, { level: 'warn' }),
  });
  await ui.feed.ready;
  type Row = ManifestRates & { role: string };
  let body: { ready: boolean; pointer: { active: string; candidate: string } | null; manifests: Row[] } = { ready: false, pointer: null, manifests: [] };
  // The index follows the log: wait until every run's end is in it.
  for (const deadline = Date.now() + 30000; body.manifests.reduce((n, m) => n + m.runs, 0) < all.length;) {
    assert.ok(Date.now() < deadline, `the index holds ${JSON.stringify(body.manifests)}`);
    const res: Response = await fetch(`${ui.url}/api/manifests`);
    assert.equal(res.status, 200);
    body = (await res.json()) as typeof body;
    if (body.manifests.reduce((n, m) => n + m.runs, 0) < all.length) await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual([body.pointer?.active, body.pointer?.candidate], [active, candidate]);
  const row = (digest: string) => body.manifests.find((m) => m.manifest === digest)!;
  const figures = (m: Pick<Row, 'runs' | 'completed' | 'tcr' | 'hitFailure' | 'recovered' | 'srr'>) => [
    m.runs,
    m.completed,
    m.tcr,
    m.hitFailure,
    m.recovered,
    m.srr,
  ];
  assert.equal(row(active).role, 'active');
  assert.deepEqual(figures(row(active)), [4, 4, 1, 1, 1, 1], 'every run completed; the one that met a failure recovered without a person');
  assert.equal(row(candidate).role, 'candidate');
  assert.deepEqual(figures(row(candidate)), [3, 0, 0, 0, 0, null], 'no run completed; none met a tool failure, so self-recovery is unknown');

  // tao rollout status reads the same from the log.
  const status = JSON.parse(await tao('rollout', ['status', '--json'])) as { manifests: ManifestRates[] };
  for (const digest of [active, candidate]) {
    const m = status.manifests.find((s) => s.manifest === digest)!;
    assert.deepEqual(figures(m), figures(row(digest)), `tao rollout status agrees with the console on ${digest.slice(0, 12)}`);
  }
  const text = await tao('rollout', ['status']);
  assert.match(text, new RegExp(`${active.slice(0, 12)}  active .*TCR 100\\.0%  self-recovery 100\\.0% \\(1/1\\)`));

  // The runs list of one release.
  const listed = (await (await fetch(`${ui.url}/api/runs?manifest=${candidate}`)).json()) as {
    total: number;
    runs: Array<{ thought_id: string; manifest: string }>;
  };
  assert.deepEqual(listed.runs.map((r) => r.thought_id).sort(), onCandidate.map((t) => t.thought_id).sort());
});
