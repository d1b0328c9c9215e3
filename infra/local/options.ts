/**
 * What the local infrastructure is configured by: the pinned versions, {@link InfraOptions} (from
 * arguments and TAO_* variables, checked), the public status types, each node's ports, and where the
 * files live under the infra dir ({@link Paths}).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setting } from '../../runtime/config.ts';
import { ConfigError } from '../../runtime/errors.ts';
import { PACKAGE_ROOT, packagePath } from '../../runtime/paths.ts';
import { InfraError } from './errors.ts';

/** Apache Kafka version run by the local infra (must match `infra/kafka/pom.xml`). */
export const KAFKA_VERSION = '3.9.1';
/** AxonOps Schema Registry version built by the local infra (must match `infra/registry/go.mod`). */
export const REGISTRY_VERSION = 'v0.2.1';

const MAX_NODES = 5;
const NODES_FILE = 'kafka.nodes';

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
   * (recorded by `up`, infra/local.ts), else 1.
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
  /**
   * The environment the infra reads its `TAO_*` settings from and runs its tools (java, mvn, go,
   * the registry) with: the caller's, handed in by a composition root (`process.env` there).
   */
  env: NodeJS.ProcessEnv;
}

/** What the infra's functions take: any of the options, and always the environment. */
export type InfraRequest = Partial<InfraOptions> & { env: NodeJS.ProcessEnv };

/** `kafka` for the single broker; `kafka-<n>` for node n of a cluster. */
export type ComponentName = 'kafka' | `kafka-${number}` | 'schema-registry';

/** What `status` (infra/local.ts) reports for one component. */
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
export function sourcePaths(): { repoRoot: string; pom: string; registryModule: string } {
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
export function defaultInfraOptions(env: NodeJS.ProcessEnv): InfraOptions {
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
    env,
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

export function resolveOptions(partial: InfraRequest): InfraOptions {
  const given = Object.fromEntries(Object.entries(partial).filter(([, v]) => v !== undefined)) as Partial<InfraOptions>;
  const o: InfraOptions = { ...defaultInfraOptions(partial.env), ...given };
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
export function nodePorts(o: Pick<InfraOptions, 'brokers' | 'kafkaPort' | 'controllerPort'>): Array<{ id: number; port: number; controllerPort: number }> {
  return Array.from({ length: o.brokers }, (_, i) => ({ id: i + 1, port: o.kafkaPort + 2 * i, controllerPort: o.controllerPort + 2 * i }));
}

/** The node count `up` (infra/local.ts) recorded for the infra in `dir`, if it did. */
export function recordedNodes(dir: string): number | undefined {
  const file = join(dir, 'run', NODES_FILE);
  if (!existsSync(file)) return undefined;
  const n = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(n) && n >= 1 ? n : undefined;
}

export interface Paths {
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

export function paths(o: InfraOptions): Paths {
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
