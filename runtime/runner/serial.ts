/**
 * The serial strategy: a partition's chunks are handled and committed one after another, inside
 * the batch that brought them, and a chunk's offset is resolved only once its transaction has
 * committed. A stage with a store is always serial (its staged writes settle with one chunk's
 * transaction).
 *
 * What keeps exactly-once on top of the transaction (./committer.ts):
 *
 * - the chunks of a partition run one after another (PartitionClaims.runChunk with `serialChunks`,
 *   ../claims.ts), and each re-reads the claim's floor when its turn comes: a chunk kafkajs
 *   delivered again in a second batch meanwhile (after a leader change) finds the records the first
 *   one committed below the floor, and skips them;
 * - a chunk whose claim was dropped meanwhile (the chunk before it failed) does nothing: kafkajs
 *   delivers it again, and it is claimed again first;
 * - a chunk that failed (a retriable handler error, a failed transaction) throws out of the batch
 *   with nothing resolved: kafkajs fetches the partition again from its last resolved offset,
 *   which is the last committed one. No seek is needed: nothing past it was resolved;
 * - a chunk that committed while the partition was reassigned resolves nothing either: kafkajs
 *   starts the partition again from the committed offsets.
 *
 * Pinned without a broker by test/runtime/runner/serial.test.ts.
 */
import { advanceFloor, below } from '../claims.ts';
import { whileHeartbeating } from '../concurrency.ts';
import type { BatchContext, BatchTurn, Chunk, PartitionStrategy, StrategyParts } from './strategy.ts';

export class SerialStrategy implements PartitionStrategy {
  constructor(private readonly parts: StrategyParts) {}

  begin(batch: BatchContext): BatchTurn {
    return {
      admits: () => true,
      chunk: (chunk) => this.chunk(batch, chunk),
      end: async () => undefined,
    };
  }

  /** Nothing is handed on past a batch: every chunk has settled once its batch returned. */
  async drained(): Promise<void> {}

  private async chunk(batch: BatchContext, { messages, next, claimed, claim }: Chunk): Promise<boolean> {
    const { claims, heartbeatIntervalMs, lag } = this.parts;
    const { source, partition } = batch;
    let committed = false;
    const run = async () => {
      // The chunk before it failed and dropped the claim: kafkajs delivers this one again too.
      if (claims.current(partition) !== claimed) return;
      const floorNow = claim.floors.get(source.name);
      const fresh = floorNow === undefined ? messages : messages.slice(below(messages, floorNow));
      if (fresh.length > 0) await this.commitChunk(batch, fresh, next, claimed);
      advanceFloor(claim, source.name, next);
      committed = true;
    };
    await whileHeartbeating(claims.runChunk(partition, run), batch.heartbeat, heartbeatIntervalMs);
    // Not committed (the claim was dropped): kafkajs fetches again from the last resolved offset.
    // Committed, but the partition was reassigned meanwhile: kafkajs starts again from the
    // committed offsets. Either way there is nothing to resolve.
    if (!committed || !batch.current()) return false;
    lag.set(source.name, partition, batch.highWatermark - next);
    batch.resolveOffset(messages[messages.length - 1]!.offset);
    await batch.heartbeat();
    return true;
  }

  /** Handles a chunk of one partition and commits its outputs with the offset `next` (after the chunk), in one transaction. */
  private async commitChunk(batch: BatchContext, chunk: Chunk['messages'], next: bigint, claimed: Chunk['claimed']): Promise<void> {
    const endBatch = this.parts.batchSeconds.startTimer();
    const processed = await this.parts.records.handleChunk(batch.source, batch.partition, chunk);
    await this.parts.committer.commit(batch.source, batch.partition, chunk, next, claimed, processed, endBatch);
  }
}
