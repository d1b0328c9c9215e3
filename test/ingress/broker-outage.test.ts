// test-needs: kafka
/**
 * The ingress never answers 2xx for a task that was not durably written: with the broker stopped it
 * answers 503, and the client's retry after the broker is back starts the run, which completes.
 * Uses a private broker and registry (infra/local.ts on its own ports), so stopping it disturbs
 * no other test.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { startIngress } from '../../ingress/server.ts';
import { down, startKafka, stopKafka, up } from '../../infra/local.ts';
import { AvroCodec } from '../../runtime/codec.ts';
import { loadRuntimeConfig } from '../../runtime/config.ts';
import { createKafka } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';
import { applyCatalog } from '../../runtime/apply-catalog.ts';
import type { Outcome } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, scanToEnd, type TestCluster } from '../helpers/cluster.ts';

// Ports below the ephemeral range (32768-60999 on Linux): a client socket can hold a port in it for a moment.
const infra = {
  env: process.env,
  dir: mkdtempSync(join(tmpdir(), 'tao-outage-')),
  kafkaPort: 27092,
  controllerPort: 27093,
  registryPort: 27081,
  shortLived: true,
  log: () => undefined,
};
let env: NodeJS.ProcessEnv;
let tools: ToolServer;
let fleet: StageFleet;
let producer: Producer;
let ingress: Awaited<ReturnType<typeof startIngress>>;
let cluster: TestCluster;

before(async () => {
  const endpoints = await up(infra);
  tools = await startToolServer({ port: 0 });
  env = {
    ...process.env,
    KAFKA_BROKERS: endpoints.brokers,
    SCHEMA_REGISTRY_URL: endpoints.registryUrl,
    TAO_NAMESPACE: '',
    TAO_SESSION_TIMEOUT_MS: '6000',
    TAO_DEMO_TOOL_ORIGIN: tools.url,
  };
  await applyCatalog(env, () => undefined);
  const config = loadRuntimeConfig(env);
  const logger = createLogger({ test: 'outage' }, { level: 'error' });
  const kafka = createKafka(config, 'test-outage', logger);
  const codec = AvroCodec.create(config);
  await codec.register(['tasks', 'outcomes']);
  cluster = { namespace: '', env, config, kafka, codec };
  producer = kafka.producer({ idempotent: true, retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 500 } });
  await producer.connect();
  ingress = await startIngress({ port: 0, host: '127.0.0.1', maxBodyBytes: 65536, sendTimeoutMs: 3000 }, { producer, codec, logger });
  fleet = new StageFleet(env);
  await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
});

after(async () => {
  await ingress?.close();
  await producer?.disconnect().catch(() => undefined);
  await fleet?.stop();
  await tools?.close();
  await down(infra);
});

test('with the broker stopped the ingress answers 503; the retry after it is back is accepted and the run completes', { timeout: 240000 }, async () => {
  const body = JSON.stringify({ text: 'Where is my order? outage@example.com', source: 'outage-test', external_id: 'T-503' });
  const post = () => fetch(`${ingress.url}/v1/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

  await stopKafka(infra, { signal: 'SIGKILL' });
  const refused = await post();
  assert.equal(refused.status, 503, 'no 2xx for a task that was not written');
  const answer = (await refused.json()) as { error: string };
  assert.equal(answer.error, 'unavailable');

  await startKafka(infra);
  let accepted: Response | null = null;
  const deadline = Date.now() + 120000;
  while (Date.now() < deadline) {
    const r = await post(); // the client's retry
    if (r.status === 202) {
      accepted = r;
      break;
    }
    assert.equal(r.status, 503, `while the broker recovers the ingress still answers 503, got ${r.status}`);
    await new Promise((res) => setTimeout(res, 1000));
  }
  assert.ok(accepted, 'the retry was accepted once the broker was back');
  const { thought_id } = (await accepted.json()) as { thought_id: string };

  const follower = await followOutcomes(cluster);
  await follower.waitFor(1, 120000);
  await follower.stop();
  // Every outcome record on the log, counted one by one (a map keyed by run would hide a duplicate):
  // the broker is this file's own, so the one run is the only writer of outcomes.
  const records = await scanToEnd(cluster, ['outcomes']);
  assert.deepEqual(
    records.map((r) => `${r.key} ${(r.value as unknown as Outcome).status}`),
    [`${thought_id} completed`],
    'one outcome record, for the run the retry started, completed: nothing lost, nothing duplicated',
  );
});
