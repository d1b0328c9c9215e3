/**
 * Building the image and running tao-kafka containers with podman on this machine: what
 * test/deploy/image.test.ts and deploy/measure-startup.ts share. Every podman call runs with the
 * private configuration deploy/prepare.js writes (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF), every
 * container on the host network (the local broker and registry listen on 127.0.0.1), named with a
 * prefix of the caller's so that it removes only its own.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PACKAGE_ROOT } from '../runtime/paths.ts';

export const CONTAINERFILE = join(PACKAGE_ROOT, 'deploy', 'Containerfile');
const VERSION = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
export const DEFAULT_IMAGE = `localhost/tao-kafka:${VERSION}`;

/** The podman environment deploy/prepare.js printed (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, DEPLOY_NODE_IMAGE, DEPLOY_BASE_IMAGE). */
export interface PodmanSetup {
  env: NodeJS.ProcessEnv;
  nodeImage: string;
  baseImage: string;
}

/** The setup from the environment (npm test sets it for `test-needs: podman`); null when it is not there. */
export function podmanSetupFromEnv(env: NodeJS.ProcessEnv = process.env): PodmanSetup | null {
  const { CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, DEPLOY_NODE_IMAGE, DEPLOY_BASE_IMAGE } = env;
  if (!CONTAINERS_CONF || !CONTAINERS_STORAGE_CONF || !DEPLOY_NODE_IMAGE || !DEPLOY_BASE_IMAGE) return null;
  return { env: { CONTAINERS_CONF, CONTAINERS_STORAGE_CONF }, nodeImage: DEPLOY_NODE_IMAGE, baseImage: DEPLOY_BASE_IMAGE };
}

/** Runs podman to its end; resolves with its exit code and output. */
export function podman(
  setup: PodmanSetup,
  args: string[],
  options: { timeoutMs?: number; onLine?: (line: string) => void } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('podman', args, { env: { ...process.env, ...setup.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    if (options.onLine) for (const s of [child.stdout, child.stderr]) createInterface({ input: s }).on('line', options.onLine);
    const timer = options.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs) : undefined;
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: 127, stdout, stderr: `${stderr}${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
  });
}

/** Where the two build stages' results are kept (tagged, so that pruning keeps them and their layers as the next build's cache). */
export const CACHE_IMAGE = 'localhost/tao-kafka-build-cache';

/**
 * Builds deploy/Containerfile from the repository root with the local base images (no registry:
 * --pull=never). npm ci reaches the npm registry over the host network; the host's CA bundle is
 * mounted for it (egress through a TLS-inspecting proxy) and the host's npm cache, so a cold build
 * downloads only what the machine has not. The `deps` and `build` stages are built and tagged first
 * (CACHE_IMAGE:deps, :build; cached steps cost seconds), then the image; then untagged images are
 * pruned: earlier builds' results, whose layers would otherwise pile up in the store with every
 * source or dependency change, while the tagged stages keep this build's layers for the next.
 * Resolves with the image's id: run that, not the tag, which another clone may move meanwhile.
 */
export async function buildImage(
  setup: PodmanSetup,
  tag = DEFAULT_IMAGE,
  options: { timeoutMs?: number; onLine?: (line: string) => void } = {},
): Promise<{ id: string; seconds: number; cached: number; steps: number }> {
  const t0 = Date.now();
  const common = [
    'build',
    '--pull=never',
    '--network',
    'host',
    '-f',
    CONTAINERFILE,
    '--build-arg',
    `NODE_IMAGE=${setup.nodeImage}`,
    '--build-arg',
    `RUNTIME_IMAGE=${setup.baseImage}`,
  ];
  const ca = '/etc/ssl/certs/ca-certificates.crt';
  if (existsSync(ca)) common.push('-v', `${ca}:/run/host-ca.pem:ro`, '--build-arg', 'NODE_EXTRA_CA_CERTS=/run/host-ca.pem');
  const npmCache = join(homedir(), '.npm');
  if (existsSync(npmCache)) common.push('-v', `${npmCache}:/root/.npm`);
  let cached = 0;
  let steps = 0;
  const iidfile = join(tmpdir(), `tao-image-${process.pid}-${Date.now()}.iid`);
  for (const [target, name] of [
    ['deps', `${CACHE_IMAGE}:deps`],
    ['build', `${CACHE_IMAGE}:build`],
    [null, tag],
  ] as const) {
    const left = options.timeoutMs === undefined ? undefined : Math.max(1000, options.timeoutMs - (Date.now() - t0));
    const r = await podman(setup, [...common, ...(target ? ['--target', target] : ['--iidfile', iidfile]), '-t', name, PACKAGE_ROOT], {
      ...options,
      timeoutMs: left,
    });
    if (r.code !== 0)
      throw new Error(
        `podman build${target ? ` --target ${target}` : ''} exited ${r.code}:\n${`${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-30).join('\n')}`,
      );
    if (!target) {
      cached = (r.stdout.match(/^--> Using cache/gm) ?? []).length;
      steps = (r.stdout.match(/^\[\d\/\d\] STEP /gm) ?? []).length;
    }
  }
  const id = readFileSync(iidfile, 'utf8').trim();
  rmSync(iidfile, { force: true });
  // Untagged images over an hour old: not this build's (its layers are held by the tags) nor one
  // running beside it in another clone sharing the store (its new layers are minutes old).
  await podman(setup, ['image', 'prune', '-f', '--filter', 'until=1h'], { timeoutMs: 120_000 });
  return { id, seconds: (Date.now() - t0) / 1000, cached, steps };
}

/** The image's size in bytes, as podman reports it. */
export async function imageSize(setup: PodmanSetup, tag = DEFAULT_IMAGE): Promise<number> {
  const r = await podman(setup, ['image', 'inspect', '--format', '{{.Size}}', tag]);
  if (r.code !== 0) throw new Error(`podman image inspect ${tag}: ${r.stderr.trim()}`);
  return Number(r.stdout.trim());
}

/** A container running in the foreground of a `podman run` child. */
export interface Container {
  name: string;
  child: ChildProcess;
  /** Every output line so far. */
  lines: string[];
  exited: Promise<number>;
  /** Resolves with the first line matching `pattern` (rejects when the container exits first or after timeoutMs). */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string>;
}

/**
 * `podman run --rm --init --network host` of the image with `args` (e.g. ['run', 'thought']) and
 * `env`; `--read-only` as the chart runs it (a writable /tmp). Does not wait for anything.
 */
export function runContainer(setup: PodmanSetup, name: string, args: string[], env: Record<string, string>, image = DEFAULT_IMAGE): Container {
  const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  const child = spawn(
    'podman',
    ['run', '--rm', '--init', '--pull=never', '--network', 'host', '--read-only', '--tmpfs', '/tmp', '--name', name, ...envArgs, image, ...args],
    {
      env: { ...process.env, ...setup.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: string[] = [];
  const waiters = new Set<{ pattern: RegExp; resolve: (line: string) => void }>();
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      for (const w of waiters) if (w.pattern.test(line)) w.resolve(line);
    });
  }
  const exited = new Promise<number>((resolve) => child.once('close', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  const waitForLine = (pattern: RegExp, timeoutMs: number) =>
    new Promise<string>((resolve, reject) => {
      const found = lines.find((l) => pattern.test(l));
      if (found) return resolve(found);
      const waiter = {
        pattern,
        resolve: (line: string) => {
          clearTimeout(timer);
          waiters.delete(waiter);
          resolve(line);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`${name}: no line matching ${pattern} within ${timeoutMs} ms:\n${lines.slice(-20).join('\n')}`));
      }, timeoutMs);
      waiters.add(waiter);
      void exited.then((code) => {
        if (!waiters.has(waiter)) return;
        clearTimeout(timer);
        waiters.delete(waiter);
        reject(new Error(`${name} exited (${code}) before a line matching ${pattern}:\n${lines.slice(-20).join('\n')}`));
      });
    });
  return { name, child, lines, exited, waitForLine };
}

/** Stops containers by name (SIGTERM, then SIGKILL after `graceS`) and removes them; never fails. */
export async function stopContainers(setup: PodmanSetup, names: string[], graceS = 10): Promise<void> {
  if (names.length === 0) return;
  await podman(setup, ['stop', '--ignore', '-t', String(graceS), ...names], { timeoutMs: (graceS + 30) * 1000 });
  await podman(setup, ['rm', '--ignore', '-f', ...names], { timeoutMs: 30000 });
}

/** Names of this machine's containers (running or not) that start with `prefix`. */
export function containersNamed(setup: PodmanSetup, prefix: string): string[] {
  const r = spawnSync('podman', ['ps', '-a', '--format', '{{.Names}}'], { env: { ...process.env, ...setup.env }, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n').filter((n) => n.startsWith(prefix)) : [];
}

/** A TCP port free on 127.0.0.1 now (the kernel's pick; it may be taken again before use, rarely). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 200; resolves with the milliseconds since `since`. */
export async function waitHealthy(url: string, since: number, timeoutMs: number, exited?: Promise<number>): Promise<number> {
  let gone: number | null = null;
  void exited?.then((code) => (gone = code));
  for (;;) {
    if (gone !== null) throw new Error(`${url}: the process exited (${gone}) before it was healthy`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      if (res.status === 200) return Date.now() - since;
    } catch {
      // not listening yet
    }
    if (Date.now() - since > timeoutMs) throw new Error(`${url} not healthy within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
