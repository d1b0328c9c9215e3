/**
 * A run stream's cursor, the SSE `id` of each event: per topic of the run, the offset after the
 * last record streamed (runtime/run-stream/order.ts), on the run's partition of that topic (the
 * partition follows from the thought_id, so it is not written). Compact: `r1.` then five offsets in
 * base 36, in {@link STREAM_TOPICS} order, e.g. `r1.4.2.2.2.1`.
 */
import { STREAM_TOPICS, type Positions } from './order.ts';

const PREFIX = 'r1.';
const OFFSET = /^[0-9a-z]{1,13}$/;

export function encodeCursor(positions: Positions): string {
  return PREFIX + STREAM_TOPICS.map((t) => positions[t].toString(36)).join('.');
}

/** The positions a cursor names, or null when it is not one of ours. */
export function decodeCursor(cursor: string): Positions | null {
  if (!cursor.startsWith(PREFIX)) return null;
  const parts = cursor.slice(PREFIX.length).split('.');
  if (parts.length !== STREAM_TOPICS.length || !parts.every((p) => OFFSET.test(p))) return null;
  const out = {} as Positions;
  STREAM_TOPICS.forEach((t, i) => (out[t] = [...parts[i]!].reduce((n, c) => n * 36n + BigInt(parseInt(c, 36)), 0n)));
  return out;
}
