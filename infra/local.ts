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
 *
 * This file is the public API (up, down, status, startKafka, stopKafka, ensureArtifacts) and
 * re-exports the public types; the parts are in `infra/local/`: `options.ts` (options, versions,
 * file layout), `errors.ts` ({@link InfraError}), `components.ts` (the processes, their health and
 * ports), `lock.ts` (the infra lock), `artifacts.ts` (prerequisites, jars, registry binary),
 * `config-files.ts` (generated configuration and storage format), `lifecycle.ts` (start and stop).
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { checkPrerequisites, ensureKafkaJars, ensureRegistryBinary } from './local/artifacts.ts';
import { type KafkaNode, assertPortsFree, kafkaNodes, registryComponent, runningPid, selectNodes } from './local/components.ts';
import { InfraError } from './local/errors.ts';
import { settleAll, startKafkaUnlocked, startRegistryUnlocked, stopComponent } from './local/lifecycle.ts';
import { withLock } from './local/lock.ts';
import {
  type ComponentStatus,
  type InfraEndpoints,
  type InfraOptions,
  type InfraRequest,
  type Paths,
  paths,
  recordedNodes,
  resolveOptions,
} from './local/options.ts';

export { LOG4J_PROPERTIES, SHORT_LIVED_JVM, kafkaClusterId, storageFormatArgs } from './local/config-files.ts';
export { InfraError, type InfraErrorCode } from './local/errors.ts';
export {
  type ComponentName,
  type ComponentStatus,
  type InfraEndpoints,
  type InfraOptions,
  KAFKA_VERSION,
  REGISTRY_VERSION,
  defaultInfraOptions,
} from './local/options.ts';

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
export async function up(options: InfraRequest): Promise<InfraEndpoints> {
  const o = resolveOptions(options);
  const p = paths(o);
  const nodes = kafkaNodes(o, p);
  const registry = registryComponent(o, p);
  await withLock(o, p, async () => {
    await assertSameLayout(o, p);
    const [kafkaPids, registryPid] = await Promise.all([Promise.all(nodes.map((n) => runningPid(n.component))), runningPid(registry)]);
    const kafkaMissing = kafkaPids.some((pid) => pid === undefined);
    await checkPrerequisites(
      {
        java: kafkaMissing,
        mvn: kafkaMissing && !existsSync(p.libsMarker),
        go: registryPid === undefined && !existsSync(p.registryBin),
      },
      o.env,
    );
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
    throw new InfraError(
      'CONFIG_INVALID',
      `the infra in ${o.dir} runs ${recorded} Kafka node(s), not ${o.brokers}; run \`tao infra down\` first (it wipes the Kafka data)`,
    );
  }
}

/**
 * Stops the registry and every Kafka node (SIGTERM to each process group, SIGKILL after 20 s),
 * removes the pid files, then deletes the Kafka data dirs: the dev cluster is ephemeral because the
 * registry keeps schemas in memory, and topics whose records reference schema ids the registry forgot
 * would be undecodable. Caches (jars, binary) and logs are kept. Idempotent: logs "not running" for
 * a component that is not. Processes this tool did not start are never touched.
 */
export async function down(options: InfraRequest): Promise<void> {
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
export async function status(options: InfraRequest): Promise<ComponentStatus[]> {
  const o = resolveOptions(options);
  const p = paths(o);
  const components = [
    ...kafkaNodes(o, p).map((n) => ({ c: n.component, nodeId: n.id as number | undefined })),
    { c: registryComponent(o, p), nodeId: undefined },
  ];
  return Promise.all(
    components.map(async ({ c, nodeId }): Promise<ComponentStatus> => {
      const pid = await runningPid(c);
      const healthy = pid !== undefined && (await c.health()).ok;
      return {
        name: c.name,
        running: pid !== undefined,
        healthy,
        ...(pid === undefined ? {} : { pid }),
        ...(nodeId === undefined ? {} : { nodeId }),
        url: c.url,
        log: c.logFile,
      };
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
export async function stopKafka(options: InfraRequest, { signal = 'SIGTERM', node }: { signal?: 'SIGTERM' | 'SIGKILL'; node?: number } = {}): Promise<void> {
  const o = resolveOptions(options);
  const p = paths(o);
  const nodes = selectNodes(o, p, node);
  await withLock(o, p, async () => {
    await settleAll(
      o,
      nodes.map((n) => stopComponent(o, n.component, signal)),
    );
  });
}

/**
 * Starts Kafka only — every node, or node `node` (1-based) of a cluster — on the existing data dirs
 * (formatting any that are absent) and resolves when the started nodes are healthy; "already
 * running" for a node that is. A cluster node is healthy only while a majority of the controller
 * quorum runs. Same prerequisites and errors as {@link up} for Kafka. Returns the bootstrap address
 * (every node).
 */
export async function startKafka(options: InfraRequest, { node }: { node?: number } = {}): Promise<string> {
  const o = resolveOptions(options);
  const p = paths(o);
  const nodes = selectNodes(o, p, node);
  await withLock(o, p, async () => {
    const pids = await Promise.all(nodes.map((n) => runningPid(n.component)));
    if (pids.some((pid) => pid === undefined)) {
      await checkPrerequisites({ java: true, mvn: !existsSync(p.libsMarker), go: false }, o.env);
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
export async function ensureArtifacts(options: InfraRequest): Promise<InfraArtifacts> {
  const o = resolveOptions(options);
  const p = paths(o);
  await withLock(o, p, async () => {
    await checkPrerequisites({ java: true, mvn: !existsSync(p.libsMarker), go: !existsSync(p.registryBin) }, o.env);
    await settleAll(o, [ensureKafkaJars(o, p), ensureRegistryBinary(o, p)]);
  });
  return { kafkaLibs: p.libs, registryBin: p.registryBin };
}
