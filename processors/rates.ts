/**
 * The run-level reliability rates (docs/OBSERVABILITY.md, "Run-level rates"), defined once over
 * the records the loop writes, so the stages' metrics and anyone reading the log compute the same
 * thing:
 *
 * - task completion rate (TCR) = runs completed / runs ended;
 * - self-recovery rate (SRR) = runs that hit a failure and still completed without a human /
 *   runs that hit a failure;
 * - traceability index (TI) = steps with complete evidence / all steps.
 *
 * A run has *ended* when its outcome status is anything but `awaiting_input` or `awaiting_approval`
 * (a parked run waits for a person and may still complete). Pure functions only: no I/O.
 */
import type { RunEnd } from '../runtime/metrics.ts';
import type { OutcomeStatus, StepResult, Verdict } from '../schemas/types.gen.ts';

/** True for an outcome that ends the run (every status except `awaiting_input` and `awaiting_approval`, which park it). */
export function endsRun(status: OutcomeStatus): boolean {
  return status !== 'awaiting_input' && status !== 'awaiting_approval';
}

/**
 * Step results of one wave that needed recovery: an invalid verdict, a call Action had to retry, or
 * a step served by a fallback tool. The one statement of the rule: Thought adds it to
 * `RunState.failures_seen` for each wave (processors/thought/core.ts), and whoever computes the
 * rates from the log counts with it too.
 */
export function waveFailures(verdicts: readonly Pick<Verdict, 'valid' | 'attempts' | 'fallback_from'>[]): number {
  return verdicts.filter((v) => !v.valid || v.attempts > 1 || v.fallback_from !== null).length;
}

/** Classifies a run's end from its outcome status and its run state at the end. */
export function classifyRunEnd(status: OutcomeStatus, failuresSeen: number, humanInvolved: boolean): RunEnd {
  const completed = status === 'completed';
  const hitFailure = failuresSeen > 0;
  return { completed, hitFailure, recovered: hitFailure && completed && !humanInvolved };
}

/**
 * A step's evidence is complete when the log alone lets an auditor reconstruct it: its step id and
 * idempotency key (`thought_id:step_id:<call digest>`, run-end.ts `callKey`; with the wave of its
 * record, a unique id), its inputs (JSON), what came back (the raw
 * response, or an error when nothing usable came back), how long it took, and a code for the result
 * (the HTTP status, or the error type).
 */
export function evidenceComplete(
  step: Pick<StepResult, 'step_id' | 'idempotency_key' | 'input_json' | 'response_raw' | 'error' | 'response_time_ms' | 'status_code'>,
): boolean {
  if (!step.step_id || !step.idempotency_key) return false;
  if (!isJson(step.input_json)) return false;
  if (step.response_raw === null && step.error === null) return false;
  if (!Number.isFinite(step.response_time_ms) || step.response_time_ms < 0) return false;
  return step.error === null ? step.status_code !== null : step.error.type.length > 0;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false; // not JSON: exactly what this check reports
  }
}
