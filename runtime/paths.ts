/**
 * Where the package's data files live: flows/, rules/, tools/catalog/, models/, schemas/avro/,
 * infra/, bin/. The code runs either from the source tree (through tsx) or compiled into dist/
 * (`npm run build`), and the data files are not copied into dist/. A path built from a module's
 * own `import.meta.url` would differ between the two layouts, so every such path is built from
 * {@link PACKAGE_ROOT} instead.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder `npm run build` compiles into (tsconfig.build.json's outDir), at the package root. */
export const BUILD_DIR = 'dist';

/**
 * The package root for a module of the runtime/ folder located in `moduleDir`: `<root>/runtime`
 * from source, `<root>/dist/runtime` compiled. Pure (no file is read), so importing is free.
 */
export function packageRootOf(moduleDir: string): string {
  const parent = dirname(moduleDir);
  return basename(parent) === BUILD_DIR ? dirname(parent) : parent;
}

/** The directory of tao-kafka's package.json, whether the code runs from source or from dist/. */
export const PACKAGE_ROOT = packageRootOf(dirname(fileURLToPath(import.meta.url)));

/** An absolute path inside the package root, e.g. `packagePath('flows', 'routes.json')`. */
export function packagePath(...segments: string[]): string {
  return join(PACKAGE_ROOT, ...segments);
}

/** tao-kafka's version, from its package.json (read at each call). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string }).version;
}
