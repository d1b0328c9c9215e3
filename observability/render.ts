import type { LoopRecord } from '../client/watch.ts';
import type { ActionResult, ObservationResult, Outcome, ThoughtRequest } from '../schemas/types.gen.ts';

/** One human-readable line per committed loop record, as `tao tail` and the demo print it. */
export function describeRecord(r: LoopRecord): string[] {
  const run = r.key.slice(0, 8);
  switch (r.topic) {
    case 'tasks':
      return [`[${run}] task: ${JSON.stringify(r.value.text)}`];
    case 'thoughtRequests': {
      const v = r.value as unknown as ThoughtRequest;
      return [`[${run}] wave ${v.iteration}: ${v.steps.map((s) => `${s.step_id} ${s.tool}${s.attempt > 1 ? ` (attempt ${s.attempt})` : ''}`).join(', ')}`];
    }
    case 'actionResults': {
      const v = r.value as unknown as ActionResult;
      return v.results.map(
        (s) =>
          `[${run}]   ${s.step_id} ${s.tool} -> ${s.status_code ?? s.error?.type ?? '?'} in ${s.response_time_ms} ms${s.attempts > 1 ? ` after ${s.attempts} attempts` : ''}`,
      );
    }
    case 'observationResults': {
      const v = r.value as unknown as ObservationResult;
      return v.verdicts.map(
        (s) => `[${run}]   ${s.step_id} ${s.valid ? 'verified' : `INVALID: ${s.error_type}`} (confidence ${s.confidence_score.toFixed(2)})`,
      );
    }
    case 'thoughtRuns':
      return [`[${run}] run ${String(r.value.status)}`];
    case 'outcomes': {
      const v = r.value as unknown as Outcome;
      const extra = v.output_json ? ` ${v.output_json}` : v.missing_fields.length ? ` needs: ${v.missing_fields.join(', ')}` : '';
      return [`[${run}] ${v.status.toUpperCase()} after ${v.iterations} wave(s): ${v.reason}${extra}`];
    }
    case 'manifests':
      return [`release record ${r.key}`];
  }
}
