/**
 * Step 8's hashing: FNV-1a 32-bit over UTF-8, and the distinct feature hashes of a normalized text
 * (char n-grams, words, word pairs), computed over its code points in reused scratch space without
 * building the feature strings. {@link featureStrings} is the readable definition they must match.
 */
import { CHAR_NGRAMS } from './config.ts';
import { CJK, RE_LONE_SURROGATE, WORD, codePointClass, tokenize } from './normalize.ts';

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
export function distinctFeatureHashes(normalized: string, extra: readonly number[]): Uint32Array {
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
