/**
 * The start-up check that the brokers are recent enough for exactly-once: Kafka >= 3.9.1. A stage
 * that takes a partition over fences the previous owner's producer and then reads the committed
 * offset (runtime/claims.ts); that read is exact only with KAFKA-17507's fix, first released in
 * 3.9.1. On an older broker a zombie's commit can land after the read, and an Action chunk can run
 * twice (NOTES.md, "No KIP-447 fencing").
 *
 * How the version is read. The Kafka protocol does not carry the broker's release (no request
 * returns it, and no broker config holds it), so the check reads what the broker serves instead:
 * its ApiVersions answer, the highest version of each request it accepts. Kafka 3.9.0 added, over
 * 3.8 (apache/kafka clients/src/main/resources/common/message/*.json, tags 3.8.1 and 3.9.0):
 *
 * - ApiVersions v4 (KAFKA-17011),
 * - Fetch v17 (KIP-853),
 * - ListOffsets v9 (KIP-1005),
 *
 * and later releases keep them. A broker that serves all three is 3.9 or later; one that lacks any
 * is older (or a Kafka-compatible service that does not implement them: `warn` or `off` is for it).
 *
 * Limits: a patch release changes no request versions, so **3.9.0 cannot be told from 3.9.1** and
 * passes; run 3.9.1 or later. Each broker is asked once, at the start of each process; a broker
 * downgraded later is not noticed.
 */
import type { Kafka } from 'kafkajs';
import { ConfigError } from './errors.ts';
import type { Logger } from './log.ts';

/** A broker's ApiVersions answer: per API key, the versions it accepts. */
export type ApiVersionRanges = Readonly<Record<number, { minVersion: number; maxVersion: number } | undefined>>;

export type MinVersionCheck = 'refuse' | 'warn' | 'off';

/** The request versions Kafka 3.9.0 was the first to serve (see the module comment). */
export const FIRST_IN_KAFKA_3_9: ReadonlyArray<{ api: string; key: number; version: number }> = [
  { api: 'ApiVersions', key: 18, version: 4 },
  { api: 'Fetch', key: 1, version: 17 },
  { api: 'ListOffsets', key: 2, version: 9 },
];

export interface BrokerVersions {
  /** `host:port (node N)`, for the message. */
  broker: string;
  versions: ApiVersionRanges;
}

/** The 3.9 request versions `versions` lacks (`Fetch v17`), empty for a broker of 3.9 or later. */
export function missingSince39(versions: ApiVersionRanges): string[] {
  return FIRST_IN_KAFKA_3_9.filter(({ key, version }) => (versions[key]?.maxVersion ?? -1) < version).map(({ api, version }) => `${api} v${version}`);
}

/**
 * What a starting process does with these brokers: `start`, or `warn`/`refuse` with the one line
 * that says which broker, what it lacks and which variable changes the decision.
 */
export function brokerVersionDecision(
  brokers: readonly BrokerVersions[],
  mode: MinVersionCheck,
): { action: 'start' } | { action: 'warn' | 'refuse'; message: string } {
  if (mode === 'off') return { action: 'start' };
  const old = brokers.map((b) => ({ broker: b.broker, missing: missingSince39(b.versions) })).filter((b) => b.missing.length > 0);
  if (old.length === 0) return { action: 'start' };
  const which = old.map((b) => `${b.broker} lacks ${b.missing.join(', ')}`).join('; ');
  const message =
    `Kafka broker older than 3.9 (${which}): exactly-once needs Kafka >= 3.9.1 (KAFKA-17507); ` +
    (mode === 'refuse' ? 'upgrade the brokers, or set TAO_KAFKA_MIN_VERSION_CHECK=warn to start anyway' : 'starting anyway (TAO_KAFKA_MIN_VERSION_CHECK=warn)');
  return { action: mode, message };
}

/**
 * Every broker's ApiVersions answer, through a kafkajs cluster built from `kafka`'s own settings
 * (TLS, SASL). kafkajs 2.2.4 (pinned exactly, scripts/patch-kafkajs.js) asks only its first broker
 * and keeps the answer private, so this reaches its cluster through the client's private factory and
 * asks each broker of the metadata itself.
 * @throws ConfigError when kafkajs's internals are not the ones this was written against (naming the setting that skips the check).
 */
export async function readBrokerVersions(kafka: Kafka): Promise<BrokerVersions[]> {
  const factory = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  // Not a broker that is down: retrying cannot help, so start-up ends at once with the way out.
  if (!factory)
    throw new ConfigError(
      'kafkajs has no private:Kafka:createCluster (not kafkajs 2.2.4?), so the broker version cannot be read; set TAO_KAFKA_MIN_VERSION_CHECK=off to start without the check',
    );
  const cluster = (kafka as unknown as Record<symbol, (options: object) => KafkajsCluster>)[factory]!({});
  await cluster.connect();
  try {
    await cluster.refreshMetadata();
    const out: BrokerVersions[] = [];
    for (const nodeId of cluster.getNodeIds()) {
      const broker = await cluster.findBroker({ nodeId });
      out.push({
        broker: `${broker.connectionPool?.host ?? '?'}:${broker.connectionPool?.port ?? '?'} (node ${nodeId})`,
        versions: await broker.apiVersions(),
      });
    }
    return out;
  } finally {
    await cluster.disconnect().catch(() => undefined);
  }
}

/** The part of kafkajs 2.2.4's Cluster (src/cluster/index.js) and Broker this module uses. */
interface KafkajsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  refreshMetadata(): Promise<void>;
  getNodeIds(): number[];
  findBroker(args: { nodeId: number }): Promise<{ apiVersions(): Promise<ApiVersionRanges>; connectionPool?: { host?: string; port?: number } }>;
}

/**
 * The start-up check: reads every broker's API versions and refuses (ConfigError), warns, or lets
 * the process start, by `mode` (TAO_KAFKA_MIN_VERSION_CHECK). A failure to read them is thrown as it
 * came (the caller's wait for Kafka retries it).
 * @throws ConfigError in `refuse` mode when a broker is older than 3.9.
 */
export async function checkBrokerVersion(kafka: Kafka, mode: MinVersionCheck, logger: Logger): Promise<void> {
  if (mode === 'off') return;
  const brokers = await readBrokerVersions(kafka);
  const decision = brokerVersionDecision(brokers, mode);
  if (decision.action === 'refuse') throw new ConfigError(decision.message);
  if (decision.action === 'warn') logger.warn(decision.message, { setting: 'TAO_KAFKA_MIN_VERSION_CHECK' });
  else logger.debug('kafka brokers serve the 3.9 API versions', { brokers: brokers.map((b) => b.broker) });
}
