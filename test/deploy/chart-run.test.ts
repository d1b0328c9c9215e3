// test-needs: kafka, helm
/**
 * The chart as Kubernetes would run it, without a cluster (none can be built here: docs/DEPLOYMENT.md,
 * "What was validated"). For the release names `tao` and `prod`, `helm template` renders the chart
 * with every process on (stages, ingress with a key, callbacks, the demo tool server, the approval
 * scheduler) against the real broker and registry in a fresh TAO_NAMESPACE. Then, as a kubelet
 * would: the pre-install Job's container runs to completion, and each rendered Deployment's container
 * is started as a local process with the image's entrypoint and ENV (deploy/Containerfile; /app is
 * this checkout), its rendered environment (ConfigMap, env, Secret keys) and the service links
 * kubelet would add for every Service both releases create (`enableServiceLinks: false` turns them
 * off, they are added anyway: the processes must tolerate them). Every process reaches ready (its
 * readiness probe's URL answers 200; the two without a port print their start line and keep
 * running), a refund above the approval threshold submitted through the ingress parks
 * `awaiting_approval`, and the scheduler's time-out ends it `approval_timeout`, which the callback
 * dispatcher delivers. On SIGTERM each exits 0.
 *
 * The one liberty taken: pods have a network namespace each, these processes share the machine's,
 * so each container port is moved to a free local port (the variable the chart sets it with, and
 * the probes, follow), and a Service's DNS name in a value (`http://<release>-tao-kafka-tools:7070`)
 * is replaced by the local address of the pod behind it.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { hashApiKey, newApiKey } from '../../ingress/api-keys.ts';
import { AvroCodec } from '../../runtime/codec.ts';
import { loadRuntimeConfig } from '../../runtime/config.ts';
import { createKafka } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';
import type { Outcome, Task } from '../../schemas/types.gen.ts';
import { followOutcomes, scanToEnd, warningsAndErrors, type TestCluster } from '../helpers/cluster.ts';
import { containerEnv, imageSpec, manifests, podEnvironment, serviceLinks, type ClusterService, type Manifest } from '../helpers/kubelet.ts';

const exec = promisify(execFile);
const HELM = process.env.DEPLOY_HELM;
const VERSIONS = (process.env.DEPLOY_K8S_VERSIONS ?? '').split(',').filter(Boolean);
if (!HELM || VERSIONS.length === 0) throw new Error('DEPLOY_HELM and DEPLOY_K8S_VERSIONS are set by npm test (node deploy/prepare.js helm)');
const CHART = join(PACKAGE_ROOT, 'deploy', 'helm', 'tao-kafka');
const BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
const REGISTRY = process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081';
const work = mkdtempSync(join(tmpdir(), 'tao-chart-run-'));
const API_KEY = newApiKey();
const CALLBACK_SECRET = `chart-run-${randomUUID()}`;
/** A shipped order over the 50.00 threshold (tool-server/data.ts). */
const ORDER = 'O-20250010';
const RELEASES = ['tao', 'prod'] as const;

/** Callbacks the dispatcher delivers, to a receiver of the test's. */
const callbacks: Array<{ body: string; signature: string | undefined }> = [];
let receiver: Server;
let receiverPort = 0;

after(async () => {
  receiver?.close();
  rmSync(work, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** The values a user would install with: every process on, the loop pointed at the test's broker, registry and namespace. */
function values(namespace: string): Record<string, unknown> {
  return {
    config: {
      KAFKA_BROKERS: BROKERS,
      SCHEMA_REGISTRY_URL: REGISTRY,
      TAO_NAMESPACE: namespace,
      TAO_SESSION_TIMEOUT_MS: '6000',
      TAO_PLANNER: 'graph',
      TAO_FLOW: 'refund-request@1',
      TAO_APPROVAL_RULES: 'refunds.create:amount_cents>5000',
      TAO_APPROVAL_TIMEOUT: '3s',
    },
    secrets: {
      TAO_INGRESS_API_KEYS: JSON.stringify([{ id: 'chart', sha256: hashApiKey(API_KEY), sources: ['*'], rate_per_minute: 600 }]),
      TAO_CALLBACK_SECRET: CALLBACK_SECRET,
    },
    ingress: { enabled: true },
    callbacks: { enabled: true, config: { TAO_CALLBACK_ALLOWED_HOSTS: `127.0.0.1:${receiverPort}` } },
    tools: { enabled: true },
  };
}

async function render(release: string, namespace: string): Promise<Manifest[]> {
  const file = join(work, `${release}.values.json`);
  writeFileSync(file, JSON.stringify(values(namespace)));
  const { stdout } = await exec(HELM!, ['template', release, CHART, '--namespace', 'agents', '--kube-version', VERSIONS.at(-1)!, '-f', file], {
    maxBuffer: 32 * 1024 * 1024,
    timeout: 60000,
  });
  return manifests(stdout);
}

/** A workload's container started as a local process. */
interface Pod {
  name: string;
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | string>;
  /** Container port (by name and number) to the local port it was moved to. */
  ports: Map<string | number, number>;
  container: any;
}

const image = imageSpec();
/** The image's paths in this checkout. */
const local = (arg: string) => (arg === 'node' ? process.execPath : arg.replace(/^\/app(?=\/|$)/, PACKAGE_ROOT));

/**
 * Starts `workload`'s container: the image's entrypoint (or the container's command) and its args,
 * in the image's WORKDIR, with the image's ENV, `links` and the rendered environment.
 */
async function startPod(all: Manifest[], workload: Manifest, links: Record<string, string>, hosts: Map<string, string>): Promise<Pod> {
  const { env: own, container } = containerEnv(all, workload);
  const ports = new Map<string | number, number>();
  for (const p of container.ports ?? []) {
    const port = await freePort();
    ports.set(p.name, port).set(p.containerPort, port);
    // The variable the chart sets the container port with (TAO_OPS_PORT, TAO_INGRESS_PORT, TAO_TOOLS_PORT) follows it.
    const carriers = (container.env as Array<{ name: string; value?: string }>).filter((e) => e.value === String(p.containerPort));
    assert.equal(carriers.length, 1, `${workload.metadata.name}: one variable sets port ${p.containerPort}`);
    own[carriers[0]!.name] = String(port);
  }
  // A Service's DNS name in a value: the local address of the pod behind it.
  for (const [name, value] of Object.entries(own)) {
    if (value)
      own[name] = value.replace(/\/\/([a-z0-9-]+):(\d+)/g, (whole, host: string, port: string) => {
        const to = hosts.get(`${host}:${port}`);
        return to ? `//${to}` : whole;
      });
  }
  const env = podEnvironment(image.env, links, { ...own, HOSTNAME: `${workload.metadata.name}-0`, PATH: process.env.PATH });
  const command = [...(container.command ?? image.entrypoint), ...(container.args ?? [])].map(local);
  const child = spawn(command[0]!, command.slice(1), { cwd: local(image.workdir), env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', (l) => lines.push(l));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return { name: workload.metadata.name, child, lines, exited, ports, container };
}

/** Resolves once the pod is ready as Kubernetes would see it; rejects, with its last lines, when it exits first. */
async function ready(pod: Pod, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | string | null = null;
  void pod.exited.then((c) => (exitCode = c));
  const probe = pod.container.readinessProbe?.httpGet as { path: string; port: string | number } | undefined;
  // Without a readiness probe a pod is ready once its container runs: these print one line when they are set up.
  const startLine = { scheduler: '"msg":"scheduler running"', callbacks: '"msg":"callback dispatcher running"' }[pod.container.name as string];
  assert.ok(probe || startLine, `${pod.name}: a readiness probe, or a known start line`);
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (exitCode !== null) throw new Error(`${pod.name} exited (${exitCode}) before it was ready:\n${pod.lines.slice(-15).join('\n')}`);
    if (probe) {
      try {
        const res = await fetch(`http://127.0.0.1:${pod.ports.get(probe.port)}${probe.path}`, { signal: AbortSignal.timeout(2000) });
        if (res.status === 200) return;
        last = `HTTP ${res.status}`;
      } catch (err) {
        last = (err as Error).message;
      }
    } else if (pod.lines.some((l) => l.includes(startLine!))) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${pod.name} not ready within ${timeoutMs} ms (last probe: ${last}):\n${pod.lines.slice(-15).join('\n')}`);
}

async function stop(pods: Pod[]): Promise<Array<[string, number | string]>> {
  return Promise.all(
    pods.map(async (p): Promise<[string, number | string]> => {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
      const timer = setTimeout(() => p.child.kill('SIGKILL'), 30000);
      const code = await p.exited;
      clearTimeout(timer);
      return [p.name, code];
    }),
  );
}

before(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      callbacks.push({ body, signature: req.headers['x-tao-signature'] as string | undefined });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverPort = (receiver.address() as { port: number }).port;
});

for (const release of RELEASES) {
  test(
    `release ${release}: every rendered container runs with the service links, reaches ready, and the scheduler times an approval out`,
    { timeout: 600000 },
    async () => {
      const namespace = `c${randomUUID().slice(0, 8)}`;
      const rendered = await render(release, namespace);
      // Every Service both releases create, as if installed side by side in one namespace, and the API server's.
      const services: ClusterService[] = [{ name: 'kubernetes', clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443 }] }];
      for (const r of RELEASES) {
        const all = r === release ? rendered : await render(r, namespace);
        for (const svc of all.filter((m) => m.kind === 'Service'))
          services.push({ name: svc.metadata.name, clusterIP: `10.96.${services.length}.${10 + services.length}`, ports: svc.spec.ports });
      }
      const links = serviceLinks(services);
      const prefix = `${release.toUpperCase()}_TAO_KAFKA_`;
      assert.ok(Object.keys(links).filter((k) => k.startsWith(prefix)).length >= 14, `the links of ${release}'s ingress and tools Services`);
      assert.ok(
        Object.keys(links).some((k) => k.startsWith('TAO_TAO_KAFKA_INGRESS_')),
        'TAO_-prefixed links (the release named tao)',
      );

      // The pre-install hook: `tao topics apply` runs to completion.
      const job = rendered.find((m) => m.kind === 'Job')!;
      const topics = await startPod(rendered, job, links, new Map());
      assert.equal(await topics.exited, 0, `the topics Job:\n${topics.lines.slice(-15).join('\n')}`);

      const deployments = rendered.filter((m) => m.kind === 'Deployment');
      const names = deployments.map((d) => d.metadata.name.slice(`${release}-tao-kafka-`.length)).sort();
      assert.deepEqual(names, ['action', 'callbacks', 'ingress', 'observation', 'scheduler', 'thought', 'tools']);
      for (const d of deployments) assert.equal(d.spec.template.spec.enableServiceLinks, false, d.metadata.name);
      // The tool server first: the stages reach it through its Service's name.
      const pods: Pod[] = [];
      const hosts = new Map<string, string>();
      const byName = (n: string) => deployments.find((d) => d.metadata.name === `${release}-tao-kafka-${n}`)!;
      try {
        const tools = await startPod(rendered, byName('tools'), links, hosts);
        pods.push(tools);
        for (const svc of rendered.filter((m) => m.kind === 'Service')) {
          const target = svc.spec.selector['app.kubernetes.io/component'] === 'tools' ? tools : null;
          if (target) for (const p of svc.spec.ports) hosts.set(`${svc.metadata.name}:${p.port}`, `127.0.0.1:${target.ports.get(p.targetPort)}`);
        }
        assert.ok(hosts.size > 0, 'the tools Service maps to the tools pod');
        for (const n of names.filter((x) => x !== 'tools')) pods.push(await startPod(rendered, byName(n), links, hosts));
        await Promise.all(pods.map((p) => ready(p, 240000)));

        // The demo tool server listens on 0.0.0.0 in its pod: its fault-control API is closed there.
        const control = await fetch(`http://127.0.0.1:${tools.ports.get('http')}/__control/faults`, {
          method: 'POST',
          body: JSON.stringify({ route: '*', mode: 'server_error' }),
        });
        assert.equal(control.status, 403);

        // A ticket through the ingress: a refund over the threshold parks for approval, nobody answers.
        const cluster = localCluster(namespace);
        const follower = await followOutcomes(cluster);
        try {
          const ingress = pods.find((p) => p.container.name === 'ingress')!;
          const res = await fetch(`http://127.0.0.1:${ingress.ports.get('http')}/v1/tasks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              text: `Please refund my order ${ORDER}, it arrived broken.`,
              source: 'chart',
              metadata: { callback_url: `http://127.0.0.1:${receiverPort}/${release}` },
            }),
          });
          assert.equal(res.status, 202, await res.clone().text());
          const { thought_id: id } = (await res.json()) as { thought_id: string };
          const status = () => (follower.outcomes.get(id)?.value as unknown as Outcome | undefined)?.status;
          await explained(
            pods,
            follower.waitUntil(() => status() === 'failed', 120000),
          );
          const outcome = follower.outcomes.get(id)!.value as unknown as Outcome;
          assert.equal(outcome.reason_code, 'approval_timeout', outcome.reason);
          assert.equal(outcome.approval!.calls[0]!.decided_by, 'scheduler');
          // It had parked first, and the time-out is the scheduler's record.
          const tasks = (await scanToEnd(cluster, ['tasks'])).filter((r) => r.key === id).map((r) => r.value as unknown as Task);
          assert.deepEqual(
            tasks.map((t) => [t.kind, t.decision?.verdict ?? null, t.decision?.decided_by ?? null]),
            [
              ['NEW', null, null],
              ['DECISION', 'timeout', 'scheduler'],
            ],
          );
          const outcomes = (await scanToEnd(cluster, ['outcomes'])).filter((r) => r.key === id).map((r) => (r.value as unknown as Outcome).status);
          assert.deepEqual(outcomes, ['awaiting_approval', 'failed']);
          // The dispatcher calls back both: the parked run, then its end.
          await explained(
            pods,
            until(() => callbacks.filter((c) => c.body.includes(id)).length >= 2, 60000, 'two callbacks'),
          );
          const mine = callbacks.filter((c) => c.body.includes(id));
          assert.ok(mine.every((c) => c.signature?.startsWith('t=')));
          assert.match(mine.at(-1)!.body, /approval_timeout/);
        } finally {
          await follower.stop();
        }
      } catch (err) {
        await stop(pods);
        throw err;
      }
      const codes = await stop(pods);
      assert.deepEqual(
        codes.filter(([, code]) => code !== 0),
        [],
        'every container exits 0 on SIGTERM',
      );
    },
  );
}

/** A handle on the release's namespace for reading the log (the test's own client, not a pod). */
function localCluster(namespace: string): TestCluster {
  const env = { KAFKA_BROKERS: BROKERS, SCHEMA_REGISTRY_URL: REGISTRY, TAO_NAMESPACE: namespace };
  const config = loadRuntimeConfig(env);
  return { namespace, env, config, kafka: createKafka(config, `test-${namespace}`, createLogger({}, { level: 'error' })), codec: AvroCodec.create(config) };
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `promise`, or its rejection with the pods' last warnings and errors. */
async function explained<T>(pods: Pod[], promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (err) {
    const problems = pods.flatMap((p) => warningsAndErrors(p.lines, 10).map((l) => `${p.name}: ${l}`));
    throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
  }
}
