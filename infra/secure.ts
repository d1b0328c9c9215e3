/**
 * A private, secured local broker for tests and for trying the TLS/SASL settings: one Kafka node
 * (KRaft, broker+controller) whose only client listener is SASL_SSL with SCRAM-SHA-512, a CA and a
 * broker certificate made at start-up with `openssl`, the SCRAM users written into the KRaft
 * bootstrap metadata at format time, and optionally a second AxonOps schema registry behind HTTP
 * basic auth. It uses the jars and the registry binary cached by `infra/local.ts` (fetched on first
 * use), and lives in its own folder and ports, so it never touches the shared dev infra.
 *
 * | path under `dir` | content |
 * |---|---|
 * | `tls/ca.pem`, `tls/ca.key` | the CA (valid 7 days); clients trust `ca.pem` (KAFKA_SSL_CA_FILE) |
 * | `tls/broker.p12` | the broker's key and certificate (SAN IP:127.0.0.1, DNS:localhost), PKCS12 |
 * | `config/server.properties`, `config/schema-registry.yaml` | generated; mode 0600 (they hold the keystore and inter-broker passwords) |
 * | `data/kafka/` | the broker's log dirs |
 * | `logs/kafka.log`, `logs/schema-registry.log` | component output |
 *
 * Secrets: the client password reaches the broker only through `kafka-storage format --add-scram`
 * (on that short-lived process's command line, never in a file or log this module writes); the
 * registry password only through the registry's environment (SCHEMA_REGISTRY_BOOTSTRAP_PASSWORD).
 *
 * This file holds the options and {@link startSecureBroker} (the configuration it writes and the
 * order it starts things in); `secure/certificates.ts` makes the CA and the broker certificate,
 * `secure/processes.ts` runs, watches and stops the processes.
 */
import { randomBytes } from 'node:crypto';
import { appendFile, chmod, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { InfraError, LOG4J_PROPERTIES, SHORT_LIVED_JVM, defaultInfraOptions, ensureArtifacts, kafkaClusterId, storageFormatArgs } from './local.ts';
import { makeCertificates } from './secure/certificates.ts';
import { portFree } from './detached.ts';
import { kafkaHealth, registryHealth } from './health.ts';
import { run } from './process.ts';
import { type Started, freePort, startDetached, waitHealthy } from './secure/processes.ts';

/** Options of {@link startSecureBroker}. */
export interface SecureBrokerOptions {
  /** Folder for certificates, config, data and logs (created if missing; kept by `stop()` for post-mortems). */
  dir: string;
  /** The environment its tools (openssl, java, the registry) run with: the caller's. */
  env: NodeJS.ProcessEnv;
  /** Ports on 127.0.0.1. Each one left out is picked free from 20000-32767 (below Linux's ephemeral range). */
  ports?: { kafka?: number; controller?: number; registry?: number };
  /** SCRAM-SHA-512 user the clients log in as. Letters, digits and `._~-` only. */
  user: string;
  /** Its password. Letters, digits and `._~-` only, at least 8 characters. */
  password: string;
  /** When given, a schema registry also starts, requiring HTTP basic auth with these credentials. Same character rules. */
  registry?: { username: string; password: string };
  /** Where the Kafka jars and registry binary are cached. Default: the local infra's dir (TAO_INFRA_DIR or `<repo>/.infra`). */
  cacheDir?: string;
  /** Progress lines. Default: none. */
  log?: (line: string) => void;
}

/** A running secured broker (and registry); `stop()` ends both. */
export interface SecureBroker {
  /** The SASL_SSL bootstrap address, as for KAFKA_BROKERS. */
  brokers: string;
  /** The CA certificate (PEM) that signed the broker's certificate. */
  caPem: string;
  /** Path of that PEM file, as for KAFKA_SSL_CA_FILE. */
  caFile: string;
  /** The basic-auth registry's URL, when one was asked for. */
  registryUrl: string | null;
  /** Component logs (scan them for secrets, read them on failure). */
  logs: { kafka: string; registry: string | null };
  /** The runtime's variables that reach this broker (and registry) with the given credentials. */
  env: Record<string, string>;
  /** SIGTERM to each component's process group, SIGKILL after 20 s; resolves when they are gone. Idempotent. */
  stop(): Promise<void>;
}

const SAFE_SECRET = /^[A-Za-z0-9._~-]+$/;

/**
 * Starts a single-node Kafka whose client listener is SASL_SSL (SCRAM-SHA-512) and, if
 * `options.registry` is set, a registry behind basic auth; resolves once a client with the given
 * credentials and the CA gets cluster metadata (and the registry answers an authenticated
 * `GET /subjects`).
 *
 * The inter-broker listener is the same SASL_SSL listener (a broker user with a random password);
 * the KRaft controller listener is PLAINTEXT on 127.0.0.1 (it serves only controller requests).
 * No authorizer: every authenticated user may do everything.
 * @throws InfraError `CONFIG_INVALID` for bad credentials' characters or ports, `PORT_IN_USE`,
 *   `PREREQUISITE_MISSING` (`openssl`, `java`, and `mvn`/`go` on first use), `BUILD_FAILED`,
 *   `PROCESS_FAILED` (a component exited while starting; the message carries its log's tail) or
 *   `HEALTH_TIMEOUT` (90 s). A failed start stops whatever it had started.
 */
export async function startSecureBroker(options: SecureBrokerOptions): Promise<SecureBroker> {
  const log = options.log ?? (() => undefined);
  checkCredential('user', options.user, 1);
  checkCredential('password', options.password, 8);
  if (options.registry) {
    checkCredential('registry.username', options.registry.username, 1);
    checkCredential('registry.password', options.registry.password, 8);
  }
  const dir = resolve(options.dir);
  const d = {
    tls: join(dir, 'tls'),
    config: join(dir, 'config'),
    data: join(dir, 'data', 'kafka'),
    logs: join(dir, 'logs'),
  };
  await Promise.all(Object.values(d).map((p) => mkdir(p, { recursive: true })));
  const kafkaPort = options.ports?.kafka ?? (await freePort());
  const controllerPort = options.ports?.controller ?? (await freePort([kafkaPort]));
  const registryPort = options.registry ? (options.ports?.registry ?? (await freePort([kafkaPort, controllerPort]))) : undefined;
  for (const port of [kafkaPort, controllerPort, ...(registryPort === undefined ? [] : [registryPort])]) {
    if (!(await portFree(port)))
      throw new InfraError('PORT_IN_USE', `secure broker: port ${port} on 127.0.0.1 is in use; pass other ports (or none, to get free ones)`);
  }

  const artifacts = await ensureArtifacts({
    ...(options.cacheDir ? { dir: options.cacheDir } : { dir: defaultInfraOptions(options.env).dir }),
    log,
    env: options.env,
  });
  const tls = await makeCertificates(d.tls, options.env);
  log(`secure broker: CA and broker certificate made in ${d.tls}`);

  const brokerUser = 'tao-broker';
  const brokerPassword = randomBytes(18).toString('base64url');
  const serverProperties = join(d.config, 'server.properties');
  const log4j = join(d.config, 'log4j.properties');
  await writePrivate(
    serverProperties,
    [
      '# Generated by infra/secure.ts; holds the keystore and inter-broker passwords.',
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=SASL_SSL://127.0.0.1:${kafkaPort},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=SASL_SSL://127.0.0.1:${kafkaPort}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name=SASL_SSL',
      'sasl.enabled.mechanisms=SCRAM-SHA-512',
      'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
      `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="${brokerUser}" password="${brokerPassword}";`,
      'ssl.keystore.type=PKCS12',
      `ssl.keystore.location=${tls.keystore}`,
      `ssl.keystore.password=${tls.keystorePassword}`,
      `ssl.key.password=${tls.keystorePassword}`,
      'ssl.truststore.type=PEM',
      `ssl.truststore.location=${tls.caFile}`,
      'ssl.client.auth=none',
      `log.dirs=${d.data}`,
      'num.partitions=3',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=10',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'transaction.state.log.num.partitions=10',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=false',
    ].join('\n') + '\n',
  );
  await writeFile(log4j, LOG4J_PROPERTIES);

  const kafkaLog = join(d.logs, 'kafka.log');
  const classpath = ['-cp', `${artifacts.kafkaLibs}/*`, `-Dlog4j.configuration=file:${log4j}`];
  const clusterId = kafkaClusterId();
  // --add-scram writes the SCRAM credentials into the bootstrap metadata, so the users exist before
  // the broker's first request (the inter-broker login needs its own at start-up).
  const scram = (user: string, password: string) => ['--add-scram', `SCRAM-SHA-512=[name=${user},password=${password}]`];
  const extra = [...scram(options.user, options.password), ...scram(brokerUser, brokerPassword)];
  const format = await run('java', storageFormatArgs({ libs: artifacts.kafkaLibs, log4j, clusterId, serverProperties, extra }), { cwd: dir, env: options.env });
  await appendFile(
    kafkaLog,
    `=== infra/secure.ts: format ${d.data} (cluster id ${clusterId}, SCRAM-SHA-512 users ${options.user} and ${brokerUser}) ===\n${format.output}`,
  );
  if (format.code !== 0) throw new InfraError('PROCESS_FAILED', `secure broker: formatting ${d.data} failed (exit ${format.code}); see ${kafkaLog}`);

  const started: Started[] = [];
  const stop = async () => {
    await Promise.all(started.map((s) => s.stop()));
  };
  try {
    const kafka = await startDetached(
      'kafka',
      'java',
      [
        '-Xms256m',
        '-Xmx768m',
        '-XX:+UseG1GC',
        ...SHORT_LIVED_JVM,
        '-XX:+ExitOnOutOfMemoryError',
        '-Djava.awt.headless=true',
        ...classpath,
        'kafka.Kafka',
        serverProperties,
      ],
      dir,
      options.env,
      kafkaLog,
    );
    started.push(kafka);
    const brokers = `127.0.0.1:${kafkaPort}`;
    const sasl = { mechanism: 'scram-sha-512' as const, username: options.user, password: options.password };
    const health = () =>
      kafkaHealth({ clientId: 'tao-secure-health', brokers: [brokers], ssl: { ca: [tls.caPem] }, sasl, connectionTimeout: 2000 }, (ids) =>
        ids.length > 0 ? undefined : 'describeCluster returned no brokers',
      );
    await waitHealthy('kafka', kafka, kafkaLog, health, log);

    let registryUrl: string | null = null;
    let registryLog: string | null = null;
    if (options.registry && registryPort !== undefined) {
      registryUrl = `http://127.0.0.1:${registryPort}`;
      registryLog = join(d.logs, 'schema-registry.log');
      const yaml = join(d.config, 'schema-registry.yaml');
      await writePrivate(
        yaml,
        [
          '# Generated by infra/secure.ts. The user comes from SCHEMA_REGISTRY_BOOTSTRAP_* in the environment.',
          'server:',
          '  host: "127.0.0.1"',
          `  port: ${registryPort}`,
          'storage:',
          '  type: memory',
          'compatibility:',
          '  default_level: BACKWARD',
          'security:',
          '  auth:',
          '    enabled: true',
          '    methods: [basic]',
          '    basic:',
          '      realm: "tao"',
          'logging:',
          '  level: info',
          '  format: json',
        ].join('\n') + '\n',
      );
      // The binary reads SCHEMA_REGISTRY_* overrides: ours (a client's URL or credentials) must not leak in.
      const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(options.env).filter(([k]) => !k.startsWith('SCHEMA_REGISTRY_')));
      Object.assign(env, {
        SCHEMA_REGISTRY_BOOTSTRAP_ENABLED: 'true',
        SCHEMA_REGISTRY_BOOTSTRAP_USERNAME: options.registry.username,
        SCHEMA_REGISTRY_BOOTSTRAP_PASSWORD: options.registry.password,
      });
      const registry = await startDetached('schema-registry', artifacts.registryBin, ['-config', yaml], dir, env, registryLog);
      started.push(registry);
      const auth = `Basic ${Buffer.from(`${options.registry.username}:${options.registry.password}`).toString('base64')}`;
      await waitHealthy('schema-registry', registry, registryLog, () => registryHealth(registryUrl!, { authorization: auth }), log);
    }

    return {
      brokers,
      caPem: tls.caPem,
      caFile: tls.caFile,
      registryUrl,
      logs: { kafka: kafkaLog, registry: registryLog },
      env: {
        KAFKA_BROKERS: brokers,
        KAFKA_SSL: 'true',
        KAFKA_SSL_CA_FILE: tls.caFile,
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: options.user,
        KAFKA_SASL_PASSWORD: options.password,
        ...(registryUrl && options.registry
          ? { SCHEMA_REGISTRY_URL: registryUrl, SCHEMA_REGISTRY_USERNAME: options.registry.username, SCHEMA_REGISTRY_PASSWORD: options.registry.password }
          : {}),
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function checkCredential(name: string, value: string, minLength: number): void {
  if (value.length < minLength || !SAFE_SECRET.test(value)) {
    // Never echo the value: it may be a password.
    throw new InfraError(
      'CONFIG_INVALID',
      `secure broker: ${name} must be at least ${minLength} characters of letters, digits and ._~- (it is written into a SCRAM and a JAAS config)`,
    );
  }
}

async function writePrivate(file: string, text: string): Promise<void> {
  await writeFile(file, text, { mode: 0o600 });
  await chmod(file, 0o600);
}
