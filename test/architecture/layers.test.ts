/**
 * Layers point down: the shared runtime (runtime/) knows nothing of what is built on it (the
 * stages, ingress, replay, observability, the CLI), and observability/ does not reach up into the
 * CLI. A piece both layers need moves down a layer. Every import counts here, type-only ones too:
 * they couple the modules as much as runtime imports do.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url).pathname;

/** For each layer, the top-level folders it must not import from. */
const RULES: Record<string, readonly string[]> = {
  runtime: ['observability', 'cli', 'processors', 'ingress', 'replay'],
  observability: ['cli'],
  // The text featurizer and its ONNX model runner, used by two stages: below every stage and service.
  features: ['observability', 'cli', 'processors', 'ingress', 'replay', 'callbacks', 'tools', 'topics', 'infra'],
};

/** Every module specifier a TypeScript file imports or re-exports (static, type-only and dynamic). */
function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]/gm)) out.push(m[1]!);
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) out.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]!);
  return out;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** `file -> target` for each import of a file under `layer` that lands in one of `forbidden`. */
function violations(layer: string, forbidden: readonly string[]): string[] {
  const bad: string[] = [];
  for (const file of tsFiles(join(root, layer))) {
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = relative(root, resolve(dirname(file), spec));
      if (forbidden.includes(target.split('/')[0]!)) bad.push(`${relative(root, file)} -> ${target}`);
    }
  }
  return bad;
}

for (const [layer, forbidden] of Object.entries(RULES)) {
  test(`${layer}/ imports nothing from ${forbidden.map((f) => `${f}/`).join(', ')}`, () => {
    assert.deepEqual(violations(layer, forbidden), []);
  });
}

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
