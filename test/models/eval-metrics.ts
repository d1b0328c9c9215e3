/**
 * The metrics of models/train.py, recomputed in Node: per-label precision/recall/F1 (0 when
 * undefined), macro-F1 over all labels, accuracy. Used to check that the committed eval reports
 * describe the committed model files.
 */
import { readFileSync } from 'node:fs';

export interface EvalExample {
  text: string;
  label: string;
  /** The intent router's rows: language (`en`, `en-po`, `zh-two`, `ja`…), and since issue 43 kind and second ask. */
  lang?: string;
  kind?: string;
  second?: string;
}

export interface EvalReport {
  model: { sha256: string; id: string; bytes: number };
  labels: string[];
  eval: {
    n: number;
    sha256: string;
    macro_f1: number;
    primary: 'raw' | 'routed';
    raw: { macro_f1: number; accuracy: number; confusion: { labels: string[]; matrix: number[][] } };
    routed?: { threshold: number; macro_f1: number; accuracy: number; confusion: { labels: string[]; matrix: number[][] } };
    adoption: { threshold: number; count: number; share: number; accuracy: number | null };
  };
}

export function readJsonl(url: URL): EvalExample[] {
  return readFileSync(url, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as EvalExample);
}

export function metrics(labels: readonly string[], gold: readonly string[], pred: readonly string[]) {
  const k = labels.length;
  const idx = new Map(labels.map((l, i) => [l, i]));
  const matrix = labels.map(() => new Array<number>(k).fill(0));
  gold.forEach((g, i) => matrix[idx.get(g)!]![idx.get(pred[i]!)!]!++);
  let f1sum = 0;
  for (let i = 0; i < k; i++) {
    const tp = matrix[i]![i]!;
    const fp = matrix.reduce((s, row) => s + row[i]!, 0) - tp;
    const fn = matrix[i]!.reduce((s, v) => s + v, 0) - tp;
    const p = tp + fp ? tp / (tp + fp) : 0;
    const r = tp + fn ? tp / (tp + fn) : 0;
    f1sum += p + r ? (2 * p * r) / (p + r) : 0;
  }
  const correct = gold.filter((g, i) => g === pred[i]).length;
  return { macro_f1: f1sum / k, accuracy: gold.length ? correct / gold.length : 0, matrix };
}
