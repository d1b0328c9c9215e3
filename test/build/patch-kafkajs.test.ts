/**
 * scripts/patch-kafkajs.js, the `postinstall` step exactly-once depends on (patches/README.md): it
 * applies patches/kafkajs/*.diff to kafkajs 2.2.4, leaves a patched install alone, and refuses, in one
 * line, another version or a file the diffs do not fit. Each case runs the script in a copy of the
 * package: its patches, and the four kafkajs files they touch, un-applied with `git apply -R`.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

const installed = join(PACKAGE_ROOT, 'node_modules', 'kafkajs');
const diffs = readdirSync(join(PACKAGE_ROOT, 'patches', 'kafkajs')).filter((n) => n.endsWith('.diff'));
const targets = diffs.map((n) => /^\+\+\+ b\/(\S+)/m.exec(readFileSync(join(PACKAGE_ROOT, 'patches', 'kafkajs', n), 'utf8'))![1]!);
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A package copy with the installed (patched) kafkajs files, or with the patches un-applied (kafkajs 2.2.4 as published). */
function packageCopy(pristine: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'tao-patch-kafkajs-'));
  dirs.push(dir);
  cpSync(join(PACKAGE_ROOT, 'scripts', 'patch-kafkajs.js'), join(dir, 'scripts', 'patch-kafkajs.js'));
  cpSync(join(PACKAGE_ROOT, 'patches', 'kafkajs'), join(dir, 'patches', 'kafkajs'), { recursive: true });
  const kafkajs = join(dir, 'node_modules', 'kafkajs');
  for (const file of ['package.json', ...targets]) {
    mkdirSync(dirname(join(kafkajs, file)), { recursive: true });
    cpSync(join(installed, file), join(kafkajs, file));
  }
  if (pristine) for (const d of diffs) execFileSync('git', ['apply', '-R', join(dir, 'patches', 'kafkajs', d)], { cwd: kafkajs });
  return dir;
}

const patchScript = (dir: string) => spawnSync(process.execPath, [join(dir, 'scripts', 'patch-kafkajs.js')], { encoding: 'utf8' });

test('the diffs turn kafkajs 2.2.4 as published into the installed, patched files, and a second run changes nothing', () => {
  const dir = packageCopy(true);
  const kafkajs = join(dir, 'node_modules', 'kafkajs');
  assert.ok(
    targets.every((t) => !readFileSync(join(kafkajs, t), 'utf8').startsWith('// tao-patch')),
    'the copy starts unpatched',
  );
  const first = patchScript(dir);
  assert.equal(first.status, 0, first.stderr);
  assert.equal(first.stdout.match(/^patch-kafkajs: applied /gm)?.length, diffs.length);
  for (const t of targets) assert.ok(readFileSync(join(kafkajs, t)).equals(readFileSync(join(installed, t))), `${t} as installed`);
  const second = patchScript(dir);
  assert.deepEqual([second.status, second.stdout, second.stderr], [0, '', '']);
});

test('another kafkajs version is refused in one line naming both versions', () => {
  const dir = packageCopy(true);
  const pkg = join(dir, 'node_modules', 'kafkajs', 'package.json');
  writeFileSync(pkg, readFileSync(pkg, 'utf8').replace('"version": "2.2.4"', '"version": "2.2.5"'));
  const run = patchScript(dir);
  assert.equal(run.status, 1);
  assert.match(run.stderr, /^patch-kafkajs: kafkajs 2\.2\.5 is installed; patches\/kafkajs\/ is made for 2\.2\.4, the version package\.json pins\. .*\n$/);
});

test('a file the diff does not fit (a line it changes is not as published) is refused, naming the diff, and left as it was', () => {
  const dir = packageCopy(true);
  const diff = diffs.find((d) => d === 'sendMessages.diff')!;
  const target = join(dir, 'node_modules', 'kafkajs', targets[diffs.indexOf(diff)]!);
  const context = /^ (.+)$/m.exec(readFileSync(join(dir, 'patches', 'kafkajs', diff), 'utf8'))![1]!;
  const changed = readFileSync(target, 'utf8').replace(context, `${context} // edited`);
  writeFileSync(target, changed);
  const run = patchScript(dir);
  assert.equal(run.status, 1);
  assert.match(
    run.stderr,
    /^patch-kafkajs: patches\/kafkajs\/sendMessages\.diff does not apply to node_modules\/kafkajs\/src\/producer\/sendMessages\.js .*npm ci`\n$/,
  );
  assert.equal(readFileSync(target, 'utf8'), changed);
});
