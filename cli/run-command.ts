/**
 * `tao run <name>`: starts one process of the product in this process: a stage, the demo tool
 * server, the HTTP ingress, the callback dispatcher, the scheduler, a Kafka source, or all of them
 * as separate processes (`tao run all`). Each loads only its own modules.
 */
import { DEFAULT_OPS_PORTS, STAGES, type StageName } from '../processors/stages.ts';
import { isSet, loadRuntimeConfig, setting } from '../runtime/config.ts';
import type { createKafka } from '../runtime/kafka.ts';
import { spawnStage, stopAll } from './processes.ts';
import { onSignal } from './signals.ts';
import { RUN_NAMES, usage } from './usage.ts';

/** Runs `tao run <name> [args]`; resolves with -1 (runs until a signal), or 2 for a usage error (`text` is the usage printed). */
export async function runCommand(name: string | undefined, args: string[], applyTopics: boolean, text: string): Promise<number> {
  // Each process loads only its own modules: a stage does not load the ingress, the tool server no ONNX.
  if (name !== 'source' && args.length) return usage(`run ${name} takes no other arguments (got ${args.join(' ')})`, text);
  if (name && (STAGES as readonly string[]).includes(name)) {
    const stage = name as StageName;
    const [{ defineStage }, { runStageProcess }] = await Promise.all([import('../processors/wiring/index.ts'), import('../runtime/stage-process.ts')]);
    await runStageProcess(
      stage,
      (metrics, logger) => defineStage(stage, process.env, logger, metrics),
      setting(process.env, 'TAO_OPS_PORT') ?? DEFAULT_OPS_PORTS[stage],
      { env: process.env, applyTopics },
    );
    return -1; // keeps running until a signal
  }
  if (name === 'tools') {
    const { startToolServer } = await import('../tool-server/server.ts');
    const server = await startToolServer({ port: setting(process.env, 'TAO_TOOLS_PORT'), host: setting(process.env, 'TAO_BIND_HOST') });
    console.log(JSON.stringify({ msg: 'tool server listening', url: server.url }));
    onSignal(() => server.close());
    return -1;
  }
  if (name === 'ingress') {
    const [
      { ingressAuthFromEnv, webhookOptionsFromEnv },
      { startIngress },
      { AvroCodec },
      { createKafka, createProducer, waitForKafka },
      { createLogger },
      { prepareCatalog },
      { a2aSkillsFrom },
      { skillsOptionsFromEnv },
      { DEFAULT_CATALOG_DIR },
      { editChecks },
    ] = await Promise.all([
      import('../ingress/config.ts'),
      import('../ingress/server.ts'),
      import('../runtime/codec.ts'),
      import('../runtime/kafka.ts'),
      import('../runtime/log.ts'),
      import('../runtime/catalog-check.ts'),
      import('../ingress/a2a/card.ts'),
      import('../processors/thought/skills-config.ts'),
      import('../tools/catalog.ts'),
      import('../processors/wiring/index.ts'),
    ]);
    const config = loadRuntimeConfig(process.env);
    // The agent card's skills, checked against the tool catalog as Thought checks them (a ConfigError otherwise).
    const skills = a2aSkillsFrom(skillsOptionsFromEnv(process.env).dir, setting(process.env, 'TAO_TOOL_CATALOG_DIR') ?? DEFAULT_CATALOG_DIR, process.env);
    // Keys (or the refusal to run open) are settled before anything connects.
    const auth = ingressAuthFromEnv(process.env, config.bindHost);
    // An approver's edit is checked against the tools' contracts and the skills' policies, as Thought checks it.
    const edits = await editChecks(process.env);
    const logger = createLogger({ stage: 'ingress', pid: process.pid }, { level: setting(process.env, 'TAO_LOG_LEVEL') });
    const kafka = createKafka(config, 'tao-ingress', logger);
    await waitForKafka(config, logger);
    await prepareCatalog(kafka, config, { topics: ['tasks'] }, { apply: applyTopics, print: (line) => logger.info('topics apply', { line }) });
    const codec = AvroCodec.create(config);
    await codec.register(['tasks']);
    const producer = createProducer(kafka, { maxInFlightRequests: 5 });
    await producer.connect();
    const ingress = await startIngress(
      {
        port: setting(process.env, 'TAO_INGRESS_PORT'),
        host: config.bindHost,
        maxBodyBytes: 256 * 1024,
        maxInFlightRuns: setting(process.env, 'TAO_INGRESS_MAX_IN_FLIGHT'),
        maxStreams: setting(process.env, 'TAO_INGRESS_MAX_STREAMS'),
        streamHeartbeatMs: setting(process.env, 'TAO_INGRESS_STREAM_HEARTBEAT_S') * 1000,
        auth,
        webhooks: webhookOptionsFromEnv(process.env),
        a2a: { skills, publicUrl: setting(process.env, 'TAO_A2A_PUBLIC_URL')?.replace(/\/+$/, '') },
      },
      { producer, codec, logger, kafka, edits },
    );
    logger.info('ingress listening', { url: ingress.url });
    onSignal(async () => {
      await ingress.close();
      await producer.disconnect();
    });
    return -1;
  }
  if (name === 'scheduler') return (await import('../scheduler/cli.ts')).runScheduler(applyTopics, onSignal);
  if (name === 'source') {
    const [{ loadSourceConfig, sourceStage }, { createRegistry }, { createKafka }, { createLogger }, { runStageProcess }] = await Promise.all([
      import('../ingress/kafka-source.ts'),
      import('../runtime/codec.ts'),
      import('../runtime/kafka.ts'),
      import('../runtime/log.ts'),
      import('../runtime/stage-process.ts'),
    ]);
    const file = args[0];
    if (!file || args.length !== 1) return usage('run source needs one source file: tao run source sources/<name>.json', text);
    const source = loadSourceConfig(file);
    const config = loadRuntimeConfig(process.env);
    const logger = createLogger({ stage: `source-${source.name}`, pid: process.pid }, { level: setting(process.env, 'TAO_LOG_LEVEL') });
    await ensureTopicExists(createKafka(config, 'tao-source-admin', logger), source.dlq ?? `${source.topic}.dlq`);
    await runStageProcess(`source-${source.name}`, async () => sourceStage(source, createRegistry(config)), setting(process.env, 'TAO_OPS_PORT') ?? 9404, {
      env: process.env,
      applyTopics,
    });
    return -1;
  }
  if (name === 'callbacks') {
    const [{ callbackOptionsFromEnv }, { startCallbackDispatcher }, { AvroCodec }, { createKafka, waitForKafka }, { createLogger }, { prepareCatalog }] =
      await Promise.all([
        import('../callbacks/config.ts'),
        import('../callbacks/dispatcher.ts'),
        import('../runtime/codec.ts'),
        import('../runtime/kafka.ts'),
        import('../runtime/log.ts'),
        import('../runtime/catalog-check.ts'),
      ]);
    const config = loadRuntimeConfig(process.env);
    const logger = createLogger({ stage: 'callbacks', pid: process.pid }, { level: setting(process.env, 'TAO_LOG_LEVEL') });
    const kafka = createKafka(config, 'tao-callbacks', logger);
    await waitForKafka(config, logger);
    await prepareCatalog(kafka, config, { topics: ['outcomes'] }, { apply: applyTopics, print: (line) => logger.info('topics apply', { line }) });
    const dispatcher = await startCallbackDispatcher(callbackOptionsFromEnv(process.env), {
      kafka,
      codec: AvroCodec.create(config),
      logger,
      sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    });
    logger.info('callback dispatcher running');
    onSignal(() => dispatcher.stop());
    return -1;
  }
  if (name === 'all') {
    const [{ ingressAuthFromEnv }, { createKafka, waitForKafka }, { createLogger }, { WHOLE_CATALOG, prepareCatalog }] = await Promise.all([
      import('../ingress/config.ts'),
      import('../runtime/kafka.ts'),
      import('../runtime/log.ts'),
      import('../runtime/catalog-check.ts'),
    ]);
    // Checked (or applied) once here, so that missing topics give one line instead of one per process.
    const config = loadRuntimeConfig(process.env);
    // The ingress would refuse to start without keys on this address: say so before starting anything.
    ingressAuthFromEnv(process.env, config.bindHost);
    // So would Action, with a planner whose every model turn it would dead-letter.
    (await import('../processors/wiring/index.ts')).actionCatalog(process.env);
    const logger = createLogger({ command: 'run all' }, { level: setting(process.env, 'TAO_LOG_LEVEL') });
    const kafka = createKafka(config, 'tao-run-all', logger);
    await waitForKafka(config, logger);
    await prepareCatalog(kafka, config, WHOLE_CATALOG, { apply: applyTopics, print: (line) => console.log(`${'topics'.padEnd(11)} | ${line}`) });
    // The callback dispatcher needs a signing secret; it joins only when one is configured.
    const names = ['tools', ...STAGES, 'ingress', 'scheduler', ...(isSet(process.env, 'TAO_CALLBACK_SECRET') ? ['callbacks'] : [])];
    const processes = names.map((n) => spawnStage(n, process.env, (who, line) => console.log(`${who.padEnd(11)} | ${line}`)));
    onSignal(() => stopAll(processes));
    for (const p of processes) {
      void p.exited.then((code) => console.error(`${p.name} exited (${code})`));
    }
    return -1;
  }
  return usage(`unknown process "${name ?? ''}" (choose ${[...RUN_NAMES, 'source', 'model-sim', 'mcp-tools'].join(', ')})`, text);
}

/** Creates a topic if it does not exist yet (3 partitions, the broker's replication default). */
async function ensureTopicExists(kafka: ReturnType<typeof createKafka>, topic: string): Promise<void> {
  const { ensureTopic } = await import('../topics/apply.ts');
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopic(admin, topic, 3);
  } finally {
    await admin.disconnect();
  }
}
