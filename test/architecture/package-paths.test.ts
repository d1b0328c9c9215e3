/**
 * The code runs from the sources (tsx) and compiled into dist/, and the data files (flows, rules,
 * skills, models, scenarios, ...) are not copied into dist/: a path built from a module's own
 * `import.meta.url` points at dist/<folder>/... when compiled, where nothing is. Every data path is
 * built from runtime/paths.ts (PACKAGE_ROOT). `createRequire(import.meta.url)` resolves modules, not
 * data files, and stays allowed.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

/** Top-level folders whose modules ship in the compiled build: tsconfig.build.json's `include`. */
const BUILT = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

test('no shipped module builds a path from its own import.meta.url (runtime/paths.ts is the one place)', () => {
  const offenders: string[] = [];
  for (const folder of BUILT) {
    for (const file of tsFiles(join(PACKAGE_ROOT, folder))) {
      const rel = relative(PACKAGE_ROOT, file);
      if (rel === join('runtime', 'paths.ts')) continue;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (line.includes('import.meta.url') && !/createRequire\(import\.meta\.url\)/.test(line)) offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
        });
    }
  }
  assert.deepEqual(offenders, [], 'build data paths with packagePath() from runtime/paths.ts');
});
