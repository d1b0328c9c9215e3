/**
 * Health checks of the brokers and registries the infra commands start (infra/local/ and
 * infra/secure/): one attempt each, never retried (infra/process.ts's `waitUntilHealthy` polls them).
 */
import { Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import { type Health, errorText } from './process.ts';

/**
 * Healthy when the broker answers describeCluster and `listed` accepts the nodes it lists; else the
 * reason `listed` gives, or the error.
 */
export async function kafkaHealth(
  client: Pick<KafkaConfig, 'clientId' | 'brokers' | 'ssl' | 'sasl' | 'connectionTimeout'>,
  listed: (nodeIds: number[]) => string | undefined,
): Promise<Health> {
  const admin = new Kafka({ requestTimeout: 3000, ...client, logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    const reason = listed(cluster.brokers.map((b) => b.nodeId));
    return reason === undefined ? { ok: true } : { ok: false, reason };
  } catch (err) {
    return { ok: false, reason: errorText(err) };
  } finally {
    await admin.disconnect();
  }
}

/** Healthy when the registry answers `GET /subjects` with 200 within 2 s. */
export async function registryHealth(url: string, headers: Record<string, string> = {}): Promise<Health> {
  try {
    const res = await fetch(`${url}/subjects`, { headers, signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status === 200 ? { ok: true } : { ok: false, reason: `GET /subjects answered ${res.status}` };
  } catch (err) {
    return { ok: false, reason: errorText(err) };
  }
}
