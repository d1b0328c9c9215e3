import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { rootCertificates, type ConnectionOptions } from 'node:tls';
import kafkajs, { Kafka, logLevel, type KafkaConfig, type LogEntry, type Producer, type ProducerConfig, type RetryOptions } from 'kafkajs';
import { checkBrokerVersion } from './broker-version.ts';
import type { RuntimeConfig } from './config.ts';
import { ConfigError, TransientError, errorMessage } from './errors.ts';
import type { Logger } from './log.ts';

let kafkajsFixesChecked = false;

/**
 * The kafkajs fixes `npm install` applies (scripts/patch-kafkajs.js) without which exactly-once does not
 * hold, each with its patch's first line. The other two (eosManager.diff, coordinator lookups;
 * requestQueue.diff, no idle 1 ms timer per connection) are performance patches and not required here.
 */
const KAFKAJS_FIXES = [
  // read_committed consumers got records of aborted transactions when transactions interleave on a partition.
  { file: 'kafkajs/src/consumer/filterAbortedMessages.js', marker: '// tao-patch: read_committed', what: 'read_committed fix' },
  // A produce retried across a leader move skipped some partitions and wrote others twice.
  { file: 'kafkajs/src/producer/sendMessages.js', marker: '// tao-patch: produce retries', what: 'produce-retry fix' },
];

/**
 * kafkajs 2.2.4 breaks exactly-once in two places (patches/README.md): its read_committed filter
 * and its produce retries across a leader change; `npm install` patches both files
 * (scripts/patch-kafkajs.js). Without the fixes exactly-once does not hold, so no client is built.
 */
function assertKafkajsFixes(): void {
  if (kafkajsFixesChecked) return;
  for (const { file, marker, what } of KAFKAJS_FIXES) {
    const path = createRequire(import.meta.url).resolve(file);
    if (!readFileSync(path, 'utf8').startsWith(marker)) {
      throw new ConfigError(
        `kafkajs is installed without the ${what} (${path}): run \`npm install\` (or \`node scripts/patch-kafkajs.js\`) in the project; installing with --ignore-scripts skips it`,
      );
    }
  }
  kafkajsFixesChecked = true;
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
  const { errorCodes } = createRequire(import.meta.url)('kafkajs/src/protocol/error.js') as {
    errorCodes: Array<{ type: string; retriable: boolean; message: string }>;
  };
  const rebalancing = new Set(['REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP', 'ILLEGAL_GENERATION']);
  transientMessages = new Set(
    errorCodes.filter((e) => (e.retriable || rebalancing.has(e.type)) && e.type !== 'UNKNOWN_TOPIC_OR_PARTITION').map((e) => e.message),
  );
  return transientMessages;
}

/**
 * Connection churn kafkajs logs at ERROR while it retries (a broker starting or restarting). kafkajs
 * gives these only as message text, with no code or type, so they are matched by their start here,
 * in this one list (kafkajs 2.2.4: network/connection.js, cluster/brokerPool.js).
 */
const TRANSIENT_CONNECTION_MESSAGES = [
  'Connection error: ',
  'Connection timeout',
  'Failed to connect to seed broker',
  'Failed to connect to broker, reconnecting',
];

/**
 * Whether a kafkajs ERROR entry is start-up or rebalance churn that kafkajs retries by itself: a
 * coordinator not yet elected, a group rebalancing, a leader moving, a broker not answering yet. These
 * go to debug; what persists shows in this runtime's own lines (waiting for kafka, consumer restarts).
 */
export function isTransientKafkaLog(entry: Pick<LogEntry, 'log'>): boolean {
  const { message, error } = entry.log as { message: string; error?: unknown };
  if (typeof error === 'string' && transientProtocolMessages().has(error)) return true;
  // A producer's send it retries (kafkajs logs only retriable errors and closed connections under
  // this prefix): a transaction's coordinator still writing the previous one's markers, a leader
  // moving. A send that runs out of retries fails its transaction, which this runtime reports.
  const sent = message.startsWith(SEND_RETRIED) ? message.slice(SEND_RETRIED.length) : null;
  if (sent !== null && (transientProtocolMessages().has(sent) || sent === 'Closed connection')) return true;
  return TRANSIENT_CONNECTION_MESSAGES.some((m) => (sent ?? message).startsWith(m));
}

const SEND_RETRIED = 'Failed to send messages: ';

/**
 * The kafkajs `ssl` option: false without KAFKA_SSL; with KAFKA_SSL_CA_FILE, the system CAs plus
 * that file's (Node's `ca` replaces the default trust store, so the system ones are kept explicitly).
 * @throws ConfigError naming KAFKA_SSL_CA_FILE when the file cannot be read or holds no PEM certificate.
 */
export function kafkaTlsOptions(kafka: RuntimeConfig['kafka']): boolean | ConnectionOptions {
  if (!kafka.ssl) return false;
  if (kafka.sslCaFile === null && kafka.sslRejectUnauthorized) return true;
  const options: ConnectionOptions = { rejectUnauthorized: kafka.sslRejectUnauthorized };
  if (kafka.sslCaFile !== null) {
    let pem: string;
    try {
      pem = readFileSync(kafka.sslCaFile, 'utf8');
    } catch (err) {
      throw new ConfigError(`KAFKA_SSL_CA_FILE=${kafka.sslCaFile} cannot be read: ${errorMessage(err)}`);
    }
    if (!pem.includes('-----BEGIN CERTIFICATE-----'))
      throw new ConfigError(`KAFKA_SSL_CA_FILE=${kafka.sslCaFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    options.ca = [...rootCertificates, pem];
  }
  return options;
}

/** How long a connection to a broker (TCP and, with KAFKA_SSL, the TLS handshake) may take. */
export const KAFKA_CONNECTION_TIMEOUT_MS = 5000;

/**
 * Builds a kafkajs client from the runtime configuration; kafkajs' own logs go through `logger` as
 * JSON lines. `retries`: how often kafkajs retries a failed request or connection (default 8).
 * @throws ConfigError when KAFKA_SSL_CA_FILE cannot be used ({@link kafkaTlsOptions}).
 */
export function createKafka(config: RuntimeConfig, clientId: string, logger: Logger, tuning: { retries?: number } = {}): Kafka {
  assertKafkajsFixes();
  const options: KafkaConfig = {
    clientId,
    brokers: config.kafka.brokers,
    ssl: kafkaTlsOptions(config.kafka),
    logLevel: logLevel.WARN,
    logCreator: () => (entry: LogEntry) => {
      const { namespace, level, log } = entry;
      const fields = { component: `kafkajs.${namespace}`, broker: log.broker, error: log.error };
      if (level <= logLevel.ERROR && !isTransientKafkaLog(entry)) logger.warn(log.message, fields);
      else logger.debug(log.message, fields);
    },
    // kafkajs' default of 1 s includes the TLS handshake: on a loaded host (or a remote cluster)
    // that is too short, and a connection that would have succeeded reads as an unreachable broker.
    connectionTimeout: KAFKA_CONNECTION_TIMEOUT_MS,
    retry: { retries: tuning.retries ?? 8, initialRetryTime: 200, maxRetryTime: 5000 },
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
  if (options.transactionalId !== undefined)
    Object.assign(config, { transactionalId: options.transactionalId, maxInFlightRequests: 1, transactionTimeout: 60000 });
  return config;
}

/** A producer with {@link producerConfig}; the only place this project's code makes one (a unit test checks it). */
export function createProducer(kafka: Pick<Kafka, 'producer'>, options: ProducerOptions = {}): Producer {
  return kafka.producer(producerConfig(options));
}

/** Runs `work` with a connected producer (a command's few writes), and disconnects it however `work` ends. */
export async function withProducer<T>(kafka: Pick<Kafka, 'producer'>, work: (producer: Producer) => Promise<T>): Promise<T> {
  const producer = createProducer(kafka);
  await producer.connect();
  try {
    return await work(producer);
  } finally {
    await producer.disconnect();
  }
}

/**
 * Node's codes for a server certificate that does not verify (node:tls, from OpenSSL's
 * X509_V_ERR_* and the host name check). Waiting does not cure these: the client lacks the CA.
 */
const CERTIFICATE_ERROR_CODES: ReadonlySet<string> = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

// kafkajs spreads its error classes into module.exports, which Node's CommonJS export detection does not see as named exports.
const { KafkaJSConnectionError, KafkaJSSASLAuthenticationError } = kafkajs;
// Exported at run time, missing from kafkajs's type declarations.
const { KafkaJSConnectionClosedError } = kafkajs as unknown as { KafkaJSConnectionClosedError: new (...args: never[]) => Error };

/** The error itself or one of its causes (kafkajs wraps what its retrier gives up on). */
function findInChain<T>(err: unknown, match: (e: unknown) => e is T): T | undefined {
  for (
    let e = err, depth = 0;
    e !== undefined && e !== null && depth < 8;
    e = (e as { cause?: unknown; originalError?: unknown }).cause ?? (e as { originalError?: unknown }).originalError, depth++
  ) {
    if (match(e)) return e;
  }
  return undefined;
}

/**
 * A start-up failure that waiting cannot cure, as a one-line ConfigError: the brokers refused the
 * SASL credentials, or their TLS certificate does not verify. Null for anything else (a broker not
 * up yet, a connection closed). Never includes the password.
 */
export function kafkaSetupError(err: unknown, config?: Pick<RuntimeConfig['kafka'], 'sasl' | 'sslCaFile'>): ConfigError | null {
  const sasl = findInChain(err, (e): e is Error => e instanceof KafkaJSSASLAuthenticationError);
  if (sasl) {
    const who = config?.sasl ? `KAFKA_SASL_USERNAME=${config.sasl.username} (KAFKA_SASL_MECHANISM=${config.sasl.mechanism})` : 'this client';
    return new ConfigError(`Kafka refused the SASL login of ${who}: ${sasl.message}; check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD`);
  }
  const tls = findInChain(
    err,
    (e): e is Error & { code: string } => e instanceof KafkaJSConnectionError && CERTIFICATE_ERROR_CODES.has((e as { code?: string }).code ?? ''),
  );
  if (tls) {
    const hint =
      (config?.sslCaFile ?? null) === null
        ? "set KAFKA_SSL_CA_FILE to the PEM file of the CA that signed the brokers' certificates"
        : `KAFKA_SSL_CA_FILE=${config!.sslCaFile} is not the CA that signed the brokers' certificates`;
    return new ConfigError(`Kafka's TLS certificate does not verify (${tls.code}: ${tls.message}): ${hint}`);
  }
  return null;
}

/**
 * What a connection the broker closed right after it opened most often means: a listener that
 * expects TLS or SASL meeting a client without it (the broker just drops it). Said as a hint, not
 * a verdict: a broker shutting down closes connections too, so this keeps waiting.
 */
function closedConnectionHint(err: unknown, config?: Pick<RuntimeConfig['kafka'], 'ssl' | 'sasl'>): string {
  if (!config || !findInChain(err, (e): e is Error => e instanceof KafkaJSConnectionClosedError)) return '';
  if (!config.ssl) return ' (the broker closed the connection: if its listener is SSL or SASL_SSL, set KAFKA_SSL=true)';
  if (!config.sasl)
    return ' (the broker closed the connection: if its listener is SASL_SSL, set KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD)';
  return '';
}

/**
 * Resolves once the cluster answers a metadata request, so that a process started while the broker
 * is down (a supervisor restarting it during a broker restart, say) waits instead of failing its
 * start-up. Says so in one line when the first attempt fails (later attempts log at debug). Each
 * attempt is one connection try of a client of its own (no kafkajs retries inside it), once a second,
 * for up to TAO_STARTUP_WAIT_MS (`config.kafka.startupWaitMs`). Once the cluster answers, checks that
 * every broker is Kafka 3.9 or later (TAO_KAFKA_MIN_VERSION_CHECK, runtime/broker-version.ts).
 * @throws ConfigError at once, without waiting, when the brokers refuse the SASL credentials or their
 *   TLS certificate does not verify ({@link kafkaSetupError}), or when a broker is older than Kafka
 *   3.9 and TAO_KAFKA_MIN_VERSION_CHECK is `refuse` (the default).
 * @throws TransientError when the cluster is still unreachable after `timeoutMs`; when the broker
 *   closed the connection and TLS or SASL is off, the message says which setting may be missing.
 */
export async function waitForKafka(config: RuntimeConfig, logger: Logger): Promise<void> {
  const timeoutMs = config.kafka.startupWaitMs;
  // This loop is the retry: kafkajs's own retries (a client-wide setting) would hide a certificate failure for ~20 s.
  // Its failures are reported by this function's own lines; kafkajs's lines about them go to debug.
  const quiet: Logger = {
    debug: (msg, fields) => logger.debug(msg, fields),
    info: (msg, fields) => logger.info(msg, fields),
    warn: (msg, fields) => logger.debug(msg, fields),
    error: (msg, fields) => logger.debug(msg, fields),
    child: (fields) => logger.child(fields),
  };
  const kafka = createKafka(config, 'tao-startup-check', quiet, { retries: 0 });
  const started = Date.now();
  let waiting = false;
  for (;;) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      await admin.describeCluster();
      await checkBrokerVersion(kafka, config.kafka.minVersionCheck, logger);
      if (waiting) logger.info('kafka reachable', { waited_ms: Date.now() - started });
      return;
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      const setup = kafkaSetupError(err, config.kafka);
      if (setup) throw setup;
      const error = `${errorMessage(err)}${closedConnectionHint(err, config.kafka)}`;
      if (Date.now() - started >= timeoutMs)
        throw new TransientError(`Kafka unreachable for ${Math.round((Date.now() - started) / 1000)} s (TAO_STARTUP_WAIT_MS=${timeoutMs}): ${error}`);
      if (!waiting) logger.warn('waiting for kafka', { up_to_s: Math.round(timeoutMs / 1000), setting: 'TAO_STARTUP_WAIT_MS', error });
      else logger.debug('still waiting for kafka', { waited_ms: Date.now() - started, error });
      waiting = true;
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
}
