/**
 * Configuration is read once, at the edge. A process's composition root (the `tao` command line,
 * a part's `cli.ts`, the stages' wiring) reads the environment and calls configuration loaders
 * (modules named `config.ts`, `*-config.ts` or `options.ts`), which return typed values; every
 * other module receives what it needs and never reads a setting or `process.env` itself.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { test } from 'node:test';
import { TOOLS, partOf } from '../../scripts/layers.js';

const root = new URL('../../', import.meta.url).pathname;
const IGNORED = new Set(['node_modules', 'dist', '.git', '.infra']);

/** The product's TypeScript files (relative paths), the repository's tools left out. */
function productFiles(dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.isDirectory()) return IGNORED.has(e.name) ? [] : productFiles(join(dir, e.name));
    const path = relative(root, join(dir, e.name));
    return e.name.endsWith('.ts') && !e.name.endsWith('.gen.ts') && !TOOLS.includes(partOf(path)) ? [path] : [];
  });
}

/** A composition root: the command line, a part's own command, the stages' wiring. */
const isRoot = (path: string) => path.startsWith('cli/') || basename(path) === 'cli.ts' || path.startsWith('processors/wiring/');
/** A configuration loader, or the settings' own declaration and parser. */
const isLoader = (path: string) => /^(config|.+-config|options)\.ts$/.test(basename(path)) || path.startsWith('runtime/settings/');

/** The files whose code (comment lines left out) matches `pattern`. */
function readersOf(files: ReadonlyMap<string, string>, pattern: RegExp): string[] {
  return [...files].filter(([, text]) => pattern.test(text.replace(/^\s*(\*|\/\/|\/\*\*).*$/gm, ''))).map(([path]) => path);
}

const ENV = /\bprocess\.env\b/;
// `setting` imported from runtime/config.ts, statically or dynamically.
const SETTING =
  /import\s*\{[^}]*\bsetting\b[^}]*\}\s*from\s*['"][./]*(?:runtime\/)?config\.ts['"]|\{[^}]*\bsetting\b[^}]*\}\s*=\s*await import\(['"][./]*(?:runtime\/)?config\.ts['"]\)/;

const files = new Map(productFiles().map((path) => [path, readFileSync(join(root, path), 'utf8')]));

test('process.env is read by composition roots only', () => {
  assert.ok(files.size > 100, `read ${files.size} product files`);
  assert.deepEqual(
    readersOf(files, ENV).filter((path) => !isRoot(path)),
    [],
  );
});

test('settings are read by composition roots and configuration loaders only', () => {
  assert.ok(readersOf(files, SETTING).length > 10, 'the roots and loaders that read settings are seen');
  assert.deepEqual(
    readersOf(files, SETTING).filter((path) => !isRoot(path) && !isLoader(path) && path !== 'runtime/config.ts'),
    [],
  );
});

test('the checks see a component that reads a setting or the environment itself', () => {
  const wrong = new Map([
    ['ingress/webhooks.ts', "import { setting } from '../runtime/config.ts';\nexport const x = setting(env, 'TAO_WEBHOOK_TOLERANCE_S');"],
    ['processors/action/invoke.ts', 'const token = process.env.TOKEN;'],
    ['ingress/config.ts', "import { setting } from '../runtime/config.ts';"],
  ]);
  assert.deepEqual(
    readersOf(wrong, SETTING).filter((path) => !isRoot(path) && !isLoader(path)),
    ['ingress/webhooks.ts'],
  );
  assert.deepEqual(
    readersOf(wrong, ENV).filter((path) => !isRoot(path)),
    ['processors/action/invoke.ts'],
  );
});
