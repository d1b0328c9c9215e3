/**
 * How the replay tools mark and name records: the headers `tao replay --fork` and `tao dlq redrive`
 * write, a record position's key (`topic/partition/offset`), and the conversions the views share
 * (timestamps as ISO 8601, JSON fields parsed for display).
 */
import type { RecordRef } from './dead-letters.ts';

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
