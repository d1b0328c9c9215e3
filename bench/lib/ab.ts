/**
 * Two versions of the code, run back to back in one bench: snapshots of this checkout (taken at
 * the same moment, so edits made meanwhile touch neither) with and without a patch, each a full
 * tree whose `node_modules` links to this checkout's. Stage processes of a version are started
 * from its `bin/tao.js`, which runs the tree's compiled `dist/` (built here, as a deployment runs
 * the stages), not the TypeScript sources through tsx.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
 * `patch` (one unified diff against the repository root, or several applied in order) when given;
 * with `reverse`, takes the patches out instead (the checkout already has them).
 * @throws when a patch does not apply.
 */
export async function patchedTree(patch: string | string[] | null, base = '/tmp/tao-ab', { reverse = false }: { reverse?: boolean } = {}): Promise<Tree> {
  const patches = patch === null ? [] : Array.isArray(patch) ? patch : [patch];
  const text = patches.map((p) => readFileSync(resolve(p), 'utf8')).join('\n');
  const name = `${reverse ? 'without-' : ''}${patches.map((p) => basename(p, '.patch')).join('+')}`;
  const id = patches.length ? `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 8)}` : 'current';
  const root = join(base, `${id}-${process.pid}`);
  if (!existsSync(join(root, 'bin/tao.js'))) {
    rmSync(root, { recursive: true, force: true });
    cpSync(REPO_ROOT, root, { recursive: true, filter: (src) => !SKIP.has(basename(src)) || src === REPO_ROOT.replace(/\/$/, '') });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
    for (const p of reverse ? [...patches].reverse() : patches) execFileSync('git', ['apply', ...(reverse ? ['-R'] : []), '--whitespace=nowarn', resolve(p)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    if (kafkajsPatchFiles(root).some((f) => !sameFile(join(root, f), join(REPO_ROOT, f)))) ownKafkajs(root);
    build(root);
  }
  const names = patches.map((p) => basename(p)).join(' + ');
  return { root: `${root}/`, bin: join(root, 'bin/tao.js'), code: patches.length ? `${reverse ? 'without' : 'with'} ${names}` : 'current' };
}

/** The files that decide how kafkajs is patched at install (scripts/patch-kafkajs.js), relative to a tree's root. */
function kafkajsPatchFiles(root: string): string[] {
  const dirs = [root, REPO_ROOT].map((r) => join(r, 'patches', 'kafkajs')).filter((d) => existsSync(d));
  const names = new Set(dirs.flatMap((d) => readdirSync(d)));
  return ['scripts/patch-kafkajs.js', ...[...names].map((n) => join('patches', 'kafkajs', n))];
}

function sameFile(a: string, b: string): boolean {
  return existsSync(a) && existsSync(b) && readFileSync(a).equals(readFileSync(b));
}

/**
 * A tree whose kafkajs patches differ from the checkout's gets `node_modules` of its own: links to
 * the checkout's packages, and kafkajs unpacked afresh (`npm pack`, from npm's cache when it has it)
 * and patched by the tree's own scripts/patch-kafkajs.js, so an A/B measures a change to kafkajs too.
 * @throws when npm, tar or the patch script fails.
 */
function ownKafkajs(root: string): void {
  const modules = join(root, 'node_modules');
  rmSync(modules, { force: true });
  mkdirSync(modules);
  for (const entry of readdirSync(join(REPO_ROOT, 'node_modules'))) if (entry !== 'kafkajs') symlinkSync(join(REPO_ROOT, 'node_modules', entry), join(modules, entry));
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', 'kafkajs', 'package.json'), 'utf8')) as { version: string };
  const packDir = mkdtempSync(join(tmpdir(), 'tao-ab-kafkajs-'));
  try {
    const tgz = execFileSync('npm', ['pack', `kafkajs@${version}`, '--pack-destination', packDir, '--silent'], { cwd: packDir, stdio: ['ignore', 'pipe', 'pipe'] }).toString().trim().split('\n').at(-1)!;
    mkdirSync(join(modules, 'kafkajs'));
    execFileSync('tar', ['-xzf', join(packDir, tgz), '-C', join(modules, 'kafkajs'), '--strip-components=1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  } finally {
    rmSync(packDir, { recursive: true, force: true });
  }
  execFileSync(process.execPath, [join(root, 'scripts', 'patch-kafkajs.js')], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Compiles the tree into its `dist/` (`npm run build`'s tsc call, without the type check: the
 * checkout has its own). Built after the copy, `dist/` is newer than every source, so the tree's
 * `bin/tao.js` runs it.
 * @throws when the tree does not compile.
 */
function build(root: string): void {
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  execFileSync(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--noCheck'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * The two sides of an A/B of `patch` against this checkout: A without it, B with it. When the
 * checkout already has the patch (it was applied and committed), A is the checkout with the patch
 * taken out and B the checkout as is; otherwise A is the checkout and B has the patch applied.
 * @throws when the patch neither applies nor reverts cleanly.
 */
export async function abTrees(patch: string, base = '/tmp/tao-ab'): Promise<{ a: Tree; b: Tree; applied: boolean }> {
  const current = await patchedTree(null, base);
  const check = (reverse: boolean) => {
    try {
      execFileSync('git', ['apply', '--check', ...(reverse ? ['-R'] : []), resolve(patch)], { cwd: current.root, stdio: ['ignore', 'pipe', 'pipe'] });
      return true;
    } catch {
      return false; // the check's exit status is the answer
    }
  };
  if (check(false)) return { a: { ...current, code: `without ${basename(patch)}` }, b: await patchedTree(patch, base), applied: false };
  if (check(true)) return { a: await patchedTree(patch, base, { reverse: true }), b: { ...current, code: `with ${basename(patch)} (as committed)` }, applied: true };
  throw new Error(`${patch} neither applies to nor reverts from this checkout`);
}

/** Removes the snapshots this process made. */
export function removeTrees(base = '/tmp/tao-ab'): void {
  if (!existsSync(base)) return;
  for (const name of readdirSync(base)) if (name.endsWith(`-${process.pid}`)) rmSync(join(base, name), { recursive: true, force: true });
}
