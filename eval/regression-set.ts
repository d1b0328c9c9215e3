/**
 * The regression set (eval/regression-tickets.json): tickets in English and Chinese, each with
 * the intent it should route to, the tool calls that answer it, the facts its answer must state
 * (values the demo tool server returns for those calls; test/bench/regression-set.test.ts asks the
 * server and fails when one drifts), and how it must end. `tao eval` (and `npm run models:eval-loop`)
 * runs it through the loop and scores each run with {@link scoreRun}.
 */
import { readFileSync } from 'node:fs';
import { packagePath } from '../runtime/paths.ts';
import { uncheckedSpecifics, type CheckedResult, type UnsupportedSpecific } from './answer-check.ts';
import { datesIn, daysOf, ID_PATTERN, numbersIn, sameDay, stateMatch } from './answer-text.ts';

/** The shipped regression set, at the package root (not compiled into dist/). */
export const REGRESSION_SET_FILE = packagePath('eval', 'regression-tickets.json');

/** How a ticket must end: completed with its facts, or not completed in this way. */
export type ExpectedEnd = 'completed' | 'awaiting_input' | 'escalated';

/** What a ticket is about; `missing_id` and `off_domain` tickets end without completing. */
export type Category = 'order' | 'claim' | 'service' | 'invoice' | 'account' | 'refund' | 'off_domain' | 'missing_id';

export interface RegressionTicket {
  id: string;
  language: 'en' | 'zh';
  /** The intent the router should give it (the skill that serves it), `unknown` when none should. */
  intent: string;
  category: Category;
  text: string;
  /** The calls that answer it, in order (identity arguments from the ticket or an earlier call's result). */
  calls: Array<{ tool: string; args: Record<string, unknown> }>;
  /** Values of those calls' results the answer must state. */
  facts: Array<{ tool: string; field: string; value: string | number }>;
  /** Tools the run must not call (a refund of an order that has not shipped). */
  forbidden_tools?: string[];
  expect: ExpectedEnd;
}

/** The set as stored. */
export function loadRegressionSet(file = REGRESSION_SET_FILE): RegressionTicket[] {
  return (JSON.parse(readFileSync(file, 'utf8')) as { tickets: RegressionTicket[] }).tickets;
}

/** Whether `answer` states `fact`, read as a customer would: ids as written, amounts in units or cents, dates in common forms, states in English or Chinese. */
export function factStated(answer: string, fact: RegressionTicket['facts'][number]): boolean {
  const { field, value } = fact;
  if (typeof value === 'number') {
    const want = field.endsWith('_cents') ? [value / 100, value] : [value];
    return numbersIn(answer).some((n) => want.some((w) => Math.abs(n.value - w) < 0.005));
  }
  if (new RegExp(`^${ID_PATTERN.source}$`).test(value)) return answer.toLowerCase().includes(value.toLowerCase());
  const days = /^\d{4}-\d{2}-\d{2}T/.test(value) ? daysOf(value) : [];
  if (days.length) return datesIn(answer).some((d) => days.some((day) => sameDay(d.day, day)));
  return stateMatch(answer, value) !== null;
}

/** A run of a ticket as the bench read it from the log. */
export interface ScoredRun {
  status: string;
  reasonCode: string;
  /** The final answer (completed), the question to the customer, or the outcome's reason. */
  said: string;
  /** Tools with a verified result in the run. */
  verifiedTools: ReadonlySet<string>;
  /** Tools the run called (verified or not). */
  calledTools: ReadonlySet<string>;
  results: readonly CheckedResult[];
  /** The ticket and any customer reply. */
  given: readonly string[];
}

/** How a run of a ticket scored. */
export interface Score {
  /** solved: completed with every expected fact and tool, or not completed as expected; wrong: completed with an unsupported fact, or completed when it must not be. */
  verdict: 'solved' | 'wrong' | 'unsolved';
  missingFacts: string[];
  missingTools: string[];
  unsupported: UnsupportedSpecific[];
  why: string;
}

/** Scores a run of `ticket`. `enums`: per tool, per field, the values its response schema allows (for the checker's states). */
export function scoreRun(ticket: RegressionTicket, run: ScoredRun, enums: Record<string, Record<string, readonly string[]>> = {}): Score {
  const none = { missingFacts: [], missingTools: [], unsupported: [] };
  if (ticket.expect !== 'completed') {
    if (run.status === 'completed') return { ...none, verdict: 'wrong', why: `completed; expected ${ticket.expect}` };
    if (run.status === ticket.expect) return { ...none, verdict: 'solved', why: `${run.status} as expected` };
    return { ...none, verdict: 'unsolved', why: `${run.status} (${run.reasonCode}); expected ${ticket.expect}` };
  }
  if (run.status !== 'completed') return { ...none, verdict: 'unsolved', why: `${run.status} (${run.reasonCode}); expected completed` };
  const unsupported = uncheckedSpecifics({ answer: run.said, given: run.given, results: run.results, enums });
  const missingFacts = ticket.facts.filter((f) => !factStated(run.said, f)).map((f) => `${f.tool}.${f.field}=${f.value}`);
  const missingTools = [...new Set(ticket.calls.map((c) => c.tool))].filter((t) => !run.verifiedTools.has(t));
  const forbidden = (ticket.forbidden_tools ?? []).filter((t) => run.calledTools.has(t));
  if (unsupported.length)
    return { verdict: 'wrong', missingFacts, missingTools, unsupported, why: `completed with ${unsupported.length} unsupported specific(s)` };
  const gaps = [
    missingFacts.length ? `facts missing: ${missingFacts.join(', ')}` : '',
    missingTools.length ? `no verified result of ${missingTools.join(', ')}` : '',
    forbidden.length ? `called ${forbidden.join(', ')}, which it must not` : '',
  ].filter(Boolean);
  return gaps.length
    ? { verdict: 'unsolved', missingFacts, missingTools, unsupported, why: gaps.join('; ') }
    : { verdict: 'solved', missingFacts, missingTools, unsupported, why: 'completed with every expected fact' };
}

/** The calendar days and amounts of a fact as a reference answer would write them (for tests of the scorer). */
export function writtenFact(fact: RegressionTicket['facts'][number]): string {
  if (typeof fact.value === 'number') return fact.field.endsWith('_cents') ? (fact.value / 100).toFixed(2) : String(fact.value);
  return /^\d{4}-\d{2}-\d{2}T/.test(fact.value) ? fact.value.slice(0, 10) : fact.value;
}
