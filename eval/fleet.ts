/**
 * Real processes of the loop, started and stopped as a group: stage instances (`tao run <stage>`),
 * the demo tool server, the ingress. Every output line is kept for failure messages. `tao eval` starts
 * one such fleet per release it runs; the bench harness (bench/lib/harness.ts) builds on it.
 * Nothing here runs at import time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PACKAGE_ROOT } from '../runtime/paths.ts';

/** The `tao` entry of this package (bin/tao.js: dist/ or the sources, as it chooses). */
export const TAO_ENTRY = join(PACKAGE_ROOT, 'bin', 'tao.js');

/** How to start one kind of process: the command line and the line that says it is ready. */
export interface ProcessSpec {
  /** Label used in logs and reports, e.g. `thought`, `relay-action`, `tools`. */
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Returns the ops port (0 when the process has none) once `line` says the process is ready. */
  ready(line: string): number | null;
}

/**
 * A `tao run <stage>` process from `bin` (default: this checkout's `bin/tao.js`), with ops port 0,
 * and the node flags that tree gives its stages (runtime/stage-node-flags.json, as `tao run all`
 * does; none in a tree without the file, so an A/B can measure them); `nodeArgs` go after those
 * (e.g. `--cpu-prof`, which NODE_OPTIONS does not accept).
 */
export function stageSpec(stage: string, env: NodeJS.ProcessEnv, bin = TAO_ENTRY, nodeArgs: string[] = []): ProcessSpec {
  const flagsFile = join(dirname(bin), '..', 'runtime', 'stage-node-flags.json');
  const treeFlags = existsSync(flagsFile) ? (JSON.parse(readFileSync(flagsFile, 'utf8')) as string[]) : [];
  return {
    name: stage,
    args: [...treeFlags, ...nodeArgs, bin, 'run', stage],
    env: { ...env, TAO_OPS_PORT: '0' },
    ready: (line) => (line.includes('"msg":"stage started"') ? (JSON.parse(line) as { ops_port: number }).ops_port : null),
  };
}

/** One running process of a {@link Fleet}. */
export interface Instance {
  id: number;
  name: string;
  child: ChildProcess;
  /** Port of GET /health and GET /metrics (0 when none). */
  opsPort: number;
  startedAt: number;
  /** Resolves with the exit code or signal name. */
  exited: Promise<number | string>;
  /** Set once the process has exited. */
  exit: { code: number | string; at: number } | null;
  /** True once the fleet killed or stopped it on purpose. */
  expectedExit: boolean;
}

/**
 * Processes of one bench phase. Every output line is kept (the last 400) for failure messages; a
 * process that exits without being asked to after it was ready is recorded in {@link unexpectedExits}
 * (one that exits before, `start()` rejects).
 */
export class Fleet {
  readonly instances: Instance[] = [];
  readonly lines: string[] = [];
  readonly unexpectedExits: Array<{ name: string; code: number | string; at: number; lastLines: string[] }> = [];
  private nextId = 1;

  constructor(private readonly echo: ((line: string) => void) | null = null) {}

  /** Starts a process and resolves once it printed its ready line (rejects if it exits first or after `timeoutMs`). */
  async start(spec: ProcessSpec, timeoutMs = 90000): Promise<Instance> {
    const child = spawn(process.execPath, spec.args, { cwd: PACKAGE_ROOT, env: spec.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let ready!: (port: number) => void;
    const started = new Promise<number>((r) => (ready = r));
    const own: string[] = [];
    const instance: Instance = {
      id: this.nextId++,
      name: spec.name,
      child,
      opsPort: 0,
      startedAt: Date.now(),
      exit: null,
      expectedExit: false,
      exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'))),
    };
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        const tagged = `${spec.name}#${instance.id}: ${line}`;
        own.push(tagged);
        if (own.length > 60) own.shift();
        this.lines.push(tagged);
        if (this.lines.length > 400) this.lines.shift();
        this.echo?.(tagged);
        const port = spec.ready(line);
        if (port !== null) ready(port);
      });
    }
    let wasReady = false;
    void started.then(() => (wasReady = true));
    void instance.exited.then((code) => {
      instance.exit = { code, at: Date.now() };
      // An exit before the ready line is start()'s rejection, which the caller handles (the chaos
      // driver starts a replacement again, as a supervisor would): only a ready process that dies counts.
      if (!instance.expectedExit && wasReady) this.unexpectedExits.push({ name: spec.name, code, at: Date.now(), lastLines: own.slice(-20) });
    });
    this.instances.push(instance);
    let timer: NodeJS.Timeout | undefined;
    try {
      instance.opsPort = await Promise.race([
        started,
        instance.exited.then((code) => Promise.reject(new Error(`${spec.name} exited (${code}) before it was ready:\n${own.slice(-20).join('\n')}`))),
        new Promise<never>(
          (_, reject) =>
            (timer = setTimeout(() => reject(new Error(`${spec.name} not ready within ${timeoutMs} ms:\n${own.slice(-20).join('\n')}`)), timeoutMs)),
        ),
      ]);
    } catch (err) {
      instance.expectedExit = true;
      child.kill('SIGKILL');
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return instance;
  }

  /** Instances still running, optionally of one name. */
  alive(name?: string): Instance[] {
    return this.instances.filter((i) => i.exit === null && (name === undefined || i.name === name));
  }

  /** SIGKILLs an instance and resolves once it is gone. */
  async kill(instance: Instance, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    instance.expectedExit = true;
    if (instance.exit === null) instance.child.kill(signal);
    await instance.exited;
  }

  /** SIGTERM to every live instance (SIGKILL after `graceMs`), in parallel. */
  async stop(graceMs = 15000): Promise<void> {
    await Promise.all(
      this.alive().map(async (i) => {
        i.expectedExit = true;
        i.child.kill('SIGTERM');
        const timer = setTimeout(() => i.child.kill('SIGKILL'), graceMs);
        await i.exited;
        clearTimeout(timer);
      }),
    );
  }
}

/** The demo tool server as its own process (`tao run tools` on an ephemeral port); faults set over its control API. */
export interface ToolServerProcess {
  url: string;
  instance: Instance;
  setFaults(faults: Array<Record<string, unknown>>): Promise<void>;
  clearFaults(): Promise<void>;
  stats(): Promise<{ total: number; byRoute: Record<string, number>; effectsByKey: Record<string, number> }>;
  /** Side effects the server applied per `Idempotency-Key` (its stats' `effectsByKey`). */
  effectsByKey(): Promise<Record<string, number>>;
  /** The registered faults with their counters (GET /__control/faults). */
  faults(): Promise<Array<{ id: string; spec: Record<string, unknown>; seen: number; applied: number }>>;
}

/** Starts `tao run tools` in `fleet` and returns its URL and control API. */
export async function startToolServerProcess(fleet: Fleet, env: NodeJS.ProcessEnv, name = 'tools'): Promise<ToolServerProcess> {
  const { url, instance } = await startListener(fleet, env, name, 'tools', 'TAO_TOOLS_PORT', 'tool server listening');
  const control = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`tool server ${method} ${path}: HTTP ${res.status} ${await res.text()}`);
    return res.json() as Promise<unknown>;
  };
  return {
    url,
    instance,
    setFaults: async (faults) => {
      await control('DELETE', '/__control/faults');
      for (const f of faults) await control('POST', '/__control/faults', f);
    },
    clearFaults: async () => void (await control('DELETE', '/__control/faults')),
    stats: async () => (await control('GET', '/__control/stats')) as { total: number; byRoute: Record<string, number>; effectsByKey: Record<string, number> },
    effectsByKey: async () => ((await control('GET', '/__control/stats')) as { effectsByKey: Record<string, number> }).effectsByKey,
    faults: async () => {
      const body = (await control('GET', '/__control/faults')) as { faults?: unknown } | unknown[];
      return (Array.isArray(body) ? body : ((body as { faults?: unknown[] }).faults ?? [])) as Array<{
        id: string;
        spec: Record<string, unknown>;
        seen: number;
        applied: number;
      }>;
    },
  };
}

/** A progress line on stderr, prefixed with the seconds since `since`. */
export function progress(since: number, message: string): void {
  process.stderr.write(`[${((Date.now() - since) / 1000).toFixed(1).padStart(6)} s] ${message}\n`);
}

/** The HTTP ingress (`tao run ingress` on an ephemeral port) in `fleet`; resolves with its URL. */
export async function startIngressProcess(fleet: Fleet, env: NodeJS.ProcessEnv, name = 'ingress'): Promise<{ url: string; instance: Instance }> {
  return startListener(fleet, env, name, 'ingress', 'TAO_INGRESS_PORT', 'ingress listening');
}

/** `tao run <command>` on an ephemeral port (`portVariable=0`) in `fleet`; resolves with the URL its `listening` log line names. */
async function startListener(
  fleet: Fleet,
  env: NodeJS.ProcessEnv,
  name: string,
  command: string,
  portVariable: string,
  listening: string,
): Promise<{ url: string; instance: Instance }> {
  let url = '';
  const instance = await fleet.start({
    name,
    args: [TAO_ENTRY, 'run', command],
    env: { ...env, [portVariable]: '0' },
    ready: (line) => {
      if (!line.includes(`"msg":"${listening}"`)) return null;
      url = (JSON.parse(line) as { url: string }).url;
      return 0;
    },
  });
  return { url, instance };
}
