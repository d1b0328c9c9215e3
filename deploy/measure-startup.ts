/**
 * Measures the image: its size, and each process's cold start from `podman run` to a 200 on its
 * /health, against the broker and registry of KAFKA_BROKERS / SCHEMA_REGISTRY_URL (default: the
 * local ones, `npx tao infra up`), in a fresh TAO_NAMESPACE deleted by nobody (topics are small).
 *
 *   node deploy/prepare.js podman          # once: the private podman setup and the base images
 *   node --import tsx deploy/measure-startup.ts [--reps 3] [--no-build] [--host]
 *
 * --host: each start is paired with the same process started on the host from dist/ (node
 * --max-semi-space-size=8 bin/tao.js ...), alternating, so the container's cost is read at one load.
 *
 * One container at a time, each a new container from the image; the time includes podman's own
 * start (about 0.1-0.3 s here), node's, loading the code and models, waiting for Kafka, checking
 * the topics and schemas, joining the group and claiming partitions. Prints a table and JSON.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PACKAGE_ROOT } from '../runtime/paths.ts';
import {
  DEFAULT_IMAGE,
  buildImage,
  freePort,
  imageSize,
  podmanSetupFromEnv,
  runContainer,
  stopContainers,
  waitHealthy,
  type PodmanSetup,
} from './containers.ts';

const { values } = parseArgs({
  options: { reps: { type: 'string', default: '3' }, 'no-build': { type: 'boolean', default: false }, host: { type: 'boolean', default: false } },
});
const reps = Number(values.reps);

function setup(): PodmanSetup {
  const fromEnv = podmanSetupFromEnv();
  if (fromEnv) return fromEnv;
  const out = execFileSync(process.execPath, [join(PACKAGE_ROOT, 'deploy', 'prepare.js'), 'podman'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const env: NodeJS.ProcessEnv = {};
  for (const line of out.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (m) env[m[1]!] = m[2]!;
  }
  return podmanSetupFromEnv(env)!;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const s = setup();
if (!values['no-build']) {
  const built = await buildImage(s, DEFAULT_IMAGE, { timeoutMs: 30 * 60_000 });
  console.error(`built ${DEFAULT_IMAGE} in ${built.seconds.toFixed(0)} s (${built.cached}/${built.steps} steps cached)`);
}
const size = await imageSize(s);
const ns = `m${randomUUID().slice(0, 8)}`;
const base = {
  KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
  SCHEMA_REGISTRY_URL: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081',
  TAO_NAMESPACE: ns,
  TAO_BIND_HOST: '127.0.0.1',
};
const applied = runContainer(s, `tao-measure-${ns}-topics`, ['topics', 'apply'], base);
if ((await applied.exited) !== 0) throw new Error(`topics apply failed:\n${applied.lines.join('\n')}`);

const results: Record<string, { ms: number[]; stopMs: number[] }> = {};
const hostResults: Record<string, { ms: number[]; stopMs: number[] }> = {};
const processes: Array<{ name: string; args: string[]; portVar: string }> = [
  { name: 'thought', args: ['run', 'thought'], portVar: 'TAO_OPS_PORT' },
  { name: 'action', args: ['run', 'action'], portVar: 'TAO_OPS_PORT' },
  { name: 'observation', args: ['run', 'observation'], portVar: 'TAO_OPS_PORT' },
  { name: 'ingress', args: ['run', 'ingress'], portVar: 'TAO_INGRESS_PORT' },
  { name: 'tools', args: ['run', 'tools'], portVar: 'TAO_TOOLS_PORT' },
];
/** The same process on the host, from dist/ (TAO_RUN_FROM=dist), as bin/tao.js's child stages run. */
async function hostStart(args: string[], env: Record<string, string>, port: number): Promise<{ ms: number; stopMs: number }> {
  const t0 = Date.now();
  const child = spawn(process.execPath, ['--max-semi-space-size=8', join(PACKAGE_ROOT, 'bin', 'tao.js'), ...args], {
    env: { ...process.env, ...env, TAO_RUN_FROM: 'dist' },
    stdio: 'ignore',
  });
  const exited = new Promise<number>((r) => child.once('exit', (code) => r(code ?? 1)));
  try {
    const ms = await waitHealthy(`http://127.0.0.1:${port}/health`, t0, 180_000, exited);
    const t1 = Date.now();
    child.kill('SIGTERM');
    await exited;
    return { ms, stopMs: Date.now() - t1 };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}

for (let rep = 0; rep < reps; rep++) {
  for (const p of processes) {
    const port = await freePort();
    const name = `tao-measure-${ns}-${p.name}-${rep}`;
    const t0 = Date.now();
    const c = runContainer(s, name, p.args, { ...base, [p.portVar]: String(port) });
    try {
      const ms = await waitHealthy(`http://127.0.0.1:${port}/health`, t0, 180_000, c.exited);
      const t1 = Date.now();
      await stopContainers(s, [name]);
      const code = await c.exited;
      (results[p.name] ??= { ms: [], stopMs: [] }).ms.push(ms);
      results[p.name]!.stopMs.push(Date.now() - t1);
      console.error(`${p.name} #${rep + 1}: ready in ${ms} ms, stopped in ${Date.now() - t1} ms (exit ${code})`);
    } catch (err) {
      await stopContainers(s, [name]);
      throw err;
    }
    if (values.host) {
      const hostPort = await freePort();
      const h = await hostStart(p.args, { ...base, [p.portVar]: String(hostPort) }, hostPort);
      (hostResults[p.name] ??= { ms: [], stopMs: [] }).ms.push(h.ms);
      hostResults[p.name]!.stopMs.push(h.stopMs);
      console.error(`${p.name} #${rep + 1} on the host: ready in ${h.ms} ms, stopped in ${h.stopMs} ms`);
    }
  }
}
const load = (await import('node:os')).loadavg()[0]!.toFixed(1);
console.log(`image ${DEFAULT_IMAGE}: ${(size / 1e6).toFixed(0)} MB; ${reps} cold starts each, one at a time, load average ${load} at the end`);
const range = (xs: number[]) => `${median(xs)} [${Math.min(...xs)}-${Math.max(...xs)}]`;
console.log(`| process | container: ready ms, median [min-max] | stop ms, median |${values.host ? ' host (dist/): ready ms | stop ms |' : ''}`);
console.log(`|---|---|---|${values.host ? '---|---|' : ''}`);
for (const [name, r] of Object.entries(results)) {
  const h = hostResults[name];
  console.log(`| ${name} | ${range(r.ms)} | ${median(r.stopMs)} |${h ? ` ${range(h.ms)} | ${median(h.stopMs)} |` : ''}`);
}
console.log(JSON.stringify({ image: DEFAULT_IMAGE, bytes: size, results, host: values.host ? hostResults : undefined }));
