/**
 * What `tao eval` (and `npm run models:eval-loop`) reads back from the committed log (read_committed) for each run of
 * a regression ticket: how it ended, what it said, the verified results of its tool calls, and its
 * model turns (tokens, prompt tokens the server reused, wall time). Then the report's tables: solved
 * per intent and per language, wrong answers, turns, tokens and time per turn.
 */
import type { ActionResult, ObservationResult, Outcome } from '../schemas/types.gen.ts';
import type { CheckedResult } from './answer-check.ts';
import type { DecodedRecord } from './namespace.ts';
import type { RegressionTicket, Score, ScoredRun } from './regression-set.ts';

const MODEL_TOOL = 'model.chat';

/** One model turn of a run. */
export interface Turn {
  ms: number;
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens the server took from its cache (llama-server's `timings.cache_n`, or `usage.prompt_tokens_details.cached_tokens`); null when it does not say. */
  cachedTokens: number | null;
}

/** A run of one ticket, read from the log. */
export interface EvalRun extends ScoredRun {
  thoughtId: string;
  /** The intent the router gave (from the outcome's planner), `unknown` when it escalated. */
  routed: string;
  turns: Turn[];
  /** Answers the gate or Thought refused during the run (model state's `rejected`), by error. */
  refused: Record<string, number>;
  wallMs: number;
  /** What its model turns cost by the price table (TAO_LLM_PRICES); null without one. */
  cost: number | null;
}

/** Builds the run of `thoughtId` from decoded committed records (every record of the namespace). */
export function readRun(thoughtId: string, ticket: RegressionTicket, records: readonly DecodedRecord[]): EvalRun | null {
  const own = records.filter((r) => r.key === thoughtId && r.decoded);
  const outcome = own.filter((r) => r.id === 'outcomes').at(-1)?.decoded as unknown as Outcome | undefined;
  if (!outcome) return null;
  const actions = own.filter((r) => r.id === 'actionResults').map((r) => r.decoded as unknown as ActionResult);
  const observations = own.filter((r) => r.id === 'observationResults').map((r) => r.decoded as unknown as ObservationResult);
  const started = own.find((r) => r.id === 'tasks')?.timestamp ?? 0;
  const ended = own.filter((r) => r.id === 'outcomes').at(-1)!.timestamp;
  const results: CheckedResult[] = [];
  const verifiedTools = new Set<string>();
  for (const o of observations)
    for (const v of o.verdicts) {
      if (v.tool === MODEL_TOOL || !v.valid || v.extracted_data_json === null) continue;
      verifiedTools.add(v.tool);
      results.push({ tool: v.tool, data: JSON.parse(v.extracted_data_json) as unknown });
    }
  const calledTools = new Set(actions.flatMap((a) => a.results.map((s) => s.tool)).filter((t) => t !== MODEL_TOOL));
  const turns = actions.flatMap((a) => a.results.filter((s) => s.tool === MODEL_TOOL).map(turnOf));
  const out = JSON.parse(outcome.output_json ?? '{}') as { answer?: unknown; question?: unknown };
  const said = typeof out.answer === 'string' ? out.answer : typeof out.question === 'string' ? out.question : outcome.reason;
  const state = observations.at(-1)?.run.model_state_json;
  const rejected = state ? ((JSON.parse(state) as { rejected?: Array<{ error: string }> }).rejected ?? []) : [];
  const refused: Record<string, number> = {};
  for (const r of rejected) refused[r.error] = (refused[r.error] ?? 0) + 1;
  return {
    thoughtId,
    status: outcome.status,
    reasonCode: outcome.reason_code,
    said,
    verifiedTools,
    calledTools,
    results,
    given: [ticket.text],
    routed: /^[\w-]+\((\w+) /.exec(outcome.planner)?.[1] ?? 'unknown',
    turns,
    refused,
    wallMs: ended - started,
    cost: outcome.model_cost ?? null,
  };
}

/** A model turn's numbers, from its recorded result: wall time and the server's token counts. */
export function turnOf(s: ActionResult['results'][number]): Turn {
  const body = JSON.parse(s.data_json ?? '{}') as {
    usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } };
    timings?: { cache_n?: number };
  };
  return {
    ms: s.attempt_time_ms ?? s.response_time_ms,
    promptTokens: body.usage?.prompt_tokens ?? 0,
    completionTokens: body.usage?.completion_tokens ?? 0,
    cachedTokens: body.timings?.cache_n ?? body.usage?.prompt_tokens_details?.cached_tokens ?? null,
  };
}

/** A scored run with its ticket. */
export interface Scored {
  ticket: RegressionTicket;
  run: EvalRun | null;
  score: Score;
}

/** One row of a breakdown: tickets, solved, wrong, and the rest. */
export interface Row {
  group: string;
  tickets: number;
  solved: number;
  wrong: number;
  unsolved: number;
}

/** Rows per value of `key` (in first-seen order), then `all`. */
export function breakdown(scored: readonly Scored[], key: (s: Scored) => string): Row[] {
  const rows = new Map<string, Row>();
  const add = (group: string, s: Scored) => {
    const row = rows.get(group) ?? { group, tickets: 0, solved: 0, wrong: 0, unsolved: 0 };
    row.tickets++;
    row[s.score.verdict]++;
    rows.set(group, row);
  };
  for (const s of scored) add(key(s), s);
  for (const s of scored) add('all', s);
  return [...rows.values()];
}

/** The report's totals. */
export interface Totals {
  tickets: number;
  solved: number;
  solvedRate: number;
  wrong: number;
  /** Completed runs whose answer holds a specific the independent checker finds unsupported. */
  completedUnsupported: number;
  /** Completed runs in tickets that must not complete. */
  completedWhenNot: number;
  /** Runs that never ended within the wait. */
  noOutcome: number;
  /** Completed runs whose answer is not in the ticket's language (the skills ask for it). */
  otherLanguage: number;
  /** Answers the gate or Thought refused, by error, over every run. */
  refused: Record<string, number>;
  turnsPerRun: { p50: number; p95: number };
  tokensPerRun: { p50: number; p95: number };
  msPerTurn: { p50: number; p95: number };
  promptTokensPerTurn: { p50: number; p95: number };
  /** Prompt tokens the server reused from its cache per turn (null: the server does not say). */
  cachedTokensPerTurn: { p50: number; p95: number } | null;
}

export function totals(scored: readonly Scored[]): Totals {
  const runs = scored.flatMap((s) => (s.run ? [s.run] : []));
  const routed = runs.filter((r) => r.turns.length > 0);
  const turns = runs.flatMap((r) => r.turns);
  const cached = turns.flatMap((t) => (t.cachedTokens === null ? [] : [t.cachedTokens]));
  const refused: Record<string, number> = {};
  for (const r of runs) for (const [k, n] of Object.entries(r.refused)) refused[k] = (refused[k] ?? 0) + n;
  const p = (xs: number[]) => ({ p50: percentile(xs, 50), p95: percentile(xs, 95) });
  const solved = scored.filter((s) => s.score.verdict === 'solved').length;
  return {
    tickets: scored.length,
    solved,
    solvedRate: scored.length ? solved / scored.length : 0,
    wrong: scored.filter((s) => s.score.verdict === 'wrong').length,
    completedUnsupported: scored.filter((s) => s.score.unsupported.length > 0).length,
    completedWhenNot: scored.filter((s) => s.ticket.expect !== 'completed' && s.run?.status === 'completed').length,
    noOutcome: scored.filter((s) => !s.run).length,
    otherLanguage: scored.filter((s) => s.run?.status === 'completed' && !inLanguage(s.run.said, s.ticket.language)).length,
    refused,
    turnsPerRun: p(routed.map((r) => r.turns.length)),
    tokensPerRun: p(routed.map((r) => r.turns.reduce((n, t) => n + t.promptTokens + t.completionTokens, 0))),
    msPerTurn: p(turns.map((t) => t.ms)),
    promptTokensPerTurn: p(turns.map((t) => t.promptTokens)),
    cachedTokensPerTurn: cached.length ? p(cached) : null,
  };
}

/** Whether `text` is written in `language`: Chinese has CJK characters, English none. */
export function inLanguage(text: string, language: 'en' | 'zh'): boolean {
  return /[\u4e00-\u9fff]/.test(text) === (language === 'zh');
}

/** A markdown table. */
export function markdown(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** `solved/tickets (NN%)`. */
export function rate(row: Row): string {
  return `${row.solved}/${row.tickets} (${Math.round((100 * row.solved) / Math.max(1, row.tickets))}%)`;
}

/** Nearest-rank percentile (p in 0..100) of `values`; NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}
