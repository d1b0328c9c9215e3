/** Tracing, one concept in two modules: the deterministic W3C ids every record carries (here) and the OpenTelemetry spans exported under them (./spans.ts). */
import { hash } from 'node:crypto';

/**
 * W3C trace context for a run. The trace id is derived from the thought_id, so every record of a
 * run, written by any stage on any machine, carries the same trace without coordination; the span
 * id names the writer of the record (see {@link spanIdFor}). When tracing is exported
 * (./spans.ts), the writer's span really has that id, so the header is a parent link.
 */
export function traceparentFor(thoughtId: string, span: string): string {
  return `00-${traceIdFor(thoughtId)}-${spanIdFor(thoughtId, span)}-01`;
}

/** Trace ids of the runs seen lately: a stage writes several records per run and decision, each with the run's trace id. */
const traceIds = new Map<string, string>();
const TRACE_IDS_KEPT = 4096;

/** The run's trace id: 32 lowercase hex digits derived from its thought_id. */
export function traceIdFor(thoughtId: string): string {
  let id = traceIds.get(thoughtId);
  if (id === undefined) {
    id = hash('sha256', `trace:${thoughtId}`, 'hex').slice(0, 32);
    if (traceIds.size >= TRACE_IDS_KEPT) traceIds.clear();
    traceIds.set(thoughtId, id);
  }
  return id;
}

/** The span id of a writer of the run's records (`action:2`, `observation:2`, ...): 16 lowercase hex digits. */
export function spanIdFor(thoughtId: string, span: string): string {
  return hash('sha256', `span:${thoughtId}:${span}`, 'hex').slice(0, 16);
}
