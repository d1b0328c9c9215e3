/**
 * Steps 1-6 of the featurizer (see features/text/index.ts): truncation, NFKC and lower-casing, control
 * escapes, id masking, and the character classes that drop, collapse or replace characters; also the
 * word tokenizer that step 7 uses.
 */
import { ID_MASK, ID_MIN_DIGITS, MAX_INPUT_CODE_POINTS } from './config.ts';

const CJK_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x3040, 0x30ff],
  [0x3400, 0x4dbf],
  [0x4e00, 0x9fff],
  [0xac00, 0xd7af],
  [0xf900, 0xfaff],
  [0x20000, 0x2fa1f],
];

const OTHER = 0;
export const WORD = 1;
export const CJK = 2;
const SPACE = 3;
const DROP = 4;
const CONTROL = 5;

const RE_WORD = /^[\p{L}\p{M}\p{N}_]$/u;
const RE_DROP = /^\p{Cf}$/u;
const RE_SPACE = /^\p{Z}$/u;
const RE_CONTROL = /^\p{Cc}$/u;
export const RE_LONE_SURROGATE = /[\uD800-\uDFFF]/gu;
const RE_ID_RUN = /[0-9a-z#]+(?:[-_][0-9a-z#]+)*/g;
const RE_JSON_CONTROL_ESCAPE = /\\u00(?:0[0-8bcef]|1[0-9a-f]|7f)/g;

function charClass(ch: string): number {
  return codePointClass(ch.codePointAt(0)!, ch);
}

/** The class of code point `cp`; `ch`, the same character as a string, when the caller has it. */
export function codePointClass(cp: number, ch?: string): number {
  // ASCII first: it is most of every text and never CJK (the CJK ranges start at U+3040).
  if (cp < 0x80) {
    if ((cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || cp === 0x5f) return WORD;
    if ((cp >= 0x09 && cp <= 0x0d) || cp === 0x20) return SPACE;
    if (cp < 0x20 || cp === 0x7f) return CONTROL;
    return OTHER;
  }
  for (const [lo, hi] of CJK_RANGES) if (cp >= lo && cp <= hi) return CJK;
  ch ??= String.fromCodePoint(cp);
  if (RE_WORD.test(ch)) return WORD;
  if (RE_DROP.test(ch)) return DROP;
  if (RE_SPACE.test(ch) || cp === 0x85) return SPACE;
  if (RE_CONTROL.test(ch)) return CONTROL;
  return OTHER;
}

/** Truncates `text` to at most `max` Unicode code points without splitting a surrogate pair. */
export function truncateCodePoints(text: string, max: number = MAX_INPUT_CODE_POINTS): string {
  if (text.length <= max) return text;
  let count = 0;
  let i = 0;
  while (i < text.length && count < max) {
    const c = text.charCodeAt(i);
    const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
    i += c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
    count++;
  }
  return text.slice(0, i);
}

function countDigits(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) n++;
  }
  return n;
}

/** Step 5 on a lower-cased text: id-like runs with {@link ID_MIN_DIGITS}+ digits become {@link ID_MASK}. */
export function maskIds(lowered: string): string {
  return lowered.replace(RE_ID_RUN, (run) => (countDigits(run) >= ID_MIN_DIGITS ? ID_MASK : run));
}

/** Steps 1-6: the canonical text the features are taken from. */
export function normalizeText(text: string, maxCodePoints: number = MAX_INPUT_CODE_POINTS): string {
  let t = truncateCodePoints(text, maxCodePoints).replace(RE_LONE_SURROGATE, '\uFFFD');
  t = t.normalize('NFKC').toLowerCase();
  t = maskIds(t.replace(RE_JSON_CONTROL_ESCAPE, '\uFFFD'));
  let out = '';
  let pendingSpace = false;
  for (const ch of t) {
    const c = charClass(ch);
    if (c === DROP) continue;
    if (c === SPACE) {
      pendingSpace = true;
      continue;
    }
    if (pendingSpace && out.length > 0) out += ' ';
    pendingSpace = false;
    out += c === CONTROL ? '\uFFFD' : ch;
  }
  return out;
}

/** Word tokens of a normalized text (runs of L/M/N/`_`; each CJK character alone). */
export function tokenize(normalized: string): string[] {
  const toks: string[] = [];
  let cur = '';
  for (const ch of normalized) {
    const c = charClass(ch);
    if (c === WORD) {
      cur += ch;
      continue;
    }
    if (cur) {
      toks.push(cur);
      cur = '';
    }
    if (c === CJK) toks.push(ch);
  }
  if (cur) toks.push(cur);
  return toks;
}
