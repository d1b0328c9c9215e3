/**
 * The timeline of one run, built from its records (a pure function of the {@link RunLog}). This is
 * the `--format json` document (format `tao.replay.v1`, described in docs/REPLAY.md) and what the
 * terminal and HTML views render. Fields of the records that this code does not know (a newer
 * writer, a field added since) are kept under `extra` rather than dropped.
 */
import type {
  ActionResult,
  Check,
  ObservationResult,
  Outcome,
  Reflection,
  RunState,
  StepCall,
  StepResult,
  Task,
  ThoughtRequest,
  Verdict,
} from '../schemas/types.gen.ts';
import type { TopicId } from '../topics/catalog.ts';
import type { DeadLetter, RecordRef } from './dead-letters.ts';
import { iterationOf, type LoggedRecord, type RunLog } from './log.ts';

/** Headers the fork command writes on the first record of a forked run. */
export const FORK_HEADERS = {
  parent: 'tao.fork.parent',
  point: 'tao.fork.point',
  iteration: 'tao.fork.iteration',
  overrides: 'tao.fork.overrides',
  flow: 'tao.fork.flow',
} as const;

/** Header `tao dlq redrive` adds to each re-driven record: `<dlq topic>/<partition>/<offset>` of the dead letter. */
export const REDRIVEN_FROM_HEADER = 'tao.redriven-from';

/** A run's timeline: the `tao.replay.v1` document (see docs/REPLAY.md for each field). */
export interface Timeline {
  format: 'tao.replay.v1';
  thought_id: string;
  namespace: string;
  bounds: { from: string | null; to: string | null };
  scanned: Array<{ topic: string; partition: number; from: string; to: string }>;
  /** Records found per topic (dead letters under their dead-letter topic). */
  counts: Record<string, number>;
  /** The last outcome's status, `in_progress` when records follow it or none exists yet. */
  status: string;
  forked_from: ForkOrigin | null;
  tasks: TaskView[];
  plan: PlanView | null;
  iterations: IterationView[];
  reflections: ReflectionView[];
  outcomes: OutcomeView[];
  /** The last outcome, or null. */
  outcome: OutcomeView | null;
  /** The latest run state seen (plan and outputs parsed; bulky bookkeeping left out). */
  state: Record<string, unknown> | null;
  dead_letters: DeadLetterView[];
  /** Records of the run's key on loop topics that do not decode (each was dead-lettered by its stage). */
  undecodable: Array<{ ref: RecordRef; at: string; code: string; message: string }>;
}

/** Where a forked run came from, read from the `tao.fork.*` headers of its first record. */
export interface ForkOrigin {
  thought_id: string;
  fork_point: string;
  iteration: number;
  overrides: string[];
  flow: string | null;
}

/** A task record of the run (a new run's task, or a person's reply). */
export interface TaskView {
  ref: RecordRef;
  at: string;
  task_id: string;
  kind: string;
  text: string;
  source: string;
  external_id: string | null;
  metadata: Record<string, string>;
  dead_letter: DeadLetterLink | null;
  extra: Record<string, unknown>;
}

/** The run's latest plan, each step with where it got to. */
export interface PlanView {
  planner: string;
  flow_id: string;
  flow_version: number;
  steps: PlanStepView[];
  output: unknown;
}

/** Where a plan step got to over the whole run. */
export type StepState = 'verified' | 'failed' | 'skipped' | 'in_progress' | 'dead_lettered' | 'not_run';

/** A step of the plan (its DAG node). */
export interface PlanStepView {
  id: string;
  tool: string;
  depends_on: string[];
  input: unknown;
  /** Where the step got to: its last verdict, or why it has none. */
  state: StepState;
  /** Waves that ran it. */
  attempts: number;
  extra: Record<string, unknown>;
}

/** The dead letter a record became. */
export interface DeadLetterLink {
  ref: RecordRef;
  code: string;
  message: string;
}

/** One wave: its request(s), its steps with their results and verdicts, and how long each stage took. */
export interface IterationView {
  iteration: number;
  /** Every thought.requests record of this wave (a dead-lettered one and its re-drive are two). */
  requests: Array<{ ref: RecordRef; at: string; dead_letter: DeadLetterLink | null; redriven_from: string | null; fork: boolean }>;
  /** When the wave was asked for, executed and judged, and how long each stage took (ms, from record timestamps). */
  requested_at: string | null;
  executed_at: string | null;
  observed_at: string | null;
  timings: { action_ms: number | null; observation_ms: number | null; thought_ms: number | null };
  steps: StepView[];
  extra: Record<string, unknown>;
}

/** Where a step of one wave got to. */
export type StepStatus = 'verified' | 'invalid' | 'awaiting_result' | 'awaiting_verdict' | 'dead_lettered';

/** One step of one wave: what was asked, what the tool answered, what Observation said. */
export interface StepView {
  iteration: number;
  step_id: string;
  tool: string;
  attempt: number;
  input: unknown;
  idempotency_key: string;
  status: StepStatus;
  result: StepResultView | null;
  verdict: VerdictView | null;
  dead_letter: DeadLetterLink | null;
  extra: Record<string, unknown>;
}

/** Action's result for a step. */
export interface StepResultView {
  ref: RecordRef;
  at: string;
  /** The tool that answered (the fallback's name when a fallback served). */
  tool: string;
  status_code: number | null;
  response_time_ms: number;
  attempts: number;
  retries: number;
  error: { type: string; message: string; retryable: boolean } | null;
  fallback_from: string | null;
  fallback_reason: string | null;
  /** The response body, cut at 2,000 characters (the full body is in the record). */
  response: string | null;
}

/** Observation's verdict on a step, with its audit trail. */
export interface VerdictView {
  ref: RecordRef;
  at: string;
  valid: boolean;
  error_type: string;
  confidence: number;
  checks: Check[];
  extracted: unknown;
}

/** A Reflexion record of the run, once, with the record it was first seen in. */
export interface ReflectionView extends Reflection {
  /** The record it was first seen in. */
  ref: RecordRef;
  extra: Record<string, unknown>;
}

/** An outcome of the run (a parked run that resumed has more than one). */
export interface OutcomeView {
  ref: RecordRef;
  at: string;
  status: string;
  reason_code: string;
  reason: string;
  iterations: number;
  steps_executed: number;
  output: unknown;
  missing_fields: string[];
  planner: string;
  flow_id: string;
  flow_version: number;
  extra: Record<string, unknown>;
}

/** A dead letter of the run with its original record. */
export interface DeadLetterView {
  ref: RecordRef;
  at: string;
  of: TopicId | null;
  code: string;
  error_class: string;
  message: string;
  source: RecordRef | null;
  stage: string;
  attempt: number;
  original: { bytes: number; schema_id: number | null; value: unknown; decode_error: { code: string; message: string } | null; hex: string; utf8: string };
}

const KNOWN = {
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

/** Builds the timeline of `log` (pure: no I/O). */
export function buildTimeline(log: RunLog): Timeline {
  const dlqBySource = new Map<string, DeadLetter>();
  for (const d of log.deadLetters) if (d.source) dlqBySource.set(refKey(d.source), d);
  const linkOf = (r: LoggedRecord): DeadLetterLink | null => {
    const d = dlqBySource.get(refKey(r.ref));
    return d ? { ref: d.ref, code: d.code, message: d.message } : null;
  };
  const decoded = log.records.filter((r) => r.value !== null);
  const of = <T>(topic: TopicId) => decoded.filter((r) => r.topic === topic) as Array<LoggedRecord & { value: T & Record<string, unknown> }>;

  const tasks: TaskView[] = of<Task>('tasks').map((r) => ({
    ref: r.ref,
    at: iso(r.timestamp),
    task_id: r.value.task_id,
    kind: r.value.kind,
    text: r.value.text,
    source: r.value.source,
    external_id: r.value.external_id,
    metadata: r.value.metadata,
    dead_letter: linkOf(r),
    extra: extra(r.value, KNOWN.task),
  }));

  // Dead-lettered requests that still decode belong to their wave like any other request.
  const dlqRequests: Array<LoggedRecord & { value: ThoughtRequest & Record<string, unknown> }> = log.deadLetters
    .filter((d) => d.of === 'thoughtRequests' && d.original.value !== null && d.source && !log.records.some((r) => refKey(r.ref) === refKey(d.source!)))
    .map((d) => ({
      topic: 'thoughtRequests',
      ref: d.source!,
      timestamp: d.timestamp,
      key: d.key ?? '',
      headers: d.headers,
      value: d.original.value as ThoughtRequest & Record<string, unknown>,
      decodeError: null,
    }));
  const requests = [...of<ThoughtRequest>('thoughtRequests'), ...dlqRequests];
  const results = of<ActionResult>('actionResults');
  const observations = of<ObservationResult>('observationResults');
  const outcomesRaw = of<Outcome>('outcomes');

  const waves = [...new Set([...requests, ...results, ...observations].map((r) => iterationOf(r)!))].sort((a, b) => a - b);
  const iterations: IterationView[] = waves.map((k) => {
    const reqs = requests.filter((r) => r.value.iteration === k).sort((a, b) => a.timestamp - b.timestamp);
    const res = results.filter((r) => r.value.iteration === k);
    const obs = observations.filter((r) => r.value.iteration === k);
    const live = reqs.filter((r) => !linkOf(r));
    const chosen = live[live.length - 1] ?? reqs[reqs.length - 1];
    const chosenDlq = chosen ? linkOf(chosen) : null;
    const lastRes = res[res.length - 1];
    const lastObs = obs[obs.length - 1];
    const calls: StepCall[] =
      chosen?.value.steps ??
      lastRes?.value.results.map((s) => ({ step_id: s.step_id, tool: s.tool, input_json: s.input_json, idempotency_key: s.idempotency_key, attempt: 0 })) ??
      [];
    const steps = calls.map((call): StepView => {
      const result = lastRes?.value.results.find((s) => s.step_id === call.step_id);
      const verdict = lastObs?.value.verdicts.find((v) => v.step_id === call.step_id);
      const status: StepStatus = verdict
        ? verdict.valid
          ? 'verified'
          : 'invalid'
        : result
          ? 'awaiting_verdict'
          : chosenDlq
            ? 'dead_lettered'
            : 'awaiting_result';
      return {
        iteration: k,
        step_id: call.step_id,
        tool: call.tool,
        attempt: call.attempt,
        input: parseJson(call.input_json),
        idempotency_key: call.idempotency_key,
        status,
        result: result && lastRes ? resultView(result, lastRes) : null,
        verdict: verdict && lastObs ? verdictView(verdict, lastObs) : null,
        dead_letter: status === 'dead_lettered' ? chosenDlq : null,
        extra: {
          ...prefixed('request', extra(call as unknown as Record<string, unknown>, KNOWN.call)),
          ...prefixed('result', result ? extra(result as unknown as Record<string, unknown>, KNOWN.result) : {}),
          ...prefixed('verdict', verdict ? extra(verdict as unknown as Record<string, unknown>, KNOWN.verdict) : {}),
        },
      };
    });
    const next = [...requests.filter((r) => r.value.iteration === k + 1), ...outcomesRaw]
      .filter((r) => lastObs && r.timestamp >= lastObs.timestamp)
      .sort((a, b) => a.timestamp - b.timestamp)[0];
    return {
      iteration: k,
      requests: reqs.map((r) => ({
        ref: r.ref,
        at: iso(r.timestamp),
        dead_letter: linkOf(r),
        redriven_from: r.headers[REDRIVEN_FROM_HEADER] ?? null,
        fork: r.headers[FORK_HEADERS.parent] !== undefined,
      })),
      requested_at: chosen ? iso(chosen.timestamp) : null,
      executed_at: lastRes ? iso(lastRes.timestamp) : null,
      observed_at: lastObs ? iso(lastObs.timestamp) : null,
      timings: {
        action_ms: chosen && lastRes ? lastRes.timestamp - chosen.timestamp : null,
        observation_ms: lastRes && lastObs ? lastObs.timestamp - lastRes.timestamp : null,
        thought_ms: lastObs && next ? next.timestamp - lastObs.timestamp : null,
      },
      steps,
      extra: {
        ...prefixed('request', chosen ? extra(chosen.value, KNOWN.wave) : {}),
        ...prefixed('result', lastRes ? extra(lastRes.value, KNOWN.wave) : {}),
        ...prefixed('observation', lastObs ? extra(lastObs.value, KNOWN.wave) : {}),
      },
    };
  });

  const outcomes: OutcomeView[] = outcomesRaw.map((r) => ({
    ref: r.ref,
    at: iso(r.timestamp),
    status: r.value.status,
    reason_code: String(r.value.reason_code ?? 'unspecified'),
    reason: r.value.reason,
    iterations: r.value.iterations,
    steps_executed: r.value.steps_executed,
    output: r.value.output_json === null ? null : parseJson(r.value.output_json),
    missing_fields: r.value.missing_fields,
    planner: r.value.planner,
    flow_id: r.value.flow_id,
    flow_version: r.value.flow_version,
    extra: extra(r.value, KNOWN.outcome),
  }));

  // The latest run state: from the last wave record, or a parked snapshot.
  const stateRecords = [...requests, ...results, ...observations].sort((a, b) => a.timestamp - b.timestamp);
  const lastState = stateRecords[stateRecords.length - 1];
  const run: (RunState & Record<string, unknown>) | null = (lastState?.value.run as RunState & Record<string, unknown>) ?? null;

  const reflections: ReflectionView[] = [];
  const seenReflections = new Set<string>();
  const addReflections = (list: unknown, ref: RecordRef) => {
    if (!Array.isArray(list)) return;
    for (const item of list as Array<Reflection & Record<string, unknown>>) {
      const id = JSON.stringify(item);
      if (seenReflections.has(id)) continue;
      seenReflections.add(id);
      reflections.push({ ...item, ref, extra: extra(item, KNOWN.reflection) });
    }
  };
  for (const r of [...stateRecords, ...outcomesRaw].sort((a, b) => a.timestamp - b.timestamp))
    addReflections(r.topic === 'outcomes' ? r.value.reflections : (r.value.run as Record<string, unknown> | undefined)?.reflections, r.ref);
  reflections.sort((a, b) => a.iteration - b.iteration);

  const plan = planView(run, iterations);
  const lastOutcome = outcomes[outcomes.length - 1] ?? null;
  const lastActivity = Math.max(0, ...stateRecords.map((r) => r.timestamp), ...of<Task>('tasks').map((r) => r.timestamp));
  const lastOutcomeAt = outcomesRaw[outcomesRaw.length - 1]?.timestamp ?? -1;
  const status = lastOutcome && lastOutcomeAt >= lastActivity ? lastOutcome.status : 'in_progress';

  const counts: Record<string, number> = {};
  for (const r of log.records) counts[r.ref.topic] = (counts[r.ref.topic] ?? 0) + 1;
  for (const d of log.deadLetters) counts[d.ref.topic] = (counts[d.ref.topic] ?? 0) + 1;

  return {
    format: 'tao.replay.v1',
    thought_id: log.thoughtId,
    namespace: log.namespace,
    bounds: { from: log.bounds.fromMs === null ? null : iso(log.bounds.fromMs), to: log.bounds.toMs === null ? null : iso(log.bounds.toMs) },
    scanned: log.scanned.map((s) => ({ ...s })),
    counts,
    status,
    forked_from: forkOrigin(requests),
    tasks,
    plan,
    iterations,
    reflections,
    outcomes,
    outcome: lastOutcome,
    state: run ? stateView(run) : null,
    dead_letters: log.deadLetters.map(deadLetterView),
    undecodable: log.records
      .filter((r) => r.value === null)
      .map((r) => ({ ref: r.ref, at: iso(r.timestamp), code: r.decodeError!.code, message: r.decodeError!.message })),
  };
}

function resultView(s: StepResult, record: LoggedRecord): StepResultView {
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

function verdictView(v: Verdict, record: LoggedRecord): VerdictView {
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

function planView(run: RunState | null, iterations: IterationView[]): PlanView | null {
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
function stateView(run: RunState & Record<string, unknown>): Record<string, unknown> {
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

function forkOrigin(requests: LoggedRecord[]): ForkOrigin | null {
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

function deadLetterView(d: DeadLetter): DeadLetterView {
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
function extra(value: Record<string, unknown>, known: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (!known.includes(k)) out[k] = v;
  return out;
}

function prefixed(prefix: string, fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [`${prefix}.${k}`, v]));
}

/** JSON text parsed, or the text itself when it is not JSON (the record is shown as it is). */
export function parseJson(text: string | null | undefined): unknown {
  if (text === null || text === undefined) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Not JSON (a plain-text body): the view shows the text.
    return text;
  }
}

/** `topic/partition/offset`: the key of a record's position (also the `tao.redriven-from` header format). */
export function refKey(ref: RecordRef): string {
  return `${ref.topic}/${ref.partition}/${ref.offset}`;
}

/** A timestamp (ms since epoch) as an ISO 8601 string. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
