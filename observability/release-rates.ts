/**
 * Per-manifest rates for `tao rollout status` and the console's releases view, from the committed
 * log: each outcome names the release its run was made with (Outcome.manifest). Runs that ended
 * only (processors/rates.ts): a run parked for a person is counted when it ends.
 *
 * Self-recovery is the rate of processors/rates.ts (`classifyRunEnd`, the metric
 * `tao_self_recovery_rate`): runs that hit a failure and completed without a person / runs that
 * hit a failure. The outcome does not carry what it needs (`RunState.failures_seen` and
 * `human_involved`), so {@link RunFacts} folds them from the run's observation results (the run
 * state each carries, plus that wave's failures, `waveFailures`), as Thought counts them, and from
 * its outcomes: a run that parked for a person and then completed had a person in it.
 */
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { LogReader } from '../runtime/log-reader.ts';
import type { ReleasePointer } from '../runtime/release/records.ts';
import type { ObservationResult, Outcome, OutcomeStatus, RunState } from '../schemas/types.gen.ts';
import { classifyRunEnd, endsRun, waveFailures } from '../processors/rates.ts';

/** One manifest's runs and rates; `manifest` null: runs recorded without a release. */
export interface ManifestRates {
  manifest: string | null;
  runs: number;
  completed: number;
  escalated: number;
  failed: number;
  /** Task completion rate: completed / ended. */
  tcr: number;
  /** Runs that hit a failure (an invalid verdict, a retried call, a fallback tool). */
  hitFailure: number;
  /** Of those, runs that still completed without a person. */
  recovered: number;
  /** Self-recovery rate: recovered / hitFailure; null when no run hit a failure. */
  srr: number | null;
  /** Mean model cost of a run (TAO_LLM_PRICES), over the runs whose outcome priced it; null when none did. */
  costPerRun: number | null;
  /** Mean tool steps executed per run. */
  stepsPerRun: number;
}

/** What one ended run contributes to its manifest's rates. */
export interface RunEndFacts {
  manifest: string | null;
  status: OutcomeStatus;
  /** `RunState.failures_seen` at the run's end. */
  failuresSeen: number;
  /** A person replied to or decided on the run (`RunState.human_involved`). */
  humanInvolved: boolean;
  modelCost: number | null;
  stepsExecuted: number;
}

/** Each manifest's rates over ended runs, one fact per run; runs still running or parked are left out. */
export function manifestRates(ends: Iterable<RunEndFacts>): ManifestRates[] {
  const by = new Map<string | null, ManifestRates & { cost: number; priced: number; steps: number }>();
  for (const e of ends) {
    if (!endsRun(e.status)) continue;
    const r = by.get(e.manifest) ?? {
      ...{ manifest: e.manifest, runs: 0, completed: 0, escalated: 0, failed: 0, tcr: 0, hitFailure: 0, recovered: 0, srr: null },
      ...{ costPerRun: null, stepsPerRun: 0, cost: 0, priced: 0, steps: 0 },
    };
    const end = classifyRunEnd(e.status, e.failuresSeen, e.humanInvolved);
    r.runs++;
    if (end.completed) r.completed++;
    else if (e.status === 'escalated') r.escalated++;
    else if (e.status === 'failed') r.failed++;
    if (end.hitFailure) r.hitFailure++;
    if (end.recovered) r.recovered++;
    if (e.modelCost !== null) {
      r.cost += e.modelCost;
      r.priced++;
    }
    r.steps += e.stepsExecuted;
    by.set(e.manifest, r);
  }
  return [...by.values()].map(({ cost, priced, steps, ...r }) => ({
    ...r,
    tcr: r.completed / r.runs,
    srr: r.hitFailure ? r.recovered / r.hitFailure : null,
    costPerRun: priced ? cost / priced : null,
    stepsPerRun: steps / r.runs,
  }));
}

/** Per run, what self-recovery needs that its outcome does not carry, folded from its records in any order. */
export class RunFacts {
  private readonly runs = new Map<string, { failures: number; human: boolean }>();

  /** A run state a record carried (thought requests, action results). */
  state(thoughtId: string, run: Pick<RunState, 'failures_seen' | 'human_involved'>, waveFailed = 0): void {
    const f = this.runs.get(thoughtId) ?? { failures: 0, human: false };
    f.failures = Math.max(f.failures, run.failures_seen + waveFailed);
    f.human ||= run.human_involved;
    this.runs.set(thoughtId, f);
  }

  /** An observation result: its run state plus that wave's failures, as Thought adds them. */
  observation(o: Pick<ObservationResult, 'thought_id' | 'run' | 'verdicts'>): void {
    this.state(o.thought_id, o.run, waveFailures(o.verdicts));
  }

  /** An outcome that parked the run for a person: if the run completes, a person answered it. */
  outcome(o: Pick<Outcome, 'thought_id' | 'status'>): void {
    if (endsRun(o.status)) return;
    this.state(o.thought_id, { failures_seen: 0, human_involved: true });
  }

  of(thoughtId: string): { failuresSeen: number; humanInvolved: boolean } {
    const f = this.runs.get(thoughtId);
    return { failuresSeen: f?.failures ?? 0, humanInvolved: f?.human ?? false };
  }
}

type RatedOutcome = Pick<Outcome, 'thought_id' | 'status' | 'manifest' | 'model_cost' | 'steps_executed'>;

/** The rates of each manifest from outcomes, latest outcome per run (a run may park and resume); `facts` from the runs' observation results. */
export function ratesOf(outcomes: Iterable<RatedOutcome>, facts = new RunFacts()): ManifestRates[] {
  const last = new Map<string, RatedOutcome>();
  for (const o of outcomes) {
    facts.outcome(o);
    last.set(o.thought_id, o);
  }
  return manifestRates(
    [...last.values()].map((o) => ({
      manifest: o.manifest,
      status: o.status,
      ...facts.of(o.thought_id),
      modelCost: o.model_cost,
      stepsExecuted: o.steps_executed,
    })),
  );
}

/** Reads tao.outcomes and tao.observation.results to their ends (read_committed) and gives each manifest's rates. */
export async function rolloutRates(kafka: Kafka, codec: AvroCodec): Promise<ManifestRates[]> {
  const topics = { outcomes: codec.topics.name('outcomes'), observationResults: codec.topics.name('observationResults') };
  const reader = await LogReader.connect(kafka, codec.topics.group('rollout-status'));
  try {
    const ranges = [];
    for (const topic of Object.values(topics))
      ranges.push(...(await reader.offsets(topic)).map((p) => ({ topic, partition: p.partition, from: p.low, to: p.high })));
    const outcomes: Outcome[] = [];
    const facts = new RunFacts();
    for (const r of await reader.read(ranges)) {
      if (!r.value) continue;
      if (r.topic === topics.outcomes) outcomes.push(await codec.decode<Outcome>('outcomes', r.value));
      else facts.observation(await codec.decode<ObservationResult>('observationResults', r.value));
    }
    return ratesOf(outcomes, facts);
  } finally {
    await reader.close();
  }
}

const percent = (rate: number | null) => (rate === null ? '-' : `${(100 * rate).toFixed(1)}%`);

/** One line per manifest, the pointer's roles named. */
export function renderRates(rates: readonly ManifestRates[], pointer: ReleasePointer | null): string[] {
  if (!rates.length) return ['no ended runs in tao.outcomes'];
  return rates.map(
    (r) =>
      `${r.manifest ? r.manifest.slice(0, 12) : '-'.padEnd(12)}  ${releaseRole(r.manifest, pointer).padEnd(12)} runs ${r.runs}  TCR ${percent(r.tcr)}  self-recovery ${percent(r.srr)} (${r.recovered}/${r.hitFailure})  escalated ${r.escalated}  failed ${r.failed}  steps/run ${r.stepsPerRun.toFixed(2)}  cost/run ${r.costPerRun === null ? '-' : r.costPerRun.toFixed(4)}`,
  );
}

/** The manifest's role in the release pointer: active, candidate, previous; `(no release)` for runs without one; '' for any other. */
export function releaseRole(digest: string | null, pointer: ReleasePointer | null): string {
  if (digest === null) return '(no release)';
  return digest === pointer?.active ? 'active' : digest === pointer?.candidate ? 'candidate' : digest === pointer?.previous ? 'previous' : '';
}
