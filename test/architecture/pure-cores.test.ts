/**
 * Thought and Observation decide; they do no I/O. This test follows the runtime imports of each
 * core module through the repository and fails if any of them reaches Kafka, HTTP, metrics or
 * node's I/O modules — so a replay of a recorded run can never touch the outside world.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url).pathname;
const CORES = ['processors/thought/core.ts', 'processors/observation/core.ts'];
const FORBIDDEN = [
  /^kafkajs$/,
  /^@kafkajs\//,
  /^undici$/,
  /^prom-client$/,
  /^onnxruntime-node$/,
  /^(node:)?(fs|fs\/promises|net|http|https|http2|dgram|child_process|worker_threads|cluster|dns|tls|readline)$/,
];

/** Runtime (non-type) import specifiers of a TypeScript file. */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs: string[] = [];
  for (const m of text.matchAll(/^\s*import\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/gm)) if (!m[1]) specs.push(m[3]!);
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) specs.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1]!);
  return specs;
}

function reach(entry: string): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string, chain: string[]) => {
    for (const spec of runtimeImports(file)) {
      if (spec.startsWith('.')) {
        const target = resolve(dirname(file), spec);
        if (target.endsWith('.json') || seen.has(target)) continue;
        seen.set(target, [...chain, target]);
        visit(target, [...chain, target]);
      } else if (!seen.has(spec)) {
        seen.set(spec, [...chain, spec]);
      }
    }
  };
  visit(resolve(root, entry), [entry]);
  return seen;
}

for (const core of CORES) {
  test(`${core} reaches no I/O module through its runtime imports`, () => {
    const reached = reach(core);
    const bad = [...reached].filter(([spec]) => FORBIDDEN.some((re) => re.test(spec))).map(([, chain]) => chain.map((c) => c.replace(root, '')).join(' -> '));
    assert.deepEqual(bad, []);
  });
}

test('the scan itself catches a forbidden import (the stage shells are not pure)', () => {
  const reached = reach('processors/action/stage.ts');
  assert.ok(
    [...reached.keys()].some((spec) => spec === 'undici'),
    'action reaches undici',
  );
});
