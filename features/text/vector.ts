/**
 * The feature vector of a text: its distinct feature hashes folded into {@link FEATURE_DIMS} signed
 * counts, L2-normalized, in sparse form (what the models take) or dense.
 */
import { FEATURE_DIMS, MAX_INPUT_CODE_POINTS } from './config.ts';
import { distinctFeatureHashes, fnv1a32 } from './hashing.ts';
import { normalizeText } from './normalize.ts';
import { structureSignals } from './signals.ts';

/** Sparse form of a feature vector: sorted indices and their values, as the model's input tensors take them. */
export interface SparseFeatures {
  indices: Int32Array;
  values: Float32Array;
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
  const s = (scratch ??= {
    counts: new Int32Array(FEATURE_DIMS),
    touched: new Int32Array(FEATURE_DIMS),
    spare: new Int32Array(FEATURE_DIMS),
    seen: new Uint8Array(FEATURE_DIMS),
  });
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
