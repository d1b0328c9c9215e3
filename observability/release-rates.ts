/**
 * Per-manifest rates for `tao rollout status`, from the committed outcomes (tao.outcomes): each
 * outcome names the release its run was made with (Outcome.manifest). Runs that ended only
 * (processors/rates.ts): a run parked for a person is counted when it ends.
 */
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { LogReader } from '../runtime/log-reader.ts';
import type { ReleasePointer } from '../runtime/release/records.ts';
import type { Outcome } from '../schemas/types.gen.ts';
import { endsRun } from '../processors/rates.ts';

/** One manifest's runs and rates; `manifest` null: runs recorded without a release. */
export interface ManifestRates {
  manifest: string | null;
  runs: number;
  completed: number;
  escalated: number;
  failed: number;
  /** Task completion rate: completed / ended. */
  tcr: number;
  /** Mean model cost of a run (TAO_LLM_PRICES), over the runs whose outcome priced it; null when none did. */
  costPerRun: number | null;
  /** Mean tool steps executed per run. */
  stepsPerRun: number;
}

/** The rates of each manifest from outcomes, latest outcome per run (a run may park and resume). */
export function ratesOf(outcomes: Iterable<Pick<Outcome, 'thought_id' | 'status' | 'manifest' | 'model_cost' | 'steps_executed'>>): ManifestRates[] {
  const last = new Map<string, Pick<Outcome, 'status' | 'manifest' | 'model_cost' | 'steps_executed'>>();
  for (const o of outcomes) last.set(o.thought_id, o);
  const by = new Map<string | null, { runs: number; completed: number; escalated: number; failed: number; cost: number; priced: number; steps: number }>();
  for (const o of last.values()) {
    if (!endsRun(o.status)) continue;
    const r = by.get(o.manifest) ?? { runs: 0, completed: 0, escalated: 0, failed: 0, cost: 0, priced: 0, steps: 0 };
    r.runs++;
    if (o.status === 'completed') r.completed++;
    else if (o.status === 'escalated') r.escalated++;
    else if (o.status === 'failed') r.failed++;
    if (o.model_cost !== null) {
      r.cost += o.model_cost;
      r.priced++;
    }
    r.steps += o.steps_executed;
    by.set(o.manifest, r);
  }
  return [...by.entries()].map(([manifest, r]) => ({
    manifest,
    runs: r.runs,
    completed: r.completed,
    escalated: r.escalated,
    failed: r.failed,
    tcr: r.completed / r.runs,
    costPerRun: r.priced ? r.cost / r.priced : null,
    stepsPerRun: r.steps / r.runs,
  }));
}

/** Reads tao.outcomes to its end (read_committed) and gives each manifest's rates. */
export async function rolloutRates(kafka: Kafka, codec: AvroCodec): Promise<ManifestRates[]> {
  const topic = codec.topics.name('outcomes');
  const reader = await LogReader.connect(kafka, codec.topics.group('rollout-status'));
  try {
    const ranges = (await reader.offsets(topic)).map((p) => ({ topic, partition: p.partition, from: p.low, to: p.high }));
    const outcomes: Outcome[] = [];
    for (const r of await reader.read(ranges)) if (r.value) outcomes.push(await codec.decode<Outcome>('outcomes', r.value));
    return ratesOf(outcomes);
  } finally {
    await reader.close();
  }
}

/** One line per manifest, the pointer's roles named. */
export function renderRates(rates: readonly ManifestRates[], pointer: ReleasePointer | null): string[] {
  const role = (d: string | null) =>
    d === null ? '(no release)' : d === pointer?.active ? 'active' : d === pointer?.candidate ? 'candidate' : d === pointer?.previous ? 'previous' : '';
  if (!rates.length) return ['no ended runs in tao.outcomes'];
  return rates.map(
    (r) =>
      `${r.manifest ? r.manifest.slice(0, 12) : '-'.padEnd(12)}  ${role(r.manifest).padEnd(12)} runs ${r.runs}  TCR ${(100 * r.tcr).toFixed(1)}%  escalated ${r.escalated}  failed ${r.failed}  steps/run ${r.stepsPerRun.toFixed(2)}  cost/run ${r.costPerRun === null ? '-' : r.costPerRun.toFixed(4)}`,
  );
}
