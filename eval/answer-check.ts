/**
 * The bench's own fact checker: given a run's final answer, what the run was given (the ticket, the
 * customer's replies) and its verified tool results, the specifics of the answer that none of them
 * supports. A second count beside the gate's (processors/thought/model/checks.ts, which this file
 * does not import): the two are written apart, so a specific one lets through can still be counted
 * by the other.
 *
 * A specific is supported when:
 * - an id (`O-20250611`, `INV-2024-0117`, `PWR-22719439`) or an e-mail address: the same string is a
 *   value of a verified result or written in the ticket (case aside);
 * - a date: its day is the day of a date-time in a verified result (in the result's own offset or in
 *   UTC) or a date of the ticket; a date without a year, the same month and day;
 * - a clock time: the hour and minute of such a date-time, or written in the ticket;
 * - a number from 10 up (an amount, a count of days): a number of a verified result, or its
 *   hundredth when the field counts cents (`*_cents`: 273486 is 2734.86), or a year, month or day
 *   of a verified date, or the same number in the ticket; a `*_cents` value written beside money
 *   (`191964 円`, `$4999`) is cents given as units, unsupported. Numbers 0 to 9 are not judged: they are
 *   list markers and counts of wording ("1 hour", "step 2") far more often than data;
 * - a state (a value of an enumerated field the run verified: `status`, `state`, `carrier`, `tier`):
 *   when the answer names a value of that field other than the verified one, it is unsupported
 *   unless negated just before it ("not shipped", "未发货"), written in the ticket, or a state the
 *   verified one comes after (a delivered order was placed and shipped);
 * - a word in capitals (`USPS`): a value of a verified result, a field's name or a word of the
 *   ticket, or a common word of the trade (`USD`, `ETA`, `API`);
 * - an action the demo's write tools take (a copy e-mailed, a reset link sent, a refund made): a
 *   verified result of that tool in the run ({@link ACTION_CLAIMS}), unless negated ("cannot be
 *   refunded").
 * Names and free prose are not judged.
 */
import { EMAIL_PATTERN, ID_PATTERN, TIME_PATTERN, blank, datesIn, daysOf, numbersIn, sameDay, stateMatch, takeOut } from './answer-text.ts';

/** A verified result of a tool call in the run: the tool and the data Observation extracted. */
export interface CheckedResult {
  tool: string;
  data: unknown;
}

/** What the checker is given. */
export interface AnswerCheckInput {
  answer: string;
  /** The ticket's text and every customer reply. */
  given: readonly string[];
  results: readonly CheckedResult[];
  /** Per tool, per enumerated field, the values the field may take (its response schema's enum); {@link DOMAIN_VOCABULARY} is added. */
  enums?: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
}

/** One specific of the answer that nothing the run has supports. */
export interface UnsupportedSpecific {
  kind: 'id' | 'email' | 'date' | 'time' | 'number' | 'state' | 'word' | 'action';
  text: string;
  why: string;
}

/** Enumerated fields the catalog writes as plain strings: the demo's carriers. */
export const DOMAIN_VOCABULARY: Readonly<Record<string, readonly string[]>> = { carrier: ['DHL', 'UPS', 'SF'] };

/** How an answer says a write tool's action happened, in English and Chinese: saying it needs a verified result of the tool. */
export const ACTION_CLAIMS: Readonly<Record<string, RegExp>> = {
  'billing.send_invoice_copy':
    /\b(?:copy|invoice|it)\b[^.。\n]{0,60}\b(?:was|has been|been|is|were)\s+(?:e-?mailed|sent|resent|re-sent)|\b(?:sent|e-?mailed|resent)\s+(?:you\s+)?(?:a|the)\s+copy|(?:发票|副本)[^。\n]{0,20}已(?:经)?(?:发送|寄出|发到)|已(?:经)?(?:将|把)?[^。\n]{0,20}(?:发票|副本)[^。\n]{0,10}(?:发送|发到|寄)/i,
  'identity.password_reset':
    /\breset link\b[^.。\n]{0,40}\b(?:was|has been|been|is)\s+sent|\bsent\b[^.。\n]{0,30}\breset link|重置(?:密码)?链接[^。\n]{0,10}已(?:经)?发送|已(?:经)?(?:向您)?发送[^。\n]{0,20}重置/i,
  'refunds.create':
    /\brefund\b[^.。\n]{0,40}\b(?:has been|was|is)\s+(?:created|issued|processed|initiated|made)|\b(?:created|issued|processed|initiated)\s+(?:a|the|your)\s+refund|\brefunded\b|退款已(?:经)?(?:创建|提交|发起|办理|受理|处理)|已(?:经)?(?:为您)?(?:办理|发起|创建|提交)(?:了)?退款/i,
};

/** Words before a state that put it in the future. */
const WILL = /(?:\bwill\b|\bgoing to\b|\bonce\b|将|会|待)[^.。!?！？]*$/i;

/** States each state comes after: naming one of these beside the verified state is no contradiction. */
const COMES_AFTER: Readonly<Record<string, readonly string[]>> = {
  shipped: ['placed'],
  delivered: ['placed', 'shipped', 'in_transit', 'pending'],
  in_transit: ['placed', 'shipped', 'pending'],
  approved: ['submitted'],
  paid: ['submitted', 'approved'],
  rejected: ['submitted'],
};

const COMMON_WORDS = new Set([
  'USD',
  'EUR',
  'GBP',
  'CNY',
  'RMB',
  'JPY',
  'ETA',
  'API',
  'FAQ',
  'URL',
  'PDF',
  'UTC',
  'GMT',
  'CST',
  'ASAP',
  'ID',
  'OK',
  'PS',
  'AM',
  'PM',
]);
const NEGATED =
  /(?:\b(?:not|never|no|nor|cannot|yet to be)\s+(?:\w+\s+){0,2}|n't\s+(?:\w+\s+){0,2}|(?:未|没有|没|尚未|还没|还未|不是|不|无法|恢复)\s*\S{0,2})$/i;

/** The specifics of `input.answer` that nothing the run was given or verified supports, in the order written. */
export function uncheckedSpecifics(input: AnswerCheckInput): UnsupportedSpecific[] {
  const known = gather(input.results);
  const givenText = input.given.join('\n');
  const givenLower = givenText.toLowerCase();
  const givenDays = datesIn(givenText).map((d) => d.day);
  const out: UnsupportedSpecific[] = [];

  const { rest: afterIds, taken } = takeOut(input.answer, [EMAIL_PATTERN, ID_PATTERN]);
  for (const t of taken) {
    const lower = t.text.toLowerCase();
    if (!known.strings.has(lower) && !hasToken(givenLower, lower))
      out.push({ kind: t.pattern === 0 ? 'email' : 'id', text: t.text, why: 'in no verified result or the ticket' });
  }
  let rest = afterIds;
  for (const d of datesIn(rest)) {
    const ok = [...known.days, ...givenDays.filter((g) => !g.startsWith('*'))].some((day) => sameDay(d.day, day)) || givenDays.includes(d.day);
    if (!ok) out.push({ kind: 'date', text: d.text, why: `the day ${d.day} is no date of a verified result or the ticket` });
    rest = blank(rest, d.at, d.text.length);
  }
  for (const m of rest.matchAll(TIME_PATTERN)) {
    const hm = m[0].split(':').map((p) => p.padStart(2, '0'));
    if (!known.times.has(`${hm[0]}:${hm[1]}`) && !givenText.includes(m[0]))
      out.push({ kind: 'time', text: m[0], why: 'no time of a verified result or the ticket' });
    rest = blank(rest, m.index, m[0].length);
  }
  const givenNumbers = new Set(numbersIn(givenText).map((n) => n.value));
  for (const n of numbersIn(rest)) {
    if (Number.isInteger(n.value) && n.value < 10) continue;
    if (known.cents.has(round(n.value)) && !givenNumbers.has(n.value) && besideMoney(rest, n.at, n.text.length)) {
      out.push({ kind: 'number', text: n.text, why: 'an amount in cents written as currency units' });
      continue;
    }
    // Units written as cents: "646.20 cents" where amount_cents is 64620.
    if (!known.cents.has(round(n.value)) && known.cents.has(round(n.value * 100)) && /^\s*(?:cents?\b|分)/i.test(rest.slice(n.at + n.text.length))) {
      out.push({ kind: 'number', text: n.text, why: 'an amount in currency units written as cents' });
      continue;
    }
    if (!known.numbers.has(round(n.value)) && !givenNumbers.has(n.value))
      out.push({ kind: 'number', text: n.text, why: 'no number of a verified result or the ticket' });
  }
  for (const m of rest.matchAll(/(?<![A-Za-z])[A-Z]{2,6}(?![A-Za-z])/g)) {
    const word = m[0].toLowerCase();
    if (COMMON_WORDS.has(m[0]) || known.strings.has(word) || known.fields.has(word) || hasToken(givenLower, word)) continue;
    if (out.some((o) => o.text === m[0])) continue;
    out.push({ kind: 'word', text: m[0], why: 'a name in capitals no verified result or the ticket holds' });
  }
  // A carrier or state named where another was verified is reported once, as the contradiction.
  const states = contradictedStates(input, givenLower);
  const stated = new Set(states.map((s) => s.text.toLowerCase()));
  return [...out.filter((o) => o.kind !== 'word' || !stated.has(o.text.toLowerCase())), ...states, ...unbackedActions(input)];
}

/** One line for a report: `"O-1": in no verified result or the ticket; …`. */
export function describeUnsupported(list: readonly UnsupportedSpecific[]): string {
  return list.map((u) => `"${u.text}" (${u.kind}): ${u.why}`).join('; ');
}

interface Known {
  strings: Set<string>;
  numbers: Set<number>;
  /** Values of `*_cents` fields as written (cents, not units). */
  cents: Set<number>;
  days: Set<string>;
  times: Set<string>;
  fields: Set<string>;
}

function gather(results: readonly CheckedResult[]): Known {
  const known: Known = { strings: new Set(), numbers: new Set(), cents: new Set(), days: new Set(), times: new Set(), fields: new Set() };
  const visit = (value: unknown, field: string) => {
    if (typeof value === 'string') {
      known.strings.add(value.trim().toLowerCase());
      for (const day of daysOf(value)) {
        known.days.add(day);
        for (const part of day.split('-')) known.numbers.add(Number(part));
      }
      const instant = /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN;
      if (!Number.isNaN(instant)) {
        known.times.add(value.slice(11, 16));
        known.times.add(new Date(instant).toISOString().slice(11, 16));
      }
      if (/^-?\d+(\.\d+)?$/.test(value.trim())) known.numbers.add(round(Number(value)));
    } else if (typeof value === 'number' && Number.isFinite(value)) {
      known.numbers.add(round(value));
      if (field.endsWith('_cents')) {
        known.numbers.add(round(value / 100));
        known.cents.add(round(value));
      }
    } else if (Array.isArray(value)) for (const v of value) visit(v, field);
    else if (value && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) {
        known.fields.add(k.toLowerCase());
        visit(v, k);
      }
  };
  for (const r of results) visit(r.data, '');
  return known;
}

function contradictedStates(input: AnswerCheckInput, givenLower: string): UnsupportedSpecific[] {
  const verified = new Map<string, string>(); // value → "tool's field is value"
  const others = new Map<string, string>(); // another value of a verified field → what was verified
  for (const r of input.results) {
    if (!r.data || typeof r.data !== 'object') continue;
    for (const [field, value] of Object.entries(r.data as Record<string, unknown>)) {
      const values = input.enums?.[r.tool]?.[field] ?? DOMAIN_VOCABULARY[field];
      if (!values || typeof value !== 'string') continue;
      const said = `${r.tool}'s ${field} is "${value}"`;
      verified.set(value.toLowerCase(), said);
      for (const v of values) if (v.toLowerCase() !== value.toLowerCase()) others.set(v.toLowerCase(), said);
    }
  }
  const out: UnsupportedSpecific[] = [];
  const lower = input.answer.toLowerCase();
  for (const [value, said] of others) {
    if (verified.has(value) || givenLower.includes(value) || givenLower.includes(value.replace(/_/g, ' '))) continue;
    if ([...verified.keys()].some((v) => COMES_AFTER[v]?.includes(value))) continue;
    const m = stateAtNotNegated(lower, value);
    // A question asserts no state: the 1.5B quoted the ticket's "搜索服务现在正常吗？" before stating `degraded`.
    if (m && /^[^.。!！\n]*?[?？]/.test(lower.slice(m.at + m.length))) continue;
    // A later state promised for the future ("approved: will be paid with the next payment run", as the skill explains it).
    if (m && [...verified.keys()].some((v) => COMES_AFTER[value]?.includes(v)) && WILL.test(lower.slice(Math.max(0, m.at - 20), m.at))) continue;
    if (m) out.push({ kind: 'state', text: input.answer.slice(m.at, m.at + m.length), why: `contradicts: ${said}` });
  }
  return out;
}

/** Actions the answer says happened whose tool has no verified result in the run. */
function unbackedActions(input: AnswerCheckInput): UnsupportedSpecific[] {
  const verified = new Set(input.results.map((r) => r.tool));
  const out: UnsupportedSpecific[] = [];
  for (const [tool, claim] of Object.entries(ACTION_CLAIMS)) {
    if (verified.has(tool)) continue;
    const re = new RegExp(claim.source, 'gi');
    for (const m of input.answer.matchAll(re)) {
      if (
        NEGATED.test(
          input.answer.slice(
            Math.max(0, m.index - 24),
            m.index + m[0].search(/\b(?:sent|e-?mailed|resent|refunded|created|issued|processed|initiated|made)\b|已|发送/i),
          ),
        )
      )
        continue;
      out.push({ kind: 'action', text: m[0], why: `says what ${tool} does, and the run has no verified result of it` });
      break;
    }
  }
  return out;
}

/** Where `value` is first written in `lower` not negated just before it (null: nowhere). */
function stateAtNotNegated(lower: string, value: string): { at: number; length: number } | null {
  let text = lower;
  for (;;) {
    const m = stateMatch(text, value);
    if (!m) return null;
    // A form that is itself a negation of another state ("not shipped" for placed) counts as written.
    if (!NEGATED.test(text.slice(Math.max(0, m.at - 24), m.at))) return m;
    text = blank(text, m.at, m.length);
  }
}

function hasToken(text: string, token: string): boolean {
  for (let at = text.indexOf(token); at >= 0; at = text.indexOf(token, at + 1)) {
    const before = text[at - 1] ?? '';
    const after = text[at + token.length] ?? '';
    if (!/[a-z0-9]/.test(before) && !/[a-z0-9]/.test(after)) return true;
  }
  return false;
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** Money words and signs next to a number (`$`, `円`, `euros`, `USD`); `cents`, `Cent`, `分` are not money units here. */
const MONEY = /[$€£¥円元]|ドル|ユーロ|美元|欧元|\b(?:usd|eur|gbp|cny|jpy|rmb|dollars?|euros?|yuan|yen|d[oó]lares)\b/i;

/** Whether a money word or sign stands right before (4 characters) or after (10 characters) the number at `at`. */
function besideMoney(text: string, at: number, length: number): boolean {
  const before = text.slice(Math.max(0, at - 4), at);
  const after = text.slice(at + length, at + length + 10).split(/[.,;!?。、]/)[0]!;
  return MONEY.test(before) || (MONEY.test(after) && !/cent|分|セント/i.test(after));
}
