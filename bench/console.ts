/**
 * The operator console with many runs in the log: how long `tao ui` takes to rebuild its index,
 * how soon the runs page shows after that, and how much memory the process holds.
 *
 *   npm run bench:console [-- --runs 10000 --keep --no-build]
 *
 * In a fresh namespace on KAFKA_BROKERS, writes `--runs` runs' records as the loop would (per run:
 * a task, a model turn and a tool call as two waves of thought.requests, action.results and
 * observation.results, and a completed outcome: 8 records, Avro, the model request and answer at
 * realistic sizes; one run in ten in Chinese). No stage runs. Then spawns `node bin/tao.js ui
 * --port 0` on that namespace from the compiled dist/ (built first unless --no-build), as a user
 * runs it (it starts the console with its own node flags, bin/console-node-flags.json), and reports:
 *
 * - rebuild: the console's own "console index rebuilt from the log" line (its start to the end of
 *   the topics as they were when it started);
 * - first view: after the rebuild, from the start of the runs page's navigation in headless
 *   Chromium (the Debian chromium, through playwright-core) until its first 200 rows are drawn,
 *   as the page's own clock measures it (the time to open a tab is not counted), three times;
 * - RSS: the console's VmRSS after the rebuild and after the page view, and its peak (VmHWM).
 *
 * The topics are deleted afterwards unless --keep. Prints one JSON document.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
import { createProducer } from '../runtime/kafka.ts';
import { outcome, runState } from '../schemas/records.ts';
import type { ActionResult, ObservationResult, Task, ThoughtRequest } from '../schemas/types.gen.ts';
import { commandOptions, integerOption } from './lib/command-line.ts';
import { freshNamespace, REPO_ROOT } from './lib/harness.ts';
import { deleteNamespace } from './lib/phases.ts';

const USAGE = 'usage: npm run bench:console [-- --runs 10000 --keep --no-build]';
const values = commandOptions('bench:console', USAGE, {
  runs: { type: 'string', default: '10000' },
  keep: { type: 'boolean', default: false },
  'no-build': { type: 'boolean', default: false },
});
const runs = integerOption('bench:console', USAGE, values, 'runs', 1);

const status = (pid: number, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
const say = (line: string) => process.stderr.write(`bench:console: ${line}\n`);

if (!values['no-build']) {
  say('compiling (npm run build)');
  execFileSync('npm', ['run', 'build'], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}
const ns = await freshNamespace('bc', process.env);
say(
  `namespace ${ns.namespace}; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
try {
  const written = await writeRuns(runs);
  say(`wrote ${runs} runs (${written.records} records, ${(written.bytes / 1048576).toFixed(1)} MiB) in ${written.ms} ms`);
  const ui = spawn(process.execPath, [`${REPO_ROOT}bin/tao.js`, 'ui', '--port', '0'], {
    env: { ...ns.env, TAO_LOG_LEVEL: 'info', TAO_RUN_FROM: 'dist' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = createInterface({ input: ui.stdout! });
  createInterface({ input: ui.stderr! }).on('line', (l) => say(`ui: ${l}`));
  let url = '';
  let pid = 0; // the console's process (`tao ui` starts it with its node flags)
  const rebuildMs = await new Promise<number>((resolve, reject) => {
    ui.once('exit', (code) => reject(new Error(`tao ui exited (${code})`)));
    lines.on('line', (line) => {
      const at = /the console is at (\S+)\//.exec(line);
      if (at) url = at[1]!;
      if (line.includes('console listening')) pid = (JSON.parse(line) as { pid: number }).pid;
      if (line.includes('console index rebuilt from the log')) resolve((JSON.parse(line) as { ms: number }).ms);
    });
  });
  const afterRebuild = status(pid, 'VmRSS');
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  const views: number[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      await page.goto(`${url}/`);
      // Checked every animation frame; the page's clock starts with the navigation.
      const drawnAt = await page.waitForFunction(() => document.querySelectorAll('#runs tbody tr.run').length >= 200 && performance.now(), undefined, {
        timeout: 30000,
        polling: 'raf',
      });
      views.push(Math.round((await drawnAt.jsonValue()) as number));
      await page.close();
    }
  } finally {
    await browser.close();
  }
  const apiStarted = performance.now();
  const api = (await (await fetch(`${url}/api/runs?limit=200`)).json()) as { indexed: number; total: number };
  const apiMs = Math.round(performance.now() - apiStarted);
  const result = {
    runs,
    records: written.records,
    mib_written: Number((written.bytes / 1048576).toFixed(1)),
    indexed: api.indexed,
    rebuild_ms: rebuildMs,
    first_view_ms: views[0],
    later_views_ms: views.slice(1),
    api_runs_ms: apiMs,
    rss_mib_after_rebuild: Math.round(afterRebuild),
    rss_mib_after_views: Math.round(status(pid, 'VmRSS')),
    rss_mib_peak: Math.round(status(pid, 'VmHWM')),
    load_average: loadavg().map((l) => Number(l.toFixed(1))),
    cores: (await import('node:os')).availableParallelism(),
  };
  ui.kill('SIGTERM');
  console.log(JSON.stringify(result, null, 2));
} finally {
  if (!values.keep) await deleteNamespace(ns.kafka, (name) => name.startsWith(`${ns.namespace}.`));
}

/** Writes `n` runs' records in batches; resolves with how many records and bytes, and the time taken. */
async function writeRuns(n: number): Promise<{ records: number; bytes: number; ms: number }> {
  const started = Date.now();
  const producer = createProducer(ns.kafka);
  await producer.connect();
  let records = 0;
  let bytes = 0;
  try {
    const base = Date.now() - n * 1000;
    for (let from = 0; from < n; from += 250) {
      const batch = new Map<string, Array<{ key: string; value: Buffer; timestamp: string }>>();
      for (let i = from; i < Math.min(n, from + 250); i++) {
        for (const [topic, value, at] of runRecords(i, base + i * 1000)) {
          const buf = await ns.codec.encode(topic, value);
          bytes += buf.length;
          records++;
          const name = ns.codec.topics.name(topic);
          batch.set(name, [...(batch.get(name) ?? []), { key: (value as { thought_id: string }).thought_id, value: buf, timestamp: String(at) }]);
        }
      }
      await producer.sendBatch({ acks: -1, topicMessages: [...batch].map(([topic, messages]) => ({ topic, messages })) });
    }
  } finally {
    await producer.disconnect();
  }
  return { records, bytes, ms: Date.now() - started };
}

type Rec = ['tasks' | 'thoughtRequests' | 'actionResults' | 'observationResults' | 'outcomes', unknown, number];

/** One completed ReAct run: a model turn that calls orders.get, the tool call, and the outcome. */
function runRecords(i: number, at: number): Rec[] {
  const id = `bench-run-${String(i).padStart(6, '0')}`;
  const order = `O-${String(20000000 + i)}`;
  const text = i % 10 === 0 ? `我的订单 ${order} 到哪了？很着急。` : `Where is my order ${order}? It was a birthday present.`;
  const run = runState({
    task_id: `${id}-t`,
    task_text: text,
    planner: 'react',
    flow_id: 'react:order-status',
    plan_json: JSON.stringify({
      steps: [
        { id: 'M1', tool: 'model.chat' },
        { id: 'M1_1', tool: 'orders.get', depends_on: ['M1'] },
      ],
      output: {},
    }),
    planner_record: '{"intent":"order_status","confidence":0.99}',
    planner_kind: 'react',
    model_state_json: JSON.stringify({
      skill: 'order-status@1',
      turns: 1,
      tokens: 1277,
      turn_tokens: [{ turn: 1, system: 420, skill: 610, results: 0, history: 0, generation: 512, prompt: 1030 }],
    }),
    driver: 'react',
  });
  const messages = [
    { role: 'system', content: `Skill: order-status@1\n${'You resolve a customer-service ticket by calling the tools you are given. '.repeat(12)}` },
    { role: 'user', content: text },
  ];
  const modelInput = JSON.stringify({
    model: 'sim-1',
    messages,
    tools: ['orders__get', 'shipping__track', 'crm__find_customer'].map((name) => ({
      type: 'function',
      function: { name, description: `The ${name} tool.`, parameters: { type: 'object', properties: { order_id: { type: 'string' } } } },
    })),
    temperature: 0,
    max_tokens: 512,
  });
  const answer = JSON.stringify({
    id: `chatcmpl-${i}`,
    model: 'sim-1',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'orders__get', arguments: JSON.stringify({ order_id: order }) } }],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 1248, completion_tokens: 29, total_tokens: 1277 },
  });
  const waves: Array<[string, string, string, string]> = [
    ['M1', 'model.chat', modelInput, answer],
    ['M1_1', 'orders.get', JSON.stringify({ order_id: order }), JSON.stringify({ order_id: order, status: 'shipped', carrier: 'DHL', items: 2 })],
  ];
  const task: Task = {
    thought_id: id,
    task_id: `${id}-t`,
    kind: 'NEW',
    text,
    source: i % 3 === 0 ? 'jira' : 'github',
    external_id: `TICKET-${i}`,
    metadata: {},
    submitted_at_ms: at,
    decision: null,
    timer: null,
  };
  const out: Rec[] = [['tasks', task, at]];
  waves.forEach(([step, tool, input, raw], w) => {
    const iteration = w + 1;
    const t = at + 100 + w * 400;
    const key = `${id}:${iteration}:${step}`;
    out.push([
      'thoughtRequests',
      { thought_id: id, iteration, run, steps: [{ step_id: step, tool, input_json: input, idempotency_key: key, attempt: 1 }] } satisfies ThoughtRequest,
      t,
    ]);
    out.push([
      'actionResults',
      {
        thought_id: id,
        iteration,
        run,
        results: [
          {
            step_id: step,
            tool,
            input_json: input,
            idempotency_key: key,
            attempts: 1,
            status_code: 200,
            response_time_ms: 120,
            response_raw: raw,
            data_json: raw,
            error: null,
            fallback_from: null,
            fallback_reason: null,
            attempt_time_ms: 120,
          },
        ],
      } as ActionResult,
      t + 150,
    ]);
    out.push([
      'observationResults',
      {
        thought_id: id,
        iteration,
        run,
        verdicts: [
          {
            step_id: step,
            tool,
            valid: true,
            extracted_data_json: raw,
            confidence_score: 0.97,
            error_type: 'ok',
            audit_trail: [
              { name: 'status', passed: true, evidence: '200' },
              { name: 'response_schema', passed: true, evidence: 'valid' },
            ],
            status_code: 200,
            response_time_ms: 120,
            attempts: 1,
            fallback_from: null,
          },
        ],
        rules_version: 'observation@1#abc',
        classifier_model: 'error-classifier@1',
      } as ObservationResult,
      t + 250,
    ]);
  });
  out.push([
    'outcomes',
    outcome({
      thought_id: id,
      task_id: `${id}-t`,
      reason: 'the model answered after 2 turn(s)',
      iterations: 2,
      steps_executed: 2,
      output_json: JSON.stringify({ answer: `Order ${order} has shipped.` }),
      planner: 'react',
      flow_id: 'react:order-status',
      planner_kind: 'react',
    }),
    at + 1000,
  ]);
  return out;
}
