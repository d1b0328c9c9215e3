/**
 * No product file over 400 lines (decisions 0015, 0021): a file past that usually holds several
 * concerns, and is split by concern, not cut in parts. The cap is an alarm: a file that is one
 * concern read top to bottom may pass it when it is listed in {@link ONE_CONCERN} with that concern,
 * and never past 600 lines. Product files are the TypeScript sources of the folders the
 * build compiles (tsconfig.build.json's `include`) and deploy/ (the chart's generator ships with
 * the chart), generated `*.gen.ts` files aside.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

const MAX_LINES = 400;
const CEILING = 600;

/** Files over MAX_LINES that hold one concern, and that concern. */
const ONE_CONCERN: Record<string, string> = {
  'processors/thought/model/prompt.ts': "a model turn's request: the builder, its vocabulary and its token estimate",
};

const BUILT = [...(JSON.parse(readFileSync(join(PACKAGE_ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include, 'deploy'];

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

test(`no product file is over ${MAX_LINES} lines, unless it is one concern (then at most ${CEILING})`, () => {
  const counts = lineCounts();
  const over = [...counts].filter(([path, n]) => n > (path in ONE_CONCERN ? CEILING : MAX_LINES)).map(([path, n]) => `${path}: ${n} lines`);
  assert.deepEqual(over, [], `split these by concern (one file per concern, each opening with a doc comment saying what it holds)`);
  // The list only names files that need it.
  const stale = Object.keys(ONE_CONCERN).filter((path) => (counts.get(path) ?? 0) <= MAX_LINES);
  assert.deepEqual(stale, [], `these are ${MAX_LINES} lines or fewer now (or gone): take them off ONE_CONCERN`);
});
