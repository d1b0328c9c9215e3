import { AvroCodec } from './codec.ts';
import { loadRuntimeConfig } from './config.ts';
import { createKafka, waitForKafka } from './kafka.ts';
import { createLogger, type Logger } from './log.ts';
import { StageMetrics } from './metrics.ts';
import { startOpsServer } from './ops-server.ts';
import { StageRunner, type StageDefinition } from './processor.ts';
import { startTracing } from './tracing/spans.ts';
import { prepareCatalog } from './catalog-check.ts';

/**
 * Runs one stage as a process: waits for Kafka (TAO_STARTUP_WAIT_MS), checks that its topics and
 * schemas exist (or applies the catalog with `applyTopics`), registers its output schemas,
 * joins its consumer group, serves /health and /metrics on `opsPort` (bound to TAO_BIND_HOST), and on
 * SIGTERM/SIGINT finishes the batch in hand, commits, leaves the group, exports the trace spans still
 * queued and exits 0. Exits 1 if its consumer stops for good and cannot be rebuilt. Spans are exported
 * over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, as service `tao-<stage>` (runtime/tracing/spans.ts).
 * @throws ConfigError (before joining the group) when a topic or schema subject of the stage is missing.
 */
export async function runStageProcess(
  stage: string,
  define: (metrics: StageMetrics, logger: Logger) => Promise<StageDefinition>,
  opsPort: number,
  options: { env: NodeJS.ProcessEnv; applyTopics?: boolean },
): Promise<void> {
  const config = loadRuntimeConfig(options.env);
  const logger = createLogger({ stage, pid: process.pid }, { level: config.logLevel });
  // A bug that escapes every handler still ends in one JSON line a log pipeline can alert on (the
  // stack's frames without its message line, which the error field carries redacted).
  process.on('uncaughtException', (err) => {
    logger.error('uncaught error; exit 1 for the supervisor to restart this stage', {
      error: err,
      at: (err as Error | null)?.stack
        ?.split('\n')
        .slice(1, 9)
        .map((l) => l.trim()),
    });
    process.exit(1);
  });
  const metrics = new StageMetrics(`tao-${stage}`);
  const tracing = await startTracing(options.env, `tao-${stage}`, logger);
  const def = await define(metrics, logger);
  const kafka = createKafka(config, `tao-${def.stage}`, logger);
  const codec = AvroCodec.create(config);
  await waitForKafka(config, logger);
  const topics = [...def.inputs, ...def.outputs, ...(def.storeTopic ? [def.storeTopic] : []), ...(def.follows ?? [])];
  await prepareCatalog(
    kafka,
    config,
    { topics, deadLettered: def.inputs },
    { apply: options.applyTopics ?? false, print: (line) => logger.info('topics apply', { line }) },
  );
  await codec.register(def.outputs);
  // What the stage follows besides its inputs (the releases) is read before the first record is handled.
  const stopPrepared = def.prepare ? await def.prepare({ kafka, codec, logger }) : async () => undefined;
  const runner = new StageRunner(def, {
    kafka,
    codec,
    logger,
    metrics,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    // A consumer the runner could not rebuild (or a store tail that stopped) leaves a process that
    // consumes nothing: exit, so that a supervisor starts a fresh one, instead of staying up with
    // /health 503.
    onFatal: () => {
      logger.error('stopping: the consumer stopped for good; exit 1 for the supervisor to restart this stage');
      setTimeout(() => process.exit(1), 100);
    },
  });
  const ops = await startOpsServer(opsPort, metrics.registry, () => runner.health(), config.bindHost);
  await runner.start();
  logger.info('stage started', { group: codec.topics.group(def.stage), inputs: def.inputs.map((i) => codec.topics.name(i)), ops_port: ops.port });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { signal });
    Promise.all([runner.stop().then(stopPrepared), ops.close()])
      // After the runner's last commit, whose record spans are the last made.
      .then(() => tracing.shutdown())
      .then(
        () => process.exit(0),
        (err: Error) => {
          logger.error('unclean stop', { error: err });
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
