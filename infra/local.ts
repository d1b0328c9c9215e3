/**
 * Local, Docker-free development infrastructure: one Apache Kafka broker (KRaft, combined
 * broker+controller) run from Maven Central jars on the JVM — or, with `brokers: 3`, a cluster of
 * three such nodes forming a 3-voter controller quorum — and the AxonOps Schema Registry
 * (Confluent-compatible REST API, in-memory storage) built from the Go module proxy.
 *
 * Everything lives under {@link InfraOptions.dir} (default `<repo>/.infra`, git-ignored):
 *
 * | path | content |
 * |---|---|
 * | `kafka-3.9.1/libs/` | broker jars (fetched once by `mvn`; `kafka-3.9.1/libs.complete` marks success) |
 * | `bin/schema-registry-v0.2.1` | registry binary (built once by `go build`) |
 * | `config/` | generated `server.properties`, `log4j.properties`, `schema-registry.yaml` |
 * | `data/kafka/` | broker log dirs (deleted by {@link down}) |
 * | `logs/kafka.log`, `logs/schema-registry.log` | component stdout/stderr (previous run in `*.log.1`) |
 * | `run/kafka.pid`, `run/schema-registry.pid`, `run/infra.lock` | process ids, command mutex |
 * | `run/kafka.nodes` | the number of Kafka nodes of the running infra (written by {@link up}) |
 *
 * A cluster (`brokers` > 1) names node n's files `kafka-<n>`: `config/server-<n>.properties`,
 * `data/kafka-<n>/`, `logs/kafka-<n>.log`, `run/kafka-<n>.pid`.
 *
 * Components run detached (own process group) so they outlive the command that started them.
 * Linux and macOS only (process groups, `/proc` or `ps`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { appendFile, link, mkdir, readFile, readdir, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { setting } from '../runtime/config.ts';
import { ConfigError } from '../runtime/errors.ts';
import { PACKAGE_ROOT, packagePath } from '../runtime/paths.ts';
import { replicationFor } from '../topics/catalog.ts';
import { elapsed, errorText, isErrno, lastLines, logTail, readPid, run, signalable, waitUntilHealthy, type Health, type RunResult } from './process.ts';

/** Apache Kafka version run by the local infra (must match `infra/kafka/pom.xml`). */
export const KAFKA_VERSION = '3.9.1';
/** AxonOps Schema Registry version built by the local infra (must match `infra/registry/go.mod`). */
export const REGISTRY_VERSION = 'v0.2.1';

const REGISTRY_PACKAGE = 'github.com/axonops/axonops-schema-registry/cmd/schema-registry';
const MIN_JAVA = 17;
// The registry module declares `go 1.26.0`; Go 1.21+ can fetch that toolchain itself (GOTOOLCHAIN=auto).
const MIN_GO_LOCAL = [1, 21] as const;
const MIN_GO_MODULE = [1, 26] as const;
const KAFKA_HEALTH_TIMEOUT_MS = 90_000;
/** Past its time-out, a component gets more time while its log moved in the last 30 s (a broker loading thousands of partitions). */
const LOG_QUIET_MS = 30_000;
const REGISTRY_HEALTH_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 20_000;
const KILL_WAIT_MS = 5_000;
const LOCK_WAIT_MS = 15 * 60_000;
const PROGRESS_EVERY_MS = 10_000;
const LOG_TAIL_LINES = 20;
const MAX_NODES = 5;
const NODES_FILE = 'kafka.nodes';

export type InfraErrorCode =
  /** A tool needed to fetch, build or run a component (`java`, `mvn`, `go`) is missing or too old. */
  | 'PREREQUISITE_MISSING'
  /** A port the infra must bind is held by a process this tool did not start. */
  | 'PORT_IN_USE'
  /** A component started but did not pass its health check in time (it is stopped again). */
  | 'HEALTH_TIMEOUT'
  /** Fetching the Kafka jars or building the registry binary failed. */
  | 'BUILD_FAILED'
  /** The options (or TAO_* variables) are invalid. */
  | 'CONFIG_INVALID'
  /** A component exited during start-up, could not be formatted, signalled or stopped, or the infra lock stayed held. */
  | 'PROCESS_FAILED';

/** Every failure of the infra functions; `code` says what went wrong, the message what to do about it. */
export class InfraError extends Error {
  readonly code: InfraErrorCode;

  constructor(code: InfraErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

/** Where the infra keeps its files, which ports it binds (always on 127.0.0.1), and where progress goes. */
export interface InfraOptions {
  /** Cache, config, data, logs and pid files. Default `<repo root>/.infra` (env TAO_INFRA_DIR). */
  dir: string;
  /** Kafka PLAINTEXT listener. Default 9092 (env TAO_KAFKA_PORT). */
  kafkaPort: number;
  /** KRaft controller listener. Default 9093 (env TAO_CONTROLLER_PORT). */
  controllerPort: number;
  /** Schema registry HTTP port. Default 8081 (env TAO_REGISTRY_PORT). */
  registryPort: number;
  /**
   * Kafka nodes, 1-5; each is a combined broker+controller and a voter of the controller quorum.
   * Node n (1-based) listens on `kafkaPort + 2(n-1)` and `controllerPort + 2(n-1)` (so 3 nodes on
   * the defaults: 9092/9094/9096, controllers 9093/9095/9097). With 3 or more, internal topics get
   * replication factor 3 and min.insync.replicas 2. Default: the size of the infra running in `dir`
   * (recorded by {@link up}), else 1.
   */
  brokers: number;
  /**
   * The brokers live a few minutes (the test suite's private clusters): their JVMs run the C1
   * compiler only, which costs about a third less CPU to start and never spends cores on C2
   * compilations that a short life does not pay back. Sustained throughput is lower, so the
   * default infra (`tao infra up`, the bench) leaves it off. Default false.
   */
  shortLived?: boolean;
  /** Receives every progress line; the functions print nothing else. Default: stderr. */
  log: (line: string) => void;
}

/** `kafka` for the single broker; `kafka-<n>` for node n of a cluster. */
export type ComponentName = 'kafka' | `kafka-${number}` | 'schema-registry';

/** What {@link status} reports for one component. */
export interface ComponentStatus {
  name: ComponentName;
  /** A process started by this tool (per its pid file and command line) is alive. */
  running: boolean;
  /** Running and answering its health check (Kafka: admin describeCluster lists this node; registry: GET /subjects → 200). */
  healthy: boolean;
  pid?: number;
  /** Kafka: the node's address `127.0.0.1:<port>`; registry: `http://127.0.0.1:<port>`. */
  url: string;
  /** Kafka: the node id (1 for the single broker). */
  nodeId?: number;
  /** Path of the component's log file. */
  log: string;
}

/** Connection details of a running local infra. */
export interface InfraEndpoints {
  /** Bootstrap servers (every node, comma-separated), as for KAFKA_BROKERS. */
  brokers: string;
  /** Registry base URL, as for SCHEMA_REGISTRY_URL. */
  registryUrl: string;
}

/** Where the package's infra files live (from the package root, so that dist/ finds them too). */
function sourcePaths(): { repoRoot: string; pom: string; registryModule: string } {
  return {
    repoRoot: PACKAGE_ROOT,
    pom: packagePath('infra', 'kafka', 'pom.xml'),
    registryModule: packagePath('infra', 'registry'),
  };
}

/**
 * The default options, overridden by TAO_INFRA_DIR (relative paths resolve against the working
 * directory), TAO_KAFKA_PORT, TAO_CONTROLLER_PORT and TAO_REGISTRY_PORT.
 * Throws {@link InfraError} `CONFIG_INVALID` naming the variable when a value is not a port.
 */
export function defaultInfraOptions(env: NodeJS.ProcessEnv = process.env): InfraOptions {
  const dir = setting(env, 'TAO_INFRA_DIR');
  return {
    dir: dir ? resolve(dir) : join(sourcePaths().repoRoot, '.infra'),
    kafkaPort: portFromEnv(env, 'TAO_KAFKA_PORT'),
    controllerPort: portFromEnv(env, 'TAO_CONTROLLER_PORT'),
    registryPort: portFromEnv(env, 'TAO_REGISTRY_PORT'),
    brokers: 1,
    log: (line) => {
      process.stderr.write(`${line}\n`);
    },
  };
}

function portFromEnv(env: NodeJS.ProcessEnv, name: 'TAO_KAFKA_PORT' | 'TAO_CONTROLLER_PORT' | 'TAO_REGISTRY_PORT'): number {
  try {
    return setting(env, name);
  } catch (err) {
    if (err instanceof ConfigError) throw new InfraError('CONFIG_INVALID', err.message, { cause: err });
    throw err;
  }
}

function isPort(value: number): boolean {
  return Number.isInteger(value) && value >= 1 && value <= 65535;
}

function resolveOptions(partial: Partial<InfraOptions>): InfraOptions {
  const given = Object.fromEntries(Object.entries(partial).filter(([, v]) => v !== undefined)) as Partial<InfraOptions>;
  const o: InfraOptions = { ...defaultInfraOptions(), ...given };
  o.dir = resolve(o.dir);
  if (given.brokers === undefined) o.brokers = recordedNodes(o.dir) ?? 1;
  for (const key of ['kafkaPort', 'controllerPort', 'registryPort'] as const) {
    if (!isPort(o[key])) throw new InfraError('CONFIG_INVALID', `${key} must be a TCP port (1-65535), got ${String(o[key])}`);
  }
  if (!Number.isInteger(o.brokers) || o.brokers < 1 || o.brokers > MAX_NODES) {
    throw new InfraError('CONFIG_INVALID', `brokers must be an integer from 1 to ${MAX_NODES}, got ${String(o.brokers)}`);
  }
  if (o.brokers === 1) {
    if (new Set([o.kafkaPort, o.controllerPort, o.registryPort]).size !== 3) {
      throw new InfraError(
        'CONFIG_INVALID',
        `kafkaPort (${o.kafkaPort}), controllerPort (${o.controllerPort}) and registryPort (${o.registryPort}) must all differ`,
      );
    }
    return o;
  }
  const ports = [...nodePorts(o).flatMap((n) => [n.port, n.controllerPort]), o.registryPort];
  if (ports.some((port) => !isPort(port)) || new Set(ports).size !== ports.length) {
    throw new InfraError(
      'CONFIG_INVALID',
      `a ${o.brokers}-node cluster needs ports kafkaPort+2(n-1) and controllerPort+2(n-1) for n = 1..${o.brokers}, all different from each other and from registryPort; ` +
        `got ${ports.slice(0, -1).join(', ')} and registry ${o.registryPort}`,
    );
  }
  return o;
}

/** Node ids and ports of each Kafka node of `o` (node n: kafkaPort + 2(n-1), controllerPort + 2(n-1)). */
function nodePorts(o: Pick<InfraOptions, 'brokers' | 'kafkaPort' | 'controllerPort'>): Array<{ id: number; port: number; controllerPort: number }> {
  return Array.from({ length: o.brokers }, (_, i) => ({ id: i + 1, port: o.kafkaPort + 2 * i, controllerPort: o.controllerPort + 2 * i }));
}

/** The node count {@link up} recorded for the infra in `dir`, if it did. */
function recordedNodes(dir: string): number | undefined {
  const file = join(dir, 'run', NODES_FILE);
  if (!existsSync(file)) return undefined;
  const n = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(n) && n >= 1 ? n : undefined;
}

interface Paths {
  dir: string;
  kafkaHome: string;
  libs: string;
  libsMarker: string;
  registryBin: string;
  config: string;
  log4j: string;
  registryYaml: string;
  dataRoot: string;
  logs: string;
  run: string;
  lock: string;
  /** Records the node count of the running infra ({@link recordedNodes}). */
  nodesFile: string;
}

function paths(o: InfraOptions): Paths {
  const kafkaHome = join(o.dir, `kafka-${KAFKA_VERSION}`);
  const config = join(o.dir, 'config');
  const dataRoot = join(o.dir, 'data');
  const run = join(o.dir, 'run');
  return {
    dir: o.dir,
    kafkaHome,
    libs: join(kafkaHome, 'libs'),
    libsMarker: join(kafkaHome, 'libs.complete'),
    registryBin: join(o.dir, 'bin', `schema-registry-${REGISTRY_VERSION}`),
    config,
    log4j: join(config, 'log4j.properties'),
    registryYaml: join(config, 'schema-registry.yaml'),
    dataRoot,
    logs: join(o.dir, 'logs'),
    run,
    lock: join(run, 'infra.lock'),
    nodesFile: join(run, NODES_FILE),
  };
}

interface Component {
  name: ComponentName;
  pidFile: string;
  logFile: string;
  url: string;
  ports: number[];
  /** Substring of the command line that identifies *our* process (guards against pid reuse and foreign brokers). */
  marker: string;
  healthTimeoutMs: number;
  health: () => Promise<Health>;
}

/** One Kafka node (combined broker+controller): its id, listeners, files, and its component. */
interface KafkaNode {
  id: number;
  port: number;
  controllerPort: number;
  serverProperties: string;
  /** The node's log dir. */
  data: string;
  component: Component;
}

/** The Kafka nodes of `o`: the single broker keeps today's file names (`kafka`, `server.properties`); node n of a cluster is `kafka-<n>`. */
function kafkaNodes(o: InfraOptions, p: Paths): KafkaNode[] {
  const single = o.brokers === 1;
  return nodePorts(o).map(({ id, port, controllerPort }) => {
    const name: ComponentName = single ? 'kafka' : `kafka-${id}`;
    const serverProperties = join(p.config, single ? 'server.properties' : `server-${id}.properties`);
    return {
      id,
      port,
      controllerPort,
      serverProperties,
      data: join(p.dataRoot, name),
      component: {
        name,
        pidFile: join(p.run, `${name}.pid`),
        logFile: join(p.logs, `${name}.log`),
        url: `127.0.0.1:${port}`,
        ports: [port, controllerPort],
        marker: `kafka.Kafka ${serverProperties}`,
        healthTimeoutMs: KAFKA_HEALTH_TIMEOUT_MS,
        health: () => kafkaHealth(port, id),
      },
    };
  });
}

/** The nodes `which` names (a 1-based node id), or all of them. */
function selectNodes(o: InfraOptions, p: Paths, which: number | undefined): KafkaNode[] {
  const nodes = kafkaNodes(o, p);
  if (which === undefined) return nodes;
  const node = nodes.find((n) => n.id === which);
  if (!node) throw new InfraError('CONFIG_INVALID', `node must be a Kafka node id from 1 to ${nodes.length}, got ${String(which)}`);
  return [node];
}

function registryComponent(o: InfraOptions, p: Paths): Component {
  const url = `http://127.0.0.1:${o.registryPort}`;
  return {
    name: 'schema-registry',
    pidFile: join(p.run, 'schema-registry.pid'),
    logFile: join(p.logs, 'schema-registry.log'),
    url,
    ports: [o.registryPort],
    marker: `${p.registryBin} -config ${p.registryYaml}`,
    healthTimeoutMs: REGISTRY_HEALTH_TIMEOUT_MS,
    health: () => registryHealth(url),
  };
}

/** The node answers on its own listener and the cluster's metadata lists it (registered and unfenced). */
async function kafkaHealth(port: number, nodeId: number): Promise<Health> {
  const admin = new Kafka({
    clientId: 'tao-infra-health',
    brokers: [`127.0.0.1:${port}`],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1000,
    requestTimeout: 3000,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.some((b) => b.nodeId === nodeId) ? { ok: true } : { ok: false, reason: `describeCluster does not list node ${nodeId} yet` };
  } catch (err) {
    return { ok: false, reason: errorText(err) };
  } finally {
    await admin.disconnect();
  }
}

async function registryHealth(url: string): Promise<Health> {
  try {
    const res = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status === 200 ? { ok: true } : { ok: false, reason: `GET /subjects answered ${res.status}` };
  } catch (err) {
    return { ok: false, reason: errorText(err) };
  }
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

/** The process's command line, or undefined when it is gone (zombies have an empty cmdline). */
async function commandLine(pid: number): Promise<string | undefined> {
  if (existsSync('/proc/self/cmdline')) {
    try {
      const raw = await readFile(`/proc/${pid}/cmdline`);
      return raw.length === 0 ? undefined : raw.toString('utf8').split('\0').filter(Boolean).join(' ');
    } catch (err) {
      if (isErrno(err, 'ENOENT', 'ESRCH')) return undefined;
      throw err;
    }
  }
  const r = await run('ps', ['-o', 'command=', '-p', String(pid)], {});
  return r.code === 0 && r.output.trim() !== '' ? r.output.trim() : undefined;
}

async function isOurs(c: Component, pid: number): Promise<boolean> {
  if (!signalable(pid)) return false;
  return (await commandLine(pid))?.includes(c.marker) ?? false;
}

/** The pid of the component's live process started by this tool, if any. */
async function runningPid(c: Component): Promise<number | undefined> {
  const pid = await readPid(c.pidFile);
  return pid !== undefined && (await isOurs(c, pid)) ? pid : undefined;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  const send = (target: number): boolean => {
    try {
      process.kill(target, signal);
      return true;
    } catch (err) {
      if (isErrno(err, 'ESRCH')) return false;
      throw new InfraError('PROCESS_FAILED', `cannot send ${signal} to ${target < 0 ? 'process group' : 'pid'} ${Math.abs(target)}: ${errorText(err)}`, {
        cause: err,
      });
    }
  };
  // Not a group leader (or the group is gone): signal the process itself.
  if (!send(-pid)) send(pid);
}

async function waitGone(c: Component, pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await isOurs(c, pid))) return true;
    await sleep(100);
  }
  return !(await isOurs(c, pid));
}

async function failureWithLog(code: InfraErrorCode, c: Component, message: string): Promise<InfraError> {
  return new InfraError(code, `${message}\nLast ${LOG_TAIL_LINES} lines of ${c.logFile}:\n${await logTail(c.logFile, LOG_TAIL_LINES)}`);
}

/** Calls `tick` every PROGRESS_EVERY_MS while `work` runs, so long first-run steps show they are alive. */
async function withProgress<T>(work: Promise<T>, tick: (since: number) => void): Promise<T> {
  const since = Date.now();
  const timer = setInterval(() => tick(since), PROGRESS_EVERY_MS);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Lock: serialises up/down/startKafka/stopKafka across processes (parallel test workers, CLI).
// ---------------------------------------------------------------------------------------------

async function withLock<T>(o: InfraOptions, p: Paths, work: () => Promise<T>): Promise<T> {
  await mkdir(p.run, { recursive: true });
  const mine = join(p.run, `infra.lock.${process.pid}.${randomBytes(4).toString('hex')}`);
  await writeFile(mine, `${process.pid}\n`);
  const deadline = Date.now() + LOCK_WAIT_MS;
  let announced = false;
  try {
    for (;;) {
      try {
        // link() is atomic and fails if the lock exists, and the lock never exists without its pid.
        await link(mine, p.lock);
        break;
      } catch (err) {
        if (!isErrno(err, 'EEXIST')) throw err;
      }
      const holder = await readPid(p.lock);
      if (holder === undefined || !signalable(holder)) {
        o.log(`infra: removing stale lock ${p.lock} (holder ${holder ?? '?'} is gone)`);
        await rm(p.lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new InfraError(
          'PROCESS_FAILED',
          `infra: ${p.lock} has been held by pid ${holder} for over ${LOCK_WAIT_MS / 60_000} min; if no tao infra command is running, delete the file`,
        );
      }
      if (!announced) {
        o.log(`infra: waiting for another tao infra command (pid ${holder}) to finish…`);
        announced = true;
      }
      await sleep(250);
    }
  } finally {
    await unlink(mine);
  }
  try {
    return await work();
  } finally {
    await rm(p.lock, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Prerequisites and ports
// ---------------------------------------------------------------------------------------------

async function probe(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<RunResult | undefined> {
  try {
    return await run(cmd, args, { env });
  } catch (err) {
    if (isErrno(err, 'ENOENT', 'EACCES')) return undefined;
    throw err;
  }
}

function versionAtLeast(actual: readonly number[], wanted: readonly number[]): boolean {
  for (let i = 0; i < wanted.length; i++) {
    const a = actual[i] ?? 0;
    const w = wanted[i] ?? 0;
    if (a !== w) return a > w;
  }
  return true;
}

async function checkPrerequisites(need: { java: boolean; mvn: boolean; go: boolean }): Promise<void> {
  const problems: string[] = [];
  const [java, mvn, go] = await Promise.all([
    need.java ? probe('java', ['-version']) : undefined,
    need.mvn ? probe('mvn', ['-v']) : undefined,
    // GOTOOLCHAIN=local: report the installed Go, without downloading the one a go.mod may ask for.
    need.go ? probe('go', ['env', 'GOVERSION'], { ...process.env, GOTOOLCHAIN: 'local' }) : undefined,
  ]);
  if (need.java) {
    const match = java?.code === 0 ? /version "(\d+)(?:\.(\d+))?/.exec(java.output) : null;
    const major = match ? (match[1] === '1' ? Number(match[2]) : Number(match[1])) : undefined;
    if (major === undefined || major < MIN_JAVA) {
      const found = major === undefined ? '' : ` (found Java ${major})`;
      problems.push(
        `infra up needs \`java\` (Java ${MIN_JAVA}+) on PATH to run the Kafka broker${found}; install a JDK/JRE ${MIN_JAVA}+ or point KAFKA_BROKERS at an existing cluster`,
      );
    }
  }
  if (need.mvn && mvn?.code !== 0) {
    problems.push(
      `infra up needs \`mvn\` (Apache Maven 3.6+) on PATH to fetch the Kafka ${KAFKA_VERSION} jars from Maven Central (first run only); install it or point KAFKA_BROKERS at an existing cluster`,
    );
  }
  if (need.go) {
    const match = go?.code === 0 ? /go(\d+)\.(\d+)/.exec(go.output) : null;
    const version = match ? [Number(match[1]), Number(match[2])] : undefined;
    const localOnly = (process.env.GOTOOLCHAIN ?? '').startsWith('local');
    const wanted = localOnly ? MIN_GO_MODULE : MIN_GO_LOCAL;
    if (version === undefined || !versionAtLeast(version, wanted)) {
      const found = version === undefined ? '' : ` (found go${version.join('.')}${localOnly ? ' with GOTOOLCHAIN=local' : ''})`;
      problems.push(
        `infra up needs \`go\` (Go ${MIN_GO_LOCAL.join('.')}+; it fetches the Go ${MIN_GO_MODULE.join('.')} toolchain the registry module pins unless GOTOOLCHAIN=local) ` +
          `on PATH to build the schema registry (first run only)${found}; install it or point SCHEMA_REGISTRY_URL at an existing registry`,
      );
    }
  }
  if (problems.length > 0) {
    throw new InfraError('PREREQUISITE_MISSING', problems.join('\n'));
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', (err) => {
      if (isErrno(err, 'EADDRINUSE')) resolvePromise(false);
      else reject(new InfraError('CONFIG_INVALID', `cannot bind 127.0.0.1:${port}: ${err.message}`, { cause: err }));
    });
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      server.close((err) => (err ? reject(err) : resolvePromise(true)));
    });
  });
}

async function assertPortsFree(c: Component): Promise<void> {
  for (const port of c.ports) {
    if (!(await portFree(port))) {
      const hint =
        c.name.startsWith('kafka')
          ? 'set TAO_KAFKA_PORT / TAO_CONTROLLER_PORT to free ports, or use that broker through KAFKA_BROKERS'
          : 'set TAO_REGISTRY_PORT to a free port, or use that registry through SCHEMA_REGISTRY_URL';
      throw new InfraError(
        'PORT_IN_USE',
        `${c.name}: port ${port} on 127.0.0.1 is in use by a process this tool did not start (no live pid in ${c.pidFile}); stop it, or ${hint}`,
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Artifacts: Kafka jars (Maven Central) and registry binary (Go module proxy), cached in <dir>
// ---------------------------------------------------------------------------------------------

async function ensureKafkaJars(o: InfraOptions, p: Paths): Promise<void> {
  if (existsSync(p.libsMarker)) return;
  const since = Date.now();
  o.log(`kafka: fetching Apache Kafka ${KAFKA_VERSION} jars from Maven Central into ${p.libs} (first run only)…`);
  const partial = `${p.libs}.partial`;
  await rm(partial, { recursive: true, force: true });
  await rm(p.libs, { recursive: true, force: true });
  await mkdir(p.kafkaHome, { recursive: true });
  const args = ['-q', '-B', '-Dstyle.color=never', '-f', sourcePaths().pom, 'dependency:copy-dependencies', `-DoutputDirectory=${partial}`, '-DincludeScope=runtime'];
  const result = await withProgress(run('mvn', args, { cwd: p.kafkaHome }), (t) => o.log(`kafka: still fetching jars (${elapsed(t)})…`));
  const jar = `kafka_2.13-${KAFKA_VERSION}.jar`;
  if (result.code !== 0 || !existsSync(join(partial, jar))) {
    const why = result.code !== 0 ? `mvn exited with ${result.code ?? result.signal}` : `mvn did not produce ${jar}`;
    throw new InfraError('BUILD_FAILED', `kafka: could not fetch the Kafka ${KAFKA_VERSION} jars (${why}). mvn output:\n${lastLines(result.output)}`);
  }
  await rename(partial, p.libs);
  const count = (await readdir(p.libs)).length;
  await writeFile(p.libsMarker, `kafka ${KAFKA_VERSION}: ${count} jars, ${new Date().toISOString()}\n`);
  o.log(`kafka: ${count} jars fetched in ${elapsed(since)}`);
}

async function ensureRegistryBinary(o: InfraOptions, p: Paths): Promise<void> {
  if (existsSync(p.registryBin)) return;
  const since = Date.now();
  o.log(`schema-registry: building AxonOps Schema Registry ${REGISTRY_VERSION} with go into ${p.registryBin} (first run only, about a minute)…`);
  await mkdir(join(p.dir, 'bin'), { recursive: true });
  const tmp = `${p.registryBin}.${process.pid}.tmp`;
  const args = ['build', '-trimpath', '-buildvcs=false', '-ldflags', `-s -w -X main.version=${REGISTRY_VERSION}`, '-o', tmp, REGISTRY_PACKAGE];
  // go.mod/go.sum are committed, so a read-only module graph is exact; a user GOFLAGS (-mod=vendor) or go.work must not change it.
  const env = { ...process.env, GOFLAGS: '-mod=readonly', GOWORK: 'off' };
  const result = await withProgress(run('go', args, { cwd: sourcePaths().registryModule, env }), (t) =>
    o.log(`schema-registry: still building (${elapsed(t)})…`),
  );
  if (result.code !== 0 || !existsSync(tmp)) {
    await rm(tmp, { force: true });
    throw new InfraError(
      'BUILD_FAILED',
      `schema-registry: go build failed (exit ${result.code ?? result.signal}) in ${sourcePaths().registryModule}. go output:\n${lastLines(result.output)}`,
    );
  }
  await rename(tmp, p.registryBin);
  o.log(`schema-registry: built in ${elapsed(since)}`);
}

// ---------------------------------------------------------------------------------------------
// Starting and stopping components
// ---------------------------------------------------------------------------------------------

/**
 * A node's broker config. The single broker is node 1 of a 1-voter quorum with replication factor
 * 1 everywhere; in a cluster every node is a voter, and internal topics (and topics created without
 * an explicit factor) get the replication the topic catalog gives a cluster of that size.
 */
function serverProperties(o: InfraOptions, node: KafkaNode): string {
  const { replicationFactor, minInsyncReplicas } = replicationFor(o.brokers);
  const voters = nodePorts(o).map((n) => `${n.id}@127.0.0.1:${n.controllerPort}`).join(',');
  const cluster = o.brokers === 1 ? [] : [
    `default.replication.factor=${replicationFactor}`,
    `min.insync.replicas=${minInsyncReplicas}`,
    // Two cores run three JVMs: fewer request threads than the defaults (3 network, 8 I/O).
    'num.network.threads=2',
    'num.io.threads=4',
  ];
  return `${[
    '# Generated by tao infra (infra/local.ts) on every start; edits are overwritten.',
    'process.roles=broker,controller',
    `node.id=${node.id}`,
    `controller.quorum.voters=${voters}`,
    `listeners=PLAINTEXT://127.0.0.1:${node.port},CONTROLLER://127.0.0.1:${node.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${node.port}`,
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${node.data}`,
    'num.partitions=3',
    `offsets.topic.replication.factor=${replicationFactor}`,
    'offsets.topic.num.partitions=10',
    `transaction.state.log.replication.factor=${replicationFactor}`,
    `transaction.state.log.min.isr=${minInsyncReplicas}`,
    'transaction.state.log.num.partitions=10',
    ...cluster,
    'group.initial.rebalance.delay.ms=0',
    // After a crash the restarted controller refuses the new broker incarnation until the old one's
    // session expires (default 9 s, ~13 s restarts); a shorter session makes restart tests quick.
    'broker.heartbeat.interval.ms=1000',
    'broker.session.timeout.ms=4000',
    'auto.create.topics.enable=false',
  ].join('\n')}\n`;
}

/** JVM flags of a broker that lives minutes (see `InfraOptions.shortLived`); also infra/secure.ts's. */
export const SHORT_LIVED_JVM = ['-XX:TieredStopAtLevel=1'];

/** Kafka's log4j configuration, shared by the local broker(s) and the secure broker (infra/secure.ts). */
export const LOG4J_PROPERTIES = `${[
  'log4j.rootLogger=INFO, stdout',
  'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
  'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
  'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
  'log4j.logger.kafka.request.logger=WARN',
  'log4j.logger.state.change.logger=WARN',
].join('\n')}\n`;

function registryYaml(o: InfraOptions): string {
  return `${[
    '# Generated by tao infra (infra/local.ts) on every start; edits are overwritten.',
    'server:',
    '  host: "127.0.0.1"',
    `  port: ${o.registryPort}`,
    'storage:',
    '  type: memory',
    'compatibility:',
    '  default_level: BACKWARD',
    'logging:',
    '  level: info',
    '  format: json',
  ].join('\n')}\n`;
}

/** Kafka cluster ids are 16 random bytes in unpadded base64url, never starting with '-' (as Uuid.randomUuid). */
function kafkaClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

async function rotateLog(c: Component): Promise<void> {
  try {
    await rename(c.logFile, `${c.logFile}.1`);
  } catch (err) {
    if (!isErrno(err, 'ENOENT')) throw err;
  }
}

/** The cluster id the nodes already formatted in `dataRoot` carry, so a node formatted later joins the same cluster. */
async function existingClusterId(nodes: KafkaNode[]): Promise<string | undefined> {
  for (const node of nodes) {
    try {
      const id = /^cluster\.id=(.+)$/m.exec(await readFile(join(node.data, 'meta.properties'), 'utf8'))?.[1]?.trim();
      if (id) return id;
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
  }
  return undefined;
}

async function formatKafkaStorage(o: InfraOptions, p: Paths, node: KafkaNode, clusterId: string): Promise<void> {
  const c = node.component;
  if (existsSync(join(node.data, 'meta.properties'))) return;
  await mkdir(node.data, { recursive: true });
  const result = await run(
    'java',
    [...SHORT_LIVED_JVM, '-cp', `${p.libs}/*`, `-Dlog4j.configuration=file:${p.log4j}`, 'kafka.tools.StorageTool', 'format', '--ignore-formatted', '-t', clusterId, '-c', node.serverProperties],
    { cwd: p.dir },
  );
  await appendFile(c.logFile, `=== tao infra: format ${node.data} (cluster id ${clusterId}) ===\n${result.output}`);
  if (result.code !== 0) {
    throw await failureWithLog('PROCESS_FAILED', c, `${c.name}: formatting ${node.data} failed (exit ${result.code ?? result.signal})`);
  }
  o.log(`${c.name}: formatted ${node.data} (cluster id ${clusterId})`);
}

/** A process we spawned; `exit()` describes how it ended, once it has (recorded from the start so no early exit is missed). */
interface Spawned {
  pid: number;
  exit: () => string | undefined;
}

async function spawnDetached(c: Component, cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Spawned> {
  await appendFile(c.logFile, `=== tao infra: starting ${c.name} at ${new Date().toISOString()}: ${cmd} ${args.join(' ')} ===\n`);
  const fd = openSync(c.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  let exit: string | undefined;
  child.once('exit', (code, signal) => {
    exit = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  });
  await new Promise<void>((resolvePromise, reject) => {
    child.once('spawn', resolvePromise);
    child.once('error', (err) => reject(new InfraError('PROCESS_FAILED', `${c.name}: could not start ${cmd}: ${err.message}`, { cause: err })));
  });
  child.unref();
  if (child.pid === undefined) throw new InfraError('PROCESS_FAILED', `${c.name}: ${cmd} started without a pid`);
  await writeFile(c.pidFile, `${child.pid}\n`);
  return { pid: child.pid, exit: () => exit };
}

/**
 * Polls the health check until it passes. Fails fast if the process dies; on timeout kills it, so
 * a failed start never leaves a half-started component behind.
 */
async function waitHealthy(o: InfraOptions, c: Component, pid: number, spawned?: Spawned): Promise<void> {
  o.log(`${c.name}: waiting for ${c.url} to become healthy (pid ${pid}, up to ${c.healthTimeoutMs / 1000}s, longer while its log grows)…`);
  const failure = await waitUntilHealthy({
    name: c.name,
    health: c.health,
    gone: async () => spawned?.exit() ?? ((await isOurs(c, pid)) ? undefined : 'exited'),
    logFile: c.logFile,
    timeoutMs: c.healthTimeoutMs,
    quietMs: LOG_QUIET_MS,
    log: o.log,
  });
  if (!failure) return;
  if (failure.code === 'HEALTH_TIMEOUT') {
    signalGroup(pid, 'SIGKILL');
    await waitGone(c, pid, KILL_WAIT_MS);
  }
  await rm(c.pidFile, { force: true });
  throw await failureWithLog(failure.code, c, `${failure.message}; process ${pid} ${failure.code === 'HEALTH_TIMEOUT' ? 'was killed' : 'is gone'}`);
}

/** If our process is alive: returns true once it is healthy ("already running"), waiting for it if it is still starting. */
async function adoptRunning(o: InfraOptions, c: Component): Promise<boolean> {
  const pid = await runningPid(c);
  if (pid === undefined) {
    await rm(c.pidFile, { force: true });
    return false;
  }
  if ((await c.health()).ok) {
    o.log(`${c.name}: already running (pid ${pid}) at ${c.url}`);
    return true;
  }
  await waitHealthy(o, c, pid);
  return true;
}

/** Starts (or adopts) `nodes` in parallel; a cluster node becomes healthy only once a quorum of controllers runs. */
async function startKafkaUnlocked(o: InfraOptions, p: Paths, nodes: KafkaNode[]): Promise<void> {
  await Promise.all([mkdir(p.config, { recursive: true }), mkdir(p.logs, { recursive: true }), mkdir(p.run, { recursive: true })]);
  await writeFile(p.nodesFile, `${o.brokers}\n`);
  const clusterId = (await existingClusterId(kafkaNodes(o, p))) ?? kafkaClusterId();
  await settleAll(o, nodes.map((node) => startKafkaNode(o, p, node, clusterId)));
}

async function startKafkaNode(o: InfraOptions, p: Paths, node: KafkaNode, clusterId: string): Promise<void> {
  const c = node.component;
  if (await adoptRunning(o, c)) return;
  await assertPortsFree(c);
  await writeFile(node.serverProperties, serverProperties(o, node));
  await writeFile(p.log4j, LOG4J_PROPERTIES);
  await rotateLog(c);
  await formatKafkaStorage(o, p, node, clusterId);
  const args = [
    // Three nodes share the machine: half the single broker's heap each.
    ...(o.brokers === 1 ? ['-Xms256m', '-Xmx1g'] : ['-Xms128m', '-Xmx512m']),
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    ...(o.shortLived ? SHORT_LIVED_JVM : []),
    '-XX:+ExitOnOutOfMemoryError',
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${p.log4j}`,
    '-cp',
    `${p.libs}/*`,
    'kafka.Kafka',
    node.serverProperties,
  ];
  const spawned = await spawnDetached(c, 'java', args, p.dir, process.env);
  o.log(`${c.name}: started pid ${spawned.pid} (log ${c.logFile})`);
  await waitHealthy(o, c, spawned.pid, spawned);
}

async function startRegistryUnlocked(o: InfraOptions, p: Paths): Promise<void> {
  const c = registryComponent(o, p);
  if (await adoptRunning(o, c)) return;
  await assertPortsFree(c);
  await Promise.all([mkdir(p.config, { recursive: true }), mkdir(p.logs, { recursive: true }), mkdir(p.run, { recursive: true })]);
  await writeFile(p.registryYaml, registryYaml(o));
  await rotateLog(c);
  // The binary lets SCHEMA_REGISTRY_* variables override its config file; ours (e.g. SCHEMA_REGISTRY_URL for clients) must not leak in.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SCHEMA_REGISTRY_')));
  const spawned = await spawnDetached(c, p.registryBin, ['-config', p.registryYaml], p.dir, env);
  o.log(`schema-registry: started pid ${spawned.pid} (log ${c.logFile})`);
  await waitHealthy(o, c, spawned.pid, spawned);
}

/** Stops our process of `c` (whole process group). Returns false when it was not running. */
async function stopComponent(o: InfraOptions, c: Component, signal: 'SIGTERM' | 'SIGKILL'): Promise<boolean> {
  const pid = await runningPid(c);
  if (pid === undefined) {
    await rm(c.pidFile, { force: true });
    o.log(`${c.name}: not running`);
    return false;
  }
  const since = Date.now();
  o.log(`${c.name}: stopping pid ${pid} (${signal})…`);
  signalGroup(pid, signal);
  let gone = await waitGone(c, pid, signal === 'SIGKILL' ? KILL_WAIT_MS : STOP_GRACE_MS);
  if (!gone && signal !== 'SIGKILL') {
    o.log(`${c.name}: pid ${pid} still alive after ${STOP_GRACE_MS / 1000}s; sending SIGKILL`);
    signalGroup(pid, 'SIGKILL');
    gone = await waitGone(c, pid, KILL_WAIT_MS);
  }
  if (!gone) throw new InfraError('PROCESS_FAILED', `${c.name}: pid ${pid} did not exit after SIGKILL; pid file ${c.pidFile} kept`);
  await rm(c.pidFile, { force: true });
  o.log(`${c.name}: stopped in ${elapsed(since)}`);
  return true;
}

/** Waits for every task; rethrows the first failure after reporting any others through `log`. */
async function settleAll(o: InfraOptions, tasks: Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(tasks);
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  for (const extra of failures.slice(1)) o.log(`infra: also failed: ${errorText(extra)}`);
  if (failures.length > 0) throw failures[0];
}

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/**
 * Starts (or adopts) the local Kafka broker — or the `brokers`-node cluster — and schema registry
 * and resolves once all are healthy.
 *
 * Idempotent: a component whose pid file names a live process started by this tool is left alone
 * ("already running"), or waited for if it is still starting. Before doing anything it checks the
 * prerequisites the missing pieces need (`java` 17+ to run Kafka; `mvn` only while the jars are not
 * cached; `go` only while the registry binary is not built) and that the ports are free, failing
 * with {@link InfraError} `PREREQUISITE_MISSING` / `PORT_IN_USE`. First run fetches/builds the
 * artifacts into `<dir>` (`BUILD_FAILED` on error). Health waits are 90 s for Kafka and 30 s for the
 * registry (`HEALTH_TIMEOUT`, the process is killed); a process that exits while starting gives
 * `PROCESS_FAILED`. Start-up errors carry the last 20 lines of the component log and its path.
 * If one component fails the other is left as it is (`down` stops it). Asking for a node count other
 * than that of the infra running in `dir` is `CONFIG_INVALID` (run {@link down} first). Serialised
 * with other up/down/startKafka/stopKafka calls on the same `dir` by a lock file.
 */
export async function up(options: Partial<InfraOptions> = {}): Promise<InfraEndpoints> {
  const o = resolveOptions(options);
  const p = paths(o);
  const nodes = kafkaNodes(o, p);
  const registry = registryComponent(o, p);
  await withLock(o, p, async () => {
    await assertSameLayout(o, p);
    const [kafkaPids, registryPid] = await Promise.all([Promise.all(nodes.map((n) => runningPid(n.component))), runningPid(registry)]);
    const kafkaMissing = kafkaPids.some((pid) => pid === undefined);
    await checkPrerequisites({
      java: kafkaMissing,
      mvn: kafkaMissing && !existsSync(p.libsMarker),
      go: registryPid === undefined && !existsSync(p.registryBin),
    });
    for (const [i, node] of nodes.entries()) if (kafkaPids[i] === undefined) await assertPortsFree(node.component);
    if (registryPid === undefined) await assertPortsFree(registry);
    await settleAll(o, [
      (async () => {
        if (kafkaMissing) await ensureKafkaJars(o, p);
        await startKafkaUnlocked(o, p, nodes);
      })(),
      (async () => {
        if (registryPid === undefined) await ensureRegistryBinary(o, p);
        await startRegistryUnlocked(o, p);
      })(),
    ]);
  });
  return { brokers: bootstrap(nodes), registryUrl: registry.url };
}

function bootstrap(nodes: KafkaNode[]): string {
  return nodes.map((n) => n.component.url).join(',');
}

/** Refuses to start `o.brokers` nodes while the infra in `dir` runs with another count. */
async function assertSameLayout(o: InfraOptions, p: Paths): Promise<void> {
  const recorded = recordedNodes(o.dir);
  if (recorded === undefined || recorded === o.brokers) return;
  const running = (await Promise.all(kafkaNodes({ ...o, brokers: recorded }, p).map((n) => runningPid(n.component)))).some((pid) => pid !== undefined);
  if (running) {
    throw new InfraError('CONFIG_INVALID', `the infra in ${o.dir} runs ${recorded} Kafka node(s), not ${o.brokers}; run \`tao infra down\` first (it wipes the Kafka data)`);
  }
}

/**
 * Stops the registry and every Kafka node (SIGTERM to each process group, SIGKILL after 20 s),
 * removes the pid files, then deletes the Kafka data dirs: the dev cluster is ephemeral because the
 * registry keeps schemas in memory, and topics whose records reference schema ids the registry forgot
 * would be undecodable. Caches (jars, binary) and logs are kept. Idempotent: logs "not running" for
 * a component that is not. Processes this tool did not start are never touched.
 */
export async function down(options: Partial<InfraOptions> = {}): Promise<void> {
  const o = resolveOptions(options);
  const p = paths(o);
  await withLock(o, p, async () => {
    await settleAll(o, [stopComponent(o, registryComponent(o, p), 'SIGTERM'), ...kafkaNodes(o, p).map((n) => stopComponent(o, n.component, 'SIGTERM'))]);
    await rm(p.nodesFile, { force: true });
    if (existsSync(p.dataRoot)) {
      await rm(p.dataRoot, { recursive: true, force: true });
      o.log(`kafka: deleted data dir ${p.dataRoot}`);
    }
  });
}

/** Reports each component (every Kafka node, then the registry): whether our process is alive, whether it passes its health check, its pid, address and log. */
export async function status(options: Partial<InfraOptions> = {}): Promise<ComponentStatus[]> {
  const o = resolveOptions(options);
  const p = paths(o);
  const components = [...kafkaNodes(o, p).map((n) => ({ c: n.component, nodeId: n.id as number | undefined })), { c: registryComponent(o, p), nodeId: undefined }];
  return Promise.all(
    components.map(async ({ c, nodeId }): Promise<ComponentStatus> => {
      const pid = await runningPid(c);
      const healthy = pid !== undefined && (await c.health()).ok;
      return { name: c.name, running: pid !== undefined, healthy, ...(pid === undefined ? {} : { pid }), ...(nodeId === undefined ? {} : { nodeId }), url: c.url, log: c.logFile };
    }),
  );
}

/**
 * Stops Kafka only — every node, or node `node` (1-based) of a cluster — keeping the data dirs, so
 * {@link startKafka} brings the same cluster back (broker-restart chaos tests). `signal: 'SIGKILL'`
 * simulates a crash; `'SIGTERM'` (default) a clean shutdown, escalating to SIGKILL after 20 s.
 * Several nodes are stopped at once. Logs "not running" for a node that was not.
 * @throws InfraError `CONFIG_INVALID` when `node` is not a node id of the infra.
 */
export async function stopKafka(options: Partial<InfraOptions> = {}, { signal = 'SIGTERM', node }: { signal?: 'SIGTERM' | 'SIGKILL'; node?: number } = {}): Promise<void> {
  const o = resolveOptions(options);
  const p = paths(o);
  const nodes = selectNodes(o, p, node);
  await withLock(o, p, async () => {
    await settleAll(o, nodes.map((n) => stopComponent(o, n.component, signal)));
  });
}

/**
 * Starts Kafka only — every node, or node `node` (1-based) of a cluster — on the existing data dirs
 * (formatting any that are absent) and resolves when the started nodes are healthy; "already
 * running" for a node that is. A cluster node is healthy only while a majority of the controller
 * quorum runs. Same prerequisites and errors as {@link up} for Kafka. Returns the bootstrap address
 * (every node).
 */
export async function startKafka(options: Partial<InfraOptions> = {}, { node }: { node?: number } = {}): Promise<string> {
  const o = resolveOptions(options);
  const p = paths(o);
  const nodes = selectNodes(o, p, node);
  await withLock(o, p, async () => {
    const pids = await Promise.all(nodes.map((n) => runningPid(n.component)));
    if (pids.some((pid) => pid === undefined)) {
      await checkPrerequisites({ java: true, mvn: !existsSync(p.libsMarker), go: false });
      for (const [i, n] of nodes.entries()) if (pids[i] === undefined) await assertPortsFree(n.component);
      await ensureKafkaJars(o, p);
    }
    await startKafkaUnlocked(o, p, nodes);
  });
  return bootstrap(kafkaNodes(o, p));
}

/** Where the cached artifacts of {@link ensureArtifacts} are. */
export interface InfraArtifacts {
  /** Folder of the Kafka jars (a `-cp '<libs>/*'` classpath). */
  kafkaLibs: string;
  /** The AxonOps Schema Registry binary. */
  registryBin: string;
}

/**
 * Fetches the Kafka jars and builds the registry binary into `options.dir` if they are not cached
 * yet (the first `up` does the same), under the infra lock, and says where they are. For helpers
 * that run their own broker or registry from the same cache (infra/secure.ts). Needs `java`, and
 * `mvn` / `go` while the artifacts are missing: {@link InfraError} `PREREQUISITE_MISSING`, or
 * `BUILD_FAILED`.
 */
export async function ensureArtifacts(options: Partial<InfraOptions> = {}): Promise<InfraArtifacts> {
  const o = resolveOptions(options);
  const p = paths(o);
  await withLock(o, p, async () => {
    await checkPrerequisites({ java: true, mvn: !existsSync(p.libsMarker), go: !existsSync(p.registryBin) });
    await settleAll(o, [ensureKafkaJars(o, p), ensureRegistryBinary(o, p)]);
  });
  return { kafkaLibs: p.libs, registryBin: p.registryBin };
}
