/**
 * The parts of a run's timeline that each come from one record or one run state: a step's result and
 * verdict, the plan with where each step got to, the run state for people, the fork origin and a
 * dead letter; and the record fields each view knows, so that the ones it does not are kept as `extra`.
 */
import type { RunState, StepResult, Verdict } from '../schemas/types.gen.ts';
import type { DeadLetter } from './dead-letters.ts';
import { iterationOf, type LoggedRecord } from './log.ts';
import { FORK_HEADERS, iso, parseJson } from './record-format.ts';
import type { DeadLetterView, ForkOrigin, IterationView, PlanView, StepResultView, StepState, VerdictView } from './timeline.ts';

/** The fields of each record (and plan step) that the timeline shows; the rest go to `extra`. */
export const KNOWN = {
  task: ['thought_id', 'task_id', 'kind', 'text', 'source', 'external_id', 'metadata', 'submitted_at_ms'],
  wave: ['thought_id', 'iteration', 'run', 'steps', 'results', 'verdicts'],
  call: ['step_id', 'tool', 'input_json', 'idempotency_key', 'attempt'],
  result: [
    'step_id',
    'tool',
    'input_json',
    'idempotency_key',
    'attempts',
    'status_code',
    'response_time_ms',
    'response_raw',
    'data_json',
    'error',
    'fallback_from',
    'fallback_reason',
  ],
  verdict: [
    'step_id',
    'tool',
    'valid',
    'extracted_data_json',
    'confidence_score',
    'error_type',
    'audit_trail',
    'status_code',
    'response_time_ms',
    'attempts',
    'fallback_from',
  ],
  outcome: [
    'thought_id',
    'task_id',
    'status',
    'reason',
    'iterations',
    'steps_executed',
    'output_json',
    'missing_fields',
    'planner',
    'flow_id',
    'flow_version',
    'reason_code',
    'reflections',
  ],
  reflection: ['step_id', 'tool', 'iteration', 'error_types', 'dimensions', 'action'],
  planStep: ['id', 'tool', 'input', 'depends_on'],
};

/** Action's result for a step as the timeline shows it (the response cut at 2,000 characters). */
export function resultView(s: StepResult, record: LoggedRecord): StepResultView {
  return {
    ref: record.ref,
    at: iso(record.timestamp),
    tool: s.tool,
    status_code: s.status_code,
    response_time_ms: s.response_time_ms,
    attempts: s.attempts,
    retries: Math.max(0, s.attempts - 1),
    error: s.error,
    fallback_from: s.fallback_from,
    fallback_reason: s.fallback_reason,
    response: s.response_raw === null ? null : s.response_raw.length > 2000 ? `${s.response_raw.slice(0, 2000)}…` : s.response_raw,
  };
}

/** Observation's verdict on a step as the timeline shows it. */
export function verdictView(v: Verdict, record: LoggedRecord): VerdictView {
  return {
    ref: record.ref,
    at: iso(record.timestamp),
    valid: v.valid,
    error_type: v.error_type,
    confidence: v.confidence_score,
    checks: v.audit_trail,
    extracted: v.extracted_data_json === null ? null : parseJson(v.extracted_data_json),
  };
}

/** The run's latest plan with where each step got to over `iterations`; null when the run state has no plan. */
export function planView(run: RunState | null, iterations: IterationView[]): PlanView | null {
  const plan = run ? (parseJson(run.plan_json) as { steps?: Array<Record<string, unknown>>; output?: unknown } | null) : null;
  if (!run || !plan || !Array.isArray(plan.steps)) return null;
  const skipped = new Set(Array.isArray(run.skipped) ? run.skipped : []);
  const outputs = (parseJson(run.outputs_json) ?? {}) as Record<string, unknown>;
  return {
    planner: run.planner,
    flow_id: run.flow_id,
    flow_version: run.flow_version,
    output: plan.output ?? null,
    steps: plan.steps.map((s) => {
      const id = String(s.id);
      const views = iterations.flatMap((it) => it.steps.filter((st) => st.step_id === id));
      const last = views[views.length - 1];
      let state: StepState = 'not_run';
      if (skipped.has(id)) state = 'skipped';
      else if (last?.status === 'verified' || outputs[id] !== undefined) state = 'verified';
      else if (last?.status === 'invalid') state = 'failed';
      else if (last?.status === 'dead_lettered') state = 'dead_lettered';
      else if (last) state = 'in_progress';
      return {
        id,
        tool: String(s.tool),
        depends_on: Array.isArray(s.depends_on) ? s.depends_on.map(String) : [],
        input: s.input ?? {},
        state,
        attempts: views.length,
        extra: extra(s, KNOWN.planStep),
      };
    }),
  };
}

/** The run state for people: plan and outputs parsed, the hashes kept for the loop's own checks left out. */
export function stateView(run: RunState & Record<string, unknown>): Record<string, unknown> {
  const { plan_json, outputs_json, planner_record, call_counts, seen_data, reflections, ...rest } = run;
  return {
    ...rest,
    outputs: parseJson(outputs_json),
    planner_record: planner_record === null ? null : parseJson(planner_record),
    repeated_calls: call_counts ? Object.values(call_counts).filter((n) => n > 1).length : 0,
    data_seen: Array.isArray(seen_data) ? seen_data.length : 0,
    plan: parseJson(plan_json),
  };
}

/** Where a forked run came from, from the `tao.fork.*` headers of its first forked request; null for a run that is not a fork. */
export function forkOrigin(requests: LoggedRecord[]): ForkOrigin | null {
  const first = requests.find((r) => r.headers[FORK_HEADERS.parent] !== undefined);
  if (!first) return null;
  const h = first.headers;
  let overrides: string[] = [];
  try {
    overrides = JSON.parse(h[FORK_HEADERS.overrides] ?? '[]') as string[];
  } catch {
    // Written by hand, not by `tao replay --fork`: shown as it is.
    overrides = [h[FORK_HEADERS.overrides] ?? ''];
  }
  return {
    thought_id: h[FORK_HEADERS.parent]!,
    fork_point: h[FORK_HEADERS.point] ?? '',
    iteration: Number(h[FORK_HEADERS.iteration] ?? iterationOf(first) ?? 0),
    overrides,
    flow: h[FORK_HEADERS.flow] ?? null,
  };
}

/** A dead letter of the run with its original record, as the timeline shows it. */
export function deadLetterView(d: DeadLetter): DeadLetterView {
  return {
    ref: d.ref,
    at: iso(d.timestamp),
    of: d.of,
    code: d.code,
    error_class: d.errorClass,
    message: d.message,
    source: d.source,
    stage: d.stage,
    attempt: d.attempt,
    original: {
      bytes: d.original.bytes,
      schema_id: d.original.schemaId,
      value: d.original.value,
      decode_error: d.original.decodeError,
      hex: d.original.hex,
      utf8: d.original.utf8,
    },
  };
}

/** Fields of `value` outside `known` (what a newer schema added). */
export function extra(value: Record<string, unknown>, known: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (!known.includes(k)) out[k] = v;
  return out;
}

/** `fields` with each name prefixed (`result.x`): the `extra` of a view that joins several records. */
export function prefixed(prefix: string, fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [`${prefix}.${k}`, v]));
}
