/**
 * Reading specifics out of an answer as a customer would read them, for the regression set's scorer
 * (eval/regression-set.ts) and the bench's independent fact checker (eval/answer-check.ts).
 * Written apart from Thought's own checker (processors/thought/model/checks.ts), on purpose: the
 * bench counts unsupported specifics a second way, so a blind spot of one is not the other's.
 *
 * - dates: `2025-01-17`, `2025-01-17T00:08:49+08:00`, `2025/1/17`, `17/01/2025`, `01/17/2025`,
 *   `January 17, 2025`, `17 Jan 2025`, `Jan 17`, `2025年1月17日`, `1月17日`: each as the calendar day
 *   written (`2025-01-17`, or `*-01-17` without a year);
 * - amounts: numbers with thousands separators or decimals (`2,734.86`, `2734.9`), currency signs
 *   and words around them are ignored;
 * - ids: a prefix of capitals, a dash and digits (`O-20250611`, `INV-2024-0117`, `PWR-22719439`).
 */

/** A date written in a text: the day it names (`2025-01-17`; `*-01-17` when no year is written), and the text it was read from. */
export interface WrittenDate {
  day: string;
  text: string;
  at: number;
}

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH_WORD =
  '(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\\.?';

type DateForm = [RegExp, (m: RegExpExecArray) => { y?: string; m: string; d: string } | null];

const DATE_FORMS: DateForm[] = [
  // ISO days and date-times (the time and offset are read with the day, and not compared).
  [
    /(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2}))?)?(?!\d)/g,
    (m) => ({ y: m[1], m: m[2]!, d: m[3]! }),
  ],
  [/(?<!\d)(\d{4})[/.](\d{1,2})[/.](\d{1,2})(?!\d)/g, (m) => ({ y: m[1], m: m[2]!, d: m[3]! })],
  [/(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]/g, (m) => ({ y: m[1], m: m[2]!, d: m[3]! })],
  [/(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]/g, (m) => ({ m: m[1]!, d: m[2]! })],
  // 17/01/2025 or 01/17/2025: the one reading that is a day (both when both are).
  [/(?<![\d/])(\d{1,2})\/(\d{1,2})\/(\d{4})(?![\d/])/g, (m) => (Number(m[1]) > 12 ? { y: m[3], m: m[2]!, d: m[1]! } : { y: m[3], m: m[1]!, d: m[2]! })],
  [new RegExp(`\\b${MONTH_WORD}\\s+(\\d{1,2})(?:st|nd|rd|th)?(?:,?\\s+(\\d{4}))?\\b`, 'gi'), (m) => ({ y: m[3], m: monthNumber(m[1]!), d: m[2]! })],
  [new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH_WORD}(?:,?\\s+(\\d{4}))?\\b`, 'gi'), (m) => ({ y: m[3], m: monthNumber(m[2]!), d: m[1]! })],
];

function monthNumber(word: string): string {
  return String(MONTH_NAMES.indexOf(word.slice(0, 3).toLowerCase()) + 1);
}

const two = (n: string) => n.padStart(2, '0');

/** The dates written in `text`, in the order written. Each character is read as part of one date at most. */
export function datesIn(text: string): WrittenDate[] {
  const found: WrittenDate[] = [];
  let rest = text;
  for (const [re, read] of DATE_FORMS) {
    for (const m of rest.matchAll(re)) {
      const parts = read(m);
      if (!parts || Number(parts.m) < 1 || Number(parts.m) > 12 || Number(parts.d) < 1 || Number(parts.d) > 31) continue;
      found.push({ day: `${parts.y ?? '*'}-${two(parts.m)}-${two(parts.d)}`, text: m[0], at: m.index });
      rest = blank(rest, m.index, m[0].length);
    }
  }
  return found.sort((a, b) => a.at - b.at);
}

/** Whether the day `written` (perhaps without a year) is `day` (`yyyy-mm-dd`). */
export function sameDay(written: string, day: string): boolean {
  return written.startsWith('*') ? day.endsWith(written.slice(1)) : written === day;
}

/**
 * The calendar days an RFC 3339 date-time of a tool result may be written as: the day in its own
 * offset, and the day in UTC (a model may convert `2025-01-17T00:08:49+08:00` to 16 January UTC).
 */
export function daysOf(value: string): string[] {
  const written = /^(\d{4}-\d{2}-\d{2})/.exec(value)?.[1];
  if (!written) return [];
  const instant = Date.parse(value);
  const utc = Number.isNaN(instant) ? written : new Date(instant).toISOString().slice(0, 10);
  return [...new Set([written, utc])];
}

/** A number written in a text (thousands separators removed), with where it was written. */
export interface WrittenNumber {
  value: number;
  text: string;
  at: number;
}

/** Numbers written in `text`, not counting digits that are part of a word (`Qwen2.5`, `2FA`). */
export function numbersIn(text: string): WrittenNumber[] {
  const out: WrittenNumber[] = [];
  for (const m of text.matchAll(/\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?/g)) {
    const before = text[m.index - 1] ?? '';
    const after = text[m.index + m[0].length] ?? '';
    if (/[A-Za-z_]/.test(before) || /[A-Za-z_]/.test(after)) continue;
    out.push({ value: Number(m[0].replace(/,/g, '')), text: m[0], at: m.index });
  }
  return out;
}

/** Ids as the demo domain writes them: capitals, a dash, digits (and more dash-digit groups). */
export const ID_PATTERN = /(?<![A-Za-z0-9])[A-Z]{1,5}-\d+(?:-\d+)*(?![A-Za-z0-9])/g;
/** E-mail addresses. */
export const EMAIL_PATTERN = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/g;
/** Clock times (`14:05`, `09:26:53`). */
export const TIME_PATTERN = /(?<!\d)\d{1,2}:\d{2}(?::\d{2})?(?!\d)/g;

/** `text` with `length` characters from `at` replaced by spaces (so positions stay where they were). */
export function blank(text: string, at: number, length: number): string {
  return text.slice(0, at) + ' '.repeat(length) + text.slice(at + length);
}

/** `text` with every match of each pattern blanked out, and the matches, in order of the patterns. */
export function takeOut(text: string, patterns: readonly RegExp[]): { rest: string; taken: Array<{ text: string; at: number; pattern: number }> } {
  let rest = text;
  const taken: Array<{ text: string; at: number; pattern: number }> = [];
  patterns.forEach((re, pattern) => {
    for (const m of rest.matchAll(re)) {
      taken.push({ text: m[0], at: m.index, pattern });
      rest = blank(rest, m.index, m[0].length);
    }
  });
  return { rest, taken };
}

/**
 * The ways an enumerated value of the demo domain is written in English and Chinese (the value
 * itself, with `_` as a space, is always one). Used to find a state in an answer, whichever
 * language it is written in.
 */
export const STATE_WORDS: Readonly<Record<string, readonly string[]>> = {
  placed: [
    'placed',
    'not shipped',
    'not yet shipped',
    "hasn't shipped",
    'has not shipped',
    'not been shipped',
    '已下单',
    '未发货',
    '尚未发货',
    '还没发货',
    '还未发货',
    '没有发货',
  ],
  shipped: ['shipped', 'on its way', 'on the way', '已发货', '已寄出', '运输中', '配送中', '在途'],
  delivered: ['delivered', '已送达', '已签收', '已交付', '已妥投'],
  pending: ['pending', '处理中', '待处理', '等待处理'],
  in_transit: ['in transit', 'in_transit', 'on its way', 'on the way', '运输中', '配送中', '在途', '已发货'],
  submitted: ['submitted', 'awaiting approval', 'waiting for approval', 'pending approval', '已提交', '待审批', '等待审批', '审批中'],
  approved: ['approved', '已批准', '已审批', '审批通过', '已通过'],
  paid: ['paid', '已支付', '已付款', '已打款', '已到账', '已报销', '已转账'],
  rejected: ['rejected', 'declined', 'turned down', '已拒绝', '被拒绝', '已驳回', '被驳回', '未通过'],
  operational: ['operational', 'up and running', 'working normally', '正常运行', '运行正常', '正常'],
  degraded: ['degraded', 'slower than normal', '降级', '性能下降', '部分故障', '运行缓慢'],
  outage: ['outage', 'is down', '中断', '故障', '宕机', '停机', '不可用'],
  investigating: ['investigating', 'being investigated', '调查中', '正在调查', '排查中', '正在排查'],
  monitoring: ['monitoring', 'being monitored', '监控中', '观察中', '正在监控'],
  resolved: ['resolved', '已解决', '已恢复'],
  sf: ['sf', 'sf express', '顺丰'],
};

/** Where `value` (a state of the demo domain) is first written in `text`, case-insensitively, in any of its forms: the index and length written, or null. */
export function stateMatch(text: string, value: string): { at: number; length: number } | null {
  const lower = text.toLowerCase();
  const forms = new Set([value.toLowerCase(), value.toLowerCase().replace(/_/g, ' '), ...(STATE_WORDS[value.toLowerCase()] ?? [])]);
  let first: { at: number; length: number } | null = null;
  for (const form of forms) {
    const ascii = /^[\x20-\x7e]+$/.test(form);
    const re = ascii ? new RegExp(`(?<![A-Za-z0-9_-])${escape(form)}(?![A-Za-z0-9_-])`) : new RegExp(escape(form));
    const m = re.exec(lower);
    if (m && (!first || m.index < first.at)) first = { at: m.index, length: m[0].length };
  }
  return first;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
