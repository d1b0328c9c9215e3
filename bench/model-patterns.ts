/**
 * `npm run models:patterns`: the seeds' three patterns (ReAct, plan-and-execute with re-planning,
 * Reflexion) each run once through the real loop against a real model, then replayed and verified
 * with the model unreachable.
 *
 * In a namespace of its own on the broker KAFKA_BROKERS / SCHEMA_REGISTRY_URL name (deleted
 * afterwards), it starts the demo tool server and the ingress as processes, and for each pattern
 * Thought, Action and Observation as processes with the pattern's settings (bench/lib/pattern-runs.ts:
 * TAO_PLANNER, TAO_REFLECT_AFTER), tells the tool server which tool to fail (POST /__control/faults),
 * posts the pattern's order-status ticket to the ingress and waits for its outcome on the committed
 * log. Whether the pattern happened is read from the log: the recorded planner, a plan turn and a
 * re-plan after the failed step (plan-replan), a reflection turn and a model-written reflection
 * after which the failed tool answered (Reflexion). Then, with the model server stopped (when this
 * command started it) and TAO_LLM_BASE_URL pointing at a closed port, `tao replay <id>` prints each
 * run's timeline and `tao replay <id> --verify` re-decides it from the log. Exits 1 when a pattern
 * did not complete or a verify drifted.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import type { VerifyReport } from '../replay/verify.ts';
import { commandOptions, integerOption, usageError } from './lib/command-line.ts';
import { Fleet, REPO_ROOT, freshNamespace, progress, quietOwnLogs, stageSpec, startToolServerProcess } from './lib/harness.ts';
import { followLog } from './lib/load.ts';
import { decodeLoopRecords, loopTopicNames } from './lib/loop-log.ts';
import { cleanUpOnSignal, modelEndpoint, postTicket, startIngressProcess } from './lib/model-fleet.ts';
import { PATTERNS, oneLine, patternProblems, readPatternRun, timelineExcerpt, type Pattern, type PatternId, type PatternRun } from './lib/pattern-runs.ts';
import { deleteNamespace } from './lib/phases.ts';

const COMMAND = 'models:patterns';
const IDS = PATTERNS.map((p) => p.id);
const USAGE = `usage: npm run models:patterns -- [--base-url URL --model NAME] [--tool-calls native|json_schema] [--only ${IDS.join(',')}] [--run-timeout-s 900] [--json] [--out FILE]
  Runs one order-status ticket per pattern of the seeds through the real loop on the broker KAFKA_BROKERS /
  SCHEMA_REGISTRY_URL name, in a namespace of its own (deleted afterwards): the demo tool server, the ingress,
  and Thought, Action and Observation as processes.
    react        TAO_PLANNER=react: the model calls orders.get and shipping.track, then answers
    plan-replan  TAO_PLANNER=plan-replan: the model writes the whole plan; shipping.track fails (HTTP 503) for
                 its first 2 calls, the rule-based reflection calls for a new plan, the model re-plans
    reflexion    TAO_PLANNER=react, TAO_REFLECT_AFTER=1: shipping.track fails its first call, the model
                 writes a reflection (a Turn: reflection turn), then recovers and answers
  Checks from the log that each pattern happened, prints each run's id, outcome and timeline (tao replay),
  then stops the model server (when it started it), points TAO_LLM_BASE_URL at a closed port and runs
  tao replay <id> --verify on each run: no drift expected.
  --base-url/--model an OpenAI-compatible server and model; default the local model (npx tao model up,
                    TAO_MODEL_* settings; started and stopped here when it is not running)
  --tool-calls      how react turns ask for tools (TAO_LLM_TOOL_CALLS; default json_schema)
  --only            patterns, comma-separated (default: all three)
  --run-timeout-s   how long to wait for one run's outcome (default 900)
  --json            the results as one JSON document on stdout instead of the report
  --out FILE        also write that JSON document to FILE
  -h, --help        this text
  Progress lines go to stderr. Exit 0: every pattern completed and verified without drift; 1: one did not
  complete, or a verify drifted; 2: a usage error.`;

const values = commandOptions(COMMAND, USAGE, {
  'base-url': { type: 'string' },
  model: { type: 'string' },
  'tool-calls': { type: 'string', default: 'json_schema' },
  only: { type: 'string' },
  'run-timeout-s': { type: 'string', default: '900' },
  json: { type: 'boolean', default: false },
  out: { type: 'string' },
});
const toolCalls = values['tool-calls']!;
if (toolCalls !== 'native' && toolCalls !== 'json_schema') usageError(COMMAND, USAGE, `--tool-calls must be native or json_schema, got "${toolCalls}"`);
if ((values['base-url'] === undefined) !== (values.model === undefined)) usageError(COMMAND, USAGE, '--base-url and --model go together');
const runTimeoutMs = integerOption(COMMAND, USAGE, values, 'run-timeout-s', 1) * 1000;
const only = values.only?.split(',').map((s) => s.trim());
const unknown = only?.filter((id) => !IDS.includes(id as PatternId)) ?? [];
if (unknown.length) usageError(COMMAND, USAGE, `--only: no pattern ${unknown.join(', ')} (there are ${IDS.join(', ')})`);
const patterns = only ? PATTERNS.filter((p) => only.includes(p.id)) : PATTERNS;

quietOwnLogs();
const since = Date.now();
const say = (line: string) => progress(since, line);
const endpoint = await modelEndpoint(values['base-url'], values.model, say, process.env);
const { baseUrl, model } = endpoint;

const fleet = new Fleet();
const ns = await freshNamespace('patterns-', process.env, {
  TAO_LLM_BASE_URL: baseUrl,
  TAO_LLM_MODEL: model,
  TAO_LLM_TOOL_CALLS: toolCalls,
  // A 1.5B model on 2 shared cores: a turn takes 10-40 s.
  TAO_LLM_TIMEOUT_MS: process.env.TAO_LLM_TIMEOUT_MS ?? '240000',
  TAO_LOG_LEVEL: 'info',
});
say(`namespace ${ns.namespace}; model ${model} at ${baseUrl}, tool calls ${toolCalls}; patterns ${patterns.map((p) => p.id).join(', ')}`);
let deleted = false;
const cleanUp = async () => {
  await fleet.stop();
  await endpoint.stop();
  if (!deleted) await deleteNamespace(ns.kafka, (name) => name.startsWith(`${ns.namespace}.`));
  deleted = true;
};
cleanUpOnSignal(say, cleanUp);

/** One pattern's result. */
interface Result {
  pattern: Pattern;
  env: NodeJS.ProcessEnv;
  run: PatternRun | null;
  /** Requests the tool server failed for the pattern's fault. */
  faulted: number;
  problems: string[];
  timeline: string;
  verify: { code: number; report: VerifyReport | null; stderr: string } | null;
}
const results: Result[] = [];
const started = new Date();
const load = (await import('node:os')).loadavg();
const tao = (args: string[], env: NodeJS.ProcessEnv) =>
  promisify(execFile)(process.execPath, [`${REPO_ROOT}bin/tao.js`, ...args], { cwd: REPO_ROOT, env, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof err.code === 'number' ? err.code : 1,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
    }),
  );
try {
  const tools = await startToolServerProcess(fleet, ns.env);
  const base = { ...ns.env, TAO_DEMO_TOOL_ORIGIN: tools.url };
  const ingressUrl = await startIngressProcess(fleet, base);
  const log = await followLog(ns.kafka, loopTopicNames(ns, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']));
  const outcomesTopic = ns.codec.topics.name('outcomes');
  const verdictsTopic = ns.codec.topics.name('observationResults');
  say(`tool server and ingress up; ingress ${ingressUrl}`);
  for (const pattern of patterns) {
    const env = { ...base, ...pattern.env };
    const stages = await Promise.all(['thought', 'action', 'observation'].map((stage) => fleet.start(stageSpec(stage, env))));
    await tools.clearFaults();
    if (pattern.fault) {
      const entry = JSON.parse(readFileSync(`${REPO_ROOT}tools/catalog/${pattern.fault.tool}.json`, 'utf8')) as {
        timeoutMs: number;
        retry: { maxAttempts: number };
      };
      const times = pattern.fault.calls * entry.retry.maxAttempts;
      // A time-out holds each attempt past Action's per-call time-out for the tool.
      await tools.setFaults([
        pattern.fault.mode === 'timeout'
          ? { route: pattern.fault.tool, mode: 'timeout', delayMs: entry.timeoutMs + 500, times }
          : { route: pattern.fault.tool, mode: 'server_error', times },
      ]);
    }
    const id = await postTicket(ingressUrl, pattern.ticket, 'models-patterns', `${pattern.id}-${ns.namespace}`);
    say(
      `${pattern.id}: run ${id} (${Object.entries(pattern.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}) ${JSON.stringify(pattern.ticket)}`,
    );
    const t0 = Date.now();
    const ended = await log.waitFor((rs) => rs.some((r) => r.topic === outcomesTopic && r.key === id), runTimeoutMs);
    // The follower reads partitions in parallel: the run's verdicts are read once there are as many as its waves.
    const outcome = (
      await decodeLoopRecords(
        ns,
        log.records.filter((r) => r.topic === outcomesTopic && r.key === id),
      )
    ).at(-1);
    const waves = (outcome?.decoded as { iterations?: number } | null | undefined)?.iterations ?? 0;
    await log.waitFor((rs) => rs.filter((r) => r.topic === verdictsTopic && r.key === id).length >= waves, 60000);
    const faulted = pattern.fault ? (await tools.faults()).reduce((n, f) => n + f.applied, 0) : 0;
    const run = readPatternRun(id, await decodeLoopRecords(ns, log.records));
    const problems = patternProblems(pattern, run, faulted > 0);
    say(
      `${pattern.id}: ${ended && run ? `${run.status} (${run.reasonCode})` : 'NO OUTCOME'} after ${((Date.now() - t0) / 1000).toFixed(0)} s${problems.length ? `; ${problems.join('; ')}` : ''}`,
    );
    results.push({ pattern, env, run, faulted, problems, timeline: '', verify: null });
    for (const s of stages) await fleet.kill(s, 'SIGTERM');
  }
  await log.stop();
  await fleet.stop();
  // Replay and verify with no model to ask: the server stopped when this command started it, and the
  // model's base URL a port nothing listens on, so a verify that asked the model could not get an answer.
  await endpoint.stop();
  const closed = await closedPort();
  for (const r of results) {
    if (!r.run) continue;
    const env = { ...r.env, TAO_LLM_BASE_URL: `http://127.0.0.1:${closed}/v1`, TAO_LOG_LEVEL: 'error' };
    const timeline = await tao(['replay', r.run.thoughtId], env);
    r.timeline = timeline.code === 0 ? timeline.stdout : `tao replay exited ${timeline.code}: ${timeline.stderr}`;
    const verified = await tao(['replay', r.run.thoughtId, '--verify', '--format', 'json'], env);
    let report: VerifyReport | null = null;
    try {
      report = JSON.parse(verified.stdout) as VerifyReport;
    } catch {
      report = null; // no report: the exit code and stderr say why
    }
    r.verify = { code: verified.code, report, stderr: verified.stderr };
    if (verified.code !== 0 || !report || report.drift)
      r.problems.push(
        report?.drift
          ? `replay --verify found drift: ${report.first_divergence?.explanation ?? report.configuration_drift.map((c) => c.explanation).join('; ')}`
          : `replay --verify exited ${verified.code}: ${verified.stderr.trim().slice(0, 400)}`,
      );
    say(`${r.pattern.id}: replay --verify ${report ? (report.drift ? 'DRIFT' : 'no drift') : 'no report'} (exit ${verified.code})`);
  }
} finally {
  await cleanUp();
}

const passed = results.length === patterns.length && results.every((r) => r.problems.length === 0);
const doc = {
  model,
  baseUrl,
  toolCalls,
  date: started.toISOString(),
  load,
  patterns: results.map((r) => ({
    pattern: r.pattern.id,
    settings: r.pattern.env,
    ticket: r.pattern.ticket,
    fault: r.pattern.fault ? { ...r.pattern.fault, requests_failed: r.faulted } : null,
    thought_id: r.run?.thoughtId ?? null,
    status: r.run?.status ?? null,
    reason_code: r.run?.reasonCode ?? null,
    reason: r.run?.reason ?? null,
    answer: r.run?.answer ?? null,
    turns: r.run?.turns ?? [],
    tool_calls: r.run?.calls ?? [],
    reflections: r.run?.reflections.map((x) => ({ step_id: x.step_id, tool: x.tool, action: x.action, author: x.author, summary: x.summary })) ?? [],
    timeline: r.timeline,
    timeline_excerpt: timelineExcerpt(r.timeline),
    verify: r.verify?.report
      ? {
          drift: r.verify.report.drift,
          code_drift: r.verify.report.code_drift,
          checked: r.verify.report.checked,
          first_divergence: r.verify.report.first_divergence,
        }
      : null,
    completed: r.problems.length === 0,
    problems: r.problems,
  })),
  passed,
};
if (values.out) writeFileSync(values.out, `${JSON.stringify(doc, null, 2)}\n`);
if (values.json) console.log(JSON.stringify(doc, null, 2));
else {
  console.log(`Model ${model} at ${baseUrl}, tool calls ${toolCalls}; ${started.toISOString()}, load average ${load.map((l) => l.toFixed(2)).join(' ')}`);
  for (const r of results) {
    const run = r.run;
    console.log(
      `\n## ${r.pattern.title} (${Object.entries(r.pattern.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')})`,
    );
    console.log(`ticket: ${JSON.stringify(r.pattern.ticket)}`);
    if (r.pattern.fault) console.log(`fault: ${r.pattern.fault.tool} HTTP 503 for its first ${r.pattern.fault.calls} call(s) (${r.faulted} request(s) failed)`);
    if (!run) console.log('no outcome within the wait');
    else {
      console.log(`run ${run.thoughtId}: ${run.status} (${run.reasonCode}): ${oneLine(run.reason, 600)}`);
      console.log(`model turns: ${run.turns.map((t) => `${t.step} ${t.kind}`).join(', ') || 'none'}`);
      console.log(`tool calls: ${run.calls.map((c) => `${c.step} ${c.tool} ${c.valid ? 'ok' : c.error}`).join(', ') || 'none'}`);
      for (const x of run.reflections) console.log(`reflection ${x.step_id} by ${x.author}: ${x.action}${x.summary ? ` (${x.summary})` : ''}`);
      console.log(`answer: ${run.answer ?? '(none)'}`);
      console.log(`\n${timelineExcerpt(r.timeline).trimEnd()}`);
      const v = r.verify?.report;
      console.log(
        `\ntao replay ${run.thoughtId} --verify (model server stopped): ${v ? `${v.drift ? 'DRIFT' : 'no drift'}; ${v.checked.thought_inputs} Thought inputs and ${v.checked.observation_inputs} Observation inputs re-decided, ${v.checked.records_compared} records compared` : 'no report'}`,
      );
    }
    console.log(r.problems.length ? `NOT SHOWN: ${r.problems.join('; ')}` : 'SHOWN: completed, the pattern is in the log, and the replay verifies');
  }
  console.log(`\n${passed ? 'PASSED' : 'FAILED'}: ${results.filter((r) => !r.problems.length).length} of ${patterns.length} pattern(s) shown`);
}
process.exit(passed ? 0 : 1);

/** A local TCP port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
