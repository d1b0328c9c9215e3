/**
 * No product file over 400 lines (decision 0015): a file past that holds several concerns, and is
 * split by concern, not cut in parts. Product files are the TypeScript sources of the folders the
 * build compiles (tsconfig.build.json's `include`) and deploy/ (the chart's generator ships with
 * the chart), generated `*.gen.ts` files aside.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

const MAX_LINES = 400;

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

test(`no product file is over ${MAX_LINES} lines`, () => {
  const over = [...lineCounts()].filter(([, n]) => n > MAX_LINES).map(([path, n]) => `${path}: ${n} lines`);
  assert.deepEqual(over, [], `split these by concern (one file per concern, each opening with a doc comment saying what it holds)`);
});
