import { buildTask, submitTasks } from '../client/tasks.ts';
import { watchRecords } from '../client/watch.ts';
import * as infra from '../infra/local.ts';
import { DEFAULT_OPS_PORTS, STAGES } from '../processors/wiring/index.ts';
import { AvroCodec } from '../runtime/codec.ts';
import { isSet, loadRuntimeConfig, setting } from '../runtime/config.ts';
import { createKafka, createProducer } from '../runtime/kafka.ts';
import { createLogger } from '../runtime/log.ts';
import type { Outcome } from '../schemas/types.gen.ts';
import { applyCatalog } from '../runtime/apply-catalog.ts';
import { spawnStage, stopAll, waitForHttpOk, type StageProcess } from './processes.ts';
import { startModelSim } from '../model-sim/server.ts';
import { describeRecord } from '../observability/render.ts';

/** One ticket per intent of the demo domain (docs/DEMO-DOMAIN.md), in English and Chinese, plus two the loop must not guess. */
export const SAMPLE_TASKS = [
  '我的订单 O-12345678 到哪了',
  'Where is my order? My e-mail is ada.lovelace@example.com',
  'I want a refund for order O-12345678',
  '请给我发票 INV-2024-0042 的副本',
  "I can't log in, my email is li.lei@example.com",
  'payments 服务是不是挂了',
  "What's the status of expense claim EC-123456?",
  'Where is my order? It never arrived.',
  'Tell me a joke about penguins',
];

/**
 * `tao demo`: starts local Kafka and the registry unless KAFKA_BROKERS is set, applies the topics,
 * runs the tool server and every stage as separate processes (Thought with the intent-router planner),
 * submits a ticket per intent of the demo domain, prints each step as it is committed and every
 * outcome, then stops what it started.
 */
export interface DemoOptions {
  keepInfra: boolean;
  planner: 'router' | 'react';
  /** react only: `local`, the real open-weights model `tao model up` serves; `sim`, the scripted simulator. */
  model: 'local' | 'sim';
  /** react only: how the model's turns ask for tool calls (TAO_LLM_TOOL_CALLS). */
  toolCalls: 'native' | 'json_schema';
}

export async function runDemo({ keepInfra, planner, model, toolCalls }: DemoOptions): Promise<number> {
  // The demo routes tickets with the intent router: to its flows (router), or to a skill whose turns
  // a model takes (react): by default the real local model, or the scripted simulator (--model sim).
  const env: NodeJS.ProcessEnv = { ...process.env, TAO_PLANNER: planner };
  const sim = planner === 'react' && model === 'sim' ? await startModelSim({ port: 0 }) : null;
  let localModel = false;
  if (sim) {
    env.TAO_LLM_BASE_URL = `${sim.url}/v1`;
    env.TAO_LLM_MODEL = 'tao-model-sim';
    console.log(`ReAct loop: the model's turns are answered by the scripted model SIMULATOR at ${sim.url} (model-sim/; not a model)`);
  } else if (planner === 'react') {
    console.log(
      'ReAct loop: starting the local model server (npx tao model up; the first run builds llama.cpp, about 8 minutes on 2 cores, and fetches the model, 1.1 GB)...',
    );
    const { modelUp, modelStatus } = await import('../infra/model/server.ts');
    localModel = !(await modelStatus({ env })).healthy;
    const endpoint = await modelUp({ env, log: (line) => console.log(`  ${line}`) });
    env.TAO_LLM_BASE_URL = endpoint.baseUrl;
    env.TAO_LLM_MODEL = endpoint.model;
    // A 1.5B model on 2 cores: a turn takes 20-40 s (longer on a busy machine), and the prompt must fit one server slot.
    env.TAO_LLM_TIMEOUT_MS ??= '180000';
    console.log(`ReAct loop: the model's turns are answered by ${endpoint.model} (a real open-weights model) at ${endpoint.baseUrl}, tool calls ${toolCalls}`);
  }
  if (planner === 'react') env.TAO_LLM_TOOL_CALLS = toolCalls;
  const waitMs = planner === 'react' && model === 'local' ? 900_000 : 120_000;
  let startedInfra = false;
  if (!isSet(env, 'KAFKA_BROKERS')) {
    console.log('KAFKA_BROKERS is not set: starting local Kafka and schema registry (npx tao infra up)...');
    const wasRunning = (await infra.status({ env })).every((c) => c.healthy);
    const endpoints = await infra.up({ env, log: (line) => console.log(`  ${line}`) });
    env.KAFKA_BROKERS = endpoints.brokers;
    env.SCHEMA_REGISTRY_URL = endpoints.registryUrl;
    startedInfra = !wasRunning;
  }
  console.log(`Kafka ${env.KAFKA_BROKERS}, schema registry ${setting(env, 'SCHEMA_REGISTRY_URL')}`);
  console.log('Applying topics...');
  await applyCatalog(env, (line) => console.log(`  ${line}`));

  const quiet = (name: string, line: string) => {
    // Stage logs are JSON lines; the demo shows warnings and errors, the records tell the rest.
    if (/"level":"(warn|error)"/.test(line) || !line.startsWith('{')) console.log(`  (${name}) ${line}`);
  };
  const processes: StageProcess[] = ['tools', ...STAGES].map((name) => spawnStage(name, env, quiet));
  const config = loadRuntimeConfig(env);
  const logger = createLogger({ command: 'demo' }, { level: 'error' });
  const kafka = createKafka(config, 'tao-demo', logger);
  const codec = AvroCodec.create(config);
  try {
    await waitForHttpOk(`http://127.0.0.1:${setting(env, 'TAO_TOOLS_PORT')}/health`, 30000, 'tool server');
    for (const stage of STAGES) await waitForHttpOk(`http://127.0.0.1:${DEFAULT_OPS_PORTS[stage]}/health`, 60000, `${stage} stage`);
    console.log(`Stages running (thought, action, observation: /health and /metrics on ports ${Object.values(DEFAULT_OPS_PORTS).join(', ')})\n`);

    await codec.register(['tasks']);
    const tasks = SAMPLE_TASKS.map((text, i) => buildTask({ text, source: 'demo', external_id: `demo-${Date.now()}-${i}` }));
    const pending = new Set(tasks.map((t) => t.thought_id));
    const outcomes: Outcome[] = [];
    let done!: () => void;
    const allDone = new Promise<void>((r) => (done = r));
    const watcher = await watchRecords(kafka, codec, {
      topics: ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'],
      from: 'end',
      onRecord: (r) => {
        if (!pending.has(r.key) && !outcomes.some((o) => o.thought_id === r.key)) return;
        for (const line of describeRecord(r)) console.log(line);
        if (r.topic === 'outcomes') {
          outcomes.push(r.value as unknown as Outcome);
          pending.delete(r.key);
          if (pending.size === 0) done();
        }
      },
    });
    const producer = createProducer(kafka);
    await producer.connect();
    await submitTasks(producer, codec, tasks);
    await producer.disconnect();
    console.log(`Submitted ${tasks.length} tasks.\n`);
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([allDone.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), waitMs)))]);
    clearTimeout(timer);
    await watcher.stop();
    console.log('\nOutcomes:');
    for (const o of outcomes) console.log(`  ${o.thought_id}  ${o.status.padEnd(15)} ${o.reason}`);
    const counts = new Map<string, number>();
    for (const o of outcomes) counts.set(o.status, (counts.get(o.status) ?? 0) + 1);
    console.log(
      `\n${[...counts].map(([status, n]) => `${n} ${status}`).join(', ')}${planner === 'react' ? " (a run is completed only with a final answer the gate accepted and its skill's grounding allows)" : ''}`,
    );
    if (!finished) {
      console.error(`${pending.size} run(s) had no outcome within ${waitMs / 1000} s: ${[...pending].join(', ')}`);
      return 1;
    }
    console.log("\nEvery line above is a committed Kafka record, keyed by its run's thought_id.");
    return 0;
  } finally {
    await stopAll(processes);
    await sim?.close();
    if (localModel && !keepInfra) {
      const { modelDown } = await import('../infra/model/server.ts');
      await modelDown({ env, log: (line) => console.log(`  ${line}`) });
    }
    if (startedInfra && !keepInfra) {
      console.log('Stopping the local Kafka and schema registry this demo started (keep them with --keep-infra)...');
      await infra.down({ env, log: (line) => console.log(`  ${line}`) });
    }
  }
}
