import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Kafka, logLevel, type KafkaConfig, type LogEntry } from 'kafkajs';
import type { RuntimeConfig } from './config.ts';
import { ConfigError, TransientError, errorMessage } from './errors.ts';
import type { Logger } from './log.ts';

let readCommittedChecked = false;

/**
 * kafkajs 2.2.4 returns records of aborted transactions to read_committed consumers when
 * transactions interleave on a partition (patches/README.md); `npm install` replaces the faulty file
 * (scripts/patch-kafkajs.js). Without the fix exactly-once does not hold, so no client is built.
 */
function assertReadCommittedFix(): void {
  if (readCommittedChecked) return;
  const file = createRequire(import.meta.url).resolve('kafkajs/src/consumer/filterAbortedMessages.js');
  if (!readFileSync(file, 'utf8').startsWith('// tao-patch: read_committed')) {
    throw new ConfigError(`kafkajs is installed without the read_committed fix (${file}): run \`npm install\` (or \`node scripts/patch-kafkajs.js\`) in the project; installing with --ignore-scripts skips it`);
  }
  readCommittedChecked = true;
}

/** Builds a kafkajs client from the runtime configuration; kafkajs' own logs go through `logger` as JSON lines. */
export function createKafka(config: RuntimeConfig, clientId: string, logger: Logger): Kafka {
  assertReadCommittedFix();
  const options: KafkaConfig = {
    clientId,
    brokers: config.kafka.brokers,
    ssl: config.kafka.ssl,
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log }: LogEntry) => {
      // kafkajs logs connection churn at ERROR while it retries; it is noise unless it persists.
      const fields = { component: `kafkajs.${namespace}`, broker: log.broker, error: log.error };
      if (level <= logLevel.ERROR) logger.warn(log.message, fields);
      else logger.debug(log.message, fields);
    },
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5000 },
  };
  if (config.kafka.sasl) options.sasl = config.kafka.sasl as KafkaConfig['sasl'];
  return new Kafka(options);
}

/**
 * Resolves once the cluster answers a metadata request, so that a process started while the broker
 * is down (a supervisor restarting it during a broker restart, say) waits instead of failing its
 * start-up. Logs a line every 5 s while it waits.
 * @throws TransientError when the cluster is still unreachable after `timeoutMs`.
 */
export async function waitForKafka(kafka: Kafka, logger: Logger, timeoutMs: number): Promise<void> {
  const started = Date.now();
  let lastLog = started;
  for (;;) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      await admin.describeCluster();
      if (lastLog !== started) logger.info('kafka reachable', { waited_ms: Date.now() - started });
      return;
    } catch (err) {
      if (Date.now() - started >= timeoutMs) throw new TransientError(`Kafka unreachable for ${Math.round((Date.now() - started) / 1000)} s (TAO_STARTUP_WAIT_MS=${timeoutMs}): ${errorMessage(err)}`);
      if (Date.now() - lastLog >= 5000 || lastLog === started) {
        logger.warn('waiting for kafka', { waited_ms: Date.now() - started, error: errorMessage(err) });
        lastLog = Date.now();
      }
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
}
