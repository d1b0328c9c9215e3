/**
 * The window of recorded runs `tao eval --from-log` re-runs: every run whose first task was
 * written within the time bounds, of the chosen skills and outcomes, read in one pass over every
 * partition of the loop topics and the dead-letter topics (read_committed, from the first offset
 * at `since` to the current end, so a run started in the window is read whole, however late it
 * ended). Runs without an outcome yet (in flight) are left out and counted.
 */
import { modelSkillOf } from '../../processors/run-driver.ts';
import { LogReader, type PartitionRange } from '../../runtime/log-reader.ts';
import type { Outcome, RunState, ThoughtRequest } from '../../schemas/types.gen.ts';
import { DEAD_LETTERED } from '../../topics/catalog.ts';
import { readDeadLetter, type DeadLetter } from '../dead-letters.ts';
import { causalOrder, decodeLogged, RUN_TOPICS, type LoggedRecord, type RunLog, type RunLogDeps } from '../log.ts';
import { FORK_HEADERS } from '../record-format.ts';

/** Which recorded runs to take. */
export interface RunWindow {
  /** Runs whose first task was written at or after this time (ms since epoch); null: from the start of the log. */
  sinceMs: number | null;
  /** ... and at or before this time; null: up to now. */
  untilMs: number | null;
  /** Runs of these skills (a model's skill or a flow's id, by name); empty: all. */
  skills: string[];
  /** Runs whose last outcome has one of these statuses; empty: all. */
  statuses: string[];
  /** At most this many runs, the earliest first; null: all. */
  limit: number | null;
}

/** A recorded run of the window, with what it is selected by. */
export interface WindowRun {
  log: RunLog;
  /** The model's skill, else the flow the run followed (by name), else null. */
  skill: string | null;
  /** Its last recorded outcome. */
  outcome: Outcome;
  startedAt: number;
}

/** The runs of the window, and how many runs of the log it did not take and why. */
export interface WindowRead {
  runs: WindowRun[];
  skipped: { in_flight: number; forked: number; other_skill: number; other_status: number; over_limit: number };
}

/** The skill a run is about: its model state's skill, else the flow its plan came from (by name). */
export function skillOfRun(records: readonly LoggedRecord[]): string | null {
  let flow: string | null = null;
  for (const r of records) {
    if (r.value === null) continue;
    const run =
      r.topic === 'thoughtRequests' ? (r.value as unknown as ThoughtRequest).run : r.topic === 'outcomes' ? (r.value as unknown as Outcome) : undefined;
    if (!run) continue;
    if ('model_state_json' in run) {
      const skill = modelSkillOf(run as RunState);
      if (skill) return skill;
    }
    if (run.flow_id !== 'none' && run.flow_id !== 'unknown') flow ??= run.flow_id;
  }
  return flow;
}

/**
 * Reads the window's runs from the log.
 * @throws TransientError when the cluster or the registry can't be reached, or a partition can't be read to its end in time.
 */
export async function readWindow(deps: RunLogDeps, window: RunWindow): Promise<WindowRead> {
  const { codec } = deps;
  const reader = await LogReader.connect(deps.kafka, codec.topics.group('replay'));
  let raw;
  try {
    const names = [...RUN_TOPICS.map((id) => codec.topics.name(id)), ...DEAD_LETTERED.map((id) => codec.topics.dlq(id))];
    const ranges: PartitionRange[] = [];
    for (const topic of names) {
      const at = window.sinceMs === null ? null : await reader.offsetsAt(topic, window.sinceMs);
      for (const p of await reader.offsets(topic)) {
        const from = at?.get(p.partition) ?? p.low;
        ranges.push({ topic, partition: p.partition, from: BigInt(from) < BigInt(p.low) ? p.low : from, to: p.high });
      }
    }
    raw = await reader.read(ranges, { progress: deps.progress, timeoutMs: deps.timeoutMs });
  } finally {
    await reader.close();
  }
  const byName = new Map(RUN_TOPICS.map((id) => [codec.topics.name(id), id]));
  const records = new Map<string, LoggedRecord[]>();
  const deadLetters = new Map<string, DeadLetter[]>();
  for (const r of raw) {
    if (r.key === null) continue;
    const id = byName.get(r.topic);
    if (id === 'thoughtRuns' && r.value === null) continue;
    if (id) push(records, r.key, await decodeLogged(r, id, codec));
    else push(deadLetters, r.key, await readDeadLetter(r, codec));
  }
  const skipped = { in_flight: 0, forked: 0, other_skill: 0, other_status: 0, over_limit: 0 };
  const runs: WindowRun[] = [];
  for (const [thoughtId, recs] of records) {
    recs.sort(causalOrder);
    const first = recs.find((r) => r.topic === 'tasks' && r.value !== null);
    // A fork starts at a wave its parent ran: there is no task of its own to re-run it from.
    if (!first) {
      if (recs.some((r) => r.headers[FORK_HEADERS.parent] !== undefined)) skipped.forked++;
      continue;
    }
    if ((window.sinceMs !== null && first.timestamp < window.sinceMs) || (window.untilMs !== null && first.timestamp > window.untilMs)) continue;
    const outcomes = recs.filter((r) => r.topic === 'outcomes' && r.value !== null);
    const last = outcomes.at(-1);
    const lastTask = recs.filter((r) => r.topic === 'tasks').at(-1)!;
    // No outcome, or a task after the last one (a reply being handled): the run is in flight.
    if (!last || last.timestamp < lastTask.timestamp) {
      skipped.in_flight++;
      continue;
    }
    const outcome = last.value as unknown as Outcome;
    const skill = skillOfRun(recs);
    if (window.skills.length && !window.skills.includes(skill ?? '')) {
      skipped.other_skill++;
      continue;
    }
    if (window.statuses.length && !window.statuses.includes(outcome.status)) {
      skipped.other_status++;
      continue;
    }
    const log: RunLog = {
      thoughtId,
      namespace: codec.topics.namespace,
      bounds: { fromMs: window.sinceMs, toMs: null },
      scanned: [],
      records: recs,
      deadLetters: deadLetters.get(thoughtId) ?? [],
    };
    runs.push({ log, skill, outcome, startedAt: first.timestamp });
  }
  runs.sort((a, b) => a.startedAt - b.startedAt || (a.log.thoughtId < b.log.thoughtId ? -1 : 1));
  if (window.limit !== null && runs.length > window.limit) {
    skipped.over_limit = runs.length - window.limit;
    runs.length = window.limit;
  }
  deps.progress?.(`window: ${runs.length} run(s) to re-run`);
  return { runs, skipped };
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
