/**
 * Reading what a customer reads and writes, for model/checks.ts and the prompt. Pure and
 * deterministic.
 *
 * - Which language a ticket or an answer is written in: language.ts.
 * - Whether an answer says something was done (sent, reset, refunded): such an answer needs a
 *   verified result of a tool with side effects in the run.
 * - Which values a skill's answer contract (`metadata.answer-states`) asks for that an answer leaves
 *   out (`omittedStates`).
 *
 * Answer facts, the one rule for which specifics a final answer may state (Observation never turns
 * an error into a friendly story, and neither may the answer a run completes with): every specific
 * in it must be supported by what the run was given (the ticket, a customer's reply) or by a
 * verified tool result of the run:
 * - ids (`O-12345678`, `EC-123456`, `INV-2025-0001`) and e-mail addresses: the same value;
 * - dates (`2025-10-05`, `2025-10-05T10:00:00Z`, `October 5, 2025`, `5 Oct`, `2025年10月5日`): the same
 *   calendar day as a date in a result or the ticket (times are not compared);
 * - times (`14:05`): written in a result or the ticket;
 * - other numbers (`10 days`, `$12.34`, `1,234`): a number of a result (a result's date gives its
 *   year), or a hundredth or a hundred times one (cents and units), or the same digits
 *   in the ticket; but a `*_cents` value written beside a currency (`191964 円`, `$4999`) gives
 *   cents as units, a contradiction naming the field;
 * - states: a value of a state field (`status`, `state`, `*_status`, `*_state`) of a tool the run
 *   called, in the answer (as the value, or a Chinese or "not shipped" form: state-words.ts) but
 *   verified nowhere in the run (the answer says "shipped", `orders.get`
 *   said "delivered"), is a contradiction naming both; unless negated just before ("not shipped",
 *   "hasn't shipped yet"), written so in the ticket, or part of a verified field's name (`placed` of
 *   `placed_at`: "placed on October 5").
 * - acronyms (`UPS`, three to six capitals): a value or field name of a result, or the ticket's
 *   words; currencies and a few words of the trade (`USD`, `FAQ`, `ETA`) aside.
 * Other names and free prose are not judged: a rule that cannot tell data from wording would refuse
 * good answers.
 */
import { stateForms } from './state-words.ts';

/**
 * Words that say something was done (sent, reset, refunded, ...), in English and Chinese; an answer
 * with them needs a verified result of a tool with side effects in the run (model/checks.ts
 * `finalAnswerProblem`).
 */
const ACTION_CLAIMS = [
  /\b(?:has|have|had)\s+been\s+(?:sent|e-?mailed|reset|refunded|issued|processed|initiated|started|submitted|created|cancell?ed)\b/gi,
  /\b(?:was|were)\s+(?:sent|e-?mailed|reset|refunded|issued|processed|initiated|submitted)\b/gi,
  /\b(?:I|we)(?:\s+have|'ve)?\s+(?:sent|e-?mailed|reset|refunded|issued|processed|initiated|started|submitted)\b/gi,
  /已(?:经)?(?:发送|寄出|重置|退款|退还|处理|提交|发起)/g,
  /(?:发送|退款|重置)(?:成功|完成)/g,
  // ja/es/de: deeds of a write tool only; "enviado", "versendet", 送られ of an order are its shipping.
  /(?:リンク|メール|控え|コピー)(?:が|を)?送(?:られ|信され|付され|信し|付し)|返金(?:しました|されました|済み|が完了)|リセット(?:しました|されました|済み|が完了)|再設定(?:しました|されました)/g,
  /\b(?:hemos|he|se\s+ha|se\s+han)\s+(?:reembolsado|restablecido)\b|\b(?:hemos|he)\s+enviado\b|\b(?:fue|ha\s+sido)\s+(?:reembolsad[oa]|restablecid[oa])\b|\bse\s+ha\s+enviado\s+(?:un|una|el|la)\s+(?:enlace|correo|copia)\b/gi,
  /\b(?:wurde|wurden|haben|habe)\s+(?:(?!nicht\b|kein)\S+\s+){0,4}?(?:erstattet|zurückgesetzt)\b|\b(?:Link|E-Mail|Kopie)\s+(?:\S+\s+){0,6}?(?:gesendet|geschickt)\b/gi,
];
/** A negation just before a claim: "no refund has been issued", "尚未退款". */
const NEGATED = /(?:\b(?:no|not|never|cannot|can't|unable|nothing|nicht|kein\w*|nunca)\b|n't|未|没有|不)[^.!?。！？]{0,30}$/i;

/** The first words of `text` that say something was done, unless negated just before; null when none do. */
export function claimedAction(text: string): string | null {
  for (const pattern of ACTION_CLAIMS) {
    for (const m of text.matchAll(pattern)) {
      if (NEGATED.test(text.slice(Math.max(0, m.index - 40), m.index))) continue;
      return m[0];
    }
  }
  return null;
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
export function answerFactProblems(answer: string, given: { texts: readonly string[] }, results: readonly VerifiedResult[]): FactProblem[] {
  const values = new Set<string>();
  const numbers = new Set<number>();
  const days = new Set<string>();
  for (const r of results) collect(r.data, values, numbers, days);
  const cents = centsFields(results);
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
    const unit = centsAsUnits(n, rest, m.index, m[0].length, cents, texts);
    if (unit) {
      problems.push({ kind: 'contradicts', text: unit, verified: `${cents.get(round(n))} ${m[0]} (in cents: ${(n / 100).toFixed(2)} in currency units)` });
      continue;
    }
    // Units called cents ("646.20 cents" for amount_cents 64620): the amount is off by a hundred.
    const unitsAsCents = CENTS_AFTER.exec(rest.slice(m.index + m[0].length, m.index + m[0].length + 10));
    if (unitsAsCents && !cents.has(round(n)) && cents.has(round(n * 100))) {
      problems.push({
        kind: 'contradicts',
        text: `${m[0]}${unitsAsCents[0]}`,
        verified: `${cents.get(round(n * 100))} ${round(n * 100)} (${m[0]} is in currency units, not cents)`,
      });
      continue;
    }
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

/** The amounts in cents of the results (fields named `*_cents`), each with where it came from (`orders.get's total_cents`). */
function centsFields(results: readonly VerifiedResult[]): Map<number, string> {
  const out = new Map<number, string>();
  const walk = (tool: string, value: unknown): void => {
    if (Array.isArray(value)) for (const v of value) walk(tool, v);
    else if (value && typeof value === 'object')
      for (const [key, v] of Object.entries(value)) {
        if (/_cents$/i.test(key) && typeof v === 'number') out.set(round(v), `${tool}'s ${key}`);
        else walk(tool, v);
      }
  };
  for (const r of results) walk(r.tool, r.data);
  return out;
}

/** Cents named after an amount (`646.20 cents`, `64620 分`). */
const CENTS_AFTER = /^\s*(?:cents?|céntimos?|centavos?|Cent|分|セント)(?![A-Za-z])/i;
/** Currency marks written before an amount (`$12`, `USD 12`) or after it (`12 円`, `12 euros`); cents (`分`, `Cent`) are not among them. */
const CURRENCY_BEFORE = /(?:[$€£¥]|\b(?:USD|EUR|GBP|CNY|JPY|RMB))\s*$/;
const CURRENCY_AFTER = /^\s*(?:[$€£¥円元]|ドル|ユーロ|美元|欧元|人民币|(?:USD|EUR|GBP|CNY|JPY|RMB|dollars?|euros?|yuan|yen|d[oó]lares|Euro)\b)/i;

/**
 * An amount in cents written as currency units (`191964 円` for `total_cents` 191964: the real 1.5B's
 * Japanese answers): the number is a result's `*_cents` value, written beside a currency, and not
 * the ticket's. Gives the text to name (number and currency), or null.
 */
function centsAsUnits(n: number, text: string, at: number, length: number, cents: Map<number, string>, ticket: string): string | null {
  if (!cents.has(round(n)) || containsDigits(ticket, text.slice(at, at + length))) return null;
  const before = CURRENCY_BEFORE.exec(text.slice(Math.max(0, at - 5), at));
  const after = CURRENCY_AFTER.exec(text.slice(at + length, at + length + 12));
  if (!before && !after) return null;
  return before ? `${before[0]}${text.slice(at, at + length)}` : `${text.slice(at, at + length)}${after![0]}`;
}

function containsDigits(text: string, digits: string): boolean {
  for (let at = text.indexOf(digits); at >= 0; at = text.indexOf(digits, at + 1))
    if (!/\d/.test(text[at - 1] ?? '') && !/\d/.test(text[at + digits.length] ?? '')) return true;
  return false;
}

/** A field that holds a state: `status`, `state`, `*_status`, `*_state`. */
export const STATE_FIELD = /^(status|state|\w+_status|\w+_state)$/;
const NEGATION = /(?:\b(?:not|never|no|yet)\b|n't|未|没有|尚未)\s*(?:\w+\s+){0,2}$/i;
/** A state said of what comes next, not of now: an `approved` claim "will be paid with the next payment run" (expense-claim-status says so). */
const FUTURE = /(?:\b(?:will|would|to|once|until|when|after)\s+(?:\w+\s+){0,2}(?:be|get|is|are)\s+|将|将会|会被|待|之后)\s*$/i;

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
    if (verified.has(value)) continue;
    for (const form of stateForms(value)) {
      if (ticket.includes(form) || fieldWords.has(form)) continue;
      const m = new RegExp(`(?<![\\w-])${form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`).exec(lower);
      if (m && !NEGATION.test(lower.slice(0, m.index)) && !FUTURE.test(lower.slice(0, m.index))) {
        out.push({ kind: 'contradicts', text: answer.slice(m.index, m.index + form.length), verified: actual });
        break;
      }
    }
  }
  return out;
}

/** A value a final answer must state and does not (a skill's `metadata.answer-states`). */
export interface OmittedState {
  tool: string;
  field: string;
  value: string;
}

/**
 * The values a final answer must state and does not: for each `<tool>.<field>` of `fields` whose
 * tool has a verified result in the run (the last one), the field's value as an answer may write it:
 * a number, or a hundredth of it (cents as units: `252660` as `2,526.60`); a date, the same day (in
 * its own offset or in UTC); an id or a word, as written (any case, `_` as a space). Fields the
 * result lacks, or whose value is not a string or number, ask nothing.
 */
export function omittedStates(answer: string, results: readonly VerifiedResult[], fields: readonly string[]): OmittedState[] {
  const lower = answer.toLowerCase();
  const written = [...answer.matchAll(NUMBER)].map((m) => Number(m[0].replace(/,/g, '')));
  const days = new Set(datesIn(answer).map((d) => d.day));
  const out: OmittedState[] = [];
  for (const spec of fields) {
    const cut = spec.lastIndexOf('.');
    const [tool, field] = [spec.slice(0, cut), spec.slice(cut + 1)];
    const result = results.filter((r) => r.tool === tool).at(-1);
    const value = (result?.data as Record<string, unknown> | null | undefined)?.[field];
    if (typeof value === 'number') {
      if (!written.some((x) => round(x) === round(value) || round(x * 100) === round(value))) out.push({ tool, field, value: String(value) });
    } else if (typeof value === 'string' && value.trim()) {
      const dates = datesIn(value);
      if (dates.length && dates[0]!.text.length >= value.trim().length - 1) {
        const utc = Number.isNaN(Date.parse(value)) ? null : new Date(Date.parse(value)).toISOString().slice(0, 10);
        if (!days.has(dates[0]!.day) && !(utc && days.has(utc))) out.push({ tool, field, value });
      } else if (!stateForms(value).some((form) => containsToken(lower, form))) out.push({ tool, field, value });
    }
  }
  return out;
}

/**
 * Whether `answer` states at least one value of a verified result: a string of three characters or
 * more (any case), a number (or its hundredth: cents as units), or a result's date (the same day).
 * An answer rewritten after a wrong-language refusal is asked for it (model/checks.ts): the 1.5B once
 * answered a Japanese ticket with the refusal itself, translated ("この回答は日本語でありません").
 */
export function statesAnyValue(answer: string, results: readonly VerifiedResult[]): boolean {
  const values = new Set<string>();
  const numbers = new Set<number>();
  const days = new Set<string>();
  for (const r of results) collect(r.data, values, numbers, days);
  const lower = answer.toLowerCase();
  if ([...values].some((v) => v.length >= 3 && containsToken(lower, v))) return true;
  if ([...answer.matchAll(NUMBER)].some((m) => [Number(m[0].replace(/,/g, '')), Number(m[0].replace(/,/g, '')) * 100].some((n) => numbers.has(round(n)))))
    return true;
  return datesIn(answer).some((d) => days.has(d.day));
}

/**
 * Whether an answer is only values, not a reply: with every verified value, id, number and date
 * taken out, fewer than two words (and three CJK characters) are left. Told which values its answer
 * must state, the 1.5B answered a Chinese ticket "O-12345678, SF".
 */
export function onlyValues(answer: string, results: readonly VerifiedResult[]): boolean {
  const values = new Set<string>();
  for (const r of results) collect(r.data, values, new Set(), new Set());
  let rest = answer.replace(ID, ' ').replace(EMAIL, ' ');
  for (const d of datesIn(rest)) rest = rest.replace(d.text, ' ');
  rest = rest.toLowerCase();
  for (const v of [...values].sort((a, b) => b.length - a.length)) if (v.length >= 2) rest = rest.split(v).join(' ');
  rest = rest.replace(NUMBER, ' ');
  const words = rest.match(/[a-z\u00c0-\u024f]{2,}/g)?.length ?? 0;
  const cjk = rest.match(CJK_CHAR)?.length ?? 0;
  return words < 2 && cjk < 3;
}
const CJK_CHAR = /[\u3040-\u30ff\u3400-\u9fff]/g;
