/**
 * Starting and stopping components: spawn detached with a pid file and a rotated log, wait for health
 * (killing a start that times out), adopt a process already running, stop a process group with
 * SIGTERM then SIGKILL.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { type Detached, rotateLog, spawnDetached, stopGroup, waitStarted } from '../detached.ts';
import { errorText } from '../process.ts';
import { type Component, type KafkaNode, assertPortsFree, isOurs, kafkaNodes, registryComponent, runningPid } from './components.ts';
import { LOG4J_PROPERTIES, SHORT_LIVED_JVM, existingClusterId, formatKafkaStorage, kafkaClusterId, registryYaml, serverProperties } from './config-files.ts';
import type { InfraOptions, Paths } from './options.ts';

/** Past its time-out, a component gets more time while its log moved in the last 30 s (a broker loading thousands of partitions). */
const LOG_QUIET_MS = 30_000;
const STOP_GRACE_MS = 20_000;
const KILL_WAIT_MS = 5_000;

/** Starts `cmd` as component `c`, detached, and writes its pid file. */
async function start(c: Component, cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Detached> {
  const spawned = await spawnDetached({ name: c.name, by: 'tao infra', cmd, args, cwd, env, logFile: c.logFile });
  await writeFile(c.pidFile, `${spawned.pid}\n`);
  return spawned;
}

/**
 * Polls the health check until it passes. Fails fast if the process dies; on timeout kills it, so
 * a failed start never leaves a half-started component behind.
 */
async function waitHealthy(o: InfraOptions, c: Component, pid: number, spawned?: Detached): Promise<void> {
  o.log(`${c.name}: waiting for ${c.url} to become healthy (pid ${pid}, up to ${c.healthTimeoutMs / 1000}s, longer while its log grows)…`);
  await waitStarted({
    name: c.name,
    health: c.health,
    logFile: c.logFile,
    timeoutMs: c.healthTimeoutMs,
    quietMs: LOG_QUIET_MS,
    log: o.log,
    pid,
    alive: () => isOurs(c, pid),
    spawned,
    pidFile: c.pidFile,
    killWaitMs: KILL_WAIT_MS,
    what: `process ${pid}`,
  });
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
export async function startKafkaUnlocked(o: InfraOptions, p: Paths, nodes: KafkaNode[]): Promise<void> {
  await Promise.all([mkdir(p.config, { recursive: true }), mkdir(p.logs, { recursive: true }), mkdir(p.run, { recursive: true })]);
  await writeFile(p.nodesFile, `${o.brokers}\n`);
  const clusterId = (await existingClusterId(kafkaNodes(o, p))) ?? kafkaClusterId();
  await settleAll(
    o,
    nodes.map((node) => startKafkaNode(o, p, node, clusterId)),
  );
}

async function startKafkaNode(o: InfraOptions, p: Paths, node: KafkaNode, clusterId: string): Promise<void> {
  const c = node.component;
  if (await adoptRunning(o, c)) return;
  await assertPortsFree(c);
  await writeFile(node.serverProperties, serverProperties(o, node));
  await writeFile(p.log4j, LOG4J_PROPERTIES);
  await rotateLog(c.logFile);
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
  const spawned = await start(c, 'java', args, p.dir, o.env);
  o.log(`${c.name}: started pid ${spawned.pid} (log ${c.logFile})`);
  await waitHealthy(o, c, spawned.pid, spawned);
}

export async function startRegistryUnlocked(o: InfraOptions, p: Paths): Promise<void> {
  const c = registryComponent(o, p);
  if (await adoptRunning(o, c)) return;
  await assertPortsFree(c);
  await Promise.all([mkdir(p.config, { recursive: true }), mkdir(p.logs, { recursive: true }), mkdir(p.run, { recursive: true })]);
  await writeFile(p.registryYaml, registryYaml(o));
  await rotateLog(c.logFile);
  // The binary lets SCHEMA_REGISTRY_* variables override its config file; ours (e.g. SCHEMA_REGISTRY_URL for clients) must not leak in.
  const env = Object.fromEntries(Object.entries(o.env).filter(([k]) => !k.startsWith('SCHEMA_REGISTRY_')));
  const spawned = await start(c, p.registryBin, ['-config', p.registryYaml], p.dir, env);
  o.log(`schema-registry: started pid ${spawned.pid} (log ${c.logFile})`);
  await waitHealthy(o, c, spawned.pid, spawned);
}

/** Stops our process of `c` (whole process group). Returns false when it was not running. */
export async function stopComponent(o: InfraOptions, c: Component, signal: 'SIGTERM' | 'SIGKILL'): Promise<boolean> {
  const pid = await runningPid(c);
  if (pid === undefined) {
    await rm(c.pidFile, { force: true });
    o.log(`${c.name}: not running`);
    return false;
  }
  o.log(`${c.name}: stopping pid ${pid} (${signal})…`);
  await stopGroup({ name: c.name, pid, alive: () => isOurs(c, pid), signal, graceMs: STOP_GRACE_MS, killWaitMs: KILL_WAIT_MS, pidFile: c.pidFile, log: o.log });
  await rm(c.pidFile, { force: true });
  return true;
}

/** Waits for every task; rethrows the first failure after reporting any others through `log`. */
export async function settleAll(o: InfraOptions, tasks: Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(tasks);
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  for (const extra of failures.slice(1)) o.log(`infra: also failed: ${errorText(extra)}`);
  if (failures.length > 0) throw failures[0];
}
