/**
 * The processes the local infrastructure runs, as components: each Kafka node and the registry, with
 * its pid file, log, ports, the marker that tells our process from a foreign one, and its health
 * check; and the process helpers that find, signal and wait for them, and check their ports are free.
 */
import { join } from 'node:path';
import { commandLine, portFree } from '../detached.ts';
import { kafkaHealth, registryHealth } from '../health.ts';
import { type Health, logTail, readPid, signalable } from '../process.ts';
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
        health: () => kafkaNodeHealth(port, id),
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
function kafkaNodeHealth(port: number, nodeId: number): Promise<Health> {
  return kafkaHealth({ clientId: 'tao-infra-health', brokers: [`127.0.0.1:${port}`], connectionTimeout: 1000 }, (ids) =>
    ids.includes(nodeId) ? undefined : `describeCluster does not list node ${nodeId} yet`,
  );
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

export async function failureWithLog(code: InfraErrorCode, c: Component, message: string): Promise<InfraError> {
  return new InfraError(code, `${message}\nLast ${LOG_TAIL_LINES} lines of ${c.logFile}:\n${await logTail(c.logFile, LOG_TAIL_LINES)}`);
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
