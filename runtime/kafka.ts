import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Kafka, logLevel, type KafkaConfig, type LogEntry, type Producer, type ProducerConfig, type RetryOptions } from 'kafkajs';
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

/**
 * Messages of the kafkajs protocol errors it retries by itself (its own error table marks them
 * `retriable`), plus the rebalance errors its consumer answers by re-joining (kafkajs
 * `isRebalancing`). kafkajs logs a failed response with the error's message only (no type or code),
 * so the table's messages are how a log entry is traced back to the error's data. A missing topic
 * (UNKNOWN_TOPIC_OR_PARTITION) stays visible: when it persists, a topic was not applied.
 */
let transientMessages: ReadonlySet<string> | null = null;
function transientProtocolMessages(): ReadonlySet<string> {
  if (transientMessages) return transientMessages;
  const { errorCodes } = createRequire(import.meta.url)('kafkajs/src/protocol/error.js') as { errorCodes: Array<{ type: string; retriable: boolean; message: string }> };
  const rebalancing = new Set(['REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP', 'ILLEGAL_GENERATION']);
  transientMessages = new Set(errorCodes.filter((e) => (e.retriable || rebalancing.has(e.type)) && e.type !== 'UNKNOWN_TOPIC_OR_PARTITION').map((e) => e.message));
  return transientMessages;
}

/**
 * Connection churn kafkajs logs at ERROR while it retries (a broker starting or restarting). kafkajs
 * gives these only as message text, with no code or type, so they are matched by their start here,
 * in this one list (kafkajs 2.2.4: network/connection.js, cluster/brokerPool.js).
 */
const TRANSIENT_CONNECTION_MESSAGES = ['Connection error: ', 'Connection timeout', 'Failed to connect to seed broker', 'Failed to connect to broker, reconnecting'];

/**
 * Whether a kafkajs ERROR entry is start-up or rebalance churn that kafkajs retries by itself: a
 * coordinator not yet elected, a group rebalancing, a leader moving, a broker not answering yet. These
 * go to debug; what persists shows in this runtime's own lines (waiting for kafka, consumer restarts).
 */
export function isTransientKafkaLog(entry: Pick<LogEntry, 'log'>): boolean {
  const { message, error } = entry.log as { message: string; error?: unknown };
  if (typeof error === 'string' && transientProtocolMessages().has(error)) return true;
  return TRANSIENT_CONNECTION_MESSAGES.some((m) => message.startsWith(m));
}

/** Builds a kafkajs client from the runtime configuration; kafkajs' own logs go through `logger` as JSON lines. */
export function createKafka(config: RuntimeConfig, clientId: string, logger: Logger): Kafka {
  assertReadCommittedFix();
  const options: KafkaConfig = {
    clientId,
    brokers: config.kafka.brokers,
    ssl: config.kafka.ssl,
    logLevel: logLevel.WARN,
    logCreator: () => (entry: LogEntry) => {
      const { namespace, level, log } = entry;
      const fields = { component: `kafkajs.${namespace}`, broker: log.broker, error: log.error };
      if (level <= logLevel.ERROR && !isTransientKafkaLog(entry)) logger.warn(log.message, fields);
      else logger.debug(log.message, fields);
    },
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5000 },
  };
  if (config.kafka.sasl) options.sasl = config.kafka.sasl as KafkaConfig['sasl'];
  return new Kafka(options);
}

/** acks=all (-1): the leader acknowledges a write once every in-sync replica has it, and refuses it while fewer than the topic's `min.insync.replicas` are in sync. */
export const ACKS_ALL = -1;

/** What a producer of this project may choose; everything else is fixed by {@link producerConfig}. */
export interface ProducerOptions {
  /** Makes the producer transactional (fencing by this id); such producers write only inside transactions. */
  transactionalId?: string;
  /** Default 1. kafkajs serialises an idempotent producer's produce requests per broker anyway. */
  maxInFlightRequests?: number;
  /** Overrides kafkajs' retry of a send (an idempotent producer's default is to retry without end). */
  retry?: RetryOptions;
}

/**
 * The one producer configuration of the project: every producer is idempotent, so a retried send
 * (a leader moved, a broker restarted, a response was lost) is written once and in order, and
 * kafkajs then refuses any send that asks for less than {@link ACKS_ALL} ("Not requiring ack for all
 * messages invalidates the idempotent producer's EoS guarantees"). With a cluster's replication
 * factor 3 and min.insync.replicas 2 (topics/catalog.ts `replicationFor`), an acknowledged record is
 * on at least two brokers. Transactional producers (the stages' per-partition producers, the
 * dead-letter re-drive) also get one request in flight and a 60 s transaction timeout.
 */
export function producerConfig(options: ProducerOptions = {}): ProducerConfig {
  const config: ProducerConfig = { idempotent: true, maxInFlightRequests: options.maxInFlightRequests ?? 1 };
  if (options.retry) config.retry = options.retry;
  if (options.transactionalId !== undefined) Object.assign(config, { transactionalId: options.transactionalId, maxInFlightRequests: 1, transactionTimeout: 60000 });
  return config;
}

/** A producer with {@link producerConfig}; the only place this project's code makes one (a unit test checks it). */
export function createProducer(kafka: Pick<Kafka, 'producer'>, options: ProducerOptions = {}): Producer {
  return kafka.producer(producerConfig(options));
}

/**
 * Resolves once the cluster answers a metadata request, so that a process started while the broker
 * is down (a supervisor restarting it during a broker restart, say) waits instead of failing its
 * start-up. Says so in one line when the first attempt fails (later attempts log at debug).
 * @throws TransientError when the cluster is still unreachable after `timeoutMs`.
 */
export async function waitForKafka(kafka: Kafka, logger: Logger, timeoutMs: number): Promise<void> {
  const started = Date.now();
  let waiting = false;
  for (;;) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      await admin.describeCluster();
      if (waiting) logger.info('kafka reachable', { waited_ms: Date.now() - started });
      return;
    } catch (err) {
      if (Date.now() - started >= timeoutMs) throw new TransientError(`Kafka unreachable for ${Math.round((Date.now() - started) / 1000)} s (TAO_STARTUP_WAIT_MS=${timeoutMs}): ${errorMessage(err)}`);
      if (!waiting) logger.warn('waiting for kafka', { up_to_s: Math.round(timeoutMs / 1000), setting: 'TAO_STARTUP_WAIT_MS', error: errorMessage(err) });
      else logger.debug('still waiting for kafka', { waited_ms: Date.now() - started, error: errorMessage(err) });
      waiting = true;
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
}
