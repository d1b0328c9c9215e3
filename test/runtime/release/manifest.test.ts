/**
 * A manifest is the release it was built from, identified by its digest: the same release gives the
 * same digest, any change to what decides a run gives another, and a manifest written back as a
 * release folder is that release again (runtime/release/manifest.ts).
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../../../runtime/errors.ts';
import { releaseEnv } from '../../../runtime/release/folder.ts';
import { checkManifest, manifestOf, manifestOfFolder, materialize } from '../../../runtime/release/manifest.ts';
import { packagePath } from '../../../runtime/paths.ts';
import { DEFAULT_SYSTEM_RULES as RULES } from '../../../processors/thought/model/prompt.ts';

/** A release folder holding a copy of the package's skills and flows. */
function release(): string {
  const root = mkdtempSync(join(tmpdir(), 'tao-manifest-'));
  cpSync(packagePath('skills'), join(root, 'skills'), { recursive: true });
  cpSync(packagePath('flows'), join(root, 'flows'), { recursive: true });
  return root;
}

test('the same release gives the same digest; a changed SKILL.md, flow or run setting gives another', () => {
  const a = release();
  const b = release();
  const digest = manifestOfFolder(a, {}, RULES).digest;
  assert.match(digest, /^[0-9a-f]{64}$/);
  assert.equal(manifestOfFolder(b, {}, RULES).digest, digest, 'two copies of one release, one digest');
  assert.equal(manifestOfFolder(a, {}, RULES).digest, digest, 'computed twice, one digest');
  // The package's own parts: a folder copying them is the deployment's release.
  assert.equal(manifestOf({}, RULES).digest, digest);

  const skill = join(b, 'skills', 'order-status', 'SKILL.md');
  writeFileSync(skill, readFileSync(skill, 'utf8').replace('# Order status', '# Order status\nAnswer without calling any tool.'));
  const changed = manifestOfFolder(b, {}, RULES);
  assert.notEqual(changed.digest, digest);
  const before = manifestOfFolder(a, {}, RULES);
  const skillDigest = (m: typeof before, name: string) => m.skills.find((s) => s.name === name)!.digest;
  assert.notEqual(skillDigest(changed, 'order-status'), skillDigest(before, 'order-status'), "the changed skill's version changes");
  assert.equal(skillDigest(changed, 'refund-request'), skillDigest(before, 'refund-request'), "the other skills' versions do not");
  assert.equal(changed.skills.find((s) => s.name === 'order-status')!.label, 'order-status@1', 'the human label stays');

  const flow = join(a, 'flows', 'order-status.v1.json');
  writeFileSync(flow, readFileSync(flow, 'utf8').replace(/\s*$/, '\n\n'));
  assert.notEqual(manifestOfFolder(a, {}, RULES).digest, digest, 'a flow changed by one byte');
  assert.notEqual(manifestOf({ TAO_REPEAT_CAP: '7' }, RULES).digest, digest, 'a run setting');
  assert.equal(manifestOf({ TAO_PLANNER: 'router' }, RULES).digest, digest, 'a setting set to its default is the same release');
  assert.equal(manifestOf({ TAO_ACTION_CONCURRENCY: '3' }, RULES).digest, digest, 'a deployment setting is not part of the release');
  assert.notEqual(manifestOf({}, `${RULES}\nOne more rule.`).digest, digest, 'the system rules');
});

test('the manifest carries every file with its sha256, the effective run settings and the system rules', () => {
  const m = manifestOf({ TAO_PLANNER: 'react', TAO_LLM_MODEL: 'qwen' }, RULES);
  const skills = m.parts.find((p) => p.name === 'skills')!;
  const file = skills.files.find((f) => f.path === 'refund-request/references/refund-policy.md')!;
  assert.equal(file.content, readFileSync(packagePath('skills', 'refund-request', 'references', 'refund-policy.md'), 'utf8'));
  assert.equal(m.settings.TAO_PLANNER, 'react');
  assert.equal(m.settings.TAO_LLM_MODEL, 'qwen');
  assert.equal(m.settings.TAO_MAX_ITERATIONS, '10', 'a default is recorded as the effective value');
  assert.match(m.system_rules.content, /customer-service ticket/);
  assert.match(m.intent_model ?? '', /^[0-9a-f]{64}$/, 'the intent model: a digest, not its content');
  assert.ok(!m.parts.find((p) => p.name === 'flows')!.files.some((f) => f.path === 'routes.json'), 'the routing table is its own part');
});

test('materialize writes a manifest back as a release folder whose manifest is the same release', () => {
  const source = release();
  const skill = join(source, 'skills', 'order-status', 'SKILL.md');
  writeFileSync(skill, readFileSync(skill, 'utf8') + '\nA candidate line.\n');
  writeFileSync(join(source, 'settings.json'), JSON.stringify({ TAO_PLANNER: 'graph', TAO_FLOW: 'refund-request@1' }));
  const m = manifestOfFolder(source, {}, RULES);
  const cache = mkdtempSync(join(tmpdir(), 'tao-manifest-cache-'));
  const folder = materialize(m, cache);
  assert.equal(folder, join(cache, m.digest));
  const env = releaseEnv(folder);
  assert.equal(env.TAO_PLANNER, 'graph');
  assert.equal(env.TAO_FLOW, 'refund-request@1');
  assert.match(readFileSync(join(env.TAO_SKILLS_DIR!, 'order-status', 'SKILL.md'), 'utf8'), /A candidate line/);
  // Laid over a deployment that sets other values, the folder is still exactly the release.
  assert.equal(manifestOfFolder(folder, { TAO_REPEAT_CAP: '9', TAO_ROUTES: '/nowhere.json' }, RULES).digest, m.digest);
  assert.equal(materialize(m, cache), folder, 'a digest already written is reused');
});

test('a manifest whose content does not match its digests is refused, never written', () => {
  const m = manifestOf({}, RULES);
  const tampered = structuredClone(m);
  tampered.parts[0]!.files[0]!.content += 'x';
  assert.throws(
    () => checkManifest(tampered),
    (e: Error) => e instanceof ConfigError && /does not match its sha256/.test(e.message),
  );
  const settings = structuredClone(m);
  settings.settings.TAO_REPEAT_CAP = '99';
  assert.throws(() => materialize(settings, mkdtempSync(join(tmpdir(), 'tao-manifest-cache-'))), /do not match its digest/);
});
