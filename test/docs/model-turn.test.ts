/**
 * docs/ARCHITECTURE.md's walk of one model turn ("One model turn, file by file") stays true to the
 * tree: at most eight product files, each of them there and opening with a doc comment, every file
 * of processors/thought/model/ in the walk (a new one must be placed in it), and every function the
 * walk names exported by one of its files.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

const MAX_FILES = 8;

function walk(): { files: string[]; names: string[] } {
  const doc = readFileSync(join(PACKAGE_ROOT, 'docs/ARCHITECTURE.md'), 'utf8');
  const start = doc.indexOf('### One model turn, file by file');
  assert.ok(start >= 0, 'docs/ARCHITECTURE.md has no section "One model turn, file by file"');
  const rows = doc
    .slice(start)
    .split('\n')
    .filter((l) => /^\| \d+ \|/.test(l));
  const files = rows.map((r) => /^\| \d+ \| `([^`]+)` \|/.exec(r)?.[1] ?? `(unreadable row: ${r})`);
  const names = rows.flatMap((r) =>
    [
      ...r
        .split('|')
        .slice(3)
        .join('|')
        .matchAll(/`([a-z][A-Za-z]+)`/g),
    ].map((m) => m[1]!),
  );
  return { files, names };
}

test(`one model turn runs in at most ${MAX_FILES} product files, each there with its doc comment`, () => {
  const { files } = walk();
  assert.ok(files.length > 0 && files.length <= MAX_FILES, `the walk lists ${files.length} files: ${files.join(', ')}`);
  for (const f of files) {
    assert.ok(existsSync(join(PACKAGE_ROOT, f)), `${f} is in the walk but not in the tree`);
    assert.match(readFileSync(join(PACKAGE_ROOT, f), 'utf8'), /^\/\*\*\n \* \S/, `${f} does not open with a doc comment saying what it holds`);
  }
});

test('every file of processors/thought/model/ has its place in the walk', () => {
  const { files } = walk();
  const folder = readdirSync(join(PACKAGE_ROOT, 'processors/thought/model')).map((f) => `processors/thought/model/${f}`);
  assert.deepEqual(
    folder.filter((f) => !files.includes(f)),
    [],
  );
});

test("the functions the walk names are exported by the walk's files", () => {
  const { files, names } = walk();
  const sources = files.map((f) => readFileSync(join(PACKAGE_ROOT, f), 'utf8')).join('\n');
  const missing = names.filter((n) => !new RegExp(`export (?:async )?(?:function|const) ${n}\\b`).test(sources));
  assert.deepEqual(missing, [], 'named in the walk, exported by none of its files');
});
