/**
 * Retention of a state store's entries by record time: the pure rules the store and the stage
 * runner apply (no clock, no I/O). Record time is the timestamp of the input records a partition
 * has processed, never the wall clock, so the same inputs sweep the same entries whenever they are
 * processed.
 *
 * - A partition's **stream time** is the largest input record timestamp it has processed (it only
 *   moves forward; restored from the changelog's own timestamps after a restart).
 * - An entry that may expire (for Thought: an ended run) carries the record time of the input that
 *   wrote it. It is **expired** once `written + retentionMs <= streamTime`: the stage then writes a
 *   tombstone for it in its next transaction (at most `limit` per transaction).
 * - An input whose key has no entry and whose own record time is `<= streamTime - retentionMs` is
 *   **late**: its entry, if it ever had one, may have been swept, so the stage cannot tell a
 *   redelivery from a new key and must not act on it. (Every input that wrote an entry swept since
 *   has a record time at or before that entry's, hence at or before `streamTime - retentionMs`.)
 *
 * docs/ARCHITECTURE.md ("A bounded run store") says why this covers the redeliveries the loop
 * can see.
 */

/** Per partition: expirable keys with the record time that wrote them, oldest write first. */
export type ExpiryIndex = Map<string, number>;

/**
 * Records that `key` was written at record time `writtenMs` with a value that may (or may not) expire.
 * A key written again moves to the end, so the index stays in write order.
 */
export function noteWrite(index: ExpiryIndex, key: string, writtenMs: number, expirable: boolean): void {
  index.delete(key);
  if (expirable) index.set(key, writtenMs);
}

/**
 * The keys of `index` that have expired at `streamTimeMs`, oldest first, at most `limit`, skipping
 * those `skip` says are being written right now. Stops at the first key written too recently:
 * writes arrive in (roughly) record-time order, so a key behind it that has expired too is taken by
 * a later sweep, once the one in front of it has.
 */
export function expiredKeys(
  index: ExpiryIndex,
  streamTimeMs: number,
  retentionMs: number,
  limit: number,
  skip: (key: string) => boolean = () => false,
): string[] {
  const out: string[] = [];
  for (const [key, writtenMs] of index) {
    if (out.length >= limit || writtenMs + retentionMs > streamTimeMs) break;
    if (!skip(key)) out.push(key);
  }
  return out;
}

/**
 * Why an input whose key has no entry must be ignored, or null when it may be acted on: its record
 * time lies a retention or more behind the partition's stream time.
 */
export function lateInput(recordMs: number, streamTimeMs: number | null, retentionMs: number): string | null {
  if (streamTimeMs === null || recordMs + retentionMs > streamTimeMs) return null;
  return `record time ${new Date(recordMs).toISOString()} is ${formatMs(streamTimeMs - recordMs)} behind the partition's record time ${new Date(streamTimeMs).toISOString()}, at or beyond the run retention (${formatMs(retentionMs)}): a run it belonged to may have been swept from the store`;
}

function formatMs(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
