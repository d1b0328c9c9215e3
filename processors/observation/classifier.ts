/**
 * Error-payload classifier for Observation's soft semantic check: what kind of failure does a tool's
 * response body show, even when the status code says 200 ("token expired" in a 200 body, an HTML
 * 502 page, a vendor error envelope)?
 *
 * A small logistic-regression model (`models/error-classifier/model.onnx`, trained by
 * `models/train.py` on generated data, evaluated on a hand-written held-out set, see
 * `models/error-classifier/eval-report.md`) over hashed character/word n-gram features
 * (`features/text/`). Its output is a discrete label and a probability; callers adopt the
 * label only at confidence ≥ {@link ERROR_ADOPTION_THRESHOLD} and otherwise keep their hard checks.
 *
 * Inputs are truncated to {@link MAX_INPUT_CODE_POINTS} (4096) Unicode code points before featurizing.
 * Same text → same output (onnxruntime CPU, one thread). Nothing is loaded at import time.
 */
import { packagePath } from '../../runtime/paths.ts';
import { MAX_INPUT_CODE_POINTS, TextModel, TextModelUser, withLoadedModel } from '../../features/text/index.ts';

export { MAX_INPUT_CODE_POINTS };

/** The labels of the error-payload classifier. */
export const ERROR_LABELS = [
  'ok',
  'auth_failed',
  'rate_limited',
  'not_found',
  'server_error',
  'malformed',
  'data_corrupted',
  'timeout',
  'network_issue',
  'unknown',
] as const;
/** One label of {@link ERROR_LABELS}. */
export type ErrorLabel = (typeof ERROR_LABELS)[number];

/**
 * The confidence from which a classification should be adopted (below it, fall back to hard checks).
 * Kept at 0.95 from the calibration in `models/error-classifier/eval-report.md`: on the held-out set the
 * labels at ≥ 0.95 are ~98-99% right, while below it accuracy drops steeply.
 */
export const ERROR_ADOPTION_THRESHOLD = 0.95;

/** The committed model directory, `models/error-classifier/`. */
export const DEFAULT_ERROR_MODEL_DIR = packagePath('models', 'error-classifier');

/** What {@link ErrorClassifier.classify} returns. */
export interface ErrorClassification {
  /** The most probable label. */
  label: ErrorLabel;
  /** Its probability, in [0, 1]. */
  confidence: number;
  /** Which model said so: `error-classifier@<first 12 hex of sha256(model.onnx)>`. */
  model: string;
}

/** Whether a classification is confident enough to adopt (confidence ≥ `threshold`, default 0.95). */
export function adoptable(c: ErrorClassification, threshold: number = ERROR_ADOPTION_THRESHOLD): boolean {
  return c.confidence >= threshold;
}

/** Classifies API response bodies / error payload texts into {@link ERROR_LABELS}. */
export class ErrorClassifier extends TextModelUser {
  private constructor(model: TextModel) {
    super(model, ERROR_LABELS, 'error-classifier');
  }

  /**
   * Loads the model from `dir` (default: the committed `models/error-classifier/`). Fails if the
   * directory's labels are not {@link ERROR_LABELS} or the model was trained with another featurizer.
   */
  static load(dir: string = DEFAULT_ERROR_MODEL_DIR): Promise<ErrorClassifier> {
    return withLoadedModel(dir, (model) => new ErrorClassifier(model));
  }

  /** Classifies one payload text. */
  async classify(text: string): Promise<ErrorClassification> {
    const [c] = await this.classifyBatch([text]);
    return c!;
  }

  /** Classifies several payload texts in one model run; results are in input order. */
  async classifyBatch(texts: readonly string[]): Promise<ErrorClassification[]> {
    const rows = await this.model.predict(texts);
    return rows.map((r) => ({ label: r.label as ErrorLabel, confidence: r.confidence, model: this.model.id }));
  }

  /** The probability of every label for one text (for audit trails and tests). */
  async probabilities(text: string): Promise<Record<ErrorLabel, number>> {
    const [r] = await this.model.predict([text]);
    return Object.fromEntries(this.model.labels.map((l, i) => [l, r!.probabilities[i]!])) as Record<ErrorLabel, number>;
  }
}
