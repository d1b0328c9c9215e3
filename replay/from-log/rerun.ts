/**
 * Re-runs one recorded run under a candidate (`tao eval --from-log`): the run's recorded tasks go,
 * in order, through the candidate's Thought (`onTask` with the planner's recorded answer, as
 * `replay --verify` does), each wave it dispatches is answered call by call (./calls.ts: recorded
 * results, the candidate's model for a changed model request, live reads when allowed), each
 * wave's results go through the candidate's Observation (`observe`) and the verdicts back to
 * Thought (`onObservation`), until the run ends or parks for a task the run did not record. Then
 * what the candidate did is compared with what the run recorded: its tool calls (model turns
 * aside), its outcomes and their answer facts. The first difference is where the run diverged.
 */
import type { ObservationConfig } from '../../processors/observation/core.ts';
import { observe } from '../../processors/observation/core.ts';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../../processors/thought/core.ts';
import { canonicalJson } from '../../runtime/json-field.ts';
import type { ActionResult, Outcome, RunSnapshot, RunState, StepCall, StepResult, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { diffValues, type FieldDiff } from '../diff.ts';
import type { LoggedRecord, RunLog } from '../log.ts';
import { FORK_HEADERS, REDRIVEN_FROM_HEADER } from '../record-format.ts';
import type { ConfigDrift } from '../verify.ts';
import { RecordedCalls, resolveCall, type CallCounts, type CallSource, type CallSources } from './calls.ts';

/** What changed in a re-run, against the recorded run. */
export type Change = 'outcome' | 'answer' | 'tool_calls' | 'model_request';

/** Where a re-run first went otherwise than the recorded run. */
export interface Divergence {
  /**
   * `unrecorded_call`: a call never recorded that was not made (the re-run stops there);
   * `refused`: the candidate's Thought refuses a recorded input (a stage would dead-letter it);
   * `configuration`: the candidate cannot re-decide the run at all (its flow is gone);
   * the others compare the finished re-run with the record.
   */
  kind: 'unrecorded_call' | 'tool_calls' | 'outcome' | 'answer' | 'refused' | 'configuration';
  /** The wave (1-based) of the step, or the waves the outcome came after; null when unknown. */
  wave: number | null;
  /** The step id (`S2`, `M3_1`), or null for an outcome. */
  step: string | null;
  tool: string | null;
  explanation: string;
  recorded: unknown;
  today: unknown;
  diff: FieldDiff[];
}

/** One re-run: how the run ended then and now, and the first divergence. */
export interface RunEvaluation {
  thought_id: string;
  skill: string | null;
  recorded: { status: string; reason_code: string };
  /** How the re-run ended; null when it stopped at a call it could not answer. */
  today: { status: string; reason_code: string } | null;
  diverged: boolean;
  changed: Change[];
  divergence: Divergence | null;
  /** The other differences after the first (a changed answer after changed tool calls). */
  also: Divergence[];
  /** How the re-run's calls were answered. */
  calls: Record<CallSource, number>;
  configuration_drift: ConfigDrift[];
  notes: string[];
}

/** The candidate's configurations for one run. */
export interface RunConfigs {
  thought: ThoughtConfig;
  observation: ObservationConfig;
  configurationDrift: ConfigDrift[];
  notes: string[];
}

/** A run that keeps dispatching waves past this many is cut off (Thought's own bounds end runs long before). */
const MAX_WAVES = 1000;

type Call = { wave: number; step: string; tool: string; input: string };

/** Re-runs `log` under the candidate and compares it with the record. */
export async function rerunRun(log: RunLog, skill: string | null, configs: RunConfigs, sources: CallSources, counts: CallCounts): Promise<RunEvaluation> {
  const isModelTool = (tool: string) => sources.catalog.get(tool)?.spec.kind === 'model' || tool.startsWith('model.');
  const written = (r: LoggedRecord) => r.value !== null && r.headers[FORK_HEADERS.parent] === undefined && r.headers[REDRIVEN_FROM_HEADER] === undefined;
  const recordedOutcomes = log.records.filter((r) => r.topic === 'outcomes' && written(r)).map((r) => r.value as unknown as Outcome);
  const recordedCalls = toolCalls(
    log.records.filter((r) => r.topic === 'thoughtRequests' && written(r)).map((r) => r.value as unknown as ThoughtRequest),
    isModelTool,
  );
  const tasks = log.records.filter((r) => r.topic === 'tasks' && r.value !== null).map((r) => r.value as unknown as Task);
  const plannerRecords = plannerRecordsByTask(log.records);
  const recorded = new RecordedCalls(log);
  const notes = [...configs.notes];
  const calls: Record<CallSource, number> = { recorded: 0, refused: 0, model: 0, live: 0 };
  const evaluation = (today: Outcome | null, divergence: Divergence | null, changed: Change[], also: Divergence[] = []): RunEvaluation => ({
    thought_id: log.thoughtId,
    skill,
    recorded: recordedEnd(recordedOutcomes),
    today: today && { status: today.status, reason_code: today.reason_code },
    diverged: divergence !== null,
    changed,
    divergence,
    also,
    calls,
    configuration_drift: configs.configurationDrift,
    notes,
  });

  let snapshot: RunSnapshot | undefined;
  const requests: ThoughtRequest[] = [];
  const outcomes: Outcome[] = [];
  let pending: ThoughtRequest | undefined;
  const apply = (decision: ThoughtDecision): string | null => {
    if (decision.refused) return decision.refused;
    for (const o of decision.outputs) {
      if (o.topic === 'thoughtRuns') snapshot = o.value as RunSnapshot;
      else if (o.topic === 'thoughtRequests') requests.push((pending = o.value as ThoughtRequest));
      else if (o.topic === 'outcomes') outcomes.push(o.value as Outcome);
    }
    return null;
  };
  const refusedAt = (why: string, wave: number | null): RunEvaluation =>
    evaluation(
      null,
      {
        kind: 'refused',
        wave,
        step: null,
        tool: null,
        explanation: `the candidate's Thought refuses an input the run recorded: ${why}`,
        recorded: null,
        today: null,
        diff: [],
      },
      ['outcome'],
    );

  for (const task of tasks) {
    pending = undefined;
    const refused = apply(onTask(task, configs.thought, snapshot, plannerRecords.get(task.task_id) ?? null));
    if (refused) return refusedAt(refused, snapshot?.iteration ?? null);
    let waves = 0;
    while (pending) {
      const request: ThoughtRequest = pending;
      pending = undefined;
      if (++waves > MAX_WAVES) {
        notes.push(`the re-run dispatched more than ${MAX_WAVES} waves for task ${task.task_id}: cut off`);
        break;
      }
      const results: StepResult[] = [];
      for (const step of request.steps) {
        const answer = await resolveCall(step, log.thoughtId, recorded, sources, counts);
        if (answer.source === 'diverged') {
          const model = isModelTool(step.tool);
          return evaluation(
            null,
            {
              kind: 'unrecorded_call',
              wave: request.iteration,
              step: step.step_id,
              tool: step.tool,
              explanation: answer.reason,
              recorded: null,
              today: parsed(step.input_json),
              diff: [],
            },
            [model ? 'model_request' : 'tool_calls'],
          );
        }
        calls[answer.source]++;
        results.push(answer.result);
      }
      const action: ActionResult = { thought_id: log.thoughtId, iteration: request.iteration, run: request.run, results, dead_letter: null };
      const refusedObs = apply(onObservation(await observe(action, configs.observation), configs.thought, snapshot));
      if (refusedObs) return refusedAt(refusedObs, request.iteration);
    }
  }

  const today = outcomes.at(-1) ?? null;
  const changed: Change[] = [];
  const callDiff = firstCallDifference(recordedCalls, toolCalls(requests, isModelTool));
  if (callDiff) changed.push('tool_calls');
  const outcomeDiff = firstOutcomeDifference(recordedOutcomes, outcomes);
  if (outcomeDiff?.kind === 'outcome') changed.push('outcome');
  else if (outcomeDiff) changed.push('answer');
  return evaluation(today, callDiff ?? outcomeDiff, changed, callDiff && outcomeDiff ? [outcomeDiff] : []);
}

/** How the run ended, as recorded: its last outcome. */
function recordedEnd(outcomes: readonly Outcome[]): RunEvaluation['recorded'] {
  const last = outcomes.at(-1);
  return last ? { status: last.status, reason_code: last.reason_code } : { status: 'none', reason_code: 'none' };
}

/** The evaluation of a run the candidate cannot re-decide at all: `why` (a ConfigError's message). */
export function notRedecided(log: RunLog, skill: string | null, why: string): RunEvaluation {
  const outcomes = log.records.filter((r) => r.topic === 'outcomes' && r.value !== null).map((r) => r.value as unknown as Outcome);
  return {
    thought_id: log.thoughtId,
    skill,
    recorded: recordedEnd(outcomes),
    today: null,
    diverged: true,
    changed: ['outcome'],
    divergence: { kind: 'configuration', wave: null, step: null, tool: null, explanation: why, recorded: null, today: null, diff: [] },
    also: [],
    calls: { recorded: 0, refused: 0, model: 0, live: 0 },
    configuration_drift: [],
    notes: [],
  };
}

/** The planner's recorded answer (`planner_record`) for each task, from the run states written after it. */
function plannerRecordsByTask(records: readonly LoggedRecord[]): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const r of records) {
    if (r.value === null) continue;
    const run: RunState | null | undefined =
      r.topic === 'thoughtRequests'
        ? (r.value as unknown as ThoughtRequest).run
        : r.topic === 'thoughtRuns'
          ? (r.value as unknown as RunSnapshot).run
          : undefined;
    if (run && !out.has(run.task_id)) out.set(run.task_id, run.planner_record);
  }
  return out;
}

/** The tool calls of `requests`, model turns aside, in the order they were dispatched. */
function toolCalls(requests: readonly ThoughtRequest[], isModelTool: (tool: string) => boolean): Call[] {
  return requests.flatMap((r) =>
    r.steps.filter((s: StepCall) => !isModelTool(s.tool)).map((s) => ({ wave: r.iteration, step: s.step_id, tool: s.tool, input: canonical(s.input_json) })),
  );
}

function firstCallDifference(recorded: readonly Call[], today: readonly Call[]): Divergence | null {
  for (let i = 0; i < Math.max(recorded.length, today.length); i++) {
    const was = recorded[i];
    const now = today[i];
    if (was && now && was.tool === now.tool && was.input === now.input) continue;
    const at = now ?? was!;
    const explanation = !now
      ? `the run called ${was!.tool} here; the candidate makes no further call`
      : !was
        ? `the candidate calls ${now.tool}, which the run did not call here`
        : was.tool !== now.tool
          ? `the run called ${was.tool} here; the candidate calls ${now.tool}`
          : `the candidate calls ${now.tool} with other arguments`;
    const show = (c: Call | undefined) => c && { wave: c.wave, step: c.step, tool: c.tool, input: parsed(c.input) };
    return {
      kind: 'tool_calls',
      wave: at.wave,
      step: at.step,
      tool: at.tool,
      explanation,
      recorded: show(was) ?? null,
      today: show(now) ?? null,
      diff: was && now ? diffValues(parsed(was.input), parsed(now.input)) : [],
    };
  }
  return null;
}

/** Output fields that say how an answer was made, not what it says: the tokens and which model. */
const NOT_FACTS = ['tokens', 'model', 'fallback_from'];

function facts(outcome: Outcome): unknown {
  const output = parsed(outcome.output_json);
  const kept =
    output && typeof output === 'object' && !Array.isArray(output)
      ? Object.fromEntries(Object.entries(output).filter(([k]) => !NOT_FACTS.includes(k)))
      : output;
  return { output: kept, result: parsed(outcome.result_json), missing_fields: outcome.missing_fields };
}

function firstOutcomeDifference(recorded: readonly Outcome[], today: readonly Outcome[]): Divergence | null {
  for (let i = 0; i < Math.max(recorded.length, today.length); i++) {
    const was = recorded[i];
    const now = today[i];
    const end = (o: Outcome | undefined) => o && { status: o.status, reason_code: o.reason_code, reason: o.reason };
    if (!was || !now || was.status !== now.status || was.reason_code !== now.reason_code)
      return {
        kind: 'outcome',
        wave: (now ?? was)!.iterations,
        step: null,
        tool: null,
        explanation: !now
          ? `the run ended ${was!.status} (${was!.reason_code}); the candidate's run does not get there`
          : !was
            ? `the candidate's run ends ${now.status} (${now.reason_code}), which the run did not`
            : `the run ended ${was.status} (${was.reason_code}); the candidate's ends ${now.status} (${now.reason_code})`,
        recorded: end(was) ?? null,
        today: end(now) ?? null,
        diff: [],
      };
    const diff = diffValues(facts(was), facts(now));
    if (diff.length)
      return {
        kind: 'answer',
        wave: now.iterations,
        step: null,
        tool: null,
        explanation: `the run ended ${now.status} as recorded, with other answer facts`,
        recorded: facts(was),
        today: facts(now),
        diff,
      };
  }
  return null;
}

function parsed(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

const canonical = (text: string) => {
  const value = parsed(text);
  return typeof value === 'string' ? value : canonicalJson(value);
};
