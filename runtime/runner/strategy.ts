/**
 * How the chunks of one partition's batch are handled and committed: the one place the runner's two
 * modes differ. The batch loop (../processor.ts, `StageRunner`) does what both share: it drops a
 * batch of an earlier assignment, claims the partition (./claims.ts), skips the records below the
 * claim's floor, cuts the rest into chunks of `maxRecordsPerTransaction`, and stops before a chunk
 * once the batch is stale or its claim was dropped. It hands every chunk to a strategy:
 *
 * - `SerialStrategy` (./serial.ts): each chunk is handled and committed before the batch goes
 *   on, and its offset resolved after the commit; a failure throws out of the batch, and kafkajs
 *   fetches again from the last resolved offset.
 * - `PipelinedStrategy` (./pipelined.ts): each chunk is handed to the partition's pipeline
 *   (../pipeline.ts) and resolved at once, so that kafkajs fetches on; chunks commit in offset order
 *   as a watermark, and a failure pauses the partition and seeks it back to its first uncommitted
 *   offset before resuming it.
 */
import type { KafkaMessage } from 'kafkajs';
import type { Claim, PartitionClaims } from '../claims.ts';
import type { TransactionCommitter } from './committer.ts';
import type { LagGauge } from './lag.ts';
import type { RecordProcessor, Source } from './record-processor.ts';

/** One batch kafkajs handed to the runner, as a strategy sees it. */
export interface BatchContext {
  source: Source;
  partition: number;
  /** The batch's high watermark (for the lag gauge). */
  highWatermark: bigint;
  /** Marks the records up to `offset` as processed: kafkajs fetches the partition on from after it. */
  resolveOffset(offset: string): void;
  heartbeat(): Promise<void>;
  /** Whether the batch's assignment is still the instance's, with the partition in it. */
  current(): boolean;
}

/** A chunk of a batch (at least one record, none below the claim's floor when it was cut). */
export interface Chunk {
  messages: KafkaMessage[];
  /** The offset its transaction commits: after its last record (or the batch's trailing markers). */
  next: bigint;
  /** The claim it commits under, as PartitionClaims holds it (a dropped one is no longer current) ... */
  claimed: Promise<Claim>;
  /** ... and settled. */
  claim: Claim;
}

/** The serial or the pipelined way of handling a partition's chunks. */
export interface PartitionStrategy {
  /**
   * A batch arrives, before its claim is taken: how this batch is handled, or null when it must not
   * be (kafkajs delivers its records again).
   */
  begin(batch: BatchContext): BatchTurn | null;
  /** Settles once every chunk handed on so far has committed or failed (the stage is stopping). */
  drained(): Promise<void>;
}

/** One batch in a strategy's hands. */
export interface BatchTurn {
  /** After the claim was taken (the batch may have waited for it): whether the batch may still be handled. */
  admits(): boolean;
  /**
   * Handles (or hands on) one chunk; false: the batch stops here, unresolved from this chunk on. A
   * strategy that only hands the chunk on answers synchronously, and the batch loop then cuts the
   * next chunk without yielding: from the claim to the last chunk handed on, no other batch of the
   * partition may read the claim's floor (it would take the records this batch is taking).
   */
  chunk(chunk: Chunk): boolean | Promise<boolean>;
  /** After the batch's last chunk, before kafkajs fetches again (back-pressure). */
  end(): Promise<void>;
}

/** What both strategies work with. */
export interface StrategyParts {
  claims: PartitionClaims;
  records: RecordProcessor;
  committer: TransactionCommitter;
  lag: LagGauge;
  /** The runner's heartbeat interval while a claim or chunk is in progress (kafkajs sends none meanwhile). */
  heartbeatIntervalMs: number;
  /** `tao_batch_seconds` of the stage (looked up once): a chunk's handling and commit. */
  batchSeconds: { startTimer(): () => void };
}
