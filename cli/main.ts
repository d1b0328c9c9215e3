/**
 * The `tao` command. Every sub-command is wired here, in one visible place.
 *
 *   tao infra up|down|status          local Kafka + schema registry (see infra/README.md)
 *   tao topics apply                   create/update the catalog's topics, report drift
 *   tao run thought|action|observation|tools|ingress|callbacks|all
 *   tao run source <file>
 *   tao submit --text "..." [--source s] [--external-id id] [--reply <thought_id>] [--wait] [--timeout-s n]
 *   tao replay <thought_id> ...        rebuild, verify or fork a run from the log (replay/)
 *   tao dlq list|show|redrive          dead letters
 *   tao classify-error <file|->        the error classifier's verdict on a payload
 *   tao classify "<text>"              the intent router's decision on a task text
 *   tao skills list|show               the skills the model in the loop can run (cli/skills.ts)
 *   tao demo                           everything above, with sample tasks
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEFAULT_ERROR_MODEL_DIR, ERROR_ADOPTION_THRESHOLD, ErrorClassifier, adoptable } from '../processors/observation/classifier.ts';
import { DEFAULT_INTENT_MODEL_DIR, IntentRouter } from '../processors/thought/intent-router.ts';
import { buildTask, submitTasks } from '../client/tasks.ts';
import { watchRecords } from '../client/watch.ts';
import { callbackOptionsFromEnv, startCallbackDispatcher } from '../callbacks/dispatcher.ts';
import { startIngress } from '../ingress/server.ts';
import { dlqCommand, replayCommand } from '../replay/cli.ts';
import { statusCommand, tailCommand } from '../observability/cli.ts';
import { loadSourceConfig, sourceStage } from '../ingress/kafka-source.ts';
import * as infra from '../infra/local.ts';
import { DEFAULT_OPS_PORTS, STAGES, defineStage, type StageName } from '../processors/wiring.ts';
import { AvroCodec, createRegistry } from '../runtime/codec.ts';
import { loadRuntimeConfig } from '../runtime/config.ts';
import { createKafka, waitForKafka } from '../runtime/kafka.ts';
import { createLogger } from '../runtime/log.ts';
import { runStageProcess } from '../runtime/stage-process.ts';
import { startToolServer } from '../tool-server/server.ts';
import { runDemo } from './demo.ts';
import { skillsCommand } from './skills.ts';
import { DEFAULT_PORTS, spawnStage, stopAll } from './processes.ts';
import { applyCatalog } from '../topics/apply-catalog.ts';
import { ensureTopic } from '../topics/apply.ts';

const USAGE = `usage: tao <command>
  infra up|down|status        start, stop or check local Kafka + schema registry
  topics apply                create or update every topic of the catalog
  run <thought|action|observation|tools|ingress|callbacks|all>
  run source <file>           tasks from an existing topic, as declared in a sources/*.json file
  submit --text "..." [--source s] [--external-id id] [--reply thought_id] [--wait] [--timeout-s 60]
  tail [--thought <id>]       follow runs live: a line per step, a progress summary
  status [--json]             consumer lag, runs in flight, breakers, dead letters
  replay <thought_id> [--format terminal|json|html] [--out f] [--from ISO] [--to ISO] [--verify] [--fork <wave|step> [--set S.f=v] [--flow id@v]]
  dlq list|show|redrive       dead letters: list, show one, re-drive selected ones exactly once
  classify-error <file|->     the ONNX classifier's label and confidence for an error payload (JSON)
  classify "<text>"           the intent router's intent, confidence and slots for a task text (JSON)
  skills list|show [--json]   the skills (skills/<name>/SKILL.md): name@version, planner, intents, tools
  demo                        run the whole loop on sample tasks`;


/** Runs one `tao` command; resolves with the exit code, or -1 for a long-running process that exits on a signal. */
export async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  switch (command) {
    case 'infra':
      return infraCommand(sub);
    case 'topics':
      if (sub !== 'apply') return usage(`unknown topics command "${sub ?? ''}"`);
      return topicsApply();
    case 'run':
      return runCommand(sub, rest);
    case 'submit':
      return submitCommand(argv.slice(1));
    case 'tail':
      return tailCommand(argv.slice(1));
    case 'status':
      return statusCommand(argv.slice(1));
    case 'replay':
      return replayCommand(argv.slice(1));
    case 'dlq':
      return dlqCommand(argv.slice(1));
    case 'classify-error':
      return classifyErrorCommand(sub);
    case 'classify':
      return classifyCommand([sub, ...rest].filter((a): a is string => a !== undefined).join(' '));
    case 'skills':
      return skillsCommand(argv.slice(1));
    case 'demo':
      return runDemo([sub, ...rest].filter((a): a is string => a !== undefined));
    case undefined:
    case 'help':
    case '--help':
      console.log(USAGE);
      return 0;
    default:
      return usage(`unknown command "${command}"`);
  }
}

function usage(problem: string): number {
  console.error(`${problem}\n${USAGE}`);
  return 2;
}

async function infraCommand(sub: string | undefined): Promise<number> {
  const log = (line: string) => console.log(line);
  switch (sub) {
    case 'up': {
      const { brokers, registryUrl } = await infra.up({ log });
      console.log(`KAFKA_BROKERS=${brokers}\nSCHEMA_REGISTRY_URL=${registryUrl}`);
      return 0;
    }
    case 'down':
      await infra.down({ log });
      return 0;
    case 'status': {
      const components = await infra.status({ log });
      for (const c of components) console.log(`${c.name.padEnd(16)} ${c.running ? (c.healthy ? 'healthy' : 'running, NOT healthy') : 'stopped'}  ${c.url}${c.pid ? `  pid ${c.pid}` : ''}  log ${c.log}`);
      return components.every((c) => c.healthy) ? 0 : 1;
    }
    default:
      return usage(`unknown infra command "${sub ?? ''}"`);
  }
}

async function topicsApply(): Promise<number> {
  await applyCatalog();
  return 0;
}

async function runCommand(name: string | undefined, args: string[] = []): Promise<number> {
  if (name && (STAGES as readonly string[]).includes(name)) {
    const stage = name as StageName;
    await runStageProcess(stage, (metrics, logger) => defineStage(stage, process.env, logger, metrics), Number(process.env.TAO_OPS_PORT ?? DEFAULT_OPS_PORTS[stage]));
    return -1; // keeps running until a signal
  }
  if (name === 'tools') {
    const server = await startToolServer({ port: Number(process.env.TAO_TOOLS_PORT ?? DEFAULT_PORTS.tools) });
    console.log(JSON.stringify({ msg: 'tool server listening', url: server.url }));
    onSignal(() => server.close());
    return -1;
  }
  if (name === 'ingress') {
    const config = loadRuntimeConfig();
    const logger = createLogger({ stage: 'ingress', pid: process.pid });
    const kafka = createKafka(config, 'tao-ingress', logger);
    await waitForKafka(kafka, logger, config.kafka.startupWaitMs);
    const codec = AvroCodec.create(config);
    await codec.register(['tasks']);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 5 });
    await producer.connect();
    const ingress = await startIngress(
      { port: Number(process.env.TAO_INGRESS_PORT ?? DEFAULT_PORTS.ingress), host: '127.0.0.1', maxBodyBytes: 256 * 1024, maxInFlightRuns: Number(process.env.TAO_INGRESS_MAX_IN_FLIGHT ?? 1000) },
      { producer, codec, logger, kafka },
    );
    logger.info('ingress listening', { url: ingress.url });
    onSignal(async () => {
      await ingress.close();
      await producer.disconnect();
    });
    return -1;
  }
  if (name === 'source') {
    const file = args[0];
    if (!file) return usage('run source needs the source file: tao run source sources/<name>.json');
    const source = loadSourceConfig(file);
    const config = loadRuntimeConfig();
    const logger = createLogger({ stage: `source-${source.name}`, pid: process.pid });
    await ensureTopicExists(createKafka(config, 'tao-source-admin', logger), source.dlq ?? `${source.topic}.dlq`);
    await runStageProcess(`source-${source.name}`, async () => sourceStage(source, createRegistry(config)), Number(process.env.TAO_OPS_PORT ?? 9404));
    return -1;
  }
  if (name === 'callbacks') {
    const config = loadRuntimeConfig();
    const logger = createLogger({ stage: 'callbacks', pid: process.pid });
    const kafka = createKafka(config, 'tao-callbacks', logger);
    await waitForKafka(kafka, logger, config.kafka.startupWaitMs);
    const dispatcher = await startCallbackDispatcher(callbackOptionsFromEnv(), { kafka, codec: AvroCodec.create(config), logger, sessionTimeoutMs: config.kafka.sessionTimeoutMs });
    logger.info('callback dispatcher running');
    onSignal(() => dispatcher.stop());
    return -1;
  }
  if (name === 'all') {
    // The callback dispatcher needs a signing secret; it joins only when one is configured.
    const names = ['tools', ...STAGES, 'ingress', ...(process.env.TAO_CALLBACK_SECRET ? ['callbacks'] : [])];
    const processes = names.map((n) => spawnStage(n, process.env, (who, line) => console.log(`${who.padEnd(11)} | ${line}`)));
    onSignal(() => stopAll(processes));
    for (const p of processes) {
      void p.exited.then((code) => console.error(`${p.name} exited (${code})`));
    }
    return -1;
  }
  return usage(`unknown process "${name ?? ''}" (choose ${[...STAGES, 'tools', 'ingress', 'callbacks', 'all'].join(', ')})`);
}

/** Creates a topic if it does not exist yet (3 partitions, the broker's replication default). */
async function ensureTopicExists(kafka: ReturnType<typeof createKafka>, topic: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopic(admin, topic, 3);
  } finally {
    await admin.disconnect();
  }
}

function onSignal(stop: () => Promise<unknown>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => process.exit(0),
      (err: Error) => {
        console.error(`unclean stop: ${err.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

async function submitCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      text: { type: 'string' },
      source: { type: 'string', default: 'cli' },
      'external-id': { type: 'string' },
      reply: { type: 'string' },
      wait: { type: 'boolean', default: false },
      'timeout-s': { type: 'string', default: '60' },
    },
  });
  if (!values.text) return usage('submit needs --text "..."');
  const config = loadRuntimeConfig();
  const logger = createLogger({ command: 'submit' }, { write: (line) => process.stderr.write(line + '\n') });
  const kafka = createKafka(config, 'tao-submit', logger);
  const codec = AvroCodec.create(config);
  await codec.register(['tasks']);
  const task = buildTask({ text: values.text, source: values.source, external_id: values['external-id'] ?? null, thought_id: values.reply });
  let outcome: Promise<Record<string, unknown>> | null = null;
  let watcher: { stop(): Promise<void> } | null = null;
  if (values.wait) {
    let resolve!: (v: Record<string, unknown>) => void;
    outcome = new Promise((r) => (resolve = r));
    watcher = await watchRecords(kafka, codec, { topics: ['outcomes'], from: 'end', onRecord: (r) => r.key === task.thought_id && resolve(r.value) });
  }
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    await submitTasks(producer, codec, [task]);
  } finally {
    await producer.disconnect();
  }
  if (!outcome) {
    console.log(JSON.stringify({ thought_id: task.thought_id, task_id: task.task_id }));
    return 0;
  }
  const timeoutMs = Number(values['timeout-s']) * 1000;
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([outcome, new Promise<null>((r) => (timer = setTimeout(() => r(null), timeoutMs)))]);
  clearTimeout(timer);
  await watcher?.stop();
  if (!result) {
    console.error(`no outcome for ${task.thought_id} within ${values['timeout-s']} s (are the stages running? try: npx tao run all)`);
    return 1;
  }
  console.log(JSON.stringify(result));
  return result.status === 'completed' ? 0 : 1;
}

async function classifyErrorCommand(source: string | undefined): Promise<number> {
  if (!source) return usage('classify-error needs a file, or - for standard input');
  const text = source === '-' ? readFileSync(0, 'utf8') : readFileSync(source, 'utf8');
  const classifier = await ErrorClassifier.load(process.env.TAO_ERROR_MODEL_DIR ?? DEFAULT_ERROR_MODEL_DIR);
  try {
    const c = await classifier.classify(text);
    console.log(JSON.stringify({ ...c, adopted: adoptable(c), threshold: ERROR_ADOPTION_THRESHOLD }));
  } finally {
    await classifier.close();
  }
  return 0;
}

async function classifyCommand(text: string): Promise<number> {
  if (!text.trim()) return usage('classify needs the task text: tao classify "where is my order O-12345678"');
  const router = await IntentRouter.load(process.env.TAO_INTENT_MODEL_DIR ?? DEFAULT_INTENT_MODEL_DIR);
  try {
    console.log(JSON.stringify(await router.route(text)));
  } finally {
    await router.close();
  }
  return 0;
}
