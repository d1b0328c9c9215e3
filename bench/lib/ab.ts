/**
 * Two versions of the code, run back to back in one bench: snapshots of this checkout (taken at
 * the same moment, so edits made meanwhile touch neither) with and without a patch, each a full
 * tree whose `node_modules` links to this checkout's. Stage processes of a version are started
 * from its `bin/tao.js`.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { REPO_ROOT } from './harness.ts';

const SKIP = new Set(['node_modules', '.infra', '.git', 'reports']);

/** A snapshot of the source tree. */
export interface Tree {
  /** The tree's root, with a trailing slash. */
  root: string;
  bin: string;
  /** `current`, or the patch file's name. */
  code: string;
}

/**
 * Copies the checkout to `/tmp/tao-ab/<id>/` (skipping node_modules, .infra, .git) and applies
 * `patch` (one unified diff against the repository root, or several applied in order) when given.
 * @throws when a patch does not apply.
 */
export async function patchedTree(patch: string | string[] | null, base = '/tmp/tao-ab'): Promise<Tree> {
  const patches = patch === null ? [] : Array.isArray(patch) ? patch : [patch];
  const text = patches.map((p) => readFileSync(resolve(p), 'utf8')).join('\n');
  const name = patches.map((p) => basename(p, '.patch')).join('+');
  const id = patches.length ? `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 8)}` : 'current';
  const root = join(base, `${id}-${process.pid}`);
  if (!existsSync(join(root, 'bin/tao.js'))) {
    rmSync(root, { recursive: true, force: true });
    cpSync(REPO_ROOT, root, { recursive: true, filter: (src) => !SKIP.has(basename(src)) || src === REPO_ROOT.replace(/\/$/, '') });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
    for (const p of patches) execFileSync('git', ['apply', '--whitespace=nowarn', resolve(p)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  }
  return { root: `${root}/`, bin: join(root, 'bin/tao.js'), code: patches.length ? patches.map((p) => basename(p)).join(' + ') : 'current' };
}

/** Removes the snapshots this process made. */
export function removeTrees(base = '/tmp/tao-ab'): void {
  if (!existsSync(base)) return;
  for (const name of readdirSync(base)) if (name.endsWith(`-${process.pid}`)) rmSync(join(base, name), { recursive: true, force: true });
}
