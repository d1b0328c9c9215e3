/** Reads Prometheus text exposition (what /metrics serves) into samples, for assertions; and every registry the processes export. */
import type { Registry } from 'prom-client';
import { IngressMetrics, StageMetrics } from '../../runtime/metrics.ts';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample line of `text` (comments skipped). Values like NaN and +Inf are parsed as numbers. */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) throw new Error(`not a metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    const raw = m[3]!.toLowerCase();
    out.push({ name: m[1]!, labels, value: raw === 'nan' ? Number.NaN : raw === '+inf' ? Infinity : raw === '-inf' ? -Infinity : Number(m[3]) });
  }
  return out;
}

/** Samples named `name` whose labels include `labels`. */
export function samples(all: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The one sample named `name` with `labels` (0 when the series does not exist yet: counters start absent). */
export function sample(all: Sample[], name: string, labels: Record<string, string>): number {
  const found = samples(all, name, labels);
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}

/** Fetches and parses a process's /metrics. */
export async function scrape(port: number): Promise<Sample[]> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!res.ok) throw new Error(`GET /metrics on port ${port}: HTTP ${res.status}`);
  return parseMetrics(await res.text());
}

/** The registries of a stage process with every optional part registered (run, step, store and in-flight metrics) and of the ingress. */
export function everyRegistry(): Registry[] {
  const stage = new StageMetrics('every');
  stage.runMetrics();
  stage.stepMetrics();
  stage.trackInFlight(() => 0);
  stage.trackStoreSize(() => 0);
  const ingress = new IngressMetrics();
  ingress.trackInFlight(() => 0);
  return [stage.registry, ingress.registry];
}
