/**
 * {@link TextModel}: a small linear text classifier made by models/train.py (`model.onnx` and
 * `labels.json`), run with onnxruntime-node over this featurizer's sparse features. onnxruntime-node is
 * imported lazily (in TextModel.load), so importing this module loads nothing.
 */
import type * as Ort from 'onnxruntime-node';
import { canonicalJson } from '../../runtime/json-field.ts';
import { FEATURIZER_CONFIG, type FeaturizerConfig } from './config.ts';
import { featurizeSparse } from './vector.ts';

/** How every text model's onnxruntime session runs: on one CPU thread, in order. */
export const SESSION_OPTIONS: Ort.InferenceSession.SessionOptions = {
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
};

/** `labels.json` as models/train.py writes it next to `model.onnx`. */
export interface TextModelManifest {
  task: string;
  labels: string[];
  featurizer: FeaturizerConfig;
  model_sha256: string;
  adoption_threshold?: number;
  routing_threshold?: number;
  /** The text pre-step the model was trained with (the intent router's `ticket-focus-v2`), if any. */
  pre_step?: string | null;
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
    if (manifest.model_sha256 !== sha256)
      throw new Error(`${dir}: labels.json describes model ${manifest.model_sha256.slice(0, 12)}, but model.onnx is ${sha256.slice(0, 12)}`);
    if (canonicalJson(manifest.featurizer) !== canonicalJson(FEATURIZER_CONFIG)) {
      throw new Error(`${dir}: model was trained with featurizer ${canonicalJson(manifest.featurizer)}, this runtime has ${canonicalJson(FEATURIZER_CONFIG)}`);
    }
    if (!Array.isArray(manifest.labels) || manifest.labels.length < 2) throw new Error(`${dir}: labels.json has no labels`);
    const mod = (await import('onnxruntime-node')) as typeof Ort & { default?: typeof Ort };
    const ort: typeof Ort = mod.InferenceSession ? mod : mod.default!;
    const session = await ort.InferenceSession.create(bytes, SESSION_OPTIONS);
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

/**
 * What a classifier over one {@link TextModel} shares: the model's id, releasing it, and the check
 * that a loaded model is one of its task (its labels all among `expected`).
 */
export abstract class TextModelUser {
  protected constructor(
    protected readonly model: TextModel,
    expected: readonly string[],
    task: string,
  ) {
    const unknownLabels = model.labels.filter((l) => !expected.includes(l));
    if (unknownLabels.length) throw new Error(`${model.id}: not an ${task} model (labels ${unknownLabels.join(', ')})`);
  }

  /** `<task>@<sha256 prefix>`. */
  get modelId(): string {
    return this.model.id;
  }

  /** Releases the native session. */
  async close(): Promise<void> {
    await this.model.close();
  }
}

/**
 * `create(model)` for the model in `dir`, the model released when `create` throws (a directory of
 * another task).
 */
export async function withLoadedModel<T>(dir: string, create: (model: TextModel) => T): Promise<T> {
  const model = await TextModel.load(dir);
  try {
    return create(model);
  } catch (err) {
    await model.close();
    throw err;
  }
}
