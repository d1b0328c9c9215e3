/**
 * Two versions of the code, run back to back in one bench: two commits, or a commit and a snapshot
 * of this checkout (taken at the start, so edits made meanwhile touch neither), each a full tree
 * whose `node_modules` links to this checkout's. Stage processes of a version are started
 * from its `bin/tao.js`, which runs the tree's compiled `dist/` (built here, as a deployment runs
 * the stages), not the TypeScript sources through tsx.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { REPO_ROOT } from './harness.ts';

const SKIP = new Set(['node_modules', '.infra', '.git', 'reports']);

/** A snapshot of the source tree. */
export interface Tree {
  /** The tree's root, with a trailing slash. */
  root: string;
  bin: string;
  /** `current`, or the commit it was made from. */
  code: string;
}

/**
 * A snapshot of this checkout, as it is now (uncommitted edits included), at `/tmp/tao-ab/current-<pid>/`
 * (skipping node_modules, .infra, .git).
 */
export async function checkoutTree(base = '/tmp/tao-ab'): Promise<Tree> {
  const root = join(base, `current-${process.pid}`);
  if (!existsSync(join(root, 'bin/tao.js'))) {
    rmSync(root, { recursive: true, force: true });
    cpSync(REPO_ROOT, root, { recursive: true, filter: (src) => !SKIP.has(basename(src)) || src === REPO_ROOT.replace(/\/$/, '') });
    prepare(root);
  }
  return { root: `${root}/`, bin: join(root, 'bin/tao.js'), code: 'current' };
}

/**
 * The tree of commit `rev` (any name git takes: a sha, a tag, `HEAD~3`) at
 * `/tmp/tao-ab/<sha>-<pid>/`, exported by `git archive`.
 * @throws when `rev` names no commit, or the tree does not build.
 */
export async function commitTree(rev: string, base = '/tmp/tao-ab'): Promise<Tree> {
  const sha = commitOf(rev);
  const root = join(base, `${sha.slice(0, 12)}-${process.pid}`);
  if (!existsSync(join(root, 'bin/tao.js'))) {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    execFileSync('sh', ['-c', `git archive --format=tar ${sha} | tar -x -C "${root}"`], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    prepare(root);
  }
  return { root: `${root}/`, bin: join(root, 'bin/tao.js'), code: `${rev} (${sha.slice(0, 9)})` };
}

function commitOf(rev: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      .toString()
      .trim();
  } catch {
    throw new Error(`"${rev}" names no commit of this repository (git rev-parse --verify)`);
  }
}

/** Links the checkout's node_modules into a tree (a kafkajs of its own when its patches differ) and builds it. */
function prepare(root: string): void {
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  if (kafkajsPatchFiles(root).some((f) => !sameFile(join(root, f), join(REPO_ROOT, f)))) ownKafkajs(root);
  build(root);
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
  for (const entry of readdirSync(join(REPO_ROOT, 'node_modules')))
    if (entry !== 'kafkajs') symlinkSync(join(REPO_ROOT, 'node_modules', entry), join(modules, entry));
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', 'kafkajs', 'package.json'), 'utf8')) as { version: string };
  const packDir = mkdtempSync(join(tmpdir(), 'tao-ab-kafkajs-'));
  try {
    const tgz = execFileSync('npm', ['pack', `kafkajs@${version}`, '--pack-destination', packDir, '--silent'], {
      cwd: packDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
      .toString()
      .trim()
      .split('\n')
      .at(-1)!;
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
  execFileSync(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--noCheck'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * The two sides of an A/B: `A..B` compares two commits; a single `A` compares commit A with the
 * checkout as it is (so a change is measured before it is committed: `--ab HEAD`).
 * `changed` lists the files that differ between the two, as paths from the repository root.
 * @throws when a side names no commit or does not build.
 */
export async function abTrees(spec: string, base = '/tmp/tao-ab'): Promise<{ a: Tree; b: Tree; changed: string[] }> {
  const [aRev, bRev] = spec.split('..') as [string, string | undefined];
  if (!aRev || bRev === '') throw new Error(`--ab takes A or A..B (two commits), got "${spec}"`);
  const a = await commitTree(aRev, base);
  const b = bRev === undefined ? await checkoutTree(base) : await commitTree(bRev, base);
  const range = bRev === undefined ? [commitOf(aRev)] : [commitOf(aRev), commitOf(bRev)];
  const changed = execFileSync('git', ['diff', '--name-only', ...range], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    .toString()
    .split('\n')
    .filter(Boolean);
  return { a: { ...a, code: `A ${a.code}` }, b: { ...b, code: bRev === undefined ? 'B the checkout' : `B ${b.code}` }, changed };
}

/** Removes the snapshots this process made. */
export function removeTrees(base = '/tmp/tao-ab'): void {
  if (!existsSync(base)) return;
  for (const name of readdirSync(base)) if (name.endsWith(`-${process.pid}`)) rmSync(join(base, name), { recursive: true, force: true });
}
