// test-needs: kafka
/**
 * Action's partition pipeline against the real broker: while one run's tool call hangs, Action
 * keeps fetching and calling the tools of other runs' waves, a run on another partition completes
 * meanwhile, and the committed log keeps each partition's order (runtime/pipeline.ts).
 *
 * The slow upstream is a simulator: a small HTTP proxy in front of the demo tool server that holds
 * the calls for one e-mail address until the test releases them. The catalog is the shipped one
 * with crm.find_customer's timeout raised to a minute, so the held call is slow, not failed.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../../client/tasks.ts';
import { partitionForKey } from '../../../runtime/partition.ts';
import { packagePath } from '../../../runtime/paths.ts';
import type { ActionResult, Outcome, Task } from '../../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../../tool-server/server.ts';
import { TOPICS } from '../../../topics/catalog.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd, type TestCluster } from '../../helpers/cluster.ts';

const PARTITIONS = TOPICS.thoughtRequests.partitions;
const SLOW = 'slow-upstream@example.com';

/** A simulated slow upstream: forwards every request to `target`, holding those whose path names `holdFor` until `release()`. */
async function holdingProxy(target: string, holdFor: string) {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const seen: string[] = [];
  const arrivals = new Set<(path: string) => void>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    seen.push(path);
    for (const a of arrivals) a(path);
    const forward = () => {
      const up = httpRequest(`${target}${path}`, { method: req.method, headers: req.headers }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (decodeURIComponent(path).includes(holdFor)) void released.then(forward);
    else forward();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    release,
    /** Resolves once a request whose path contains `text` has arrived (at once if one has). */
    arrived(text: string): Promise<void> {
      if (seen.some((p) => decodeURIComponent(p).includes(text))) return Promise.resolve();
      return new Promise((resolve) => {
        const check = (path: string) => {
          if (!decodeURIComponent(path).includes(text)) return;
          arrivals.delete(check);
          resolve();
        };
        arrivals.add(check);
      });
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A task for `email` whose run lands on a partition `wanted` accepts. */
function taskFor(email: string, wanted: (partition: number) => boolean, namespace: string): Task {
  for (let i = 0; ; i++) {
    const t = buildTask({ text: `Where is my order? ${email}`, source: 'pipeline-test', external_id: `${namespace}-${email}-${i}` });
    if (wanted(partitionForKey(t.thought_id, PARTITIONS))) return t;
  }
}

let tools: ToolServer;
let proxy: Awaited<ReturnType<typeof holdingProxy>>;
let catalogDir: string;
let cluster: TestCluster;
let fleet: StageFleet;

before(async () => {
  tools = await startToolServer({ port: 0 });
  proxy = await holdingProxy(tools.url, SLOW);
  catalogDir = mkdtempSync(join(tmpdir(), 'tao-pipeline-catalog-'));
  cpSync(packagePath('tools', 'catalog'), catalogDir, { recursive: true });
  const file = join(catalogDir, 'crm.find_customer.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), timeoutMs: 60000 }, null, 2));
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: proxy.url, TAO_TOOL_CATALOG_DIR: catalogDir });
  fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
});

after(async () => {
  proxy?.release();
  await fleet?.stop();
  await proxy?.close();
  await tools?.close();
  if (catalogDir) rmSync(catalogDir, { recursive: true, force: true });
});

test(
  "a hanging tool call holds back neither other runs' calls nor a run on another partition; each partition commits in order",
  { timeout: 180000 },
  async () => {
    const follower = await followOutcomes(cluster);
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    const slow = taskFor(SLOW, () => true, cluster.namespace);
    const slowPartition = partitionForKey(slow.thought_id, PARTITIONS);
    // One run on another partition, one behind the slow run on its own partition.
    const other = taskFor('other-partition@example.com', (p) => p !== slowPartition, cluster.namespace);
    const behind = taskFor('same-partition@example.com', (p) => p === slowPartition, cluster.namespace);
    try {
      await submitTasks(producer, cluster.codec, [slow]);
      await proxy.arrived(SLOW);
      await submitTasks(producer, cluster.codec, [other, behind]);

      await follower.waitUntil((o) => o.has(other.thought_id), 90000);
      assert.equal(follower.outcomes.has(slow.thought_id), false, 'the slow run is still waiting on its tool');
      // Called while the slow call still hangs: the same partition's next wave was fetched and started.
      await proxy.arrived('same-partition@example.com');
      assert.equal(follower.outcomes.has(slow.thought_id), false);

      proxy.release();
      await follower.waitUntil((o) => o.has(slow.thought_id) && o.has(behind.thought_id), 90000);
    } finally {
      await producer.disconnect();
      await follower.stop();
    }
    const outcomes = [...follower.outcomes.values()].map((r) => r.value as unknown as Outcome);
    assert.deepEqual(
      outcomes.map((o) => `${o.status}`),
      ['completed', 'completed', 'completed'],
    );

    // The committed log: on the slow run's partition, its first result comes before the run behind it
    // (the later wave's call finished first, its commit waited), one result per wave, none twice.
    // Every outcome is committed, so every wave and result before it is: the log as it stands.
    const records = await scanToEnd(cluster, ['thoughtRequests', 'actionResults']);
    const results = records.filter((r) => r.topic === 'actionResults');
    const waves = records.filter((r) => r.topic === 'thoughtRequests');
    assert.equal(results.length, waves.length, 'each wave answered by one committed result');
    const firstResult = (id: string) => results.find((r) => r.key === id && (r.value as unknown as ActionResult).iteration === 1);
    const [slowFirst, behindFirst] = [firstResult(slow.thought_id), firstResult(behind.thought_id)];
    assert.ok(slowFirst && behindFirst);
    assert.equal(slowFirst.partition, behindFirst.partition);
    assert.ok(
      BigInt(slowFirst.offset) < BigInt(behindFirst.offset),
      `on partition ${slowFirst.partition} the slow run's result (offset ${slowFirst.offset}) precedes the one behind it (${behindFirst.offset})`,
    );
  },
);
