/**
 * Opt-in Docker mode: the same two services as {@link ./local.ts}, as throw-away containers
 * managed by testcontainers (Apache Kafka's official KRaft image and Confluent's own registry on a
 * shared network). Use it where Docker is available and a JVM/Go toolchain is not; the local mode
 * stays the default. testcontainers is a development (and optional peer) dependency, not a
 * production one: it is imported on first call, so importing this module is free, and where it is
 * not installed the call says how to install it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type * as Testcontainers from 'testcontainers';
import type { ContainerRuntimeClient, StartedNetwork, StartedTestContainer } from 'testcontainers';
import { InfraError, type InfraEndpoints } from './local.ts';

/** Kafka image; same version as the local broker. */
export const DOCKER_KAFKA_IMAGE = 'apache/kafka:3.9.1';
/** Confluent Schema Registry image (the reference implementation of the API the local registry mimics). */
export const DOCKER_REGISTRY_IMAGE = 'confluentinc/cp-schema-registry:7.7.1';

const STARTUP_TIMEOUT_MS = 120_000;
const INTERNAL_KAFKA = 'kafka:19092';

/** A running Docker infra; `stop()` removes both containers and the network. */
export interface DockerInfra extends InfraEndpoints {
  stop(): Promise<void>;
}

export interface DockerInfraOptions {
  /** Receives progress lines. Default: stderr. */
  log?: (line: string) => void;
  /** How testcontainers is imported. Default: `import('testcontainers')`. */
  importer?: TestcontainersImporter;
  /** The caller's environment (testcontainers reads DOCKER_HOST from the process's own; an error names it from here). */
  env: NodeJS.ProcessEnv;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The testcontainers module, as `import('testcontainers')` gives it. */
export type TestcontainersModule = typeof Testcontainers;

/** Loads testcontainers; replaced in tests to play a production install that lacks it. */
export type TestcontainersImporter = () => Promise<TestcontainersModule>;

const importTestcontainers: TestcontainersImporter = () => import('testcontainers');

/**
 * Imports testcontainers. Where the package is not installed (a production install: it is a
 * development dependency) throws {@link InfraError} `PREREQUISITE_MISSING`
 * "install testcontainers (npm i -D testcontainers) to use --docker"; any other import failure is
 * rethrown as it is.
 */
export async function loadTestcontainers(importer: TestcontainersImporter = importTestcontainers): Promise<TestcontainersModule> {
  try {
    return await importer();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && errorText(err).includes("'testcontainers'")) {
      throw new InfraError('PREREQUISITE_MISSING', 'install testcontainers (npm i -D testcontainers) to use --docker', { cause: err });
    }
    throw err;
  }
}

/**
 * Resolves with the container runtime client when a Docker engine answers; otherwise throws
 * {@link InfraError} `PREREQUISITE_MISSING` "Docker engine not reachable: <reason>; …" (or the
 * one of {@link loadTestcontainers} where testcontainers is not installed).
 */
export async function assertDockerReachable(env: NodeJS.ProcessEnv, importer: TestcontainersImporter = importTestcontainers): Promise<ContainerRuntimeClient> {
  const { getContainerRuntimeClient } = await loadTestcontainers(importer);
  try {
    return await getContainerRuntimeClient();
  } catch (err) {
    // testcontainers only says "Could not find a working container runtime strategy"; say where we looked.
    const where = env.DOCKER_HOST
      ? `DOCKER_HOST=${env.DOCKER_HOST} did not answer`
      : existsSync('/var/run/docker.sock')
        ? '/var/run/docker.sock exists but the engine did not answer'
        : 'DOCKER_HOST is unset and there is no /var/run/docker.sock';
    throw new InfraError(
      'PREREQUISITE_MISSING',
      `Docker engine not reachable: ${errorText(err)} (${where}); run \`npx tao infra up\` for the local JVM/Go infra instead`,
      { cause: err },
    );
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close((err) => (err ? reject(err) : resolvePromise(port)));
    });
  });
}

/**
 * Starts Kafka 3.9.1 (KRaft, single node) and Confluent Schema Registry 7.7.1 in containers on a
 * private network and resolves when both are healthy (Kafka: "Kafka Server started" in its log;
 * registry: GET /subjects → 200), within 120 s each. Checks the Docker engine first (see
 * {@link assertDockerReachable}). On any failure, whatever was started is removed before the error
 * is rethrown. testcontainers' reaper also removes the containers when this process exits.
 *
 * Kafka is published on a free host port chosen up front, because the advertised listener must
 * name the port clients connect to; the registry reaches Kafka over the network at `kafka:19092`.
 */
export async function upWithDocker(options: DockerInfraOptions): Promise<DockerInfra> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const importer = options.importer ?? importTestcontainers;
  const client = await assertDockerReachable(options.env, importer);
  const { GenericContainer, Network, Wait } = await loadTestcontainers(importer);
  const host = client.info.containerRuntime.host;
  const kafkaPort = await freePort();

  const started: Array<StartedTestContainer | StartedNetwork> = [];
  const stopAll = async (): Promise<void> => {
    const failures: unknown[] = [];
    for (const resource of started.reverse()) {
      try {
        await resource.stop();
      } catch (err) {
        failures.push(err);
      }
    }
    started.length = 0;
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, 'docker infra: several resources failed to stop');
  };

  try {
    const network = await new Network().start();
    started.push(network);

    log(`kafka: starting ${DOCKER_KAFKA_IMAGE} on ${host}:${kafkaPort}…`);
    const kafka = await new GenericContainer(DOCKER_KAFKA_IMAGE)
      .withNetwork(network)
      .withNetworkAliases('kafka')
      .withExposedPorts({ container: 9092, host: kafkaPort })
      .withEnvironment({
        CLUSTER_ID: randomBytes(16).toString('base64url').replace(/^-/, 'A'),
        KAFKA_NODE_ID: '1',
        KAFKA_PROCESS_ROLES: 'broker,controller',
        KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
        KAFKA_LISTENERS: 'PLAINTEXT://0.0.0.0:9092,INTERNAL://0.0.0.0:19092,CONTROLLER://localhost:9093',
        KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://${host}:${kafkaPort},INTERNAL://${INTERNAL_KAFKA}`,
        KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT',
        KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
        KAFKA_INTER_BROKER_LISTENER_NAME: 'INTERNAL',
        KAFKA_LOG_DIRS: '/tmp/kraft-combined-logs',
        KAFKA_NUM_PARTITIONS: '3',
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '10',
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
        KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS: '10',
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
        KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      })
      .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
      .withStartupTimeout(STARTUP_TIMEOUT_MS)
      .start();
    started.push(kafka);

    log(`schema-registry: starting ${DOCKER_REGISTRY_IMAGE}…`);
    const registry = await new GenericContainer(DOCKER_REGISTRY_IMAGE)
      .withNetwork(network)
      .withNetworkAliases('schema-registry')
      .withExposedPorts(8081)
      .withEnvironment({
        SCHEMA_REGISTRY_HOST_NAME: 'schema-registry',
        SCHEMA_REGISTRY_LISTENERS: 'http://0.0.0.0:8081',
        SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS: `PLAINTEXT://${INTERNAL_KAFKA}`,
        SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR: '1',
        SCHEMA_REGISTRY_SCHEMA_COMPATIBILITY_LEVEL: 'backward',
      })
      .withWaitStrategy(Wait.forHttp('/subjects', 8081).forStatusCode(200))
      .withStartupTimeout(STARTUP_TIMEOUT_MS)
      .start();
    started.push(registry);

    const endpoints = { brokers: `${host}:${kafkaPort}`, registryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8081)}` };
    log(`docker infra: Kafka at ${endpoints.brokers}, registry at ${endpoints.registryUrl}`);
    return { ...endpoints, stop: stopAll };
  } catch (err) {
    try {
      await stopAll();
    } catch (cleanup) {
      log(`docker infra: cleanup after a failed start also failed: ${errorText(cleanup)}`);
    }
    throw err;
  }
}
