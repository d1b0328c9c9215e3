/**
 * `tao eval --from-log`: a candidate against recorded runs. Reads the window of runs (./window.ts),
 * re-runs each under the candidate (./rerun.ts) and reports, per run and in total, which runs
 * changed their outcome, answer facts or tool calls, each with the step where it diverged, and how
 * many calls were made: to the candidate's model, and live reads. docs/REPLAY.md has the details.
 */
import { ToolExecutor } from '../../processors/action/executor.ts';
import { realHttpDeps } from '../../processors/action/invoke.ts';
import { loadCatalog, observationConfig } from '../../processors/wiring/index.ts';
import { ConfigError } from '../../runtime/errors.ts';
import { createContractAjv } from '../../tools/catalog.ts';
import { envSecrets } from '../../tools/secrets.ts';
import type { RunLogDeps } from '../log.ts';
import { observationDrift, thoughtConfigForRun, recordedPlanner, type RunThoughtConfig } from '../verify-config.ts';
import type { CallCounts, CallSources } from './calls.ts';
import type { Candidate } from './candidate-config.ts';
import { notRedecided, rerunRun, type RunEvaluation } from './rerun.ts';
import { readWindow, type RunWindow, type WindowRead } from './window.ts';

/** The `tao.eval.from-log.v1` document. */
export interface FromLogReport {
  format: 'tao.eval.from-log.v1';
  candidate: string;
  window: { since: string | null; until: string | null; skills: string[]; statuses: string[]; limit: number | null };
  live_reads: boolean;
  totals: {
    runs: number;
    diverged: number;
    changed_outcome: number;
    changed_answer: number;
    changed_tool_calls: number;
    /** Runs stopped at a call that was never recorded and was not made. */
    unrecorded_calls: number;
    /** Requests sent to the candidate's model (changed model turns). */
    model_calls: number;
    /** Live calls of tools free of side effects (--live-reads), by tool. */
    live_calls: Record<string, number>;
    /** Calls answered from the record. */
    recorded_answers: number;
  };
  skipped: WindowRead['skipped'];
  /** The runs that diverged, in the window's order. */
  diverged: RunEvaluation[];
  /** Every re-run, diverged or not. */
  runs: RunEvaluation[];
}

export interface FromLogOptions {
  window: RunWindow;
  candidate: Candidate;
  /** Allow live calls of tools the candidate's catalog declares free of side effects. */
  liveReads: boolean;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * Re-runs the window's runs under the candidate and reports what changed.
 * @throws ConfigError for a candidate whose configuration does not load (or cannot re-decide a run's planner);
 *   TransientError when the log cannot be read.
 */
export async function evaluateFromLog(deps: RunLogDeps, options: FromLogOptions): Promise<FromLogReport> {
  const { candidate } = options;
  const env = candidate.env;
  const window = await readWindow(deps, options.window);
  const catalog = loadCatalog(env, createContractAjv(), candidate.hasModel ? 'call' : 'contracts');
  const http = realHttpDeps();
  const sources: CallSources = {
    catalog,
    executor: new ToolExecutor(catalog, http),
    http,
    secrets: envSecrets(env),
    liveReads: options.liveReads,
    hasModel: candidate.hasModel,
    namedModel: candidate.namedModel,
  };
  const counts: CallCounts = { model: 0, live: {} };
  const observation = await observationConfig(env);
  // Thought as each run recorded it (its planner, its flow), with the candidate's everything else; built once per kind of run.
  const thoughts = new Map<string, Promise<RunThoughtConfig>>();
  const runs: RunEvaluation[] = [];
  try {
    for (const run of window.runs) {
      const planner = recordedPlanner(run.log);
      const key = JSON.stringify(planner);
      if (!thoughts.has(key)) thoughts.set(key, thoughtConfigForRun(run.log, env));
      let thought: RunThoughtConfig;
      try {
        thought = await thoughts.get(key)!;
      } catch (err) {
        // A candidate without the run's flow cannot re-decide it: that run diverges, the others are still evaluated.
        if (!(err instanceof ConfigError)) throw err;
        thoughts.delete(key); // its message names this run: the next run of the kind is told its own
        runs.push(notRedecided(run.log, run.skill, err.message));
        continue;
      }
      const configs = {
        thought: thought.thought,
        observation,
        configurationDrift: [...thought.drift, ...observationDrift(run.log, observation)],
        notes: thought.notes,
      };
      const evaluation = await rerunRun(run.log, run.skill, configs, sources, counts);
      runs.push(evaluation);
      if (evaluation.diverged) deps.progress?.(`${evaluation.thought_id}: diverged (${evaluation.changed.join(', ')})`);
    }
  } finally {
    await http.dispatcher.close();
  }
  deps.progress?.(`re-ran ${runs.length} run(s)`);
  const diverged = runs.filter((r) => r.diverged);
  const sum = (pick: (r: RunEvaluation) => number) => runs.reduce((n, r) => n + pick(r), 0);
  return {
    format: 'tao.eval.from-log.v1',
    candidate: candidate.label,
    window: {
      since: iso(options.window.sinceMs),
      until: iso(options.window.untilMs),
      skills: options.window.skills,
      statuses: options.window.statuses,
      limit: options.window.limit,
    },
    live_reads: options.liveReads,
    totals: {
      runs: runs.length,
      diverged: diverged.length,
      changed_outcome: runs.filter((r) => r.changed.includes('outcome')).length,
      changed_answer: runs.filter((r) => r.changed.includes('answer')).length,
      changed_tool_calls: runs.filter((r) => r.changed.includes('tool_calls')).length,
      unrecorded_calls: runs.filter((r) => r.divergence?.kind === 'unrecorded_call').length,
      model_calls: counts.model,
      live_calls: counts.live,
      recorded_answers: sum((r) => r.calls.recorded),
    },
    skipped: window.skipped,
    diverged,
    runs,
  };
}

/** The report for a terminal: the totals, then each run that diverged with where and why. */
export function renderFromLog(report: FromLogReport): string {
  const t = report.totals;
  const live = Object.entries(t.live_calls).map(([tool, n]) => `${tool} ${n}`);
  const skipped = Object.entries(report.skipped)
    .filter(([, n]) => n > 0)
    .map(([why, n]) => `${n} ${why.replace('_', ' ')}`);
  const lines = [
    `Candidate ${report.candidate} against ${t.runs} recorded run(s)${report.window.since || report.window.until ? ` from ${report.window.since ?? 'the start'} to ${report.window.until ?? 'now'}` : ''}`,
    `  diverged ${t.diverged} (outcome ${t.changed_outcome}, answer ${t.changed_answer}, tool calls ${t.changed_tool_calls}; stopped at a call never recorded ${t.unrecorded_calls})`,
    `  calls: ${t.recorded_answers} answered from the record, ${t.model_calls} to the candidate's model, live reads ${live.length ? live.join(', ') : 'none'}${report.live_reads ? '' : ' (--live-reads off)'}`,
  ];
  if (skipped.length) lines.push(`  not re-run: ${skipped.join(', ')}`);
  for (const r of report.diverged) {
    const d = r.divergence!;
    const ended = r.today ? `${r.today.status} (${r.today.reason_code})` : 'stopped';
    lines.push(
      '',
      `DIVERGED ${r.thought_id}  ${r.skill ?? '-'}  ${r.recorded.status} (${r.recorded.reason_code}) -> ${ended}  changed: ${r.changed.join(', ')}`,
    );
    for (const [i, x] of [d, ...r.also].entries()) {
      const at = x.step ? `wave ${x.wave} step ${x.step} (${x.tool})` : `the outcome after wave ${x.wave}`;
      lines.push(`  ${i === 0 ? 'at' : 'also at'} ${at}: ${x.explanation}`);
      for (const f of x.diff.slice(0, 5)) lines.push(`    ${f.path || '(value)'}: ${short(f.recorded)} -> ${short(f.today)}`);
    }
    for (const c of r.configuration_drift) lines.push(`  configuration: ${c.explanation}`);
  }
  lines.push('', t.diverged ? `${t.diverged} of ${t.runs} run(s) diverged` : `no divergence in ${t.runs} run(s)`);
  return lines.join('\n') + '\n';
}

/** A value on one line, cut at 120 characters. */
function short(value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
