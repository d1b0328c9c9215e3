/**
 * `tao ui`: the operator console's composition root. Reads the settings once, wires the feed (the
 * index rebuilt from the log), the actions (replay, dlq and status code) and the HTTP server, and
 * logs the rebuild's duration once the index is ready.
 */
import { parseArgs } from 'node:util';
import { apiKeysFromEnv } from '../ingress/config.ts';
import { statusEndpoints } from '../observability/cli.ts';
import { editChecks, thoughtConfig } from '../processors/wiring/index.ts';
import { verifyConfigsForRelease } from '../replay/run-release.ts';
import { AvroCodec } from '../runtime/codec.ts';
import { loadRuntimeConfig, setting } from '../runtime/config.ts';
import { createKafka } from '../runtime/kafka.ts';
import { createLogger, type Logger } from '../runtime/log.ts';
import { consoleActions } from './actions.ts';
import { decideConsoleAuth } from './auth.ts';
import { startFeed, type Feed } from './feed.ts';
import { startConsoleServer } from './server.ts';
import { UI_USAGE } from './usage.ts';

export { UI_USAGE } from './usage.ts';

/** A running console. */
export interface RunningConsole {
  url: string;
  feed: Feed;
  stop(): Promise<void>;
}

/**
 * Starts the console on `host:port` over the cluster `env` names.
 * @throws ConfigError for a bad setting, or a non-loopback bind without a console key.
 */
export async function startConsole(
  env: NodeJS.ProcessEnv,
  options: { host: string; port: number; readTimeoutMs: number; logger?: Logger },
): Promise<RunningConsole> {
  const config = loadRuntimeConfig(env);
  const logger = options.logger ?? createLogger({ component: 'console' });
  const auth = decideConsoleAuth(options.host, apiKeysFromEnv(env));
  const kafka = createKafka(config, 'tao-console', logger);
  const codec = AvroCodec.create(config);
  const feed = await startFeed({ kafka, codec, logger });
  const actions = consoleActions({
    kafka,
    codec,
    logger,
    verifyConfigs: (log) => verifyConfigsForRelease(log, env, { kafka, codec }),
    thoughtConfig: () => thoughtConfig(env),
    editChecks: () => editChecks(env),
    statusEndpoints: statusEndpoints(env),
    readTimeoutMs: options.readTimeoutMs,
  });
  const server = await startConsoleServer({ feed, actions, auth, logger }, options.host, options.port);
  logger.info('console listening', { url: server.url, auth: auth.mode, namespace: codec.topics.namespace, pid: process.pid });
  return {
    url: server.url,
    feed,
    async stop() {
      await server.close();
      await feed.stop();
    },
  };
}

/** `tao ui [--port N] [--host H]`: serves until `onSignal`'s stop; resolves with -1 (a long-running process), 2 on bad arguments. */
export async function uiCommand(argv: string[], onSignal: (stop: () => Promise<unknown>) => void, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: false,
      options: { port: { type: 'string' }, host: { type: 'string' }, 'timeout-s': { type: 'string', default: '60' } },
    });
  } catch (e) {
    process.stderr.write(`tao ui: ${(e as Error).message}\n${UI_USAGE}\n`);
    return 2;
  }
  const { values } = parsed;
  const port = values.port === undefined ? Number(setting(env, 'TAO_UI_PORT')) : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`tao ui: --port must be a whole number from 0 to 65535, got "${values.port}"\n${UI_USAGE}\n`);
    return 2;
  }
  const host = values.host ?? setting(env, 'TAO_UI_HOST');
  if (!/^[A-Za-z0-9.:-]+$/.test(host)) {
    process.stderr.write(`tao ui: --host must be a host name or IP address, got "${host}"\n${UI_USAGE}\n`);
    return 2;
  }
  const timeoutS = Number(values['timeout-s']);
  if (!(timeoutS > 0)) {
    process.stderr.write(`tao ui: --timeout-s must be a positive number, got "${values['timeout-s']}"\n${UI_USAGE}\n`);
    return 2;
  }
  const running = await startConsole(env, { host, port, readTimeoutMs: timeoutS * 1000 });
  process.stdout.write(`tao ui: the console is at ${running.url}/ (the index is being rebuilt from the log)\n`);
  onSignal(() => running.stop());
  return -1;
}
