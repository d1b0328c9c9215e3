/**
 * `tao eval`'s report: as text tables (per intent and language, totals, per ticket; with a baseline,
 * both releases side by side) or as one JSON document. Pure: returns the text.
 */
import { describeUnsupported } from './answer-check.ts';
import { failures, type RunCell, type Side, type Verdict } from './compare.ts';
import { breakdown, inLanguage, markdown, rate, type Scored } from './runs.ts';

/** What the report says about how the sets were run. */
export interface RunInfo {
  model: string;
  baseUrl: string;
  started: string;
  load: number[];
  candidate: string;
  baseline: string | null;
}

/** The report as one JSON document. */
export function reportJson(info: RunInfo, verdict: Verdict, candidate: readonly Scored[], minSolved: number): Record<string, unknown> {
  return {
    ...info,
    minSolved,
    passed: verdict.passed,
    failures: failures(verdict),
    broke: verdict.broke,
    wrong: verdict.wrong,
    totals: { candidate: withoutDetail(verdict.candidate), baseline: verdict.baseline ? withoutDetail(verdict.baseline) : null },
    detail: verdict.candidate.detail,
    byIntent: breakdown(candidate, (s) => s.ticket.category),
    byLanguage: breakdown(candidate, (s) => s.ticket.language),
    tickets: verdict.tickets,
  };
}

function withoutDetail(s: Side): Omit<Side, 'detail'> {
  const { detail: _detail, ...rest } = s;
  return rest;
}

const p = (x: { p50: number; p95: number } | null, unit = '') =>
  x && !Number.isNaN(x.p50) ? `${Math.round(x.p50)}${unit} / ${Math.round(x.p95)}${unit}` : 'not reported';
const money = (c: number | null) => (c === null ? 'n/a' : c.toFixed(4));
const seconds = (ms: number | null) => (ms === null ? '-' : `${(ms / 1000).toFixed(1)} s`);

/** The report as text: the candidate's tables, the comparison when there is a baseline, each ticket, and the verdict. */
export function reportText(info: RunInfo, verdict: Verdict, candidate: readonly Scored[], minSolved: number): string {
  const out: string[] = [];
  out.push(
    `Candidate ${info.candidate}${info.baseline ? `, baseline ${info.baseline}` : ''}; model ${info.model} at ${info.baseUrl}; ${info.started}, load average ${info.load.map((l) => l.toFixed(2)).join(' ')}`,
  );
  const cols = ['tickets', 'solved', 'wrong', 'not solved'];
  out.push(
    '',
    markdown(
      ['intent', ...cols],
      breakdown(candidate, (s) => s.ticket.category).map((r) => [r.group, r.tickets, rate(r), r.wrong, r.unsolved]),
    ),
  );
  out.push(
    '',
    markdown(
      ['language', ...cols],
      breakdown(candidate, (s) => s.ticket.language).map((r) => [r.group, r.tickets, rate(r), r.wrong, r.unsolved]),
    ),
  );
  const sum = verdict.candidate.detail;
  out.push(
    '',
    markdown(
      [
        'completed when it must not',
        'answered in another language',
        'answers refused in the loop',
        'turns / run P50 / P95',
        'tokens / run P50 / P95',
        'wall time / turn P50 / P95',
        'prompt tokens / turn P50 / P95',
        'of them reused from the cache P50 / P95',
      ],
      [
        [
          sum.completedWhenNot,
          sum.otherLanguage,
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
    ),
  );
  const row = (name: string, s: Side) => [
    name,
    `${s.solved}/${s.tickets} (${(100 * s.solvedRate).toFixed(1)}%)`,
    s.wrong,
    s.unsupportedFacts,
    s.escalated,
    s.noOutcome,
    s.turns,
    s.tokens,
    money(s.cost),
    seconds(s.wallMs),
  ];
  out.push(
    '',
    markdown(
      ['release', 'solved', 'wrong', 'unsupported facts', 'escalated', 'no outcome', 'turns', 'tokens', 'cost', 'wall time'],
      [row('candidate', verdict.candidate), ...(verdict.baseline ? [row('baseline', verdict.baseline)] : [])],
    ),
  );
  out.push('', 'Per ticket (read the answers, not only the counts):');
  const byId = new Map(candidate.map((s) => [s.ticket.id, s]));
  for (const t of verdict.tickets) {
    const s = byId.get(t.id)!;
    const change = t.change === 'same' ? '' : ` ${t.change.toUpperCase()}`;
    const base = t.baseline ? `; baseline [${t.baseline.verdict}] ${runLine(t.baseline)}` : '';
    const routed = s.run && s.run.routed !== s.ticket.intent ? ` routed ${s.run.routed}, expected ${s.ticket.intent};` : '';
    const language = s.run?.status === 'completed' && !inLanguage(s.run.said, s.ticket.language) ? ' answered in another language;' : '';
    out.push(`- ${t.id} [${t.candidate.verdict}]${change} ${runLine(t.candidate)};${routed}${language} ${t.candidate.why}${base}`);
    if (s.score.unsupported.length) out.push(`    unsupported: ${describeUnsupported(s.score.unsupported)}`);
    if (t.candidate.said !== null) out.push(`    → ${JSON.stringify(t.candidate.said).slice(0, 400)}`);
  }
  const why = failures(verdict);
  out.push(
    '',
    verdict.passed
      ? `PASSED: ${verdict.candidate.wrong} wrong, ${(100 * verdict.candidate.solvedRate).toFixed(1)}% solved (at least ${(100 * minSolved).toFixed(0)}% needed)${verdict.baseline ? ', no ticket the baseline solved broke' : ''}`
      : `FAILED: ${why.join('; ')}`,
  );
  return out.join('\n');
}

function runLine(c: RunCell): string {
  return c.status === null
    ? 'no outcome'
    : `${c.status} (${c.reason}), ${c.turns} turn(s), ${c.tokens} tokens, ${seconds(c.wallMs)}${c.cost === null ? '' : `, cost ${money(c.cost)}`}`;
}
