import { createHash } from 'node:crypto';

/**
 * W3C trace context for a run. The trace id is derived from the thought_id, so every record of a
 * run, written by any stage on any machine, carries the same trace without coordination; the span
 * id names the (stage, iteration) that wrote the record.
 */
export function traceparentFor(thoughtId: string, span: string): string {
  const traceId = createHash('sha256').update(`trace:${thoughtId}`).digest('hex').slice(0, 32);
  const spanId = createHash('sha256').update(`span:${thoughtId}:${span}`).digest('hex').slice(0, 16);
  return `00-${traceId}-${spanId}-01`;
}
