/**
 * runtime/listen.ts, which every HTTP server of the project listens and closes through: the URL it
 * says, a taken port, and a close that runs the server's own clean-up first, ends open keep-alive
 * connections instead of waiting for them, and can be called twice.
 */
import assert from 'node:assert/strict';
import { Agent, createServer, request } from 'node:http';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { listen } from '../../runtime/listen.ts';

const hello = () => createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hi'));

test('says the bound port and a URL with an IPv4 host as is and an IPv6 host in brackets', async () => {
  const v4 = await listen(hello(), '127.0.0.1', 0);
  const v6 = await listen(hello(), '::1', 0);
  try {
    assert.ok(v4.port > 0);
    assert.equal(v4.url, `http://127.0.0.1:${v4.port}`);
    assert.equal(v6.url, `http://[::1]:${v6.port}`);
    assert.equal(await (await fetch(v6.url)).text(), 'hi');
  } finally {
    await Promise.all([v4.close(), v6.close()]);
  }
});

test('a port already taken rejects with EADDRINUSE', async () => {
  const first = await listen(hello(), '127.0.0.1', 0);
  try {
    await assert.rejects(listen(hello(), '127.0.0.1', first.port), { code: 'EADDRINUSE' });
  } finally {
    await first.close();
  }
});

test('close runs the clean-up first, ends a kept-alive connection, and a second close is the same close', async () => {
  const order: string[] = [];
  const server = hello();
  const listening = await listen(server, '127.0.0.1', 0, () => order.push('clean-up'));
  const connections: Socket[] = [];
  server.on('connection', (socket: Socket) => connections.push(socket));
  // one answered request whose keep-alive connection stays open
  await new Promise<void>((resolve, reject) => {
    const req = request(`${listening.url}/`, { agent: new Agent({ keepAlive: true }) }, (res) => res.resume().once('end', resolve));
    req.once('error', reject);
    req.end();
  });
  assert.equal(connections.length, 1);
  assert.equal(connections[0]!.destroyed, false, 'the kept-alive connection is open before close');
  server.once('close', () => order.push('closed'));
  const first = listening.close();
  assert.equal(listening.close(), first);
  await first;
  assert.equal(connections[0]!.destroyed, true, 'close ended the kept-alive connection');
  assert.deepEqual(order, ['clean-up', 'closed']);
});
