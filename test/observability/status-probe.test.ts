/**
 * `tao status` asks every stage's /health. A stage that misses one deadline while it works through
 * a burst is still there and must not be reported gone; a closed port or a process that never
 * answers is reported unreachable, with the reason, and never fails the command.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { probeEndpoint } from '../../observability/status.ts';

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.closeAllConnections();
  return Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A /health server that holds its first `slow` answers for `holdMs` (forever when `holdMs` is Infinity). */
async function healthServer(slow: number, holdMs: number): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer((_req, res) => {
    const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ stage: 'action', ok: true, breakers: {} }));
    if (requests++ < slow) {
      if (Number.isFinite(holdMs)) setTimeout(answer, holdMs);
    } else answer();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

test('a stage that misses one /health deadline is asked again and reported reachable', async () => {
  // The first request is never answered; the second at once (a deadline of 2 s leaves room for a loaded machine).
  const stage = await healthServer(1, Infinity);
  const report = await probeEndpoint(stage.url, 2000);
  assert.deepEqual(report, { url: stage.url, reachable: true, stage: 'action', healthy: true, breakers: {} });
  assert.equal(stage.requests(), 2);
});

test('a process that never answers is unreachable, with the time-out as its reason', async () => {
  const stuck = await healthServer(Infinity, Infinity);
  const report = await probeEndpoint(stuck.url, 200);
  assert.equal(report.reachable, false);
  assert.match(report.error ?? '', /timeout|aborted/i);
  assert.equal(stuck.requests(), 2, 'asked twice before it is called unreachable');
  assert.equal('timedOut' in report, false, 'the report carries only its documented fields');
});

test('a closed port is unreachable at once, with the connection error', async () => {
  const gone = createServer();
  await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`;
  await new Promise((resolve) => gone.close(resolve));
  const report = await probeEndpoint(`${url}/`, 5000);
  assert.equal(report.url, url);
  assert.equal(report.reachable, false);
  assert.match(report.error ?? '', /ECONNREFUSED/);
});
