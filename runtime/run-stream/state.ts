/**
 * A run's current state, folded from its stream's events (runtime/run-stream/events.ts): what
 * `GET /v1/runs/{thought_id}` answers. Pure.
 */
import type { RunEvent } from './events.ts';

/** One step as far as the run got with it. */
export interface StepState {
  iteration: number;
  step_id: string;
  tool: string;
  /** `dispatched` (in a wave), `done` (a result), then `valid` or `invalid` (Observation's verdict). */
  state: 'dispatched' | 'done' | 'valid' | 'invalid';
  error_type: string | null;
}

export interface RunState {
  thought_id: string;
  /** `accepted` (a task, no decision yet), `in_progress`, or the last outcome's status. */
  status: string;
  source: string | null;
  external_id: string | null;
  waves: number;
  steps: StepState[];
  /** The last outcome event's data (parked or ending), null before any. */
  outcome: Record<string, unknown> | null;
  /** The cursor of the last event: `GET .../events` with it as `Last-Event-ID` goes on from here. */
  cursor: string | null;
}

export function foldRunState(thoughtId: string, events: readonly RunEvent[]): RunState {
  const s: RunState = { thought_id: thoughtId, status: 'accepted', source: null, external_id: null, waves: 0, steps: [], outcome: null, cursor: null };
  const step = (iteration: unknown, id: unknown) => s.steps.find((x) => x.iteration === iteration && x.step_id === id);
  for (const e of events) {
    const d = e.data as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    s.cursor = e.id;
    if (e.event === 'task') {
      s.source ??= d.source ?? null;
      s.external_id ??= d.external_id ?? null;
    } else if (e.event === 'wave') {
      s.status = 'in_progress';
      s.waves = Math.max(s.waves, Number(d.iteration));
      for (const x of d.steps ?? []) s.steps.push({ iteration: d.iteration, step_id: x.step_id, tool: x.tool, state: 'dispatched', error_type: null });
    } else if (e.event === 'results') {
      for (const x of d.results ?? []) {
        const st = step(d.iteration, x.step_id);
        if (st) st.state = 'done';
      }
    } else if (e.event === 'verdicts') {
      for (const x of d.verdicts ?? []) {
        const st = step(d.iteration, x.step_id);
        if (st) Object.assign(st, { state: x.valid ? 'valid' : 'invalid', error_type: x.error_type === 'none' ? null : (x.error_type ?? null) });
      }
    } else if (e.event === 'outcome' || e.event === 'approval' || e.event === 'input_required') {
      s.status = String(d.status);
      s.outcome = d;
    }
  }
  return s;
}
