/**
 * No product file over 400 lines (decision 0015): a file past that holds several concerns, and is
 * split by concern, not cut in parts. Product files are the TypeScript sources of the folders the
 * build compiles (tsconfig.build.json's `include`), generated `*.gen.ts` files aside. The files still
 * over the limit are named below; the list only shrinks, and a file on it that is split is taken off.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

const MAX_LINES = 400;

/** Files over the limit, to be split (others were editing them when the rest were split). */
const NOT_YET_SPLIT: readonly string[] = ['cli/main.ts', 'replay/timeline.ts', 'runtime/config.ts'];

const BUILT = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.gen.ts') ? [join(dir, e.name)] : [],
  );
}

/** Lines of each product file, by path from the package root. */
function lineCounts(): Map<string, number> {
  const out = new Map<string, number>();
  for (const folder of BUILT) {
    for (const file of tsFiles(join(PACKAGE_ROOT, folder))) {
      const text = readFileSync(file, 'utf8');
      out.set(relative(PACKAGE_ROOT, file), text.split('\n').length - (text.endsWith('\n') ? 1 : 0));
    }
  }
  return out;
}

test(`no product file is over ${MAX_LINES} lines, except those still listed to be split`, () => {
  const over = [...lineCounts()].filter(([path, n]) => n > MAX_LINES && !NOT_YET_SPLIT.includes(path)).map(([path, n]) => `${path}: ${n} lines`);
  assert.deepEqual(over, [], `split these by concern (one file per concern, each opening with a doc comment saying what it holds)`);
});

test('every file listed to be split is still a product file over the limit (take it off the list once split)', () => {
  const counts = lineCounts();
  const stale = NOT_YET_SPLIT.filter((path) => (counts.get(path) ?? 0) <= MAX_LINES);
  assert.deepEqual(stale, []);
});
