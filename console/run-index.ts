/**
 * The console's index of runs: one small summary per run, folded from the loop's committed records
 * (tasks, thought.requests, action.results, observation.results, outcomes). It is rebuilt from the
 * topics at every start and kept only in memory: the log is the truth, the index is a view of it.
 *
 * A pure fold (no I/O): the feed (console/feed.ts) decodes each record and hands it here, in the
 * order read per partition. A run's records all live on one partition of each topic, but the
 * topics are read concurrently, so every update is order-insensitive where it can be (maxima,
 * counts keyed by wave) and an outcome decides the status only while no later wave exists.
 *
 * Memory: a summary holds short strings and numbers (the task text is cut to {@link TEXT_CHARS}),
 * about 0.7 KiB a run; rates and tool figures are counters. What is bounded and how is in
 * docs/CONSOLE.md.
 */
import { manifestRates, type ManifestRates } from '../observability/release-rates.ts';
import { classifyRunEnd, endsRun, evidenceComplete, waveFailures } from '../processors/rates.ts';
import type { ActionResult, ObservationResult, Outcome, OutcomeStatus, RunState, Task, ThoughtRequest } from '../schemas/types.gen.ts';

/** The task text kept per run (enough for the runs page and search). */
export const TEXT_CHARS = 160;

/** A run as the runs page lists it. */
export interface RunSummary {
  thought_id: string;
  /** The last outcome's status; `in_progress` before any outcome or when a wave followed it. */
  status: string;
  reason_code: string | null;
  /** The skill (react, plan-replan) or flow the run follows, `<id>@<version>`. */
  flow: string | null;
  planner: string | null;
  source: string | null;
  external_id: string | null;
  text: string;
  /** Model turns requested (steps of a `model.*` tool). */
  turns: number;
  /** Tokens the model answers reported (usage.total_tokens). */
  tokens: number;
  /** The outcome's model cost, when prices are configured. */
  cost: number | null;
  waves: number;
  /** First record's time (ms since epoch): the task's. */
  started_at: number;
  /** The last record's time. */
  updated_at: number;
  /** The ending outcome's time, null while the run is in flight or parked. */
  ended_at: number | null;
  /** The parent run when this one is a fork. */
  forked_from: string | null;
  /** The release the run was made with (its manifest digest, docs/RELEASES.md); null when its records name none. */
  manifest: string | null;
}

/** Per-tool counters over every step result read. */
export interface ToolFigures {
  tool: string;
  calls: number;
  errors: number;
  total_ms: number;
  max_ms: number;
}

/** The run-level rates (processors/rates.ts) over the runs in the index. */
export interface RateFigures {
  ended: number;
  completed: number;
  hit_failure: number;
  recovered: number;
  steps: number;
  steps_with_evidence: number;
}

/** A filter of the runs page. Every field optional; `q` matches a thought_id or external id (prefix or substring). */
export interface RunQuery {
  status?: string;
  flow?: string;
  source?: string;
  fromMs?: number;
  toMs?: number;
  q?: string;
  /** Only runs made with this release (its manifest digest); `none`: runs whose records name none. */
  manifest?: string;
  limit?: number;
  offset?: number;
}

interface Internal extends RunSummary {
  /** Wave of the last ending outcome, to tell a resumed run (a later wave) from an ended one. */
  outcomeWave: number;
  failuresSeen: number;
  humanInvolved: boolean;
  /** The last outcome's steps_executed. */
  steps: number;
  counted: boolean;
  turnIds: Set<string> | null;
}

/** The index; see the module comment. */
export class RunIndex {
  private readonly runs = new Map<string, Internal>();
  private readonly tools = new Map<string, ToolFigures>();
  private readonly rates: RateFigures = { ended: 0, completed: 0, hit_failure: 0, recovered: 0, steps: 0, steps_with_evidence: 0 };
  /** Outcomes per minute (ms of the minute's start → count by status), for the health page's trend. */
  private readonly perMinute = new Map<number, Record<string, number>>();
  records = 0;

  get size(): number {
    return this.runs.size;
  }

  /** Folds one decoded record; returns the thought_id whose summary changed (null when none did). */
  apply(
    topic: 'tasks' | 'thoughtRequests' | 'actionResults' | 'observationResults' | 'outcomes',
    value: unknown,
    timestamp: number,
    headers: Record<string, string> = {},
  ): string | null {
    this.records++;
    switch (topic) {
      case 'tasks':
        return this.task(value as Task, timestamp, headers);
      case 'thoughtRequests':
        return this.request(value as ThoughtRequest, timestamp, headers);
      case 'actionResults':
        return this.results(value as ActionResult, timestamp);
      case 'observationResults':
        return this.observations(value as ObservationResult, timestamp);
      case 'outcomes':
        return this.outcome(value as Outcome, timestamp);
    }
  }

  get(thoughtId: string): RunSummary | null {
    const r = this.runs.get(thoughtId);
    return r ? publicView(r) : null;
  }

  /** Runs matching `q`, newest first (by start), with the counts by status of every run matching the other filters. */
  query(q: RunQuery = {}): { total: number; counts: Record<string, number>; runs: RunSummary[] } {
    const needle = q.q?.trim().toLowerCase() ?? '';
    const counts: Record<string, number> = {};
    const matched: Internal[] = [];
    for (const r of this.runs.values()) {
      if (q.flow && r.flow !== q.flow) continue;
      if (q.source && r.source !== q.source) continue;
      if (q.manifest && (r.manifest ?? 'none') !== q.manifest) continue;
      if (q.fromMs !== undefined && r.started_at < q.fromMs) continue;
      if (q.toMs !== undefined && r.started_at > q.toMs) continue;
      if (needle && !r.thought_id.toLowerCase().includes(needle) && !(r.external_id ?? '').toLowerCase().includes(needle)) continue;
      counts[r.status] = (counts[r.status] ?? 0) + 1;
      if (q.status && r.status !== q.status) continue;
      matched.push(r);
    }
    matched.sort((a, b) => b.started_at - a.started_at || (a.thought_id < b.thought_id ? -1 : 1));
    const offset = Math.max(0, q.offset ?? 0);
    const limit = Math.min(1000, Math.max(1, q.limit ?? 100));
    return { total: matched.length, counts, runs: matched.slice(offset, offset + limit).map(publicView) };
  }

  /** Distinct flows and sources, for the filters' choices. */
  facets(): { flows: string[]; sources: string[] } {
    const flows = new Set<string>();
    const sources = new Set<string>();
    for (const r of this.runs.values()) {
      if (r.flow) flows.add(r.flow);
      if (r.source) sources.add(r.source);
    }
    return { flows: [...flows].sort(), sources: [...sources].sort() };
  }

  /** The rates, tool figures and the outcomes per minute of the last `minutes` minutes before `nowMs`. */
  health(
    nowMs: number,
    minutes = 60,
  ): {
    rates: RateFigures & { tcr: number | null; srr: number | null; ti: number | null };
    tools: ToolFigures[];
    perMinute: Array<{ at: number; counts: Record<string, number> }>;
  } {
    const r = this.rates;
    const ratio = (a: number, b: number) => (b === 0 ? null : a / b);
    const start = Math.floor(nowMs / 60000) * 60000 - (minutes - 1) * 60000;
    const perMinute = Array.from({ length: minutes }, (_, i) => ({ at: start + i * 60000, counts: this.perMinute.get(start + i * 60000) ?? {} }));
    return {
      rates: { ...r, tcr: ratio(r.completed, r.ended), srr: ratio(r.recovered, r.hit_failure), ti: ratio(r.steps_with_evidence, r.steps) },
      tools: [...this.tools.values()].sort((a, b) => (a.tool < b.tool ? -1 : 1)),
      perMinute,
    };
  }

  /**
   * Each release's rates over the ended runs in the index (observability/release-rates.ts, as
   * `tao rollout status` computes them), most runs first.
   */
  manifests(): ManifestRates[] {
    const ended = [...this.runs.values()].filter((r) => r.ended_at !== null && endsRun(r.status as OutcomeStatus));
    const rates = manifestRates(
      ended.map((r) => ({
        manifest: r.manifest,
        status: r.status as OutcomeStatus,
        failuresSeen: r.failuresSeen,
        humanInvolved: r.humanInvolved,
        modelCost: r.cost,
        stepsExecuted: r.steps,
      })),
    );
    return rates.sort((a, b) => b.runs - a.runs || ((a.manifest ?? '') < (b.manifest ?? '') ? -1 : 1));
  }

  private run(thoughtId: string, timestamp: number): Internal {
    let r = this.runs.get(thoughtId);
    if (!r) {
      r = {
        thought_id: thoughtId,
        status: 'in_progress',
        reason_code: null,
        flow: null,
        planner: null,
        source: null,
        external_id: null,
        text: '',
        turns: 0,
        tokens: 0,
        cost: null,
        waves: 0,
        started_at: timestamp,
        updated_at: timestamp,
        ended_at: null,
        manifest: null,
        forked_from: null,
        outcomeWave: -1,
        failuresSeen: 0,
        humanInvolved: false,
        steps: 0,
        counted: false,
        turnIds: null,
      };
      this.runs.set(thoughtId, r);
    }
    r.started_at = Math.min(r.started_at, timestamp);
    r.updated_at = Math.max(r.updated_at, timestamp);
    return r;
  }

  private task(t: Task, timestamp: number, headers: Record<string, string>): string {
    const r = this.run(t.thought_id, timestamp);
    // The first task names the run; a reply keeps it.
    if (r.source === null || t.kind === 'NEW') {
      r.source = t.source;
      r.external_id = t.external_id;
      r.text = t.text.length > TEXT_CHARS ? `${t.text.slice(0, TEXT_CHARS - 1)}…` : t.text;
    }
    if (headers['tao.fork.parent']) r.forked_from = headers['tao.fork.parent'];
    return r.thought_id;
  }

  private request(q: ThoughtRequest, timestamp: number, headers: Record<string, string>): string {
    const r = this.run(q.thought_id, timestamp);
    this.state(r, q.run);
    r.waves = Math.max(r.waves, q.iteration);
    // A wave after a parked run's outcome: a reply resumed it. (No wave follows an ending outcome.)
    if (q.iteration > r.outcomeWave && r.ended_at === null && r.outcomeWave >= 0) r.status = 'in_progress';
    if (headers['tao.fork.parent']) r.forked_from = headers['tao.fork.parent'];
    for (const s of q.steps) {
      if (!s.tool.startsWith('model.')) continue;
      // A step id per wave counts once, whatever the redeliveries.
      r.turnIds ??= new Set();
      const id = `${q.iteration}:${s.step_id}`;
      if (!r.turnIds.has(id)) {
        r.turnIds.add(id);
        r.turns++;
      }
    }
    return r.thought_id;
  }

  private results(a: ActionResult, timestamp: number): string {
    const r = this.run(a.thought_id, timestamp);
    this.state(r, a.run);
    for (const s of a.results) {
      const t = this.tools.get(s.tool) ?? { tool: s.tool, calls: 0, errors: 0, total_ms: 0, max_ms: 0 };
      t.calls++;
      if (s.error !== null || (s.status_code !== null && s.status_code >= 400)) t.errors++;
      t.total_ms += s.response_time_ms;
      t.max_ms = Math.max(t.max_ms, s.response_time_ms);
      this.tools.set(s.tool, t);
      this.rates.steps++;
      if (evidenceComplete(s)) this.rates.steps_with_evidence++;
      if (s.tool.startsWith('model.') && s.response_raw) r.tokens += usageTokens(s.response_raw);
    }
    return r.thought_id;
  }

  private observations(o: ObservationResult, timestamp: number): string {
    const r = this.run(o.thought_id, timestamp);
    this.state(r, o.run);
    // The wave's own failures, as Thought adds them to the run's (its next records carry the sum).
    r.failuresSeen = Math.max(r.failuresSeen, o.run.failures_seen + waveFailures(o.verdicts));
    return r.thought_id;
  }

  private outcome(o: Outcome, timestamp: number): string {
    const r = this.run(o.thought_id, timestamp);
    if (o.iterations < r.outcomeWave) return r.thought_id;
    r.outcomeWave = o.iterations;
    r.reason_code = o.reason_code;
    r.cost = o.model_cost ?? r.cost;
    r.flow = `${o.flow_id}@${o.flow_version}`;
    r.planner = o.planner_kind ?? o.planner;
    r.manifest = o.manifest ?? r.manifest;
    r.steps = o.steps_executed;
    // A run parked for a person that goes on had a person in it (a reply or a decision).
    if (!endsRun(o.status as OutcomeStatus)) r.humanInvolved = true;
    // A parked run's outcome read after the wave that resumed it (the topics are read concurrently).
    r.status = !endsRun(o.status as OutcomeStatus) && r.waves > o.iterations ? 'in_progress' : o.status;
    if (endsRun(o.status as OutcomeStatus)) {
      r.ended_at = timestamp;
      const minute = Math.floor(timestamp / 60000) * 60000;
      const bucket = this.perMinute.get(minute) ?? {};
      bucket[o.status] = (bucket[o.status] ?? 0) + 1;
      this.perMinute.set(minute, bucket);
      if (!r.counted) {
        r.counted = true;
        const end = classifyRunEnd(o.status as OutcomeStatus, r.failuresSeen, r.humanInvolved);
        this.rates.ended++;
        if (end.completed) this.rates.completed++;
        if (end.hitFailure) this.rates.hit_failure++;
        if (end.recovered) this.rates.recovered++;
      }
    }
    return r.thought_id;
  }

  private state(r: Internal, s: RunState): void {
    r.flow = `${s.flow_id}@${s.flow_version}`;
    r.planner = s.planner_kind ?? s.planner;
    r.manifest = s.manifest ?? r.manifest;
    r.failuresSeen = Math.max(r.failuresSeen, s.failures_seen);
    r.humanInvolved ||= s.human_involved;
  }
}

function publicView(r: Internal): RunSummary {
  const { outcomeWave: _w, failuresSeen: _f, humanInvolved: _h, steps: _s, counted: _c, turnIds: _t, ...summary } = r;
  return summary;
}

/** usage.total_tokens of a chat-completions answer, 0 when it has none or is not JSON. */
function usageTokens(raw: string): number {
  const at = raw.lastIndexOf('"total_tokens"');
  if (at < 0) return 0;
  const m = /^"total_tokens"\s*:\s*(\d+)/.exec(raw.slice(at, at + 40));
  return m ? Number(m[1]) : 0;
}
