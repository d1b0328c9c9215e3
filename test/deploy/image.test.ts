// test-needs: kafka, podman
/**
 * The image from deploy/Containerfile, built with podman from local base images (deploy/prepare.js;
 * no container registry), then the loop run from containers of it against the test broker and
 * registry on the host network: `topics apply`, the demo tool server, Thought, Action, Observation
 * and the ingress, each its own container (read-only root filesystem, the image's non-root user).
 * A ticket submitted through the containerised ingress completes, `tao replay --verify` (in a
 * container too) finds no drift, and every container stops cleanly on SIGTERM.
 *
 * The build reuses podman's layer cache (a rebuild after a source change runs `npm run build`
 * and the last stage: about 2 minutes here; a cold one, both `npm ci`s too: about 5-6 minutes).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { watchRecords } from '../../client/watch.ts';
import {
  buildImage,
  containersNamed,
  freePort,
  imageSize,
  podman,
  podmanSetupFromEnv,
  runContainer,
  stopContainers,
  waitHealthy,
  type Container,
} from '../../deploy/containers.ts';
import { AvroCodec } from '../../runtime/codec.ts';
import { loadRuntimeConfig } from '../../runtime/config.ts';
import { createKafka } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';

const setup = podmanSetupFromEnv();
if (!setup)
  throw new Error('CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, DEPLOY_NODE_IMAGE and DEPLOY_BASE_IMAGE are set by npm test (node deploy/prepare.js podman)');
const ns = `d${randomUUID().slice(0, 8)}`;
const prefix = `tao-test-${ns}-`;
const base = {
  KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
  SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081',
  TAO_NAMESPACE: ns,
  // Host network: the servers listen on the host's loopback only (and the ingress may run without keys there).
  TAO_BIND_HOST: '127.0.0.1',
  TAO_SESSION_TIMEOUT_MS: '6000',
};
const started: Container[] = [];
/** This run's image: a tag of its own (clones may share the store and build at the same time), run by id. */
const tag = `localhost/tao-kafka:test-${ns}`;
let image = '';

// Bounded so that the build and the loop together end inside the runner's per-file timeout (15
// minutes): a cold build (both npm ci) took 5-6 minutes here at load ~18, a cached one seconds.
before(async () => {
  const t0 = Date.now();
  const r = await buildImage(setup, tag, { timeoutMs: 9 * 60_000 });
  image = r.id;
  console.log(
    `image ${tag}: built in ${((Date.now() - t0) / 1000).toFixed(0)} s (${r.cached}/${r.steps} steps cached), ${((await imageSize(setup, image)) / 1e6).toFixed(0)} MB`,
  );
});

after(async () => {
  // Only this file's containers (named with its prefix).
  await stopContainers(setup, [...new Set([...started.map((c) => c.name), ...containersNamed(setup, prefix)])], 5);
  await podman(setup, ['untag', tag, tag], { timeoutMs: 30000 });
});

test('a ticket through the containerised ingress completes, and replay --verify finds no drift', { timeout: 5 * 60_000 }, async () => {
  assert.ok(image);
  const t0 = Date.now();
  const applied = runContainer(setup, `${prefix}topics`, ['topics', 'apply'], base, image);
  assert.equal(await applied.exited, 0, applied.lines.join('\n'));
  assert.ok(
    applied.lines.some((l) => /schemas registered/.test(l)),
    applied.lines.join('\n'),
  );

  const [toolsPort, ingressPort, ...opsPorts] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const stageEnv = { ...base, TAO_DEMO_TOOL_ORIGIN: `http://127.0.0.1:${toolsPort}` };
  const processes = [
    { name: 'tools', args: ['run', 'tools'], env: { ...base, TAO_TOOLS_PORT: String(toolsPort) }, health: `http://127.0.0.1:${toolsPort}/health` },
    ...(['thought', 'action', 'observation'] as const).map((stage, i) => ({
      name: stage,
      args: ['run', stage],
      env: { ...stageEnv, TAO_OPS_PORT: String(opsPorts[i]) },
      health: `http://127.0.0.1:${opsPorts[i]}/health`,
    })),
    { name: 'ingress', args: ['run', 'ingress'], env: { ...base, TAO_INGRESS_PORT: String(ingressPort) }, health: `http://127.0.0.1:${ingressPort}/health` },
  ];
  const ready = await Promise.all(
    processes.map(async (p) => {
      const since = Date.now();
      const c = runContainer(setup, `${prefix}${p.name}`, p.args, p.env, image);
      started.push(c);
      return { name: p.name, ms: await waitHealthy(p.health, since, 180_000, c.exited) };
    }),
  );
  console.log(`ready (started together): ${ready.map((r) => `${r.name} ${r.ms} ms`).join(', ')}`);

  // Outcomes are watched from the host before the ticket goes in.
  const config = loadRuntimeConfig({ ...process.env, ...base });
  const logger = createLogger({ test: 'image' }, { level: 'error' });
  let resolveOutcome!: (v: Record<string, unknown>) => void;
  const outcome = new Promise<Record<string, unknown>>((r) => (resolveOutcome = r));
  let thoughtId = '';
  const watcher = await watchRecords(createKafka(config, 'tao-image-test', logger), AvroCodec.create(config), {
    topics: ['outcomes'],
    from: 'end',
    onRecord: (r) => r.key === thoughtId && resolveOutcome(r.value),
  });
  try {
    const res = await fetch(`http://127.0.0.1:${ingressPort}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Where is my order O-12345678?' }),
    });
    const body = (await res.json()) as { thought_id: string };
    assert.equal(res.status, 202, JSON.stringify(body));
    thoughtId = body.thought_id;
    const ended = await Promise.race([outcome, new Promise<null>((r) => setTimeout(() => r(null), 120_000).unref())]);
    assert.ok(ended, `no outcome for ${thoughtId} within 120 s:\n${started.map((c) => `${c.name}: ${c.lines.slice(-5).join('\n')}`).join('\n')}`);
    assert.equal(ended.status, 'completed', JSON.stringify(ended));
    assert.equal((JSON.parse(ended.output_json as string) as { order_id: string }).order_id, 'O-12345678');
  } finally {
    await watcher.stop();
  }

  const verify = runContainer(setup, `${prefix}replay`, ['replay', thoughtId, '--verify'], base, image);
  assert.equal(await verify.exited, 0, verify.lines.join('\n'));
  assert.ok(
    verify.lines.some((l) => /^NO DRIFT/.test(l)),
    verify.lines.join('\n'),
  );

  // SIGTERM: each process finishes, commits, leaves its group and exits 0.
  await stopContainers(
    setup,
    started.map((c) => c.name),
    20,
  );
  assert.deepEqual(Object.fromEntries(await Promise.all(started.map(async (c) => [c.name.slice(prefix.length), await c.exited]))), {
    tools: 0,
    thought: 0,
    action: 0,
    observation: 0,
    ingress: 0,
  });
  console.log(`loop from containers: ${((Date.now() - t0) / 1000).toFixed(1)} s (topics apply, start, one ticket, replay --verify, stop)`);
});
