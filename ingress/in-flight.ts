import type { Kafka } from 'kafkajs';
import { watchRecords } from '../client/watch.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import type { Logger } from '../runtime/log.ts';

/**
 * Runs this ingress has started or resumed and for which no outcome has been seen yet, keyed by
 * thought_id. A run leaves the set on any outcome (an `awaiting_input` run is waiting for a person,
 * not using the loop; a reply puts it back). Entries older than `ttlMs` are dropped, so a run whose
 * outcome never comes (a dead-lettered task) can't hold a slot forever.
 *
 * The count is per ingress process: with N instances the loop may hold up to N × limit runs.
 */
export class InFlightRuns {
  private readonly runs = new Map<string, number>();

  constructor(
    readonly limit: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    this.prune();
    return this.runs.size;
  }

  /**
   * Takes a slot for `thoughtId` before its task is written (so an outcome that arrives before the
   * write is acknowledged can't be missed). A run already in flight takes no new slot.
   * @returns a release function to call if the write fails, or null when the limit is reached.
   */
  reserve(thoughtId: string): (() => void) | null {
    this.prune();
    if (this.runs.has(thoughtId)) return () => undefined;
    if (this.runs.size >= this.limit) return null;
    const at = this.now();
    this.runs.set(thoughtId, at);
    return () => {
      if (this.runs.get(thoughtId) === at) this.runs.delete(thoughtId);
    };
  }

  /** An outcome was seen for `thoughtId`. */
  settle(thoughtId: string): void {
    this.runs.delete(thoughtId);
  }

  private prune(): void {
    const oldest = this.now() - this.ttlMs;
    for (const [id, at] of this.runs) {
      if (at > oldest) break;
      this.runs.delete(id);
    }
  }
}

/**
 * Follows `tao.outcomes` from its current end (read_committed, throw-away group) and settles the
 * runs it sees. Resolves once positioned, so no outcome written afterwards is missed.
 */
export async function followOutcomes(kafka: Kafka, codec: AvroCodec, runs: InFlightRuns, logger: Logger): Promise<{ stop(): Promise<void> }> {
  return watchRecords(kafka, codec, {
    topics: ['outcomes'],
    from: 'end',
    onRecord: (record) => runs.settle(record.key),
    onError: (err, where) => logger.warn('outcome not decoded; its run stays counted until it expires', { ...where, error: err }),
  });
}
