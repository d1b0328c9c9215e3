/**
 * The `tao tail` and `tao status` commands (wired in cli/main.ts). Both read the cluster named by
 * KAFKA_BROKERS / SCHEMA_REGISTRY_URL and the namespace TAO_NAMESPACE.
 *
 *   tao tail [--thought <id or prefix>] [--summary-s 5]
 *   tao status [--json] [--timeout-s 15]      stage endpoints: TAO_STATUS_ENDPOINTS (comma-separated)
 */
import { AvroCodec } from '../runtime/codec.ts';
import { commandFlags, usageError } from '../runtime/command-flags.ts';
import { isSet, loadRuntimeConfig, setting } from '../runtime/config.ts';
import { createKafka } from '../runtime/kafka.ts';
import { createLogger } from '../runtime/log.ts';
import { DEFAULT_STATUS_ENDPOINTS, collectStatus, renderStatus } from './status.ts';
import { TAIL_TOPICS, startTail } from './tail.ts';

import { STATUS_USAGE, TAIL_USAGE } from './usage.ts';

export { STATUS_USAGE, TAIL_USAGE } from './usage.ts';

/**
 * `tao tail`: prints a line per committed step as runs progress and a summary every `--summary-s`
 * seconds, until SIGINT or SIGTERM; then prints a last summary and resolves 0. Usage errors: 2.
 */
export async function tailCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = commandFlags(argv, { thought: { type: 'string' }, 'summary-s': { type: 'string', default: '5' } }, TAIL_USAGE);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const summarySeconds = Number(values['summary-s']);
  if (!Number.isFinite(summarySeconds) || summarySeconds < 0) {
    return usageError(`--summary-s must be a number of seconds >= 0, got "${values['summary-s']}"`, TAIL_USAGE);
  }
  const config = loadRuntimeConfig(env);
  const logger = cliLogger(env);
  const codec = AvroCodec.create(config);
  const kafka = createKafka(config, 'tao-tail', logger);
  const write = (line: string) => process.stdout.write(`${line}\n`);
  const tail = await startTail(kafka, codec, { thought: values.thought, summaryEveryMs: summarySeconds * 1000, write });
  write(
    `tailing ${TAIL_TOPICS.map((t) => codec.topics.name(t)).join(', ')} from the end (read_committed)${values.thought ? ` for runs ${values.thought}*` : ''}; Ctrl-C to stop`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await tail.stop();
  return 0;
}

/**
 * `tao status`: consumer lag per group and partition, runs in flight, breaker states and dead
 * letters, as text or (`--json`) as one JSON document. Resolves 0 once printed; 2 on a usage error.
 * Unreachable stage endpoints are reported in the output; an unreachable broker is an error.
 */
export async function statusCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = commandFlags(argv, { json: { type: 'boolean', default: false }, 'timeout-s': { type: 'string', default: '15' } }, STATUS_USAGE);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const timeoutSeconds = Number(values['timeout-s']);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
    return usageError(`--timeout-s must be a positive number of seconds, got "${values['timeout-s']}"`, STATUS_USAGE);
  }
  const config = loadRuntimeConfig(env);
  const logger = cliLogger(env);
  const report = await collectStatus({
    kafka: createKafka(config, 'tao-status', logger),
    codec: AvroCodec.create(config),
    logger,
    endpoints: statusEndpoints(env),
    readTimeoutMs: timeoutSeconds * 1000,
  });
  console.log(values.json ? JSON.stringify(report, null, 2) : renderStatus(report));
  return 0;
}

/** The stage ops endpoints `status` asks for /health: TAO_STATUS_ENDPOINTS, or the default stage ports. */
export function statusEndpoints(env: NodeJS.ProcessEnv): string[] {
  const urls = setting(env, 'TAO_STATUS_ENDPOINTS');
  return urls?.length ? urls : DEFAULT_STATUS_ENDPOINTS;
}

/** Diagnostics (kafkajs warnings) go to stderr, so stdout holds only what the command prints. */
function cliLogger(env: NodeJS.ProcessEnv) {
  return createLogger(
    { component: 'cli' },
    { level: isSet(env, 'TAO_LOG_LEVEL') ? setting(env, 'TAO_LOG_LEVEL') : 'error', write: (line) => process.stderr.write(`${line}\n`) },
  );
}
