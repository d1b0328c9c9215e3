/**
 * A release folder's parts and settings become the variables the stages read (runtime/release/folder.ts),
 * and a folder a stage could not run is refused in one line.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../../../runtime/errors.ts';
import { releaseEnv } from '../../../runtime/release/folder.ts';

function folder(files: Record<string, string>, dirs: string[] = []): string {
  const root = mkdtempSync(join(tmpdir(), 'tao-release-'));
  for (const d of dirs) mkdirSync(join(root, d), { recursive: true });
  for (const [path, text] of Object.entries(files)) writeFileSync(join(root, path), text);
  return root;
}

test('the parts a release folder has, and its settings, become the variables the stages read; the rest stays the deployment', () => {
  const root = folder({ 'flows/routes.json': '{}', 'settings.json': JSON.stringify({ TAO_PLANNER: 'react', TAO_REPEAT_CAP: 3 }) }, ['skills', 'flows']);
  assert.deepEqual(releaseEnv(root), {
    TAO_SKILLS_DIR: join(root, 'skills'),
    TAO_FLOWS_DIR: join(root, 'flows'),
    TAO_ROUTES: join(root, 'flows', 'routes.json'),
    TAO_PLANNER: 'react',
    TAO_REPEAT_CAP: '3',
  });
});

test('a folder the stages could not run is refused in one line naming what is wrong', () => {
  const refused = (root: string, message: RegExp) =>
    assert.throws(
      () => releaseEnv(root),
      (e: Error) => e instanceof ConfigError && message.test(e.message),
    );
  refused(join(tmpdir(), 'tao-no-such-release'), /no such folder/);
  refused(folder({ skills: 'not a folder' }), /skills must be a folder/);
  refused(folder({ 'settings.json': '{"TAO_PLANNER": ' }), /settings\.json: not JSON/);
  refused(folder({ 'settings.json': '{"KAFKA_BROKERS": "x:9092"}' }), /KAFKA_BROKERS is not a run setting/);
  refused(folder({ 'settings.json': '{"TAO_LLM_BASE_URL": "http://x"}' }), /TAO_LLM_BASE_URL is not a run setting/);
  refused(folder({ 'settings.json': '{"TAO_REPEAT_CAP": "many"}' }), /settings\.json: TAO_REPEAT_CAP must be/);
});
