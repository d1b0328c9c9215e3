/**
 * No import cycle in the product, type-only imports included: a cycle means a type or a rule sits
 * too high, and is mended by moving it down into a module both sides import (as
 * processors/action/attempt.ts holds what one attempt of a call is, for HTTP and MCP alike).
 * Product files are those file-size.test.ts counts: the folders tsconfig.build.json compiles, and
 * deploy/. Only relative imports of `.ts` files are edges; packages cannot import us back.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';

const BUILT = [...(JSON.parse(readFileSync(join(PACKAGE_ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include, 'deploy'];

function tsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Each file's relative `.ts` imports and re-exports (static, dynamic and type-only), as paths from the package root. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;'"]*?from\s*['"](\.[^'"]+\.ts)['"]|import\(\s*['"](\.[^'"]+\.ts)['"]\s*\)/g)].map(
      (m) => (m[1] ?? m[2])!,
    );
    graph.set(
      relative(PACKAGE_ROOT, file),
      specs.map((s) => relative(PACKAGE_ROOT, resolve(dirname(file), s))),
    );
  }
  return graph;
}

/** The cycles of a graph, one per strongly connected component of more than one file (or a file importing itself). */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    order.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
    }
    if (low.get(v) === order.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!order.has(v)) visit(v);
  return found;
}

test('no import cycle among product files, type-only imports included', () => {
  const graph = importGraph(BUILT.flatMap((folder) => tsFiles(join(PACKAGE_ROOT, folder))));
  assert.ok(graph.size > 100, `the scan found the product (${graph.size} files)`);
  assert.deepEqual(cycles(graph), [], 'move the shared type or rule down into a module each side imports');
});

test('the scan sees a cycle: type-only, re-exported, and through a dynamic import', () => {
  const g = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['a.ts']],
    ['e.ts', ['e.ts']],
  ]);
  assert.deepEqual(cycles(g), [['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
  const dir = join(PACKAGE_ROOT, 'processors', 'action');
  const edges = importGraph([join(dir, 'mcp.ts')]).get('processors/action/mcp.ts')!;
  assert.ok(edges.includes('processors/action/attempt.ts'), `type-only imports are edges: ${edges.join(', ')}`);
});
