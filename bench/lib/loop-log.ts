/**
 * What the bench reads back from the loop's log: run timelines (for latencies), record sizes (to
 * calibrate the relay), duplicated steps (the exactly-once check), and the run-level rates. The
 * log, read with read_committed, is the only source: whatever the driver saw live is not trusted.
 */
import { waveFailures } from '../../processors/rates.ts';
import type { ActionResult, ObservationResult, Outcome, RunSnapshot, ThoughtRequest } from '../../schemas/types.gen.ts';
import type { TopicId } from '../../topics/catalog.ts';
import type { DecodedRecord } from '../../eval/namespace.ts';
import { emptyTimeline, type RunTimeline } from './load.ts';

// Decoding the log is the product's (eval/namespace.ts: `tao eval` reads its runs back with it).
export { decodeLoopRecords, loopTopicNames, type DecodedRecord } from '../../eval/namespace.ts';
import type { RelaySizes } from '../relay/relay.ts';

/** Per run: task time, each wave's request, result and verdict times, outcome time and status. */
export function loopTimelines(records: readonly DecodedRecord[]): Map<string, RunTimeline> {
  const runs = new Map<string, RunTimeline>();
  const get = (key: string) => {
    let t = runs.get(key);
    if (!t) runs.set(key, (t = emptyTimeline()));
    return t;
  };
  for (const r of records) {
    if (!r.decoded) continue;
    if (r.id === 'tasks') get(r.key).startedAt = r.timestamp;
    else if (r.id === 'thoughtRequests') get(r.key).waves[(r.decoded as unknown as ThoughtRequest).iteration - 1] = r.timestamp;
    else if (r.id === 'actionResults') get(r.key).results[(r.decoded as unknown as ActionResult).iteration - 1] = r.timestamp;
    else if (r.id === 'observationResults') get(r.key).verdicts[(r.decoded as unknown as ObservationResult).iteration - 1] = r.timestamp;
    else if (r.id === 'outcomes') Object.assign(get(r.key), { endedAt: r.timestamp, status: (r.decoded as unknown as Outcome).status });
  }
  return runs;
}

/**
 * Average value sizes of the loop's records, per topic and iteration, for runs that completed in
 * `iterations` waves: the relay writes records of exactly these sizes.
 */
export function recordSizes(records: readonly DecodedRecord[]): RelaySizes {
  const waves = new Map<string, number>();
  for (const r of records) if (r.id === 'outcomes' && r.decoded) waves.set(r.key, (r.decoded as unknown as Outcome).iterations);
  const counts = [...waves.values()];
  const iterations = mode(counts);
  const avg = new Map<string, { sum: number; n: number }>();
  const add = (k: string, bytes: number) => {
    const a = avg.get(k) ?? { sum: 0, n: 0 };
    a.sum += bytes;
    a.n++;
    avg.set(k, a);
  };
  for (const r of records) {
    if (!r.decoded || !r.value || waves.get(r.key) !== iterations) continue;
    const it = (r.decoded as { iteration?: number }).iteration;
    if (r.id === 'thoughtRuns') {
      const snapshot = r.decoded as unknown as RunSnapshot;
      add(snapshot.status === 'running' ? `snapshot:${snapshot.iteration}` : 'snapshot:end', r.value.length);
    } else if (r.id === 'tasks' || r.id === 'outcomes') add(r.id, r.value.length);
    else add(`${r.id}:${it}`, r.value.length);
  }
  const size = (k: string) => {
    const a = avg.get(k);
    if (!a) throw new Error(`no ${k} records to calibrate the relay from`);
    return Math.round(a.sum / a.n);
  };
  const per = (id: TopicId | 'snapshot') => Array.from({ length: iterations }, (_, i) => size(`${id}:${i + 1}`));
  return {
    iterations,
    task: size('tasks'),
    request: per('thoughtRequests'),
    result: per('actionResults'),
    observation: per('observationResults'),
    outcome: size('outcomes'),
    snapshot: per('snapshot'),
    snapshotEnd: size('snapshot:end'),
  };
}

function mode(values: number[]): number {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
}

/**
 * Identities written more than once to the committed log: a step requested, a step result, a
 * verdict, or an outcome (the same check as test/loop/exactly-once.test.ts). Tasks are counted
 * apart: a task written twice is the submitter's retry, which Thought must (and does) ignore.
 */
export function duplicatedSteps(records: readonly DecodedRecord[]): { steps: string[]; tasks: string[] } {
  const seen = new Set<string>();
  const steps: string[] = [];
  const tasks: string[] = [];
  const add = (id: string, into: string[]) => (seen.has(id) ? into.push(id) : seen.add(id));
  for (const r of records) {
    if (!r.decoded) continue;
    switch (r.id) {
      case 'tasks':
        add(`task:${r.key}:${String(r.decoded.task_id)}`, tasks);
        break;
      case 'thoughtRequests': {
        const v = r.decoded as unknown as ThoughtRequest;
        for (const s of v.steps) add(`request:${r.key}:${v.iteration}:${s.step_id}`, steps);
        break;
      }
      case 'actionResults': {
        const v = r.decoded as unknown as ActionResult;
        for (const s of v.results) add(`result:${r.key}:${v.iteration}:${s.step_id}`, steps);
        break;
      }
      case 'observationResults': {
        const v = r.decoded as unknown as ObservationResult;
        for (const s of v.verdicts) add(`verdict:${r.key}:${v.iteration}:${s.step_id}`, steps);
        break;
      }
      case 'outcomes':
        add(`outcome:${r.key}`, steps);
        break;
    }
  }
  return { steps, tasks };
}

/** The run-level rates over a set of runs, from their committed outcomes and verdicts. */
export interface RunRates {
  /** Runs with an outcome that ends them (any status but awaiting_input and awaiting_approval). */
  ended: number;
  completed: number;
  /** Runs that met a failure: an invalid verdict, a retried call or a fallback. */
  hitFailure: number;
  /** Of those, runs that completed without a person. */
  recovered: number;
  /** completed / ended. */
  completionRate: number;
  /** recovered / hitFailure. */
  selfRecoveryRate: number;
  byStatus: Record<string, number>;
  byReason: Record<string, number>;
}

/**
 * Task completion and self-recovery rates as processors/rates.ts defines them (a failure is a
 * verdict that is invalid, needed retries, or came from a fallback; recovered = completed without
 * a human), computed from the log for the runs in `ids`.
 */
export function runRates(records: readonly DecodedRecord[], ids: ReadonlySet<string>): RunRates {
  const failures = new Map<string, number>();
  const human = new Set<string>();
  const outcomes = new Map<string, Outcome>();
  for (const r of records) {
    if (!r.decoded || !ids.has(r.key)) continue;
    if (r.id === 'observationResults') {
      const v = r.decoded as unknown as ObservationResult;
      failures.set(r.key, (failures.get(r.key) ?? 0) + waveFailures(v.verdicts));
      if (v.run.human_involved) human.add(r.key);
    } else if (r.id === 'outcomes') outcomes.set(r.key, r.decoded as unknown as Outcome);
  }
  const rates: RunRates = {
    ended: 0,
    completed: 0,
    hitFailure: 0,
    recovered: 0,
    completionRate: Number.NaN,
    selfRecoveryRate: Number.NaN,
    byStatus: {},
    byReason: {},
  };
  for (const [key, o] of outcomes) {
    rates.byStatus[o.status] = (rates.byStatus[o.status] ?? 0) + 1;
    rates.byReason[o.reason_code] = (rates.byReason[o.reason_code] ?? 0) + 1;
    if (o.status === 'awaiting_input' || o.status === 'awaiting_approval') continue;
    rates.ended++;
    const completed = o.status === 'completed';
    if (completed) rates.completed++;
    if ((failures.get(key) ?? 0) > 0) {
      rates.hitFailure++;
      if (completed && !human.has(key)) rates.recovered++;
    }
  }
  rates.completionRate = rates.ended ? rates.completed / rates.ended : Number.NaN;
  rates.selfRecoveryRate = rates.hitFailure ? rates.recovered / rates.hitFailure : Number.NaN;
  return rates;
}
