// Whether dist/ (`npm run build`) is current: bin/tao.js runs it only then in a development tree,
// and the test runner builds it when it is not, so that the tests run what a deployment runs.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The compiled CLI's entry, under `root` (the package root). */
export const compiledEntry = (root) => join(root, 'dist', 'cli', 'main.js');

/** Newest modification time of tsconfig.build.json and the .ts files it compiles (0 where there are none). */
export function newestSourceMs(root) {
  const config = join(root, 'tsconfig.build.json');
  if (!existsSync(config)) return 0;
  let newest = statSync(config).mtimeMs;
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of JSON.parse(readFileSync(config, 'utf8')).include) {
    if (existsSync(join(root, dir))) walk(join(root, dir));
  }
  return newest;
}

/** dist/ exists and is not older than any source it is built from. */
export function distIsCurrent(root) {
  const compiled = compiledEntry(root);
  return existsSync(compiled) && statSync(compiled).mtimeMs >= newestSourceMs(root);
}
