/** `tao run scheduler`: the composition root of the scheduler of approval time-outs and run deadlines (scheduler/scheduler.ts). */
import { loadRuntimeConfig, setting } from '../runtime/config.ts';

/** Starts the scheduler; returns -1 (it runs until a signal, which `onSignal` wires to its stop). */
export async function runScheduler(applyTopics: boolean, onSignal: (stop: () => Promise<unknown>) => void): Promise<number> {
  const [{ startScheduler }, { AvroCodec }, { createKafka, createProducer, waitForKafka }, { createLogger }, { prepareCatalog }] = await Promise.all([
    import('./scheduler.ts'),
    import('../runtime/codec.ts'),
    import('../runtime/kafka.ts'),
    import('../runtime/log.ts'),
    import('../runtime/catalog-check.ts'),
  ]);
  const config = loadRuntimeConfig(process.env);
  const logger = createLogger({ stage: 'scheduler', pid: process.pid }, { level: setting(process.env, 'TAO_LOG_LEVEL') });
  const kafka = createKafka(config, 'tao-scheduler', logger);
  await waitForKafka(config, logger);
  await prepareCatalog(kafka, config, { topics: ['tasks', 'thoughtRuns'] }, { apply: applyTopics, print: (line) => logger.info('topics apply', { line }) });
  const codec = AvroCodec.create(config);
  await codec.register(['tasks', 'thoughtRuns']);
  const producer = createProducer(kafka);
  await producer.connect();
  const scheduler = await startScheduler(
    { kafka, codec, producer, logger },
    {
      tickMs: setting(process.env, 'TAO_SCHEDULER_TICK_MS'),
      parkedTtlMs: setting(process.env, 'TAO_PARKED_RUN_TTL'),
      observationDeadlineMs: setting(process.env, 'TAO_OBSERVATION_DEADLINE'),
    },
  );
  logger.info('scheduler running');
  onSignal(async () => {
    await scheduler.stop();
    await producer.disconnect();
  });
  return -1;
}
