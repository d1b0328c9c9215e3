import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

const REPO = new URL('../../', import.meta.url);

/** Runs `body` in a child process (its own stdout) and returns what it printed. */
function run(body: string): string {
  return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `import { createLogger } from './runtime/log.ts';\n${body}`], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, TAO_LOG_LEVEL: 'info' },
  });
}

test('log lines of one event-loop turn reach stdout whole and in order, next to lines of later turns', () => {
  const out = run(`const log = createLogger({ stage: 't' });
for (let i = 0; i < 1200; i++) log.info('step', { i });
setTimeout(() => log.warn('later', { i: 1200 }), 5);`);
  const lines = out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { msg: string; i: number; stage: string; level: string });
  assert.equal(lines.length, 1201);
  assert.deepEqual(
    lines.map((l) => l.i),
    Array.from({ length: 1201 }, (_, i) => i),
  );
  assert.equal(lines[1200]!.msg, 'later');
  assert.ok(lines.every((l) => l.stage === 't'));
});

test('a line logged just before process.exit() is not lost', () => {
  const out = run(`const log = createLogger();
log.error('giving up', { code: 7 });
process.exit(0);`);
  assert.equal((JSON.parse(out.trim()) as { msg: string; code: number }).msg, 'giving up');
});
