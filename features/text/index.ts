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
 * {@link TextModel} (model.ts) runs a `model.onnx` made by `models/train.py` on
 * these features with onnxruntime-node (imported lazily on first load).
 *
 * Parity holds for every character assigned in Unicode 14 (Python 3.11's `unicodedata`); characters
 * assigned later may be normalized or classified differently by Node's newer Unicode tables.
 *
 * No state, no import-time side effects. One file per concern: `config.ts` (parameters),
 * `normalize.ts` (steps 1-6 and tokens), `signals.ts` (structural signals), `hashing.ts` (step 8's
 * hashes), `vector.ts` (the vector), `model.ts` (the ONNX model). Import from this file.
 */
export {
  CHAR_NGRAMS,
  FEATURE_DIMS,
  FEATURIZER_CONFIG,
  FEATURIZER_NAME,
  ID_MASK,
  ID_MIN_DIGITS,
  MAX_INPUT_CODE_POINTS,
  type FeaturizerConfig,
} from './config.ts';
export { featureHashes, featureStrings, fnv1a32 } from './hashing.ts';
export { SESSION_OPTIONS, TextModel, TextModelUser, withLoadedModel, type TextModelManifest, type TextPrediction } from './model.ts';
export { maskIds, normalizeText, tokenize, truncateCodePoints } from './normalize.ts';
export { jsonShape, structureSignals } from './signals.ts';
export { featurize, featurizeInto, featurizeSparse, type SparseFeatures } from './vector.ts';
