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
 * 4. each run of 5+ ASCII digits has its digits replaced by `0`;
 * 5. format characters (Cf) are removed, runs of separators/controls (Z*, Cc) become one space, trim;
 * 6. features counted once each: char 1..4-grams of `"\x02" + text + "\x03"` (`c:`; STX/ETX mark
 *    the start and the end and cannot occur in normalized text), word tokens (`w:`) and
 *    adjacent token pairs (`b:`); tokens are runs of L/M/N/`_`, each CJK character its own token;
 * 7. FNV-1a 32-bit over UTF-8 bytes; index = hash mod D, sign = top bit; signed counts summed,
 *    L2-normalized in float64, stored as float32.
 *
 * No state, no I/O, no import-time side effects.
 */

/** Name of this featurizer; a model's `labels.json` names the featurizer it was trained with. */
export const FEATURIZER_NAME = 'hash-v1';
/** Vector size D (2^14). */
export const FEATURE_DIMS = 1 << 14;
/** Inputs longer than this many Unicode code points are truncated before featurizing (4096, ~4 KB). */
export const MAX_INPUT_CODE_POINTS = 4096;
/** Character n-gram sizes, inclusive. */
export const CHAR_NGRAMS: readonly [number, number] = [1, 4];

/** The featurizer's parameters as `models/featurize.py` writes them into vectors and labels.json. */
export interface FeaturizerConfig {
  name: string;
  dims: number;
  char_ngrams: number[];
  word_ngrams: number[];
  hash: string;
  max_input_code_points: number;
}

/** The parameters of this implementation, to compare with a model's `featurizer` block. */
export const FEATURIZER_CONFIG: Readonly<FeaturizerConfig> = Object.freeze({
  name: FEATURIZER_NAME,
  dims: FEATURE_DIMS,
  char_ngrams: [CHAR_NGRAMS[0], CHAR_NGRAMS[1]],
  word_ngrams: [1, 2],
  hash: 'fnv1a32-utf8',
  max_input_code_points: MAX_INPUT_CODE_POINTS,
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

const RE_WORD = /^[\p{L}\p{M}\p{N}_]$/u;
const RE_DROP = /^\p{Cf}$/u;
const RE_SPACE = /^[\p{Z}\p{Cc}]$/u;
const RE_LONE_SURROGATE = /[\uD800-\uDFFF]/gu;
const RE_LONG_DIGITS = /[0-9]{5,}/g;

function charClass(ch: string): number {
  const cp = ch.codePointAt(0)!;
  for (const [lo, hi] of CJK_RANGES) if (cp >= lo && cp <= hi) return CJK;
  if (cp < 0x80) {
    // fast path for ASCII
    if ((cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || cp === 0x5f) return WORD;
    if (cp <= 0x20 || cp === 0x7f) return SPACE;
    return OTHER;
  }
  if (RE_WORD.test(ch)) return WORD;
  if (RE_DROP.test(ch)) return DROP;
  if (RE_SPACE.test(ch)) return SPACE;
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

/** Steps 1-5: the canonical text the features are taken from. */
export function normalizeText(text: string, maxCodePoints: number = MAX_INPUT_CODE_POINTS): string {
  let t = truncateCodePoints(text, maxCodePoints).replace(RE_LONE_SURROGATE, '\uFFFD');
  t = t.normalize('NFKC').toLowerCase();
  t = t.replace(RE_LONG_DIGITS, (m) => '0'.repeat(m.length));
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
    out += ch;
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

/** FNV-1a 32-bit hash of the UTF-8 encoding of `s` (well-formed input), as an unsigned integer. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  const step = (b: number) => {
    h = Math.imul(h ^ b, 0x01000193) >>> 0;
  };
  for (let i = 0; i < s.length; i++) {
    let cp = s.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i++;
      }
    }
    if (cp < 0x80) step(cp);
    else if (cp < 0x800) {
      step(0xc0 | (cp >> 6));
      step(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      step(0xe0 | (cp >> 12));
      step(0x80 | ((cp >> 6) & 0x3f));
      step(0x80 | (cp & 0x3f));
    } else {
      step(0xf0 | (cp >> 18));
      step(0x80 | ((cp >> 12) & 0x3f));
      step(0x80 | ((cp >> 6) & 0x3f));
      step(0x80 | (cp & 0x3f));
    }
  }
  return h >>> 0;
}

/** Sparse form of a feature vector: sorted indices and their float32 values. */
export interface SparseFeatures {
  indices: number[];
  values: number[];
}

/** Featurizes `text` into sparse form (sorted indices, float32-rounded values). */
export function featurizeSparse(text: string, maxCodePoints: number = MAX_INPUT_CODE_POINTS): SparseFeatures {
  const acc = new Map<number, number>();
  for (const f of featureStrings(normalizeText(text, maxCodePoints))) {
    const h = fnv1a32(f);
    const idx = h & (FEATURE_DIMS - 1);
    acc.set(idx, (acc.get(idx) ?? 0) + (h >>> 31 ? -1 : 1));
  }
  const items = [...acc].filter(([, v]) => v !== 0).sort((a, b) => a[0] - b[0]);
  if (items.length === 0) return { indices: [], values: [] };
  let sq = 0;
  for (const [, v] of items) sq += v * v;
  const norm = Math.sqrt(sq);
  return { indices: items.map(([i]) => i), values: items.map(([, v]) => Math.fround(v / norm)) };
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
