/**
 * The checks Thought makes on a model's answer before anything acts on it, beyond the gate's
 * (Observation checks the answer's form, the tools it names and their argument contracts). Each is
 * pure and decided on recorded data only (the run's task text, the customer's replies, verified
 * tool results), so `tao replay --verify` re-decides it.
 *
 * Grounding: a skill may name tools one of whose verified results a final answer needs
 * (metadata.grounded-by); a final answer before any of them returned one goes back to the model.
 *
 * Argument provenance, the one rule for where a value that selects a customer's data may come from:
 * a tool's catalog entry names its identity parameters (`identity_parameters`: an order, claim or
 * invoice id, an e-mail address, a customer id). A model's call may carry such a value only when the
 * value was given to the run: in the ticket, in a customer's reply, or in a verified result of an
 * earlier tool call of the run (never in a model's own answer). Anything else is a value the model
 * made up or copied from an example, and calling with it would fetch (or change) somebody else's
 * data, so the call is refused before any tool runs and the model is told to ask the customer.
 * Matching is exact up to case and surrounding whitespace; in free text the value must not run into
 * ASCII letters or digits (`O-12345678` does not match inside `O-123456789`; it does inside
 * `订单O-12345678到哪了`).
 *
 * Answer facts, the one rule for which specifics a final answer may state (Observation never turns
 * an error into a friendly story, and neither may the answer a run completes with): every specific
 * in it must be supported by what the run was given or by a verified tool result of the run:
 * Before a final answer completes a run, every specific in it must be supported by what the run was
 * given (the ticket, a customer's reply) or by a verified tool result of the run:
 * - ids (`O-12345678`, `EC-123456`, `INV-2025-0001`) and e-mail addresses: the same value;
 * - dates (`2025-10-05`, `2025-10-05T10:00:00Z`, `October 5, 2025`, `5 Oct`, `2025年10月5日`): the same
 *   calendar day as a date in a result or the ticket (times are not compared);
 * - times (`14:05`): written in a result or the ticket;
 * - other numbers (`10 days`, `$12.34`, `1,234`): a number of a result (a result's date gives its
 *   year), or a hundredth or a hundred times one (cents and units), or the same digits
 *   in the ticket;
 * - states: a value of a state field (`status`, `state`, `*_status`, `*_state`) of a tool the run
 *   called, in the answer but verified nowhere in the run (the answer says "shipped", `orders.get`
 *   said "delivered"), is a contradiction naming both; unless negated just before ("not shipped",
 *   "hasn't shipped yet"), written in the ticket, or part of a verified field's name (`placed` of
 *   `placed_at`: "placed on October 5").
 * - acronyms (`UPS`, three to six capitals): a value or field name of a result, or the ticket's
 *   words; currencies and a few words of the trade (`USD`, `FAQ`, `ETA`) aside.
 * Other names and free prose are not judged: a rule that cannot tell data from wording would refuse
 * good answers.
 */
import type { RunState } from '../../../schemas/types.gen.ts';
import type { Plan } from '../../plan.ts';
import type { ModelAnswer } from '../../model-wire.ts';
import type { Outputs } from '../run-end.ts';
import { isModelStep, type ModelState, type ReactSkill, type TurnContext } from './state.ts';
import { LANGUAGE_NAMES, claimedAction, languageOf } from '../reading.ts';

// The checks as Thought runs them on an answer.

/**
 * Why a final answer cannot complete the run (null when it can): it is not grounded yet, or it states
 * specifics that nothing the run was given or verified supports (answer facts, below).
 */
export function finalAnswerProblem(
  answer: Extract<ModelAnswer, { kind: 'final' }>,
  ctx: TurnContext,
  state: ModelState,
  outputs: Outputs,
): { error: 'ungrounded' | 'unsupported_fact' | 'wrong_language'; evidence: string } | null {
  const why = ungrounded(ctx.skill, ctx.plan, outputs);
  if (why) return { error: 'ungrounded', evidence: why };
  // The customer reads the answer: it is written in the ticket's language when both are clear.
  const asked = languageOf(state.opening ?? ctx.run.task_text);
  const written = languageOf(answer.content ?? '');
  if (asked && written && asked !== written)
    return {
      error: 'wrong_language',
      evidence: `the ticket is in ${LANGUAGE_NAMES[asked]} and the answer in ${LANGUAGE_NAMES[written]}: write the final answer in ${LANGUAGE_NAMES[asked]}`,
    };
  // A small model told why its answer was refused may answer with the telling itself.
  const echoed = RUNTIME_FEEDBACK.find((phrase) => (answer.content ?? '').toLowerCase().includes(phrase));
  if (echoed)
    return {
      error: 'unsupported_fact',
      evidence: `the answer repeats the runtime's feedback ("${echoed}") instead of answering the customer: answer the ticket from the tool results`,
    };
  const tools = new Map(ctx.plan.steps.map((s) => [s.id, s.tool]));
  const results = Object.entries(outputs).flatMap(([id, data]) => {
    const tool = tools.get(id);
    return isModelStep(id) || !tool ? [] : [{ tool, data, response: ctx.loop.responseSchema?.(tool) }];
  });
  const text = [answer.content ?? '', answer.result ? JSON.stringify(answer.result) : ''].join('\n');
  const problems = answerFactProblems(text, givenValues(ctx.run, state, outputs), results);
  if (problems.length) return { error: 'unsupported_fact', evidence: factsEvidence(problems) };
  // An answer that says something was done needs the call that did it.
  const claim = ctx.loop.sideEffects ? claimedAction(text) : null;
  if (claim && !results.some((r) => ctx.loop.sideEffects!(r.tool)))
    return {
      error: 'unsupported_fact',
      evidence: `the answer says "${claim}", but no tool that changes anything returned a verified result in this run: make the call that does it, or do not say it was done`,
    };
  return null;
}

/** Phrases of the feedback this file gives the model: an answer holding one repeats it rather than answering. */
const RUNTIME_FEEDBACK = [
  'is in no verified result or the ticket',
  'state only what the tool results say',
  'no tool that changes anything returned',
  'a final answer needs a verified result',
  'the answer repeats the runtime',
  'write the final answer in',
  'was already called in this run',
];

/**
 * Whether a final answer could be grounded now: the skill names no grounded-by tools, or one of them
 * has returned a verified result in this run. Until then a turn offers no final answer (prompt.ts
 * `answerable`).
 */
export function groundable(skill: Pick<ReactSkill, 'groundedBy'>, plan: Plan, outputs: Outputs): boolean {
  const needed = skill.groundedBy ?? [];
  if (!needed.length) return true;
  const verified = new Set(plan.steps.filter((s) => !isModelStep(s.id) && outputs[s.id] !== undefined).map((s) => s.tool));
  return needed.some((t) => verified.has(t));
}

/** Why a final answer is not grounded yet (null when it is: {@link groundable}). */
function ungrounded(skill: ReactSkill, plan: Plan, outputs: Outputs): string | null {
  if (groundable(skill, plan, outputs)) return null;
  const needed = skill.groundedBy ?? [];
  return `a final answer needs a verified result of ${needed.join(' or ')} first, and none has one yet: call the tool, or ask the customer for what it needs`;
}

/** What the run was given that a model's identity arguments may come from: the ticket, the customer's replies, verified tool results. */
function givenValues(run: RunState, state: ModelState, outputs: Outputs): GivenValues {
  const texts = [run.task_text, state.opening ?? '', ...(state.replies ?? []).map((r) => r.text)];
  return { texts, results: Object.entries(outputs).flatMap(([id, out]) => (isModelStep(id) ? [] : [out])) };
}

/**
 * The evidence the model is shown when a call (or a plan step's literal input) carries identity
 * arguments the run was not given; null when every one is supported.
 */
export function unprovenCalls(
  calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>,
  ctx: TurnContext,
  state: ModelState,
  outputs: Outputs,
): string | null {
  const unsupported = unsupportedIdentities(calls, givenValues(ctx.run, state, outputs), (t) => ctx.loop.identityParameters?.(t) ?? []);
  return unsupported.length ? provenanceEvidence(unsupported) : null;
}

/**
 * The evidence the model is shown when every call it asks for was already made in this run with the
 * same arguments and has a verified result (its result is in the prompt: calling again changes
 * nothing); null when any call is new, or an earlier one failed (trying a failed call again is the
 * model's to decide). Small models (Qwen2.5-Coder-0.5B) ask for the same call again after its result.
 */
export function repeatedCalls(calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>, plan: Plan, outputs: Outputs): string | null {
  const answered = new Set(
    plan.steps.filter((st) => !isModelStep(st.id) && outputs[st.id] !== undefined).map((st) => `${st.tool}\u0000${JSON.stringify(st.input)}`),
  );
  if (!calls.length || !calls.every((c) => answered.has(`${c.tool}\u0000${JSON.stringify(c.arguments)}`))) return null;
  const named = calls.map((c) => `${c.tool} ${JSON.stringify(c.arguments)}`).join(', ');
  return `${named} was already called in this run and its result is above: use it to give the final answer, or call a different tool`;
}

/** A plan step's input without its references to other steps' results. */
export function literalInputs(input: unknown): Record<string, unknown> {
  if (!input || typeof input !== 'object') return {};
  return Object.fromEntries(Object.entries(input).filter(([, v]) => !(typeof v === 'string' && v.includes('{{'))));
}

// Argument provenance.

/** One identity argument that nothing the run was given supports. */
export interface UnsupportedIdentity {
  tool: string;
  parameter: string;
  value: string;
}

/** What a run was given, that identity arguments may come from. */
export interface GivenValues {
  /** The ticket's text, and each customer reply (free text: values are found as whole tokens). */
  texts: readonly string[];
  /** Verified results of the run's tool calls (values are collected from every string and number in them). */
  results: readonly unknown[];
}

/**
 * The identity arguments of `calls` that appear in none of `given`, in call order (empty when every
 * one is supported).
 * @param identityParameters a tool's identity parameters (its catalog entry's `identity_parameters`; none for an unknown tool)
 */
export function unsupportedIdentities(
  calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>,
  given: GivenValues,
  identityParameters: (tool: string) => readonly string[],
): UnsupportedIdentity[] {
  const known = new Set<string>();
  for (const result of given.results) collectValues(result, known);
  const texts = given.texts.map((t) => t.toLowerCase());
  const out: UnsupportedIdentity[] = [];
  for (const call of calls) {
    for (const parameter of identityParameters(call.tool)) {
      const raw = call.arguments[parameter];
      if (raw === undefined || raw === null) continue;
      const value = String(raw).trim().toLowerCase();
      if (value && (known.has(value) || texts.some((t) => containsToken(t, value)))) continue;
      out.push({ tool: call.tool, parameter, value: String(raw) });
    }
  }
  return out;
}

/** What the model is told (and the run records) about refused identity arguments. */
export function provenanceEvidence(unsupported: readonly UnsupportedIdentity[]): string {
  const list = unsupported.map((u) => `${u.tool}'s ${u.parameter} ${JSON.stringify(u.value)}`).join(', ');
  return `${list}: not in the ticket, a customer's reply or a verified tool result. Do not guess or copy an example id: ask the customer for it.`;
}

function collectValues(value: unknown, into: Set<string>): void {
  if (typeof value === 'string') into.add(value.trim().toLowerCase());
  else if (typeof value === 'number' && Number.isFinite(value)) into.add(String(value));
  else if (Array.isArray(value)) for (const v of value) collectValues(v, into);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) collectValues(v, into);
}

// ASCII only: CJK text writes ids right against its characters (`订单O-12345678到哪了`).
const WORD = /[A-Za-z0-9_]/;

/** `text` holds `value` not run into ASCII letters or digits on either side. */
export function containsToken(text: string, value: string): boolean {
  for (let at = text.indexOf(value); at >= 0; at = text.indexOf(value, at + 1)) {
    const before = at > 0 ? text[at - 1]! : '';
    const after = text[at + value.length] ?? '';
    if (!(before && WORD.test(before) && WORD.test(value[0]!)) && !(after && WORD.test(after) && WORD.test(value.at(-1)!))) return true;
  }
  return false;
}

// Answer facts.

/** A specific of an answer that nothing the run has supports, or that contradicts a verified value. */
export type FactProblem = { kind: 'unsupported'; text: string } | { kind: 'contradicts'; text: string; verified: string };

/** A tool's verified result in the run, with its response schema (for its state fields). */
export interface VerifiedResult {
  tool: string;
  data: unknown;
  response?: Record<string, unknown>;
}

/** The problems of an answer's specifics, in the order they are written (empty: every one is supported). */
export function answerFactProblems(answer: string, given: Pick<GivenValues, 'texts'>, results: readonly VerifiedResult[]): FactProblem[] {
  const values = new Set<string>();
  const numbers = new Set<number>();
  const days = new Set<string>();
  for (const r of results) collect(r.data, values, numbers, days);
  const texts = given.texts.join('\n');
  for (const d of datesIn(texts)) days.add(d.day);
  const ticketWords = texts.toLowerCase();
  const problems: FactProblem[] = [];
  let rest = answer;
  const takeOut = (text: string) => (rest = rest.replace(text, ' '.repeat(text.length)));

  // A value of a result, or a whole token of the ticket (the provenance rule for identities, above).
  const stated = (word: string) => values.has(word.toLowerCase()) || containsToken(ticketWords, word.toLowerCase());
  for (const re of [EMAIL, ID]) {
    for (const m of rest.matchAll(re)) {
      if (!stated(m[0])) problems.push({ kind: 'unsupported', text: m[0] });
      takeOut(m[0]);
    }
  }
  for (const d of datesIn(rest)) {
    if (!days.has(d.day) && !(d.day.startsWith('--') && [...days].some((day) => day.endsWith(d.day.slice(1)))))
      problems.push({ kind: 'unsupported', text: d.text });
    takeOut(d.text);
  }
  for (const m of rest.matchAll(TIME)) {
    if (!results.some((r) => JSON.stringify(r.data ?? null).includes(m[0].padStart(5, '0'))) && !texts.includes(m[0]))
      problems.push({ kind: 'unsupported', text: m[0] });
    takeOut(m[0]);
  }
  for (const m of rest.matchAll(NUMBER)) {
    const before = rest[m.index - 1] ?? '';
    const after = rest[m.index + m[0].length] ?? '';
    // Part of a word (`2FA`, `Qwen2.5`) or a list marker (`1.` at a line's start) is not data.
    if (/[A-Za-z]/.test(before) || /[A-Za-z]/.test(after)) continue;
    if (/(^|\n)\s*$/.test(rest.slice(0, m.index)) && /^[.)]/.test(rest.slice(m.index + m[0].length))) continue;
    const n = Number(m[0].replace(/,/g, ''));
    const supported = [n, n * 100, n / 100].some((x) => numbers.has(round(x))) || containsDigits(texts, m[0]);
    if (!supported) problems.push({ kind: 'unsupported', text: m[0] });
  }
  // Acronyms name things (a carrier `UPS`, a service): written in a result (a value or a field's name) or the ticket.
  const keys = new Set(results.flatMap((r) => Object.keys((r.data ?? {}) as object).map((k) => k.toLowerCase())));
  for (const m of rest.matchAll(ACRONYM)) {
    const word = m[0].toLowerCase();
    if (!stated(word) && !keys.has(word) && !COMMON_ACRONYMS.has(m[0])) problems.push({ kind: 'unsupported', text: m[0] });
  }
  problems.push(...contradictions(answer, results, ticketWords));
  return problems;
}

/** What the model is told (and the run records) about an answer's unsupported or contradicting specifics. */
export function factsEvidence(problems: readonly FactProblem[]): string {
  const parts = problems.map((p) =>
    p.kind === 'unsupported' ? `"${p.text}" is in no verified result or the ticket` : `"${p.text}" contradicts ${p.verified}`,
  );
  return `${parts.join('; ')}. State only what the tool results say; leave out what they do not.`;
}

const ACRONYM = /\b[A-Z]{3,6}\b/g;
/** Acronyms that name no data: currencies and words of the trade. */
const COMMON_ACRONYMS = new Set(['USD', 'EUR', 'GBP', 'CNY', 'JPY', 'RMB', 'FAQ', 'URL', 'PDF', 'API', 'ETA', 'ASAP', 'UTC']);
const EMAIL = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/g;
const ID = /\b[A-Z][A-Z0-9]{0,5}-[0-9]+(?:-[0-9]+)*\b/g;
const TIME = /\b\d{1,2}:\d{2}(?::\d{2})?\b/g;
const NUMBER = /\d+(?:,\d{3})*(?:\.\d+)?/g;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH = '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\\.?';
const DATE_FORMS: Array<[RegExp, (m: RegExpExecArray) => [string | undefined, string, string]]> = [
  [/\b(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g, (m) => [m[1], m[2]!, m[3]!]],
  [/(\d{4})年(\d{1,2})月(\d{1,2})日/g, (m) => [m[1], m[2]!, m[3]!]],
  [new RegExp(`\\b${MONTH}\\s+(\\d{1,2})(?:st|nd|rd|th)?(?:,?\\s+(\\d{4}))?\\b`, 'gi'), (m) => [m[3], month(m[1]!), m[2]!]],
  [new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH}(?:,?\\s+(\\d{4}))?\\b`, 'gi'), (m) => [m[3], month(m[2]!), m[1]!]],
];

const month = (name: string) => String(MONTHS.indexOf(name.slice(0, 3).toLowerCase()) + 1);
const pad = (n: string) => n.padStart(2, '0');
const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** Dates written in a text, as days (`2025-10-05`, or `--10-05` without a year), with the text they were read from. */
function datesIn(text: string): Array<{ text: string; day: string }> {
  const out: Array<{ text: string; day: string; at: number }> = [];
  let rest = text;
  for (const [re, parts] of DATE_FORMS) {
    for (const m of rest.matchAll(re)) {
      const [year, mon, day] = parts(m);
      out.push({ text: m[0], day: `${year ?? '-'}-${pad(mon)}-${pad(day)}`, at: m.index });
      rest = rest.slice(0, m.index) + ' '.repeat(m[0].length) + rest.slice(m.index + m[0].length);
    }
  }
  return out.sort((a, b) => a.at - b.at).map(({ text: t, day }) => ({ text: t, day }));
}

function collect(value: unknown, values: Set<string>, numbers: Set<number>, days: Set<string>): void {
  if (typeof value === 'string') {
    values.add(value.trim().toLowerCase());
    for (const d of datesIn(value)) {
      days.add(d.day);
      if (/^\d{4}/.test(d.day)) numbers.add(Number(d.day.slice(0, 4)));
    }
    if (/^-?\d+(\.\d+)?$/.test(value.trim())) numbers.add(round(Number(value)));
  } else if (typeof value === 'number' && Number.isFinite(value)) numbers.add(round(value));
  else if (Array.isArray(value)) for (const v of value) collect(v, values, numbers, days);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) collect(v, values, numbers, days);
}

function containsDigits(text: string, digits: string): boolean {
  for (let at = text.indexOf(digits); at >= 0; at = text.indexOf(digits, at + 1))
    if (!/\d/.test(text[at - 1] ?? '') && !/\d/.test(text[at + digits.length] ?? '')) return true;
  return false;
}

const STATE_FIELD = /^(status|state|\w+_status|\w+_state)$/;
const NEGATION = /(?:\b(?:not|never|no|yet)\b|n't|未|没有|尚未)\s*(?:\w+\s+){0,2}$/i;

/** State values the answer states that no verified result of the run holds. */
function contradictions(answer: string, results: readonly VerifiedResult[], ticket: string): FactProblem[] {
  const verified = new Map<string, string>(); // value → "tool's field is value"
  const candidates = new Map<string, string>(); // value → "tool's field is <its verified value>"
  const fieldWords = new Set<string>();
  for (const r of results) {
    const data = (r.data ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(data)) for (const w of key.split('_')) fieldWords.add(w.toLowerCase());
    const props = (r.response?.properties ?? {}) as Record<string, { enum?: unknown[] }>;
    for (const [field, schema] of Object.entries(props)) {
      if (!STATE_FIELD.test(field) || !Array.isArray(schema.enum) || typeof data[field] !== 'string') continue;
      const actual = `${r.tool}'s ${field} "${data[field]}"`;
      verified.set(String(data[field]).toLowerCase(), actual);
      for (const v of schema.enum) if (typeof v === 'string') candidates.set(v.toLowerCase(), actual);
    }
  }
  const lower = answer.toLowerCase();
  const out: FactProblem[] = [];
  for (const [value, actual] of candidates) {
    if (verified.has(value) || fieldWords.has(value) || ticket.includes(value.replace(/_/g, ' ')) || ticket.includes(value)) continue;
    for (const form of new Set([value, value.replace(/_/g, ' ')])) {
      const m = new RegExp(`(?<![\\w-])${form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`).exec(lower);
      if (m && !NEGATION.test(lower.slice(0, m.index))) {
        out.push({ kind: 'contradicts', text: answer.slice(m.index, m.index + form.length), verified: actual });
        break;
      }
    }
  }
  return out;
}
