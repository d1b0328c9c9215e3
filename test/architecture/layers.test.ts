/**
 * Layers point down, for every folder. A module imports from its own part of the tree and from
 * lower layers only: the shared runtime knows nothing of the stages, no stage imports another
 * stage, the stages' cores import no observability, and nothing in the product imports the
 * repository's tools (bench, tests, scripts). A piece two parts need moves down a layer; a new
 * folder must be given its place (scripts/layers.js) before its first import is accepted. Every import counts,
 * type-only ones too: they couple the modules as much as runtime imports do.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { LAYERS, TOOLS, partOf } from '../../scripts/layers.js';

const root = new URL('../../', import.meta.url).pathname;

const IGNORED = new Set(['node_modules', 'dist', '.git', '.infra']);

/** Every module specifier a TypeScript file imports or re-exports (static, type-only and dynamic). */
function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]/gm)) out.push(m[1]!);
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) out.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]!);
  return out;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (IGNORED.has(e.name) ? [] : tsFiles(join(dir, e.name))) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const layerOf = new Map(LAYERS.flatMap((parts, i) => parts.map((p) => [p, i] as const)));

/** `file -> target (why)` for each relative import in `files` (path relative to the root → text) that points the wrong way. */
export function violations(files: ReadonlyMap<string, string>): string[] {
  const bad: string[] = [];
  for (const [file, text] of files) {
    const from = partOf(file);
    if (TOOLS.includes(from)) continue;
    for (const spec of specifiers(text)) {
      if (!spec.startsWith('.')) continue;
      const target = relative(root, resolve(root, dirname(file), spec));
      const to = partOf(target);
      if (to === from) continue;
      if (TOOLS.includes(to)) bad.push(`${file} -> ${target} (the product imports a repository tool)`);
      else if (!layerOf.has(to)) bad.push(`${file} -> ${target} (${to}/ has no layer)`);
      else if (layerOf.get(to)! >= layerOf.get(from)!)
        bad.push(`${file} -> ${target} (${from} may not import ${to}: ${layerOf.get(to) === layerOf.get(from) ? 'same layer' : 'a higher layer'})`);
    }
  }
  return bad;
}

test('every folder with TypeScript in it has its place: a layer of the product, or a repository tool', () => {
  const parts = new Set(tsFiles(root).map((f) => partOf(relative(root, f))));
  const placed = [...parts].filter((p) => layerOf.has(p) || TOOLS.includes(p));
  assert.deepEqual(
    [...parts].filter((p) => !placed.includes(p)),
    [],
  );
});

test('every import of the product points down a layer', () => {
  const product = tsFiles(root)
    .map((f) => relative(root, f))
    .filter((f) => layerOf.has(partOf(f)));
  assert.ok(product.length > 100, `the scan finds the product (${product.length} files)`);
  assert.deepEqual(violations(new Map(product.map((f) => [f, readFileSync(join(root, f), 'utf8')]))), []);
});

test('a wrong import is caught: up a layer, across stages, into the tools, into a folder with no place', () => {
  const files = new Map([
    ['runtime/codec.ts', "import { main } from '../cli/main.ts';"],
    ['processors/thought/react.ts', "import type { Verdict } from '../observation/core.ts';"],
    ['processors/observation/core.ts', "import { evidenceComplete } from '../../observability/status.ts';"],
    ['ingress/server.ts', "const h = await import('../test/helpers/cluster.ts');"],
    ['tools/catalog.ts', "export { x } from '../newfolder/x.ts';"],
    ['processors/thought/core.ts', "import { planOfRun } from '../plan.ts';\nimport { x } from './react.ts';"],
    ['test/loop/react.test.ts', "import { main } from '../../cli/main.ts';"],
  ]);
  assert.deepEqual(violations(files), [
    'runtime/codec.ts -> cli/main.ts (runtime may not import cli: a higher layer)',
    'processors/thought/react.ts -> processors/observation/core.ts (processors/thought may not import processors/observation: same layer)',
    'processors/observation/core.ts -> observability/status.ts (processors/observation may not import observability: a higher layer)',
    'ingress/server.ts -> test/helpers/cluster.ts (the product imports a repository tool)',
    'tools/catalog.ts -> newfolder/x.ts (newfolder/ has no layer)',
  ]);
});

test('the scan sees every form of import: static, type-only, side-effect, dynamic, and re-exports', () => {
  const text = [
    "import { a } from '../cli/a.ts';",
    "import type { B } from '../cli/b.ts';",
    "import {\n  c,\n  d,\n} from '../cli/c.ts';",
    "import '../cli/d.ts';",
    "const e = await import('../cli/e.ts');",
    "export { f } from '../cli/f.ts';",
    "export * from '../cli/g.ts';",
  ].join('\n');
  assert.deepEqual(specifiers(text), ['../cli/a.ts', '../cli/b.ts', '../cli/c.ts', '../cli/f.ts', '../cli/g.ts', '../cli/d.ts', '../cli/e.ts']);
});
