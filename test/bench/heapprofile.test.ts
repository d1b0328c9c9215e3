import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { summarizeHeapProfile, type HeapProfile } from '../../bench/lib/heapprofile.ts';

const SAMPLER = new URL('../../bench/lib/alloc-sampler.mjs', import.meta.url);

describe('bench/profile.ts --alloc: the allocation sampler and its summary', () => {
  test('a process started with the sampler writes a profile that charges its allocations to the function that made them, freed ones included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tao-alloc-'));
    try {
      const root = `${dir}/`;
      const script = join(dir, 'allocates.mjs');
      // 64 MiB in arrays that are garbage as soon as they are made: only a profile that keeps freed objects sees them.
      writeFileSync(
        script,
        'export function churn() { let kept = 0; for (let i = 0; i < 4096; i++) kept += new Array(2048).fill(i).length; return kept; }\nconsole.log(churn());\n',
      );
      const sampler = new URL(SAMPLER);
      sampler.searchParams.set('dir', join(dir, 'out'));
      execFileSync(process.execPath, ['--import', sampler.href, script], { stdio: 'pipe' });
      const files = readdirSync(join(dir, 'out'));
      assert.equal(files.length, 1);
      assert.match(files[0]!, /^\d+\.heapprofile$/);
      const summary = summarizeHeapProfile(JSON.parse(readFileSync(join(dir, 'out', files[0]!), 'utf8')) as HeapProfile, root);
      const churn = summary.self.find((f) => f.frame.startsWith('churn (allocates.mjs:1)'));
      assert.ok(
        churn,
        `churn is among the allocating functions: ${summary.self
          .slice(0, 5)
          .map((f) => f.frame)
          .join(', ')}`,
      );
      assert.equal(churn.origin, 'ours');
      assert.ok(churn.bytes > 32 * 1048576, `churn allocated ${churn.bytes} bytes`);
      assert.ok(summary.byOrigin.ours >= churn.bytes);
      assert.equal(summary.ours[0]!.frame, churn.frame);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('without a dir the sampler does nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tao-alloc-'));
    try {
      execFileSync(process.execPath, ['--import', SAMPLER.href, '-e', 'new Array(1e5).fill(1)'], { cwd: dir, stdio: 'pipe' });
      assert.deepEqual(readdirSync(dir), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('what a dependency or Node allocates is charged to the nearest function of ours that called it', () => {
    const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber });
    const profile: HeapProfile = {
      head: {
        callFrame: frame('(root)', ''),
        selfSize: 0,
        children: [
          {
            callFrame: frame('handle', 'file:///app/dist/stage.js', 9),
            selfSize: 100,
            children: [
              {
                callFrame: frame('encode', 'file:///app/node_modules/avsc/lib/types.js', 40),
                selfSize: 1000,
                children: [{ callFrame: frame('from', 'node:buffer', 3), selfSize: 50, children: [] }],
              },
              { callFrame: frame('helper', 'file:///app/dist/util.js', 1), selfSize: 10, children: [] },
            ],
          },
          { callFrame: frame('tick', 'node:internal/timers', 7), selfSize: 5, children: [] },
        ],
      },
    };
    const s = summarizeHeapProfile(profile, '/app/');
    assert.equal(s.totalBytes, 1165);
    assert.deepEqual({ ours: s.byOrigin.ours, dependency: s.byOrigin.dependency, node: s.byOrigin.node }, { ours: 110, dependency: 1000, node: 55 });
    assert.deepEqual(s.byPackage, { avsc: 1000 });
    assert.deepEqual(s.self[0], { frame: 'encode (node_modules/avsc/lib/types.js:41)', origin: 'dependency', pkg: 'avsc', bytes: 1000 });
    assert.deepEqual(s.ours, [
      { frame: 'handle (dist/stage.js:10)', bytes: 1150 },
      { frame: 'helper (dist/util.js:2)', bytes: 10 },
    ]);
  });
});
