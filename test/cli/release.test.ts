// test-needs: kafka
/**
 * Releases as records (cli/release-command.ts, runtime/release/records.ts), on the real broker and
 * registry: `tao manifest publish` records a release once under its digest, `tao rollout
 * start|promote|rollback` each write one release-pointer record, and a digest never published or a
 * move the pointer does not allow is refused in one line, writing nothing.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { releaseCommand } from '../../cli/release-command.ts';
import { packagePath } from '../../runtime/paths.ts';
import { readReleases } from '../../runtime/release/records.ts';
import { freshCluster } from '../helpers/cluster.ts';
import { LogReader } from '../../runtime/log-reader.ts';

/** Runs a command in this process, its console output captured. */
async function tao(command: 'manifest' | 'rollout', args: string[], env: NodeJS.ProcessEnv) {
  const out: string[] = [];
  const err: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = (...a: unknown[]) => void out.push(a.join(' '));
  console.error = (...a: unknown[]) => void err.push(a.join(' '));
  try {
    return { code: await releaseCommand(command, args, env), stdout: out.join('\n'), stderr: err.join('\n') };
  } finally {
    [console.log, console.error] = [log, error];
  }
}

test('publish, canary, promote and roll back: one record each, refusals write nothing', { timeout: 120000 }, async () => {
  const cluster = await freshCluster();
  const { env } = cluster;
  const records = async () => {
    const reader = await LogReader.connect(cluster.kafka);
    try {
      const [p] = await reader.offsets(cluster.codec.topics.name('manifests'));
      return Number(p!.high);
    } finally {
      await reader.close();
    }
  };

  const first = await tao('manifest', ['publish', '--activate'], env);
  assert.equal(first.code, 0, first.stderr);
  const active = first.stdout.trim();
  assert.match(active, /^[0-9a-f]{64}$/);
  assert.equal(await records(), 2, 'the manifest, then the pointer making it active');

  // A candidate: the same release with one skill's prompt changed.
  const folder = mkdtempSync(join(tmpdir(), 'tao-candidate-'));
  cpSync(packagePath('skills'), join(folder, 'skills'), { recursive: true });
  const skill = join(folder, 'skills', 'order-status', 'SKILL.md');
  writeFileSync(skill, `${readFileSync(skill, 'utf8')}\nAnswer without calling any tool.\n`);
  const published = await tao('manifest', ['publish', '--folder', folder], env);
  assert.equal(published.code, 0, published.stderr);
  const candidate = published.stdout.trim();
  assert.notEqual(candidate, active);
  const again = await tao('manifest', ['publish', '--folder', folder], env);
  assert.equal(again.stdout.trim(), candidate);
  assert.match(again.stderr, /already published/);
  assert.equal(await records(), 3, 'publishing a release already published writes nothing');

  // A release the stages could not load: its graph flow does not exist.
  const broken = mkdtempSync(join(tmpdir(), 'tao-broken-'));
  writeFileSync(join(broken, 'settings.json'), JSON.stringify({ TAO_PLANNER: 'graph', TAO_FLOW: 'no-such-flow@1' }));
  const refused = await tao('manifest', ['publish', '--folder', broken], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^tao manifest: release [0-9a-f]{12} does not load: .*no-such-flow/);
  assert.equal(refused.stderr.split('\n').length, 1, refused.stderr);
  assert.equal(await records(), 3, 'a release that does not load is not published');

  const unknown = await tao('rollout', ['start', 'ab'.repeat(32), '--percent', '20'], env);
  assert.equal(unknown.code, 1);
  assert.equal(unknown.stderr.split('\n').length, 1, unknown.stderr);
  assert.match(unknown.stderr, /was never published/);
  assert.equal((await tao('rollout', ['promote'], env)).code, 1, 'nothing to promote yet');
  assert.equal(await records(), 3, 'refusals write nothing');

  assert.equal((await tao('rollout', ['start', candidate.slice(0, 10), '--percent', '20'], env)).code, 0, 'a digest prefix names it');
  const read = await readReleases(cluster.kafka, cluster.codec);
  let pointer = read.pointer;
  assert.equal(read.manifests.size, 2);
  assert.deepEqual([pointer?.active, pointer?.candidate, pointer?.percent], [active, candidate, 20]);

  assert.equal((await tao('rollout', ['promote'], env)).code, 0);
  ({ pointer } = await readReleases(cluster.kafka, cluster.codec));
  assert.deepEqual([pointer?.active, pointer?.previous, pointer?.candidate], [candidate, active, null]);

  const back = await tao('rollout', ['rollback', '--reason', 'order-status answers without tools'], env);
  assert.equal(back.code, 0, back.stderr);
  ({ pointer } = await readReleases(cluster.kafka, cluster.codec));
  assert.deepEqual([pointer?.active, pointer?.candidate], [active, null]);
  assert.match(pointer!.reason, /rollback: order-status answers without tools/);
  assert.equal(await records(), 6, 'start, promote, rollback: one record each');
  assert.equal((await tao('rollout', ['rollback'], env)).code, 1, 'nothing left to roll back to');

  const list = await tao('manifest', ['list'], env);
  assert.match(list.stdout, new RegExp(`${active}.*active`));
  assert.match(list.stdout, new RegExp(`${candidate}.*order-status@1`));
  const shown = JSON.parse((await tao('manifest', ['show', candidate], env)).stdout) as { digest: string; parts: { name: string }[] };
  assert.equal(shown.digest, candidate);
  assert.deepEqual(
    shown.parts.map((p) => p.name),
    ['skills', 'catalog', 'flows', 'routes', 'observation-rules'],
  );
});
