/**
 * The processes the local infrastructure runs, as components: each Kafka node and the registry, with
 * its pid file, log, ports, the marker that tells our process from a foreign one, and its health
 * check; and the process helpers that find, signal and wait for them, and check their ports are free.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { type Health, errorText, isErrno, logTail, readPid, run, signalable } from '../process.ts';
import { InfraError, type InfraErrorCode } from './errors.ts';
import { type ComponentName, type InfraOptions, type Paths, nodePorts } from './options.ts';

const KAFKA_HEALTH_TIMEOUT_MS = 90_000;
const REGISTRY_HEALTH_TIMEOUT_MS = 30_000;
const LOG_TAIL_LINES = 20;

export interface Component {
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
export interface KafkaNode {
  id: number;
  port: number;
  controllerPort: number;
  serverProperties: string;
  /** The node's log dir. */
  data: string;
  component: Component;
}

/** The Kafka nodes of `o`: the single broker keeps today's file names (`kafka`, `server.properties`); node n of a cluster is `kafka-<n>`. */
export function kafkaNodes(o: InfraOptions, p: Paths): KafkaNode[] {
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
export function selectNodes(o: InfraOptions, p: Paths, which: number | undefined): KafkaNode[] {
  const nodes = kafkaNodes(o, p);
  if (which === undefined) return nodes;
  const node = nodes.find((n) => n.id === which);
  if (!node) throw new InfraError('CONFIG_INVALID', `node must be a Kafka node id from 1 to ${nodes.length}, got ${String(which)}`);
  return [node];
}

export function registryComponent(o: InfraOptions, p: Paths): Component {
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

export async function isOurs(c: Component, pid: number): Promise<boolean> {
  if (!signalable(pid)) return false;
  return (await commandLine(pid))?.includes(c.marker) ?? false;
}

/** The pid of the component's live process started by this tool, if any. */
export async function runningPid(c: Component): Promise<number | undefined> {
  const pid = await readPid(c.pidFile);
  return pid !== undefined && (await isOurs(c, pid)) ? pid : undefined;
}

export async function waitGone(c: Component, pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await isOurs(c, pid))) return true;
    await sleep(100);
  }
  return !(await isOurs(c, pid));
}

export async function failureWithLog(code: InfraErrorCode, c: Component, message: string): Promise<InfraError> {
  return new InfraError(code, `${message}\nLast ${LOG_TAIL_LINES} lines of ${c.logFile}:\n${await logTail(c.logFile, LOG_TAIL_LINES)}`);
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

export async function assertPortsFree(c: Component): Promise<void> {
  for (const port of c.ports) {
    if (!(await portFree(port))) {
      const hint = c.name.startsWith('kafka')
        ? 'set TAO_KAFKA_PORT / TAO_CONTROLLER_PORT to free ports, or use that broker through KAFKA_BROKERS'
        : 'set TAO_REGISTRY_PORT to a free port, or use that registry through SCHEMA_REGISTRY_URL';
      throw new InfraError(
        'PORT_IN_USE',
        `${c.name}: port ${port} on 127.0.0.1 is in use by a process this tool did not start (no live pid in ${c.pidFile}); stop it, or ${hint}`,
      );
    }
  }
}
