/**
 * `tao eval`'s verdict: a candidate release's scored runs against a baseline's (when given) and the
 * thresholds passed, ticket by ticket and in total. The gate fails when the candidate breaks a ticket
 * the baseline solved, has any wrong run, or solves less than `minSolved` of the set. Pure.
 */
import { totals, type Scored, type Totals } from './runs.ts';

/** One release's side of the comparison, in total. */
export interface Side {
  tickets: number;
  solved: number;
  solvedRate: number;
  wrong: number;
  /** Completed runs whose answer holds a specific no tool result or ticket supports. */
  unsupportedFacts: number;
  escalated: number;
  noOutcome: number;
  turns: number;
  tokens: number;
  /** Summed model cost (TAO_LLM_PRICES); null when no run reported one. */
  cost: number | null;
  /** The whole set's wall time, start to last outcome read back. */
  wallMs: number;
  detail: Totals;
}

/** One ticket, both sides. */
export interface TicketRow {
  id: string;
  intent: string;
  candidate: RunCell;
  baseline: RunCell | null;
  /** broke: the baseline solved it and the candidate does not; fixed: the reverse. */
  change: 'broke' | 'fixed' | 'same';
}

/** How one run of a ticket went. */
export interface RunCell {
  verdict: 'solved' | 'wrong' | 'unsolved';
  status: string | null;
  reason: string | null;
  turns: number;
  tokens: number;
  cost: number | null;
  wallMs: number | null;
  why: string;
  said: string | null;
}

/** The comparison and the gate. */
export interface Verdict {
  passed: boolean;
  candidate: Side;
  baseline: Side | null;
  tickets: TicketRow[];
  /** Tickets the baseline solved and the candidate does not. */
  broke: string[];
  /** Tickets the candidate answered wrongly (an unsupported fact, or completed when it must not). */
  wrong: string[];
  /** Set when the candidate's solved share is below the threshold. */
  belowMinSolved: { solvedRate: number; minSolved: number } | null;
}

/** One release's side, in total. */
export function side(scored: readonly Scored[], wallMs: number): Side {
  const detail = totals(scored);
  const runs = scored.flatMap((s) => (s.run ? [s.run] : []));
  const costs = runs.flatMap((r) => (r.cost === null ? [] : [r.cost]));
  return {
    tickets: detail.tickets,
    solved: detail.solved,
    solvedRate: detail.solvedRate,
    wrong: detail.wrong,
    unsupportedFacts: detail.completedUnsupported,
    escalated: runs.filter((r) => r.status === 'escalated').length,
    noOutcome: detail.noOutcome,
    turns: runs.reduce((n, r) => n + r.turns.length, 0),
    tokens: runs.reduce((n, r) => n + tokensOf(r.turns), 0),
    cost: costs.length ? costs.reduce((a, b) => a + b, 0) : null,
    wallMs,
    detail,
  };
}

function tokensOf(turns: ReadonlyArray<{ promptTokens: number; completionTokens: number }>): number {
  return turns.reduce((n, t) => n + t.promptTokens + t.completionTokens, 0);
}

function cell(s: Scored): RunCell {
  const { run, score } = s;
  return {
    verdict: score.verdict,
    status: run?.status ?? null,
    reason: run?.reasonCode ?? null,
    turns: run?.turns.length ?? 0,
    tokens: run ? tokensOf(run.turns) : 0,
    cost: run?.cost ?? null,
    wallMs: run?.wallMs ?? null,
    why: score.why,
    said: run?.said ?? null,
  };
}

/**
 * The candidate against the baseline (null: none) and `minSolved`. A ticket the baseline did not
 * run counts as not solved by it.
 */
export function compare(
  candidate: { scored: readonly Scored[]; wallMs: number },
  baseline: { scored: readonly Scored[]; wallMs: number } | null,
  minSolved: number,
): Verdict {
  const before = new Map((baseline?.scored ?? []).map((s) => [s.ticket.id, s]));
  const tickets: TicketRow[] = candidate.scored.map((s) => {
    const b = before.get(s.ticket.id);
    const was = b?.score.verdict === 'solved';
    const is = s.score.verdict === 'solved';
    return {
      id: s.ticket.id,
      intent: s.ticket.intent,
      candidate: cell(s),
      baseline: b ? cell(b) : null,
      change: was && !is ? 'broke' : !was && is && b ? 'fixed' : 'same',
    };
  });
  const cand = side(candidate.scored, candidate.wallMs);
  const broke = tickets.filter((t) => t.change === 'broke').map((t) => t.id);
  const wrong = tickets.filter((t) => t.candidate.verdict === 'wrong').map((t) => t.id);
  const belowMinSolved = cand.solvedRate < minSolved ? { solvedRate: cand.solvedRate, minSolved } : null;
  return {
    passed: broke.length === 0 && wrong.length === 0 && belowMinSolved === null,
    candidate: cand,
    baseline: baseline ? side(baseline.scored, baseline.wallMs) : null,
    tickets,
    broke,
    wrong,
    belowMinSolved,
  };
}

/** The lines that say why the gate failed (empty when it passed). */
export function failures(v: Verdict): string[] {
  const out: string[] = [];
  if (v.broke.length) out.push(`broke ${v.broke.length} ticket(s) the baseline solved: ${v.broke.join(', ')}`);
  if (v.wrong.length) out.push(`${v.wrong.length} wrong run(s): ${v.wrong.join(', ')}`);
  if (v.belowMinSolved)
    out.push(`solved ${(100 * v.belowMinSolved.solvedRate).toFixed(1)}% of the set, below --min-solved ${(100 * v.belowMinSolved.minSolved).toFixed(0)}%`);
  return out;
}
