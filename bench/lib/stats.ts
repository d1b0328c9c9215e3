/**
 * Numbers for the bench reports: percentiles, Prometheus text parsing and histogram quantiles,
 * and plain-text tables. Pure functions.
 */

import { percentile } from '../../eval/runs.ts';

export { percentile };

/** P50, P95, P99 and max of `values`. */
export function summary(values: readonly number[]): { n: number; p50: number; p95: number; p99: number; max: number } {
  return {
    n: values.length,
    p50: percentile(values, 50),
    p95: percentile(values, 95),
    p99: percentile(values, 99),
    max: values.length ? Math.max(...values) : Number.NaN,
  };
}

/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (the subset prom-client writes). */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** Cumulative bucket counts of one histogram (`le` → count), summed over samples matching `labels`. */
export function histogramBuckets(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket`) continue;
    if (!Object.entries(labels).every(([k, v]) => s.labels[k] === v)) continue;
    const le = s.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  return buckets;
}

/** `after - before` per bucket: the observations made between two scrapes. */
export function bucketDelta(after: Map<number, number>, before: Map<number, number>): Map<number, number> {
  const out = new Map<number, number>();
  for (const [le, count] of after) out.set(le, count - (before.get(le) ?? 0));
  return out;
}

/** Adds bucket maps (several instances of one stage). */
export function bucketSum(maps: ReadonlyArray<Map<number, number>>): Map<number, number> {
  const out = new Map<number, number>();
  for (const m of maps) for (const [le, count] of m) out.set(le, (out.get(le) ?? 0) + count);
  return out;
}

/**
 * The q-quantile (0..1) of a cumulative histogram, interpolated linearly inside the bucket it
 * falls in, as PromQL's histogram_quantile does. Only as precise as the bucket bounds; a quantile
 * in the +Inf bucket returns the largest finite bound. NaN when nothing was observed.
 */
export function histogramQuantile(buckets: Map<number, number>, q: number): number {
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Number.POSITIVE_INFINITY) ?? 0;
  if (total <= 0) return Number.NaN;
  const rank = q * total;
  let prevBound = 0;
  let prevCount = 0;
  for (const le of bounds) {
    const count = buckets.get(le)!;
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return prevBound;
      return prevBound + (le - prevBound) * ((rank - prevCount) / Math.max(1e-12, count - prevCount));
    }
    prevBound = le;
    prevCount = count;
  }
  return prevBound;
}

/** The sum of the samples named `name` whose labels include `labels` (0 when none). */
export function counterValue(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of samples) if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  return sum;
}

/** The value of the first sample named `name` (NaN when absent). */
export function gauge(samples: readonly Sample[], name: string): number {
  return samples.find((s) => s.name === name)?.value ?? Number.NaN;
}

/** Renders rows as an aligned plain-text table (numbers right-aligned). */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)));
  const line = (r: Array<string | number>, numeric: boolean[]) =>
    r.map((c, i) => (numeric[i] ? String(c).padStart(widths[i]!) : String(c).padEnd(widths[i]!))).join('  ');
  const numeric = header.map((_, i) => rows.some((r) => typeof r[i] === 'number'));
  return [line(header, numeric), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map((r) => line(r, numeric))].join('\n');
}

/** A number with 3 significant digits (integers as is), `-` for NaN. */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return '-';
  if (Number.isInteger(n)) return String(n);
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2);
}
