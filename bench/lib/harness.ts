/**
 * The bench harness: a fresh namespace (own topics, subjects and groups) on the broker named by
 * KAFKA_BROKERS / SCHEMA_REGISTRY_URL, and a fleet of real processes (stage instances, relay hops,
 * the demo tool server, the ingress) that can be started, SIGKILLed, restarted and scraped.
 * Nothing here runs at import time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { AvroCodec } from '../../runtime/codec.ts';
import { loadRuntimeConfig, type RuntimeConfig } from '../../runtime/config.ts';
import { createKafka } from '../../runtime/kafka.ts';
import { createLogger } from '../../runtime/log.ts';
import { applyCatalog } from '../../runtime/apply-catalog.ts';
import type { TopicId } from '../../topics/catalog.ts';

/** The repository root (where `node_modules` and `bin/tao.js` live). */
export const REPO_ROOT = new URL('../../', import.meta.url).pathname;

/** One namespace of the loop on the bench broker: every catalog topic created, every schema registered. */
export interface BenchNamespace {
  namespace: string;
  /** Environment for processes of this namespace (TAO_NAMESPACE set). */
  env: NodeJS.ProcessEnv;
  config: RuntimeConfig;
  kafka: Kafka;
  codec: AvroCodec;
}

/**
 * Creates a fresh namespace `<prefix><8 hex>` with the loop's topics and schemas. `extraEnv` is
 * merged over `baseEnv` for the processes started in it. The session timeout defaults to 6 s (the
 * broker's minimum is 6 s) so a SIGKILLed member leaves its group quickly.
 */
export async function freshNamespace(prefix: string, baseEnv: NodeJS.ProcessEnv = process.env, extraEnv: NodeJS.ProcessEnv = {}): Promise<BenchNamespace> {
  const namespace = `${prefix}${randomUUID().slice(0, 8)}`;
  // Stages print their ready line at level info, whatever level the bench itself logs at. The bench
  // tasks are the order-status flow's, on the graph planner (as when the numbers were first taken).
  const env: NodeJS.ProcessEnv = {
    ...baseEnv,
    TAO_NAMESPACE: namespace,
    TAO_SESSION_TIMEOUT_MS: '6000',
    TAO_LOG_LEVEL: 'info',
    TAO_PLANNER: 'graph',
    ...extraEnv,
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await applyCatalog(env, () => undefined);
      break;
    } catch (err) {
      // Right after creating topics a busy KRaft broker may answer metadata with
      // UNKNOWN_TOPIC_OR_PARTITION, which kafkajs' waitForLeaders does not retry; applying again is safe.
      if ((err as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION' || attempt >= 5) throw err;
      await sleep(1000 * attempt);
    }
  }
  const config = loadRuntimeConfig(env);
  const kafka = createKafka(
    config,
    `bench-${namespace}`,
    createLogger({ bench: namespace }, { level: 'error', write: (line) => process.stderr.write(`${line}\n`) }),
  );
  const codec = AvroCodec.create(config);
  await codec.register(['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes', 'thoughtRuns']);
  return { namespace, env, config, kafka, codec };
}

/** The loop topics a run's steps are written to (the read_committed duplicate scan reads these). */
export const LOOP_TOPICS: TopicId[] = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'];

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
export function stageSpec(stage: string, env: NodeJS.ProcessEnv, bin = `${REPO_ROOT}bin/tao.js`, nodeArgs: string[] = []): ProcessSpec {
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
    const child = spawn(process.execPath, spec.args, { cwd: REPO_ROOT, env: spec.env, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** GET a JSON document from a local ops port; null when the process does not answer. */
export async function getJson<T>(port: number, path: string, timeoutMs = 2000): Promise<{ status: number; body: T } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, body: (await res.json()) as T };
  } catch {
    return null; // not answering is the answer: the caller treats it as unhealthy
  }
}

/**
 * Waits until the live instances named `name` together own every partition of each of `topics`
 * exactly once (per their /health `assigned`), i.e. the group has settled after starts and kills.
 */
export async function waitBalanced(fleet: Fleet, name: string, topics: string[], partitions: number, timeoutMs = 90000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const reports = await Promise.all(fleet.alive(name).map((i) => getJson<{ assigned?: Record<string, number[]> }>(i.opsPort, '/health')));
    const owned = new Map<string, number[]>();
    for (const r of reports) for (const [topic, ps] of Object.entries(r?.body.assigned ?? {})) owned.set(topic, [...(owned.get(topic) ?? []), ...ps]);
    const ok =
      reports.every((r) => r !== null) &&
      topics.every((t) => {
        const ps = (owned.get(t) ?? []).sort((a, b) => a - b);
        return ps.length === partitions && ps.every((p, i) => p === i);
      });
    if (ok) return;
    last = JSON.stringify(Object.fromEntries(owned));
    await sleep(250);
  }
  throw new Error(`${name}: partitions of ${topics.join(', ')} not settled within ${timeoutMs} ms (owned: ${last})`);
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
  let url = '';
  const instance = await fleet.start({
    name,
    args: [`${REPO_ROOT}bin/tao.js`, 'run', 'tools'],
    env: { ...env, TAO_TOOLS_PORT: '0' },
    ready: (line) => {
      if (!line.includes('"msg":"tool server listening"')) return null;
      url = (JSON.parse(line) as { url: string }).url;
      return 0;
    },
  });
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

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Keeps this process's own JSON log lines (topics apply, kafkajs retries) off stdout, where the
 * bench prints its tables; child processes get their level from {@link freshNamespace}.
 */
export function quietOwnLogs(): void {
  process.env.TAO_LOG_LEVEL = 'error';
}

/** A progress line on stderr, prefixed with the seconds since `since`. */
export function progress(since: number, message: string): void {
  process.stderr.write(`[${((Date.now() - since) / 1000).toFixed(1).padStart(6)} s] ${message}\n`);
}

/** The scripted model SIMULATOR (model-sim/, not a model) as its own process, every answer `latencyMs` late. */
export interface ModelSimProcess {
  /** Base URL with its version segment, as TAO_LLM_BASE_URL takes it: `http://127.0.0.1:<port>/v1`. */
  url: string;
  latencyMs: number;
  instance: Instance;
  /** Chat-completions requests answered so far (GET /__control/stats). */
  requests(): Promise<number>;
}

/** Starts `tao run model-sim --port 0 --latency-ms <latencyMs>` in `fleet`. */
export async function startModelSimProcess(fleet: Fleet, env: NodeJS.ProcessEnv, latencyMs: number, name = 'model-sim'): Promise<ModelSimProcess> {
  let url = '';
  const instance = await fleet.start({
    name,
    args: [`${REPO_ROOT}bin/tao.js`, 'run', 'model-sim', '--port', '0', '--latency-ms', String(latencyMs)],
    env,
    ready: (line) => {
      const m = /listening on (http:\/\/\S+\/v1) /.exec(line);
      if (!m) return null;
      url = m[1]!;
      return 0;
    },
  });
  return {
    url,
    latencyMs,
    instance,
    requests: async () => {
      const res = await fetch(`${url.replace(/\/v1$/, '')}/__control/stats`);
      if (!res.ok) throw new Error(`model-sim GET /__control/stats: HTTP ${res.status}`);
      return ((await res.json()) as { total: number }).total;
    },
  };
}
