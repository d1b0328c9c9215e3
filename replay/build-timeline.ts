/**
 * Builds the timeline of one run from its records (a pure function of the {@link RunLog}): the
 * `tao.replay.v1` document of timeline.ts, with each wave's requests, results and verdicts joined,
 * the dead letters linked to the records they came from, and the run's status.
 */
import type { ActionResult, ObservationResult, Outcome, Reflection, RunState, StepCall, Task, ThoughtRequest } from '../schemas/types.gen.ts';
import type { TopicId } from '../topics/catalog.ts';
import type { DeadLetter, RecordRef } from './dead-letters.ts';
import { iterationOf, type LoggedRecord, type RunLog } from './log.ts';
import { FORK_HEADERS, REDRIVEN_FROM_HEADER, iso, parseJson, refKey } from './record-format.ts';
import type { DeadLetterLink, IterationView, OutcomeView, ReflectionView, StepStatus, StepView, TaskView, Timeline } from './timeline.ts';
import { KNOWN, deadLetterView, extra, forkOrigin, planView, prefixed, resultView, stateView, verdictView } from './timeline-parts.ts';

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
