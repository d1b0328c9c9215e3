/**
 * `npm run models:loop`: the demo's tickets through a real model, in each tool-call mode, and the
 * prompt builder's token estimate against the model's own count.
 *
 * Runs the stages' cores over HTTP (bench/lib/cores-over-http.ts: Thought's and Observation's cores,
 * Action's real executor, the real demo tool server; no Kafka, which does not change what a model
 * answers) against the local model `tao model up` serves, or any OpenAI-compatible server
 * (--base-url, --model). Reports per mode: runs by outcome, gate rejections, turns and tokens per
 * run, wall time per turn, the number of runs `completed` without a final answer the gate
 * accepted and the skill's grounding allows (must be 0), and the number completed with an answer
 * holding a specific that no verified result or the ticket supports, counted by the gate's checker
 * and by the bench's own (eval/answer-check.ts; both must be 0). Then, per shipped skill, in English and in
 * Chinese: the builder's estimate of the first turn's prompt against the server's `usage.prompt_tokens`
 * (llama-server counts with the model's tokenizer and chat template).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runTicket, type LoopRun } from './lib/cores-over-http.ts';
import { SAMPLE_TASKS } from '../cli/demo.ts';
import { startToolServer } from '../tool-server/server.ts';
import { buildPrompt, promptTokens, DEFAULT_SYSTEM_RULES } from '../processors/thought/model/prompt.ts';
import { loadSkills, DEFAULT_SKILLS_DIR } from '../processors/thought/skills.ts';
import { loadCatalog } from '../processors/wiring/index.ts';
import { createContractAjv } from '../tools/catalog.ts';
import type { ModelAnswer } from '../processors/model-wire.ts';
import { answerFactProblems } from '../processors/thought/reading.ts';
import { uncheckedSpecifics } from '../eval/answer-check.ts';
import { responseEnums } from '../eval/regression-calls.ts';
import { percentile, turnOf } from '../eval/runs.ts';

const HELP = `usage: npm run models:loop -- [--tool-calls native|json_schema|both] [--base-url URL --model NAME] [--concurrency N] [--tickets FILE] [--verbose] [--dump DIR] [--json]
  Runs the demo's ${SAMPLE_TASKS.length} tickets through a real model in each tool-call mode, then measures the prompt
  builder's token estimate per skill (English, Chinese) against the server's own count.
  --tickets FILE runs the tickets of a JSON file ({"tickets": [{"text", ...}]}, e.g.
  bench/data/multilingual-tickets.json) instead of the demo's.
  Default server: the local model (npx tao model up; built once, about 8 minutes on 2 cores).
  --concurrency N runs N tickets at once (default 2: the local server's slots).
  --verbose prints what the model wrote in each turn (its text and calls), beside how the run read it.
  --dump DIR writes each run's model requests, as sent, and outcome to DIR/<mode>-<ticket>.json.
  --json prints the results as one JSON document instead of tables.`;

const { values } = parseArgs({
  options: {
    'tool-calls': { type: 'string', default: 'both' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    json: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    dump: { type: 'string' },
    concurrency: { type: 'string', default: '2' },
    tickets: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const modes = values['tool-calls'] === 'both' ? (['native', 'json_schema'] as const) : [values['tool-calls'] as 'native' | 'json_schema'];
if (!modes.every((m) => m === 'native' || m === 'json_schema')) {
  console.error(`--tool-calls must be native, json_schema or both, got "${values['tool-calls']}"\n${HELP}`);
  process.exit(2);
}
if (!/^[1-9][0-9]?$/.test(values.concurrency!)) {
  console.error(`--concurrency must be an integer from 1 to 99, got "${values.concurrency}"\n${HELP}`);
  process.exit(2);
}
/** The tickets to run: the demo's, or a file's. */
const TICKETS: string[] = values.tickets === undefined ? SAMPLE_TASKS : ticketsOf(values.tickets);
function ticketsOf(file: string): string[] {
  try {
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { tickets?: Array<{ text?: unknown }> };
    const texts = (doc.tickets ?? []).map((t) => t.text);
    if (!texts.length || !texts.every((x): x is string => typeof x === 'string' && x.trim() !== '')) throw new Error('no {"tickets": [{"text": "..."}]} in it');
    return texts;
  } catch (err) {
    console.error(`--tickets ${file}: ${(err as Error).message}\n${HELP}`);
    process.exit(2);
  }
}
if ((values['base-url'] === undefined) !== (values.model === undefined)) {
  console.error(`--base-url and --model go together\n${HELP}`);
  process.exit(2);
}

const log = (line: string) => {
  if (!values.json) console.log(line);
};
let baseUrl = values['base-url'];
let model = values.model;
let stop = async () => {};
if (!baseUrl) {
  const { modelDown, modelStatus, modelUp } = await import('../infra/model/server.ts');
  const started = !(await modelStatus({ env: process.env })).healthy;
  const endpoint = await modelUp({ env: process.env, log: (line) => log(`  ${line}`) });
  baseUrl = endpoint.baseUrl;
  model = endpoint.model;
  if (started) stop = async () => void (await modelDown({ env: process.env, log: () => {} }));
}
let tools = await startToolServer({ port: 0 });
const env: NodeJS.ProcessEnv = { TAO_LLM_BASE_URL: baseUrl, TAO_LLM_MODEL: model, TAO_DEMO_TOOL_ORIGIN: tools.url, TAO_LLM_TIMEOUT_MS: '120000' };

interface Spread {
  p50: number;
  p95: number;
}
const spread = (xs: number[]): Spread => ({ p50: percentile(xs, 50), p95: percentile(xs, 95) });
const shown = (x: Spread | null) => (x ? `${x.p50} / ${x.p95}` : 'n/a');

interface ModeResult {
  mode: string;
  runs: number;
  byStatus: Record<string, number>;
  byReason: Record<string, number>;
  gateRejections: number;
  /** Answers Thought refused: ungrounded, an unsupported identity argument or answer fact. */
  thoughtRejections: number;
  turnsPerRun: Spread;
  tokensPerRun: Spread;
  msPerTurn: Spread;
  /** Prompt tokens the server processed per turn, and of them reused from its cache (null: the server does not say). */
  promptTokensPerTurn: Spread;
  reusedTokensPerTurn: Spread | null;
  completedWithoutGroundedAnswer: number;
  /** Completed runs whose answer holds a specific no verified result or the ticket supports, by the gate's checker and by the bench's own. */
  completedUnsupported: { gate: number; independent: number };
}

const GATE_ERRORS = new Set(['hallucinated_tool', 'invalid_arguments', 'malformed', 'schema_mismatch']);

const contracts = loadCatalog(env, createContractAjv(), 'contracts');
const enums = responseEnums(env);

/** Whether a completed run's answer holds a specific that nothing verified or given supports: by the gate's checker, by the bench's own (eval/answer-check.ts). */
function unsupportedSpecifics(run: LoopRun, ticket: string): { gate: boolean; independent: boolean } {
  if (run.outcome.status !== 'completed') return { gate: false, independent: false };
  const out = JSON.parse(run.outcome.output_json ?? '{}') as { answer?: unknown };
  const answer = typeof out.answer === 'string' ? out.answer : '';
  const results = run.observations.flatMap((o) =>
    o.verdicts
      .filter((v) => v.tool !== 'model.chat' && v.valid && v.extracted_data_json)
      .map((v) => ({ tool: v.tool, data: JSON.parse(v.extracted_data_json!) as unknown })),
  );
  const withSchemas = results.map((r) => ({ ...r, response: contracts.get(r.tool)?.spec.response }));
  return {
    gate: answerFactProblems(answer, { texts: [ticket] }, withSchemas).length > 0,
    independent: uncheckedSpecifics({ answer, given: [ticket], results, enums }).length > 0,
  };
}

function summarize(mode: string, runs: LoopRun[]): ModeResult {
  const count = (xs: string[]) => xs.reduce<Record<string, number>>((m, x) => ({ ...m, [x]: (m[x] ?? 0) + 1 }), {});
  const modelResults = runs.flatMap((r) => r.actions.flatMap((a) => a.results.filter((s) => s.tool === 'model.chat')));
  const modelVerdicts = runs.flatMap((r) => r.observations.flatMap((o) => o.verdicts.filter((v) => v.tool === 'model.chat')));
  const turns = modelResults.map(turnOf);
  const reused = turns.flatMap((t) => (t.cachedTokens === null ? [] : [t.cachedTokens]));
  const routed = runs.filter((r) => r.modelRequests.length > 0);
  let bad = 0;
  for (const r of runs) {
    if (r.outcome.status !== 'completed') continue;
    const verdicts = r.observations.flatMap((o) => o.verdicts);
    const last = verdicts.filter((v) => v.tool === 'model.chat').at(-1);
    const final = last?.valid && (JSON.parse(last.extracted_data_json!) as ModelAnswer).kind === 'final';
    if (!final || !verdicts.some((v) => v.tool !== 'model.chat' && v.valid)) bad++;
  }
  return {
    mode,
    runs: runs.length,
    byStatus: count(runs.map((r) => r.outcome.status)),
    byReason: count(runs.map((r) => r.outcome.reason_code)),
    gateRejections: modelVerdicts.filter((v) => GATE_ERRORS.has(v.error_type)).length,
    thoughtRejections: runs.reduce((n, r) => n + thoughtRejections(r).length, 0),
    turnsPerRun: spread(routed.map((r) => r.modelRequests.length)),
    tokensPerRun: spread(
      routed.map((r) =>
        r.actions.flatMap((a) => a.results.filter((s) => s.tool === 'model.chat').map(turnOf)).reduce((n, t) => n + t.promptTokens + t.completionTokens, 0),
      ),
    ),
    msPerTurn: spread(turns.map((t) => t.ms)),
    promptTokensPerTurn: spread(turns.map((t) => t.promptTokens)),
    reusedTokensPerTurn: reused.length ? spread(reused) : null,
    completedWithoutGroundedAnswer: bad,
    completedUnsupported: runs.reduce(
      (n, r, i) => {
        const u = unsupportedSpecifics(r, TICKETS[i]!);
        return { gate: n.gate + Number(u.gate), independent: n.independent + Number(u.independent) };
      },
      { gate: 0, independent: 0 },
    ),
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

/** The run's answer, its question to the customer, or why it ended. */
function said(run: LoopRun): string {
  const out = JSON.parse(run.outcome.output_json ?? '{}') as { answer?: string; question?: string };
  return JSON.stringify(out.answer ?? out.question ?? run.outcome.reason).slice(0, 300);
}

/** Answers Thought refused after the gate passed them: an id the run was not given, a fact no result holds. */
function thoughtRejections(run: LoopRun): Array<{ turn: number; error: string; evidence: string }> {
  const state = run.observations.at(-1)?.run.model_state_json;
  const rejected = state ? ((JSON.parse(state) as { rejected?: Array<{ turn: number; error: string; evidence: string }> }).rejected ?? []) : [];
  return rejected.filter((r) => THOUGHT_REJECTIONS.has(r.error));
}
/** What the model wrote in each turn, as the server returned it: the message's text and its calls. */
function written(run: LoopRun): string[] {
  return run.actions.flatMap((a) =>
    a.results.flatMap((r) => {
      if (r.tool !== 'model.chat' || !r.response_raw) return [];
      try {
        const message = (JSON.parse(r.response_raw) as { choices?: Array<{ message?: { content?: string | null; tool_calls?: unknown[] } }> }).choices?.[0]
          ?.message;
        const calls = message?.tool_calls?.length ? ` tool_calls ${JSON.stringify(message.tool_calls)}` : '';
        return [`${JSON.stringify(message?.content ?? '')}${calls}`.slice(0, 600)];
      } catch {
        return [r.response_raw.slice(0, 300)];
      }
    }),
  );
}
const THOUGHT_REJECTIONS = new Set(['unsupported_argument', 'unsupported_fact', 'ungrounded']);
const results: ModeResult[] = [];
try {
  for (const mode of modes) {
    // Each mode against a fresh tool server: the ledger remembers refunds, and a second mode's refund would meet the first one's.
    if (mode !== modes[0]) {
      await tools.close();
      tools = await startToolServer({ port: 0 });
      env.TAO_DEMO_TOOL_ORIGIN = tools.url;
    }
    const runs: LoopRun[] = new Array(TICKETS.length);
    let next = 0;
    // As many runs at once as the server has slots (llama-server --parallel 2 for the local model).
    const worker = async () => {
      for (let i = next++; i < TICKETS.length; i = next++) {
        const started = Date.now();
        const run = await runTicket(TICKETS[i]!, { ...env, TAO_LLM_TOOL_CALLS: mode }, `bench-${mode}-${i}`);
        runs[i] = run;
        log(
          `  ${mode} ${i + 1}/${TICKETS.length} ${run.outcome.status} (${run.outcome.reason_code}) ${run.modelRequests.length} turn(s), ${((Date.now() - started) / 1000).toFixed(1)} s: ${TICKETS[i]}`,
        );
        // What the model said, and what Thought refused on the way: read real answers, not only counts.
        log(`      → ${said(run)}`);
        for (const r of thoughtRejections(run)) log(`      refused turn ${r.turn} (${r.error}): ${r.evidence.slice(0, 160)}`);
        if (values.dump) {
          mkdirSync(values.dump, { recursive: true });
          writeFileSync(
            join(values.dump, `${mode}-${i + 1}.json`),
            JSON.stringify({ ticket: TICKETS[i], outcome: run.outcome, requests: run.modelRequests, written: written(run) }, null, 1),
          );
        }
        if (values.verbose) for (const [turn, text] of written(run).entries()) log(`      turn ${turn + 1} wrote: ${text}`);
      }
    };
    await Promise.all(Array.from({ length: Number(values.concurrency) }, worker));
    results.push(summarize(mode, runs));
  }

  // The estimate against the model's count, per skill, for a ticket in English and one in Chinese.
  const catalog = loadCatalog(env, createContractAjv(), 'contracts');
  const skills = loadSkills(DEFAULT_SKILLS_DIR, catalog);
  const tickets = { en: 'Please help me with this request, here are the details I have.', zh: '请帮我处理这个请求，以下是我掌握的详细信息。' };
  const tokenRows: Array<{ skill: string; lang: string; estimate: number; server: number; error: number }> = [];
  for (const skill of skills.list().filter((s) => s.runnable)) {
    for (const [lang, task] of Object.entries(tickets)) {
      const tools = skill.allowedTools.map((t) => catalog.get(t)!.spec).map((s) => ({ name: s.name, description: s.description, parameters: s.parameters }));
      const built = buildPrompt(
        { system: DEFAULT_SYSTEM_RULES, skill: { ref: skill.ref, prompt: skill.prompt, tools }, task, facts: {}, turns: [], reflections: [], mode: 'react' },
        skill.contextWindow,
      );
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: built.messages, tools: built.tools, max_tokens: 1, temperature: 0 }),
      });
      const body = (await res.json()) as { usage?: { prompt_tokens?: number } };
      const server = body.usage?.prompt_tokens ?? 0;
      const estimate = promptTokens(built.messages, built.tools);
      tokenRows.push({ skill: skill.ref, lang, estimate, server, error: round((estimate - server) / Math.max(1, server)) });
    }
  }

  if (values.json) console.log(JSON.stringify({ model, baseUrl, modes: results, tokens: tokenRows }, null, 2));
  else {
    console.log(`\nModel ${model} at ${baseUrl}, ${TICKETS.length} tickets per mode`);
    console.log(
      "| mode | runs by outcome | reasons | gate rejections | Thought rejections | turns / run P50 / P95 | tokens / run P50 / P95 | ms / turn P50 / P95 | prompt tokens / turn P50 / P95 | of them reused from the server's cache P50 / P95 | completed without a grounded, accepted answer | completed with an unsupported specific: gate's checker / independent |",
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of results)
      console.log(
        `| ${r.mode} | ${fmt(r.byStatus)} | ${fmt(r.byReason)} | ${r.gateRejections} | ${r.thoughtRejections} | ${shown(r.turnsPerRun)} | ${shown(r.tokensPerRun)} | ${shown(r.msPerTurn)} | ${shown(r.promptTokensPerTurn)} | ${shown(r.reusedTokensPerTurn)} | ${r.completedWithoutGroundedAnswer} | ${r.completedUnsupported.gate} / ${r.completedUnsupported.independent} |`,
      );
    console.log('\n| skill | ticket | estimate | server | error |');
    console.log('|---|---|---|---|---|');
    for (const t of tokenRows) console.log(`| ${t.skill} | ${t.lang} | ${t.estimate} | ${t.server} | ${(t.error * 100).toFixed(0)}% |`);
  }
} finally {
  await tools.close();
  await stop();
}

function fmt(m: Record<string, number>): string {
  return Object.entries(m)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ');
}
