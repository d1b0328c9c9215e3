// test-needs: kafka
/**
 * A stage started while Kafka is unreachable (a supervisor restarting it during a broker restart)
 * waits for the broker instead of failing its start-up, and gives up with a clear message after
 * TAO_STARTUP_WAIT_MS. Once the broker answers, the stage checks its version (Kafka >= 3.9,
 * TAO_KAFKA_MIN_VERSION_CHECK) before it starts. The broker becomes reachable through a TCP relay the test opens late, on
 * the port the stage was given as its bootstrap address.
 */
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { spawnStage, stopAll, type StageProcess } from '../../cli/processes.ts';
import { missingSince39, readBrokerVersions } from '../../runtime/broker-version.ts';
import { freshCluster, type TestCluster } from '../helpers/cluster.ts';

let cluster: TestCluster;
const processes: StageProcess[] = [];
const servers: Server[] = [];
const sockets = new Set<Socket>();

before(async () => {
  cluster = await freshCluster();
});

after(async () => {
  await stopAll(processes);
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

/** A port nothing listens on (taken and released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** Forwards `port` to the real broker. */
async function relay(port: number): Promise<void> {
  const [host, brokerPort] = cluster.config.kafka.brokers[0]!.split(':');
  const server = createServer((client) => {
    const upstream = connect(Number(brokerPort), host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined).on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
}

/** A stage process; `seen` waits for a log line containing `text` (or one `text` accepts). */
function start(env: NodeJS.ProcessEnv): {
  proc: StageProcess;
  lines: string[];
  seen(text: string | ((line: string) => boolean), timeoutMs: number): Promise<void>;
} {
  const lines: string[] = [];
  const proc = spawnStage('observation', { ...cluster.env, TAO_OPS_PORT: '0', ...env }, (_, line) => lines.push(line));
  processes.push(proc);
  const seen = async (text: string | ((line: string) => boolean), timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    const match = typeof text === 'string' ? (l: string) => l.includes(text) : text;
    while (!lines.some(match)) {
      if (Date.now() > deadline) throw new Error(`no line with "${text}" within ${timeoutMs} ms:\n${lines.slice(-10).join('\n')}`);
      if (proc.child.exitCode !== null) throw new Error(`exited (${proc.child.exitCode}) before "${text}":\n${lines.slice(-10).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { proc, lines, seen };
}

test('a stage started while Kafka is unreachable waits, saying so, and starts once the broker answers', { timeout: 240000 }, async () => {
  const port = await closedPort();
  const stage = start({ KAFKA_BROKERS: `127.0.0.1:${port}`, TAO_STARTUP_WAIT_MS: '60000', TAO_LOG_LEVEL: 'debug' });
  await stage.seen('"msg":"waiting for kafka"', 90000);
  // Still trying (seen exits early if the process ends) after 2 s, by its own debug lines.
  const waited = (line: string) => Number(/"msg":"still waiting for kafka".*"waited_ms":(\d+)/.exec(line)?.[1] ?? 0);
  await stage.seen((line) => waited(line) >= 2000, 60000);
  assert.equal(stage.proc.child.exitCode, null, 'still waiting, not exited');
  await relay(port);
  await stage.seen('"msg":"stage started"', 60000);
  assert.ok(
    stage.lines.some((l) => l.includes('"msg":"kafka reachable"')),
    stage.lines.slice(-10).join('\n'),
  );
});

test('a stage that cannot reach Kafka within TAO_STARTUP_WAIT_MS exits 1 naming the wait and the error', { timeout: 180000 }, async () => {
  const port = await closedPort();
  const stage = start({ KAFKA_BROKERS: `127.0.0.1:${port}`, TAO_STARTUP_WAIT_MS: '3000' });
  assert.equal(await stage.proc.exited, 1);
  assert.ok(
    stage.lines.some((l) => /Kafka unreachable for \d+ s \(TAO_STARTUP_WAIT_MS=3000\)/.test(l)),
    stage.lines.slice(-10).join('\n'),
  );
});

test(
  'a stage checks at start that every broker serves the Kafka 3.9 API versions, and starts against the local 3.9.1 broker',
  { timeout: 180000 },
  async () => {
    const stage = start({ TAO_LOG_LEVEL: 'debug' });
    await stage.seen('"msg":"stage started"', 120000);
    const checked = stage.lines.find((l) => l.includes('"msg":"kafka brokers serve the 3.9 API versions"'));
    assert.ok(checked, `no version check before the start:\n${stage.lines.slice(-10).join('\n')}`);
    const { brokers } = JSON.parse(checked) as { brokers: string[] };
    const admin = cluster.kafka.admin();
    await admin.connect();
    const { brokers: nodes } = await admin.describeCluster().finally(() => admin.disconnect());
    assert.equal(brokers.length, nodes.length, `every broker of the cluster is checked: ${brokers.join(', ')}`);
    assert.ok(stage.lines.indexOf(checked) < stage.lines.findIndex((l) => l.includes('"msg":"stage started"')));

    const versions = await readBrokerVersions(cluster.kafka);
    assert.deepEqual(
      versions.map((b) => missingSince39(b.versions)),
      nodes.map(() => []),
    );
  },
);
