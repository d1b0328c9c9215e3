/**
 * The hashed text featurizer's parameters: vector size, n-gram sizes, input cap, id masking, and
 * {@link FEATURIZER_CONFIG}, the block a model's `labels.json` must match (models/featurize.py writes
 * the same one).
 */
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
