/**
 * `npm run models:eval-loop`: the regression set (bench/data/regression-tickets.json) through the
 * real loop on the real broker, scored.
 *
 * In a namespace of its own on the broker KAFKA_BROKERS / SCHEMA_REGISTRY_URL name, it starts the
 * demo tool server, Thought (TAO_PLANNER=react), Action, Observation and the HTTP ingress as separate
 * processes, with the model server `tao model up` serves (or --base-url/--model). Each ticket is
 * posted to the ingress (at most --concurrency runs at once: the server's slots), its outcome is
 * waited for on the committed log (read_committed), and every run is read back from the log and
 * scored (bench/lib/regression-set.ts): solved = completed with every expected fact and a verified
 * result of every tool it needs, or not completed as expected (awaiting_input without an id,
 * escalated off-domain); wrong = completed with a specific the bench's own checker
 * (bench/lib/answer-check.ts) finds unsupported, or completed when it must not. Exits 1 when a run
 * is wrong or the solved share is below --min-solved.
 */
import { loadRegressionSet, scoreRun } from './lib/regression-set.ts';
import { responseEnums } from './lib/regression-calls.ts';
import { writeFileSync } from 'node:fs';
import { breakdown, inLanguage, markdown, rate, readRun, totals, type Scored } from './lib/eval-runs.ts';
import { commandOptions, integerOption, usageError } from './lib/command-line.ts';
import { Fleet, freshNamespace, progress, quietOwnLogs, stageSpec, startToolServerProcess } from './lib/harness.ts';
import { decodeLoopRecords, loopTopicNames } from './lib/loop-log.ts';
import { followLog } from './lib/load.ts';
import { deleteNamespace } from './lib/phases.ts';
import { describeUnsupported } from './lib/answer-check.ts';
import { cleanUpOnSignal, modelEndpoint, postTicket, startIngressProcess } from './lib/model-fleet.ts';

const COMMAND = 'models:eval-loop';
const USAGE = `usage: npm run models:eval-loop -- [--tool-calls native|json_schema] [--base-url URL --model NAME] [--only id,id] [--concurrency N] [--min-solved 0.85] [--run-timeout-s 1200] [--json] [--out FILE]
  Runs the regression set (bench/data/regression-tickets.json: tickets in English and Chinese with the facts
  their answers must state) through the real loop on the broker KAFKA_BROKERS / SCHEMA_REGISTRY_URL name, in a
  namespace of its own: the tool server, Thought (react), Action, Observation and the ingress as processes.
  Scores each run: solved (completed with the expected facts, or correctly not completed), wrong (completed
  with an unsupported or wrong fact, or completed when it must not), unsolved (the rest); reports them per
  intent and per language, with turns, tokens and wall time per turn (P50, P95).
  --tool-calls      how the model's turns ask for tools (TAO_LLM_TOOL_CALLS; default json_schema)
  --base-url/--model an OpenAI-compatible server and model; default the local model (npx tao model up,
                    TAO_MODEL_* settings; started and stopped here when it is not running)
  --only            ticket ids, comma-separated (default: every ticket)
  --concurrency     runs at once (default 2: the local server's slots)
  --min-solved      the solved share below which the command exits 1 (default 0.85); any wrong run also exits 1
  --run-timeout-s   how long to wait for one run's outcome (default 1200)
  --json            the results as one JSON document on stdout instead of tables
  --out FILE        also write that JSON document to FILE
  -h, --help        this text
  Progress lines go to stderr. Exit 0: passed; 1: wrong > 0 or solved below --min-solved; 2: a usage error.`;

const values = commandOptions(COMMAND, USAGE, {
  'tool-calls': { type: 'string', default: 'json_schema' },
  'base-url': { type: 'string' },
  model: { type: 'string' },
  only: { type: 'string' },
  concurrency: { type: 'string', default: '2' },
  'min-solved': { type: 'string', default: '0.85' },
  'run-timeout-s': { type: 'string', default: '1200' },
  json: { type: 'boolean', default: false },
  out: { type: 'string' },
});
const toolCalls = values['tool-calls']!;
if (toolCalls !== 'native' && toolCalls !== 'json_schema') usageError(COMMAND, USAGE, `--tool-calls must be native or json_schema, got "${toolCalls}"`);
if ((values['base-url'] === undefined) !== (values.model === undefined)) usageError(COMMAND, USAGE, '--base-url and --model go together');
const concurrency = integerOption(COMMAND, USAGE, values, 'concurrency', 1);
const runTimeoutMs = integerOption(COMMAND, USAGE, values, 'run-timeout-s', 1) * 1000;
const minSolved = Number(values['min-solved']);
if (!(minSolved >= 0 && minSolved <= 1)) usageError(COMMAND, USAGE, `--min-solved must be a number from 0 to 1, got "${values['min-solved']}"`);
const all = loadRegressionSet();
const only = values.only?.split(',').map((s) => s.trim());
const unknown = only?.filter((id) => !all.some((t) => t.id === id)) ?? [];
if (unknown.length) usageError(COMMAND, USAGE, `--only: no ticket ${unknown.join(', ')} in the set`);
const tickets = only ? all.filter((t) => only.includes(t.id)) : all;

quietOwnLogs();
const since = Date.now();
const say = (line: string) => progress(since, line);

const endpoint = await modelEndpoint(values['base-url'], values.model, say);
const { baseUrl, model } = endpoint;

const fleet = new Fleet();
const ns = await freshNamespace('eval-', process.env, {
  TAO_PLANNER: 'react',
  TAO_LLM_BASE_URL: baseUrl,
  TAO_LLM_MODEL: model,
  TAO_LLM_TOOL_CALLS: toolCalls,
  // A 1.5B model on 2 shared cores: a turn takes 10-40 s, longer while another run's turn holds a slot.
  TAO_LLM_TIMEOUT_MS: process.env.TAO_LLM_TIMEOUT_MS ?? '240000',
  TAO_LOG_LEVEL: 'info',
});
say(`namespace ${ns.namespace}; model ${model} at ${baseUrl}, tool calls ${toolCalls}; ${tickets.length} tickets, ${concurrency} at once`);
const cleanUp = async () => {
  await fleet.stop();
  await deleteNamespace(ns.kafka, (name) => name.startsWith(`${ns.namespace}.`));
  await endpoint.stop();
};
cleanUpOnSignal(say, cleanUp);
const scored: Scored[] = [];
const started = new Date();
const load = (await import('node:os')).loadavg();
try {
  const tools = await startToolServerProcess(fleet, ns.env);
  const env = { ...ns.env, TAO_DEMO_TOOL_ORIGIN: tools.url };
  for (const stage of ['thought', 'action', 'observation']) await fleet.start(stageSpec(stage, env));
  const ingressUrl = await startIngressProcess(fleet, env);
  say(`stages, tool server and ingress up; ingress ${ingressUrl}`);
  const log = await followLog(ns.kafka, loopTopicNames(ns, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']));
  const outcomesTopic = ns.codec.topics.name('outcomes');
  const ended = (id: string) => log.records.some((r) => r.topic === outcomesTopic && r.key === id);
  const runIds = new Map<string, string>();
  const runId = `${Date.now()}`;
  let next = 0;
  let done = 0;
  const worker = async () => {
    for (let i = next++; i < tickets.length; i = next++) {
      const ticket = tickets[i]!;
      const thought_id = await postTicket(ingressUrl, ticket.text, 'eval', `${ticket.id}-${runId}`);
      runIds.set(ticket.id, thought_id);
      const t0 = Date.now();
      const ok = await log.waitFor(() => ended(thought_id), runTimeoutMs);
      done++;
      say(`${done}/${tickets.length} ${ticket.id}: ${ok ? 'ended' : 'NO OUTCOME'} after ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  // The follower reads the topics' partitions in parallel: an outcome read does not mean its run's last
  // verdicts are read yet. Each run's waves are, once it holds as many verdict records as the outcome has waves.
  const waves = new Map<string, number>();
  for (const r of await decodeLoopRecords(
    ns,
    log.records.filter((x) => x.topic === outcomesTopic),
  ))
    waves.set(r.key, (r.decoded as { iterations?: number } | null)?.iterations ?? 0);
  const verdictsTopic = ns.codec.topics.name('observationResults');
  const read = await log.waitFor((rs) => [...waves].every(([key, n]) => rs.filter((x) => x.topic === verdictsTopic && x.key === key).length >= n), 60000);
  if (!read) say("some runs' verdicts were not read back within 60 s: their scores may miss tool results");
  const records = await decodeLoopRecords(ns, log.records);
  await log.stop();
  const enums = responseEnums(env);
  for (const ticket of tickets) {
    const run = readRun(runIds.get(ticket.id) ?? '', ticket, records);
    const score = run
      ? scoreRun(ticket, run, enums)
      : { verdict: 'unsolved' as const, missingFacts: [], missingTools: [], unsupported: [], why: 'no outcome within the wait' };
    scored.push({ ticket, run, score });
  }
} finally {
  await cleanUp();
}

const sum = totals(scored);
const byIntent = breakdown(scored, (s) => s.ticket.category);
const byLanguage = breakdown(scored, (s) => s.ticket.language);
const passed = sum.wrong === 0 && sum.solvedRate >= minSolved;
{
  const perTicket = scored.map(({ ticket, run, score }) => ({
    id: ticket.id,
    language: ticket.language,
    category: ticket.category,
    expect: ticket.expect,
    status: run?.status ?? null,
    reason: run?.reasonCode ?? null,
    routed: run?.routed ?? null,
    turns: run?.turns.length ?? 0,
    verdict: score.verdict,
    why: score.why,
    unsupported: score.unsupported,
    said: run?.said ?? null,
  }));
  const doc = JSON.stringify(
    { model, baseUrl, toolCalls, date: started.toISOString(), load, totals: sum, byIntent, byLanguage, tickets: perTicket, passed },
    null,
    2,
  );
  if (values.out) writeFileSync(values.out, `${doc}\n`);
  if (values.json) console.log(doc);
}
if (!values.json) {
  const p = (x: { p50: number; p95: number } | null, unit = '') => (x ? `${Math.round(x.p50)}${unit} / ${Math.round(x.p95)}${unit}` : 'not reported');
  console.log(`\nModel ${model} at ${baseUrl}, tool calls ${toolCalls}; ${started.toISOString()}, load average ${load.map((l) => l.toFixed(2)).join(' ')}`);
  const cols = ['tickets', 'solved', 'wrong', 'not solved'];
  console.log(
    `\n${markdown(
      ['intent', ...cols],
      byIntent.map((r) => [r.group, r.tickets, rate(r), r.wrong, r.unsolved]),
    )}`,
  );
  console.log(
    `\n${markdown(
      ['language', ...cols],
      byLanguage.map((r) => [r.group, r.tickets, rate(r), r.wrong, r.unsolved]),
    )}`,
  );
  console.log(
    `\n${markdown(
      [
        'solved',
        'wrong',
        'completed with an unsupported specific (independent checker)',
        'completed when it must not',
        'completed in another language',
        'no outcome',
        'answers refused in the loop',
        'turns / run P50 / P95',
        'tokens / run P50 / P95',
        'wall time / turn P50 / P95',
        'prompt tokens / turn P50 / P95',
        'of them reused from the cache P50 / P95',
      ],
      [
        [
          `${sum.solved}/${sum.tickets} (${(100 * sum.solvedRate).toFixed(1)}%)`,
          sum.wrong,
          sum.completedUnsupported,
          sum.completedWhenNot,
          sum.otherLanguage,
          sum.noOutcome,
          Object.entries(sum.refused)
            .map(([k, n]) => `${n} ${k}`)
            .join(', ') || '0',
          p(sum.turnsPerRun),
          p(sum.tokensPerRun),
          p(sum.msPerTurn, ' ms'),
          p(sum.promptTokensPerTurn),
          p(sum.cachedTokensPerTurn),
        ],
      ],
    )}`,
  );
  console.log('\nPer ticket (read the answers, not only the counts):');
  for (const { ticket, run, score } of scored) {
    const routed = run && run.routed !== ticket.intent ? ` routed ${run.routed}, expected ${ticket.intent};` : '';
    const language = run?.status === 'completed' && !inLanguage(run.said, ticket.language) ? ' answered in another language;' : '';
    console.log(
      `- ${ticket.id} [${score.verdict}] ${run ? `${run.status} (${run.reasonCode}), ${run.turns.length} turn(s)` : 'no outcome'};${routed}${language} ${score.why}`,
    );
    if (score.unsupported.length) console.log(`    unsupported: ${describeUnsupported(score.unsupported)}`);
    if (run) console.log(`    → ${JSON.stringify(run.said).slice(0, 400)}`);
  }
  console.log(
    `\n${passed ? 'PASSED' : 'FAILED'}: ${sum.wrong} wrong, ${(100 * sum.solvedRate).toFixed(1)}% solved (at least ${(100 * minSolved).toFixed(0)}% needed)`,
  );
}
process.exit(passed ? 0 : 1);
