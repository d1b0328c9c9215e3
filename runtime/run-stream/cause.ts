/**
 * The `tao.cause` header: every record a stage writes names the input record it was written for,
 * as `<topic id>:<partition>:<offset>` (the topic's catalog id, so the name does not depend on the
 * namespace; `external` for a Kafka source's record). A run's event stream (runtime/run-stream/) orders a run's records by it: each comes
 * after the record that caused it. Records written before the header existed have none.
 */
import type { TopicId } from '../../topics/catalog.ts';

export const CAUSE_HEADER = 'tao.cause';

/** Where a record was read: its topic's catalog id, partition and offset. */
export interface RecordRef {
  topic: TopicId;
  partition: number;
  offset: bigint;
}

/** The header value naming `input` as the cause. */
export function causeOf(input: { topic: string; partition: number; offset: string }): string {
  return `${input.topic}:${input.partition}:${input.offset}`;
}

/** The cause a header value names, or null for a missing or malformed one. */
export function parseCause(value: string | undefined): RecordRef | null {
  const m = value === undefined ? null : /^([A-Za-z]+):(\d{1,5}):(\d{1,19})$/.exec(value);
  return m ? { topic: m[1] as TopicId, partition: Number(m[2]), offset: BigInt(m[3]!) } : null;
}
