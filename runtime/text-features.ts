/**
 * Deterministic hashed text featurizer, the Node twin of `models/featurize.py`.
 *
 * The small ONNX text classifiers (`models/error-classifier`, `models/intent-router`) take a float
 * vector [D] made by this function; the Python trainer makes it with `models/featurize.py`. The two
 * must agree exactly: `test/models/featurize-parity.test.ts` checks them against the committed
 * vectors in `models/featurize-vectors.json`.
 *
 * Pipeline (see the Python module docstring for the same list):
 * 1. truncate to {@link MAX_INPUT_CODE_POINTS} code points (a lone surrogate counts as one);
 * 2. lone UTF-16 surrogates become U+FFFD;
 * 3. NFKC, then `toLowerCase()` (full Unicode lowercasing, locale-independent);
 * 4. JSON escapes of control characters (`\u0000`-`\u001f`, `\u007f`; not tab, LF, CR) become U+FFFD;
 * 5. ids are masked: each maximal run of `[0-9a-z#]` joined by `-`/`_` holding 4+ ASCII digits becomes
 *    `<id>` (`o-12345678`, `po-2024-00017-b`, `so#88123`, dates, uuids), so ids never decide a label;
 * 6. format characters (Cf) are removed, runs of separators and whitespace controls (Z*, tab, LF, VT,
 *    FF, CR, NEL) become one space, any other control (Cc) becomes U+FFFD, trim;
 * 7. features (each distinct 32-bit feature hash counted once): char 1..4-grams of `"\x02" + text + "\x03"` (`c:`; STX/ETX mark
 *    the start and the end and cannot occur in normalized text), word tokens (`w:`) and
 *    adjacent token pairs (`b:`); tokens are runs of L/M/N/`_`, each CJK character its own token;
 *    plus structural signals of the raw text (`s:`, {@link structureSignals}): JSON whose brackets
 *    balance, are cut short, or are broken; an HTML page; a stack trace;
 * 8. FNV-1a 32-bit over UTF-8 bytes; index = hash mod D, sign = top bit; signed counts summed,
 *    L2-normalized in float64, stored as float32.
 *
 * The second half of this module, {@link TextModel}, runs a `model.onnx` made by `models/train.py` on
 * these features with onnxruntime-node (imported lazily on first load).
 *
 * Parity holds for every character assigned in Unicode 14 (Python 3.11's `unicodedata`); characters
 * assigned later may be normalized or classified differently by Node's newer Unicode tables.
 *
 * No state, no import-time side effects.
 */
import type * as Ort from 'onnxruntime-node';
import { canonicalJson } from './json-field.ts';

/** Name of this featurizer; a model's `labels.json` names the featurizer it was trained with. */
export const FEATURIZER_NAME = 'hash-v3';
/** Vector size D (2^14). */
export const FEATURE_DIMS = 1 << 14;
/** Inputs longer than this many Unicode code points are truncated before featurizing (4096, ~4 KB). */
export const MAX_INPUT_CODE_POINTS = 4096;
/** Character n-gram sizes, inclusive. */
export const CHAR_NGRAMS: readonly [number, number] = [1, 4];
/** An id-like run with at least this many ASCII digits is masked (step 5). */
export const ID_MIN_DIGITS = 4;
/** What a masked id becomes. */
export const ID_MASK = '<id>';

/** The featurizer's parameters as `models/featurize.py` writes them into vectors and labels.json. */
export interface FeaturizerConfig {
  name: string;
  dims: number;
  char_ngrams: number[];
  word_ngrams: number[];
  hash: string;
  max_input_code_points: number;
  id_mask: { min_digits: number; token: string };
  controls: string;
  structure: string[];
}

/** The parameters of this implementation, to compare with a model's `featurizer` block. */
export const FEATURIZER_CONFIG: Readonly<FeaturizerConfig> = Object.freeze({
  name: FEATURIZER_NAME,
  dims: FEATURE_DIMS,
  char_ngrams: [CHAR_NGRAMS[0], CHAR_NGRAMS[1]],
  word_ngrams: [1, 2],
  hash: 'fnv1a32-utf8',
  max_input_code_points: MAX_INPUT_CODE_POINTS,
  id_mask: { min_digits: ID_MIN_DIGITS, token: ID_MASK },
  controls: 'fffd',
  structure: ['json_ok', 'json_cut', 'json_bad', 'html', 'trace'],
});

const CJK_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x3040, 0x30ff],
  [0x3400, 0x4dbf],
  [0x4e00, 0x9fff],
  [0xac00, 0xd7af],
  [0xf900, 0xfaff],
  [0x20000, 0x2fa1f],
];

const OTHER = 0;
const WORD = 1;
const CJK = 2;
const SPACE = 3;
const DROP = 4;
const CONTROL = 5;

const RE_WORD = /^[\p{L}\p{M}\p{N}_]$/u;
const RE_DROP = /^\p{Cf}$/u;
const RE_SPACE = /^\p{Z}$/u;
const RE_CONTROL = /^\p{Cc}$/u;
const RE_LONE_SURROGATE = /[\uD800-\uDFFF]/gu;
const RE_ID_RUN = /[0-9a-z#]+(?:[-_][0-9a-z#]+)*/g;
const RE_JSON_CONTROL_ESCAPE = /\\u00(?:0[0-8bcef]|1[0-9a-f]|7f)/g;

function charClass(ch: string): number {
  return codePointClass(ch.codePointAt(0)!, ch);
}

/** The class of code point `cp`; `ch`, the same character as a string, when the caller has it. */
function codePointClass(cp: number, ch?: string): number {
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

const JSON_WS = ' \t\n\r\uFEFF';
const HTML_MARKS = ['<html', '<!doctype html', '<body'];
// Stack-frame lines (on lower-cased text): Java/JS/.NET `at …`, Python `file "…", line N`, Go
// `goroutine N [` and `….go:N`, Ruby `….rb:N:in `, PHP `#N ….php(N)`. ASCII classes only, so that
// Python's `re` and JavaScript agree.
const RE_FRAME = /^[ \t]*at [^ \t]|^[ \t]*file "[^"]*", line [0-9]+|^goroutine [0-9]+ \[|^[ \t]*[^ \t]*\.go:[0-9]+|^[ \t]*(?:from )?[^ \t]*\.rb:[0-9]+:in |^#[0-9]+ [^ \t][^\n]*\.php\([0-9]+\)/;

/**
 * How a raw text that starts like JSON (`{` or `[` after JSON whitespace or a BOM) ends: `json_ok` when
 * its brackets balance and nothing but whitespace follows, `json_cut` when the text runs out inside a
 * string or before every bracket closed (a body cut short), `json_bad` for a mismatched bracket or
 * trailing text; null when it does not start like JSON. Brackets inside strings do not count.
 */
export function jsonShape(text: string): 'json_ok' | 'json_cut' | 'json_bad' | null {
  const n = text.length;
  let i = 0;
  while (i < n && JSON_WS.includes(text[i]!)) i++;
  if (i === n || (text[i] !== '{' && text[i] !== '[')) return null;
  const stack: string[] = [];
  let inString = false;
  let escaped = false;
  let j = i;
  for (; j < n; j++) {
    const ch = text[j]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') stack.push(ch);
    else if (ch === '}' || ch === ']') {
      if (stack.length === 0 || stack[stack.length - 1] !== (ch === '}' ? '{' : '[')) return 'json_bad';
      stack.pop();
      if (stack.length === 0) break;
    }
  }
  if (stack.length > 0 || inString) return 'json_cut';
  let k = j + 1;
  while (k < n && JSON_WS.includes(text[k]!)) k++;
  return k === n ? 'json_ok' : 'json_bad';
}

/**
 * The structural signals of a raw text (feature `s:<signal>`), in a fixed order: its {@link jsonShape};
 * `html` when its first {@link MAX_INPUT_CODE_POINTS} code points, lower-cased, hold `<html`,
 * `<!doctype html` or `<body`; `trace` when they hold two or more stack-frame lines (also inside JSON
 * strings: the escapes `\n`, `\t` and `\"` count as what they stand for). A bag of n-grams cannot tell a body cut short from a
 * short intact one; this scan can, exactly.
 */
export function structureSignals(text: string, maxCodePoints: number = MAX_INPUT_CODE_POINTS): string[] {
  const out: string[] = [];
  const shape = jsonShape(text);
  if (shape) out.push(shape);
  const head = truncateCodePoints(text, maxCodePoints).replace(RE_LONE_SURROGATE, '\uFFFD').toLowerCase();
  if (HTML_MARKS.some((m) => head.includes(m))) out.push('html');
  const lines = head.replaceAll('\\r\\n', '\n').replaceAll('\\n', '\n').replaceAll('\\t', '\t').replaceAll('\\"', '"').replaceAll('\r', '\n').split('\n');
  let frames = 0;
  for (const line of lines) if (RE_FRAME.test(line) && ++frames >= 2) break;
  if (frames >= 2) out.push('trace');
  return out;
}

/** The distinct feature strings of a normalized text. */
export function featureStrings(normalized: string): Set<string> {
  const feats = new Set<string>();
  if (!normalized) return feats;
  const chars = Array.from('\u0002' + normalized + '\u0003');
  for (let n = CHAR_NGRAMS[0]; n <= CHAR_NGRAMS[1]; n++) {
    for (let i = 0; i + n <= chars.length; i++) feats.add('c:' + chars.slice(i, i + n).join(''));
  }
  const toks = tokenize(normalized);
  for (let i = 0; i < toks.length; i++) {
    feats.add('w:' + toks[i]);
    if (i + 1 < toks.length) feats.add('b:' + toks[i] + ' ' + toks[i + 1]);
  }
  return feats;
}

/** FNV-1a 32-bit hash of the UTF-8 encoding of `s` (lone surrogates as U+FFFD), as an unsigned integer. */
export function fnv1a32(s: string): number {
  return fnvContinue(FNV_OFFSET, s.replace(RE_LONE_SURROGATE, '\uFFFD'));
}

/** Sparse form of a feature vector: sorted indices and their values, as the model's input tensors take them. */
export interface SparseFeatures {
  indices: Int32Array;
  values: Float32Array;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnvCodePoint(h: number, cp: number): number {
  if (cp < 0x80) return Math.imul(h ^ cp, FNV_PRIME) >>> 0;
  if (cp < 0x800) {
    h = Math.imul(h ^ (0xc0 | (cp >> 6)), FNV_PRIME);
    return Math.imul(h ^ (0x80 | (cp & 0x3f)), FNV_PRIME) >>> 0;
  }
  if (cp < 0x10000) {
    h = Math.imul(h ^ (0xe0 | (cp >> 12)), FNV_PRIME);
    h = Math.imul(h ^ (0x80 | ((cp >> 6) & 0x3f)), FNV_PRIME);
    return Math.imul(h ^ (0x80 | (cp & 0x3f)), FNV_PRIME) >>> 0;
  }
  h = Math.imul(h ^ (0xf0 | (cp >> 18)), FNV_PRIME);
  h = Math.imul(h ^ (0x80 | ((cp >> 12) & 0x3f)), FNV_PRIME);
  h = Math.imul(h ^ (0x80 | ((cp >> 6) & 0x3f)), FNV_PRIME);
  return Math.imul(h ^ (0x80 | (cp & 0x3f)), FNV_PRIME) >>> 0;
}

function fnvContinue(h: number, s: string): number {
  for (const ch of s) h = fnvCodePoint(h, ch.codePointAt(0)!);
  return h;
}

const H_CHAR = fnvContinue(FNV_OFFSET, 'c:');
const H_WORD = fnvContinue(FNV_OFFSET, 'w:');
const H_BIGRAM = fnvContinue(FNV_OFFSET, 'b:');

// Scratch space of the hashing below, grown on demand and reused by every call: the functions are
// synchronous, so calls never interleave. A Set of the hashes (most of them above 2^30, so each one
// a heap number) was 40% of what Observation allocated under load; sorting them to drop duplicates
// took longer than the Set. Duplicates are dropped with an open-addressing table whose
// slots count as empty unless stamped with the current call's number: cleared only when it wraps.
let cpScratch = new Int32Array(0);
let tokenScratch = new Int32Array(0);
let hashScratch = new Uint32Array(0);
let tableBits = 0;
let tableKeys = new Uint32Array(0);
let tableStamps = new Uint32Array(0);
let tableCall = 0;

/** Makes the table ready for a call that adds at most `count` hashes (at most half full). */
function resetTable(count: number): void {
  if (tableKeys.length < 2 * count) {
    tableBits = Math.max(14, Math.ceil(Math.log2(2 * count)));
    tableKeys = new Uint32Array(1 << tableBits);
    tableStamps = new Uint32Array(1 << tableBits);
    tableCall = 0;
  }
  if (tableCall === 0xffffffff) {
    tableStamps.fill(0);
    tableCall = 0;
  }
  tableCall++;
}

/** Adds `h` to the table; true if this call had not added it yet. */
function addOnce(h: number): boolean {
  const mask = tableKeys.length - 1;
  // Fibonacci hashing: the top bits of h times 2^32/phi spread FNV's hashes over the slots.
  let slot = Math.imul(h, 0x9e3779b1) >>> (32 - tableBits);
  for (;;) {
    if (tableStamps[slot] !== tableCall) {
      tableStamps[slot] = tableCall;
      tableKeys[slot] = h;
      return true;
    }
    if (tableKeys[slot] === h) return false;
    slot = (slot + 1) & mask;
  }
}

/** Hash of code points `cps[from..to)` continued from `h`. */
function fnvRange(h: number, cps: Int32Array, from: number, to: number): number {
  for (let k = from; k < to; k++) h = fnvCodePoint(h, cps[k]!);
  return h;
}

/**
 * The distinct FNV-1a hashes of the feature strings of a normalized text, plus `extra` (when the text
 * is not empty), in the order first met, in a scratch array that the next call overwrites. The same set
 * as `new Set([...featureStrings(t)].map(fnv1a32))`, computed over the text's code points without
 * building the strings.
 */
function distinctFeatureHashes(normalized: string, extra: readonly number[]): Uint32Array {
  if (!normalized) return hashScratch.subarray(0, 0);
  // The text's code points between the STX and ETX marks (a lone surrogate stays one code point, as
  // a string iterator yields it).
  if (cpScratch.length < normalized.length + 2) cpScratch = new Int32Array(Math.max(normalized.length + 2, 2 * cpScratch.length));
  const cps = cpScratch;
  let n = 0;
  cps[n++] = 2;
  for (let i = 0; i < normalized.length; i++) {
    let c = normalized.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < normalized.length) {
      const d = normalized.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
        i++;
      }
    }
    cps[n++] = c;
  }
  cps[n++] = 3;
  // Word tokens (see tokenize) as [start, end) pairs of code-point positions.
  if (tokenScratch.length < 2 * n) tokenScratch = new Int32Array(Math.max(2 * n, 2 * tokenScratch.length));
  const toks = tokenScratch;
  let t = 0;
  let wordStart = -1;
  for (let j = 1; j < n - 1; j++) {
    const c = codePointClass(cps[j]!);
    if (c === WORD) {
      if (wordStart < 0) wordStart = j;
      continue;
    }
    if (wordStart >= 0) {
      toks[t++] = wordStart;
      toks[t++] = j;
      wordStart = -1;
    }
    if (c === CJK) {
      toks[t++] = j;
      toks[t++] = j + 1;
    }
  }
  if (wordStart >= 0) {
    toks[t++] = wordStart;
    toks[t++] = n - 1;
  }
  const [lo, hi] = CHAR_NGRAMS;
  const bound = hi * n + t + extra.length;
  if (hashScratch.length < bound) hashScratch = new Uint32Array(Math.max(bound, 2 * hashScratch.length));
  const hashes = hashScratch;
  resetTable(bound);
  let m = 0;
  for (let i = 0; i < n; i++) {
    let h = H_CHAR;
    for (let len = 1; len <= hi && i + len <= n; len++) {
      h = fnvCodePoint(h, cps[i + len - 1]!);
      if (len >= lo && addOnce(h)) hashes[m++] = h;
    }
  }
  for (let k = 0; k < t; k += 2) {
    const word = fnvRange(H_WORD, cps, toks[k]!, toks[k + 1]!);
    if (addOnce(word)) hashes[m++] = word;
    if (k + 2 >= t) continue;
    const bigram = fnvRange(fnvCodePoint(fnvRange(H_BIGRAM, cps, toks[k]!, toks[k + 1]!), 0x20), cps, toks[k + 2]!, toks[k + 3]!);
    if (addOnce(bigram)) hashes[m++] = bigram;
  }
  for (const h of extra) if (addOnce(h)) hashes[m++] = h;
  return hashes.subarray(0, m);
}

/** {@link distinctFeatureHashes} as a Set of its own: `new Set([...featureStrings(t)].map(fnv1a32))`. */
export function featureHashes(normalized: string): Set<number> {
  return new Set(distinctFeatureHashes(normalized, []));
}

// Scratch space of featurizeSparse, allocated on first use and reused by every call: the function
// is synchronous, so calls never interleave, and it leaves the arrays zeroed. A per-call Map of
// [index, count] pairs and the arrays sorting it cost more than hashing the features did
// (bench/patches/README.md).
let scratch: { counts: Int32Array; touched: Int32Array; spare: Int32Array; seen: Uint8Array } | null = null;

const RADIX_BITS = 7;
const RADIX = 1 << RADIX_BITS;
const RADIX_PASSES = Math.ceil(Math.log2(FEATURE_DIMS) / RADIX_BITS);
const radixCounts = new Int32Array(RADIX + 1);

/**
 * Sorts the first `n` feature indices of `a` (each below FEATURE_DIMS) with an LSD radix sort that
 * moves them between `a` and `spare`; returns the array that holds them sorted. TypedArray#sort
 * took a quarter of featurizeSparse's time.
 */
function sortIndices(a: Int32Array, n: number, spare: Int32Array): Int32Array {
  let from = a;
  let to = spare;
  for (let pass = 0; pass < RADIX_PASSES; pass++) {
    const shift = pass * RADIX_BITS;
    radixCounts.fill(0);
    for (let i = 0; i < n; i++) radixCounts[((from[i]! >> shift) & (RADIX - 1)) + 1]!++;
    for (let d = 1; d <= RADIX; d++) radixCounts[d]! += radixCounts[d - 1]!;
    for (let i = 0; i < n; i++) to[radixCounts[(from[i]! >> shift) & (RADIX - 1)]!++] = from[i]!;
    [from, to] = [to, from];
  }
  return from;
}

/** Featurizes `text` into sparse form (sorted indices, float32-rounded values). */
export function featurizeSparse(text: string, maxCodePoints: number = MAX_INPUT_CODE_POINTS): SparseFeatures {
  const s = (scratch ??= { counts: new Int32Array(FEATURE_DIMS), touched: new Int32Array(FEATURE_DIMS), spare: new Int32Array(FEATURE_DIMS), seen: new Uint8Array(FEATURE_DIMS) });
  let touched = 0;
  const normalized = normalizeText(text, maxCodePoints);
  // A text without features (empty once normalized) gets no structure signals either: the zero vector.
  const signals = normalized ? structureSignals(text, maxCodePoints).map((signal) => fnv1a32('s:' + signal)) : [];
  const hashes = distinctFeatureHashes(normalized, signals);
  for (let k = 0; k < hashes.length; k++) {
    const h = hashes[k]!;
    const idx = h & (FEATURE_DIMS - 1);
    if (s.seen[idx] === 0) {
      s.seen[idx] = 1;
      s.touched[touched++] = idx;
    }
    s.counts[idx]! += h >>> 31 ? -1 : 1;
  }
  const order = sortIndices(s.touched, touched, s.spare);
  let nonZero = 0;
  let sq = 0;
  for (let k = 0; k < touched; k++) {
    const v = s.counts[order[k]!]!;
    if (v === 0) continue;
    nonZero++;
    sq += v * v;
  }
  const norm = Math.sqrt(sq);
  const indices = new Int32Array(nonZero);
  const values = new Float32Array(nonZero);
  for (let k = 0, j = 0; k < touched; k++) {
    const idx = order[k]!;
    const v = s.counts[idx]!;
    s.counts[idx] = 0;
    s.seen[idx] = 0;
    if (v === 0) continue;
    indices[j] = idx;
    values[j++] = v / norm;
  }
  return { indices, values };
}

/**
 * Writes the features of `text` into `out` (length {@link FEATURE_DIMS}) starting at `offset`, which
 * must be zero-filled there; returns `out`.
 */
export function featurizeInto(text: string, out: Float32Array, offset = 0, maxCodePoints: number = MAX_INPUT_CODE_POINTS): Float32Array {
  const { indices, values } = featurizeSparse(text, maxCodePoints);
  for (let k = 0; k < indices.length; k++) out[offset + indices[k]!] = values[k]!;
  return out;
}

/** Featurizes `text` into a new dense Float32Array of length {@link FEATURE_DIMS}. */
export function featurize(text: string, maxCodePoints: number = MAX_INPUT_CODE_POINTS): Float32Array {
  return featurizeInto(text, new Float32Array(FEATURE_DIMS), 0, maxCodePoints);
}

// ------------------------------------------------------------------------------------------------
// The ONNX side: a small linear text classifier trained by models/train.py over these features.
// onnxruntime-node is imported lazily (in TextModel.load), so importing this module loads nothing.

/** `labels.json` as models/train.py writes it next to `model.onnx`. */
export interface TextModelManifest {
  task: string;
  labels: string[];
  featurizer: FeaturizerConfig;
  model_sha256: string;
  adoption_threshold?: number;
  routing_threshold?: number;
}

/** One row of a {@link TextModel} prediction. */
export interface TextPrediction {
  /** Index into {@link TextModel.labels} of the most probable label (the first one on a tie). */
  index: number;
  /** The most probable label. */
  label: string;
  /** Its probability. */
  confidence: number;
  /** The probability of every label, in {@link TextModel.labels} order. */
  probabilities: Float32Array;
}

/**
 * A `model.onnx` + `labels.json` pair made by `models/train.py`: inputs `indices` int32 [N, M] and
 * `values` float32 [N, M], the non-zero features of each row from {@link featurizeSparse} (issue 17: a
 * few hundred numbers per text instead of a dense float32 [D] vector, and a Gather over M weight rows
 * instead of a D x K product); outputs `label` int64 [N] and `probabilities` float32 [N, K].
 * The session runs on the CPU with one intra-op and one inter-op thread, so the same text always gives
 * bit-identical probabilities.
 */
export class TextModel {
  private constructor(
    private readonly session: Ort.InferenceSession,
    private readonly ort: typeof Ort,
    /** The parsed `labels.json`. */
    readonly manifest: TextModelManifest,
    /** sha256 of the `model.onnx` bytes, hex. */
    readonly sha256: string,
  ) {}

  /** `<task>@<first 12 hex of the model's sha256>`, e.g. `error-classifier@40fb93b7e03d`. */
  get id(): string {
    return `${this.manifest.task}@${this.sha256.slice(0, 12)}`;
  }

  /** The labels, in the order of the model's probability columns. */
  get labels(): readonly string[] {
    return this.manifest.labels;
  }

  /**
   * Loads `<dir>/model.onnx` and `<dir>/labels.json`, and checks that the model was trained with this
   * featurizer and that `labels.json` describes these model bytes.
   */
  static async load(dir: string): Promise<TextModel> {
    const { readFile } = await import('node:fs/promises');
    const { createHash } = await import('node:crypto');
    const { join } = await import('node:path');
    const [bytes, manifestText] = await Promise.all([readFile(join(dir, 'model.onnx')), readFile(join(dir, 'labels.json'), 'utf8')]);
    const manifest = JSON.parse(manifestText) as TextModelManifest;
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (manifest.model_sha256 !== sha256) throw new Error(`${dir}: labels.json describes model ${manifest.model_sha256.slice(0, 12)}, but model.onnx is ${sha256.slice(0, 12)}`);
    if (canonicalJson(manifest.featurizer) !== canonicalJson(FEATURIZER_CONFIG)) {
      throw new Error(`${dir}: model was trained with featurizer ${canonicalJson(manifest.featurizer)}, this runtime has ${canonicalJson(FEATURIZER_CONFIG)}`);
    }
    if (!Array.isArray(manifest.labels) || manifest.labels.length < 2) throw new Error(`${dir}: labels.json has no labels`);
    const mod = (await import('onnxruntime-node')) as typeof Ort & { default?: typeof Ort };
    const ort: typeof Ort = mod.InferenceSession ? mod : mod.default!;
    const session = await ort.InferenceSession.create(bytes, {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      logSeverityLevel: 3,
      // A linear model over a few hundred sparse features: onnxruntime's CPU arena and memory-pattern
      // planning reserve blocks sized for large tensors that this model never needs.
      enableCpuMemArena: false,
      enableMemPattern: false,
    });
    const inputs = [...session.inputNames].sort().join(',');
    if (inputs !== 'indices,values') {
      await session.release();
      throw new Error(`${dir}: model.onnx takes inputs [${inputs}]; this runtime feeds sparse features [indices, values] (retrain with models/train.py)`);
    }
    return new TextModel(session, ort, manifest, sha256);
  }

  /**
   * Featurizes each text (truncated to {@link MAX_INPUT_CODE_POINTS} code points) and runs the model on
   * it. Rows run one at a time, each with its own M (no padding), so a text gets the same probabilities
   * whether it comes alone or in a batch (models/train.py evaluates row by row too, with the same inputs).
   */
  async predict(texts: readonly string[]): Promise<TextPrediction[]> {
    const k = this.manifest.labels.length;
    const rows: TextPrediction[] = [];
    for (const text of texts) {
      const features = featurizeSparse(String(text ?? ''));
      // An empty text has no features; the graph sums over M, so it gets one (0, 0) pair: logits = bias.
      const m = Math.max(1, features.indices.length);
      const idx = features.indices.length > 0 ? features.indices : new Int32Array(1);
      const val = features.values.length > 0 ? features.values : new Float32Array(1);
      const out = await this.session.run({ indices: new this.ort.Tensor('int32', idx, [1, m]), values: new this.ort.Tensor('float32', val, [1, m]) });
      const probs = out['probabilities']?.data as Float32Array | undefined;
      if (!probs || probs.length !== k) throw new Error(`${this.id}: unexpected model output (want probabilities [1, ${k}])`);
      const p = Float32Array.from(probs);
      let best = 0;
      for (let j = 1; j < k; j++) if (p[j]! > p[best]!) best = j;
      rows.push({ index: best, label: this.manifest.labels[best]!, confidence: p[best]!, probabilities: p });
    }
    return rows;
  }

  /** Releases the native session. */
  async close(): Promise<void> {
    await this.session.release();
  }
}
