/**
 * Starting a component waits for its health check. A broker restarted on a data dir of thousands
 * of partitions takes longer than its time-out to load them, and writes a log line for each: it is
 * working and must not be killed. One whose log stays quiet past its time-out is stuck, and one that
 * exits fails at once.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitUntilHealthy, type Health } from '../../infra/process.ts';

function logFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'tao-health-')), 'component.log');
  writeFileSync(file, 'starting\n');
  return file;
}

test('a component whose log still grows past its time-out is waited for, and its health then passes', async () => {
  const log = logFile();
  const writer = setInterval(() => appendFileSync(log, 'Completed load of Log(...)\n'), 50);
  const healthyAt = Date.now() + 900;
  try {
    const failure = await waitUntilHealthy({
      name: 'kafka',
      health: async (): Promise<Health> => (Date.now() >= healthyAt ? { ok: true } : { ok: false, reason: 'ECONNREFUSED' }),
      gone: async () => undefined,
      logFile: log,
      timeoutMs: 300,
      quietMs: 250,
      pollMs: 20,
    });
    assert.equal(failure, null);
  } finally {
    clearInterval(writer);
  }
});

test('a component whose log is quiet past its time-out is reported HEALTH_TIMEOUT with the last check and the quiet time', async () => {
  const started = Date.now();
  const failure = await waitUntilHealthy({
    name: 'kafka',
    health: async () => ({ ok: false, reason: 'ECONNREFUSED' }),
    gone: async () => undefined,
    logFile: logFile(),
    timeoutMs: 300,
    quietMs: 250,
    pollMs: 20,
  });
  assert.equal(failure?.code, 'HEALTH_TIMEOUT');
  assert.match(failure!.message, /^kafka: not healthy after .* \(last check: ECONNREFUSED; its log quiet for /);
  assert.ok(Date.now() - started < 2000, 'gave up soon after the time-out');
});

test('a growing log does not keep a component waiting past the hard limit', async () => {
  const log = logFile();
  const writer = setInterval(() => appendFileSync(log, 'still loading\n'), 20);
  try {
    const failure = await waitUntilHealthy({
      name: 'kafka',
      health: async () => ({ ok: false, reason: 'ECONNREFUSED' }),
      gone: async () => undefined,
      logFile: log,
      timeoutMs: 100,
      quietMs: 250,
      hardLimitMs: 600,
      pollMs: 20,
    });
    assert.equal(failure?.code, 'HEALTH_TIMEOUT');
  } finally {
    clearInterval(writer);
  }
});

test('a component that exits while starting fails at once with why', async () => {
  const failure = await waitUntilHealthy({
    name: 'model',
    health: async () => ({ ok: false, reason: 'GET /health answered 503' }),
    gone: async () => 'exited with code 1',
    logFile: logFile(),
    timeoutMs: 60_000,
  });
  assert.deepEqual(failure, { code: 'PROCESS_FAILED', message: 'model: exited with code 1 before becoming healthy (last check: GET /health answered 503)' });
});
