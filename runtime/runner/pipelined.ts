/**
 * The pipelined strategy ({@link StageDefinition.pipelined}): each chunk is handed to its
 * partition's pipeline (../pipeline.ts) and its offset resolved at once, so that kafkajs fetches on
 * while earlier chunks are still being handled. The pipeline commits the chunks in offset order, each
 * transaction's offset a watermark below which everything has committed.
 *
 * What keeps exactly-once when a chunk fails (a retriable handler error, a failed transaction): no
 * chunk after it commits (the pipeline gives them up), but kafkajs has already been told to read on
 * past them. So the partition is paused at once (kafkajs fetches nothing more of it, and a batch of
 * it that was fetched before the pause is not handled: {@link PipelinedStrategy.begin}), and once
 * every chunk of it has settled, after a backoff (300 ms doubling to 10 s, failures in a row, as
 * kafkajs retries a batch), it is sought back to the first record not committed and resumed
 * ({@link PipelinedStrategy.recover}). That offset is never below what other owners had committed
 * when the partition's claim was taken (the pipeline outlives assignments). The claim's floor goes
 * back with it, since the records from there on were taken but not committed; the failed
 * transaction dropped the claim, so the next batch claims the partition again first.
 *
 * A batch that waited for its claim while a chunk failed (or failed and was recovered from) is not
 * handled: it was fetched before the rewind, and kafkajs delivers its records again after it. From
 * the claim to the last chunk handed on nothing awaits, so two batches of one partition can't both
 * take the same records ({@link BatchTurn.chunk} returns synchronously here).
 *
 * Pinned without a broker by test/runtime/runner/pipelined.test.ts; against the broker by
 * test/processors/action/recovery.test.ts and pipeline.test.ts.
 */
import type { KafkaMessage } from 'kafkajs';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { advanceFloor, type Claim } from '../claims.ts';
import { whileHeartbeating } from '../concurrency.ts';
import { PartitionPipeline } from '../pipeline.ts';

import type { Processed } from './record-processor.ts';
import type { ConsumerSupervisor } from './supervisor.ts';
import type { BatchContext, BatchTurn, Chunk, PartitionStrategy, StrategyParts } from './strategy.ts';

/** A pipelined input topic-partition: its chunks in flight, whether it is paused after a failure, failures in a row. */
type Pipelined = {
  topic: string;
  partition: number;
  pipeline: PartitionPipeline<HandledChunk>;
  paused: boolean;
  failures: number;
  /** Failures noticed so far (each pauses the partition and schedules a recovery). */
  failuresNoticed: number;
  /** The claim its latest chunks were enqueued under, and that claim's floor when it enqueued its first (what others had committed). */
  claim: Claim | null;
  claimFloor: bigint | undefined;
};

/** A chunk of a pipelined partition, handled and waiting for its transaction. */
type HandledChunk = { messages: KafkaMessage[]; processed: Processed[]; claim: Promise<Claim>; endBatch: () => void; highWatermark: bigint };

/** The pause before reading a failed partition again, after `failures` failures in a row. */
export function recoveryDelayMs(failures: number): number {
  return Math.min(10000, 300 * 2 ** (failures - 1));
}

export interface PipelinedOptions extends StrategyParts {
  /** Records a transaction merges chunks up to; a partition holding twice as many uncommitted keeps its batch. */
  maxRecordsPerTransaction: number;
  /** {@link PipelineCommitter.lingerMs}. */
  lingerMs: number;
  group: string;
  logger: Logger;
  /** Pauses, seeks and resumes the consumer; whether the stage is stopping. */
  consumer: Pick<ConsumerSupervisor, 'onConsumer' | 'isStopping'>;
  /** Whether the instance's current assignment has the topic-partition. */
  owns(topic: string, partition: number): boolean;
  /** Notes an error for /health's `lastError`. */
  noteError(err: unknown): void;
  /** Called when a partition could not be recovered (it would stay paused for good). */
  onFatal?(error: Error): void;
}

export class PipelinedStrategy implements PartitionStrategy {
  /** Per input topic-partition, its chunks in flight and its recovery state. */
  private readonly pipelines = new Map<string, Pipelined>();

  constructor(private readonly o: PipelinedOptions) {}

  begin(batch: BatchContext): BatchTurn | null {
    const p = this.pipelined(batch);
    // A failed chunk: the partition is paused and will be read again from its last committed chunk;
    // what kafkajs fetched before the pause is not handled. A consumer restarted by kafkajs since
    // has lost the pause: paused again here, or it would fetch the partition in a loop until then.
    if (p.pipeline.failure) {
      this.pauseFetching(p);
      return null;
    }
    const noticed = p.failuresNoticed;
    return {
      // A chunk of the partition may have failed while this batch waited for its claim: a chunk
      // added now could still be in hand when the recovery resets the failure, and would then commit
      // an offset past the failed records. kafkajs delivers the batch again after the rewind. So may
      // a chunk that failed and was already recovered from meanwhile (a slow claim): this batch was
      // fetched before the recovery's rewind, and its records after the failed ones would otherwise
      // be handed on ahead of them.
      admits: () => !p.pipeline.failure && p.failuresNoticed === noticed,
      chunk: (chunk) => {
        this.handOn(p, batch, chunk);
        return true;
      },
      // Back-pressure: kafkajs fetches again once the batch returns. (Pausing the partition instead
      // would stall it: kafkajs sleeps its whole fetch wait when every partition is paused, and a
      // resumed partition waits for a fetch already in progress without it.)
      end: () => whileHeartbeating(p.pipeline.below(this.backlogLimit), batch.heartbeat, this.o.heartbeatIntervalMs),
    };
  }

  /** Chunks already handed to a pipeline commit (or fail) before their producers go. */
  async drained(): Promise<void> {
    await Promise.all([...this.pipelines.values()].map((p) => p.pipeline.drained()));
  }

  /** Hands a chunk on, moves the claim's floor past it and resolves it: kafkajs reads on from here, and a failure rewinds it ({@link recover}). */
  private handOn(p: Pipelined, batch: BatchContext, { messages, next, claimed, claim }: Chunk): void {
    if (p.claim !== claim) {
      // A new claim's first chunk: what others had committed when it was taken (see recover).
      p.claim = claim;
      p.claimFloor = claim.floors.get(p.topic);
    }
    this.enqueue(p, batch, messages, next, claimed);
    advanceFloor(claim, p.topic, next);
    batch.resolveOffset(messages[messages.length - 1]!.offset);
  }

  /** The pipeline of one input topic-partition (made on first use, kept across assignments). */
  private pipelined(batch: BatchContext): Pipelined {
    const { source, partition } = batch;
    const topic = source.name;
    const key = `${topic}\u0000${partition}`;
    let p = this.pipelines.get(key);
    if (!p) {
      const pipeline = new PartitionPipeline<HandledChunk>({
        maxRecords: this.o.maxRecordsPerTransaction,
        lingerMs: this.o.lingerMs,
        // One transaction is one claim's producer.
        mergeable: (a, b) => a.claim === b.claim,
        commit: async (chunks, next) => {
          const messages = chunks.flatMap((c) => c.messages);
          await this.o.committer.commit(
            source,
            partition,
            messages,
            next,
            chunks[0]!.claim,
            chunks.flatMap((c) => c.processed),
            () => {
              for (const c of chunks) c.endBatch();
            },
          );
          p!.failures = 0;
          this.o.lag.set(topic, partition, chunks[chunks.length - 1]!.highWatermark - next);
        },
      });
      this.pipelines.set(key, (p = { topic, partition, pipeline, paused: false, failures: 0, failuresNoticed: 0, claim: null, claimFloor: undefined }));
    }
    return p;
  }

  /** Hands a chunk to its partition's pipeline: handled now, committed after the chunks before it (with those waiting beside it). */
  private enqueue(p: Pipelined, batch: BatchContext, messages: KafkaMessage[], next: bigint, claim: Promise<Claim>): void {
    const { pipeline, partition } = p;
    const endBatch = this.o.batchSeconds.startTimer();
    const { highWatermark } = batch;
    const handle = async (): Promise<HandledChunk> => ({
      messages,
      claim,
      endBatch,
      highWatermark,
      processed: await this.o.records.handleChunk(batch.source, partition, messages, (key, fn) => pipeline.inKeyOrder(key, fn)),
    });
    const settled = this.o.claims.runChunk(partition, () => pipeline.add(messages.length, BigInt(messages[0]!.offset), next, handle));
    void settled.then(() => {
      if (pipeline.failure) this.pause(p);
    });
  }

  /** Uncommitted records at which a pipelined partition's next batch waits (and so kafkajs's next fetch): two full transactions. */
  private get backlogLimit(): number {
    return 2 * this.o.maxRecordsPerTransaction;
  }

  /** Stops fetching a pipelined partition whose chunk failed, and schedules reading it again ({@link recover}). */
  private pause(p: Pipelined): void {
    if (p.paused) return;
    p.paused = true;
    p.failuresNoticed++;
    this.pauseFetching(p);
    this.recover(p).catch((err: unknown) => {
      // The partition would stay paused for good: exit for the supervisor instead.
      this.o.logger.error('recovering a failed partition failed', { group: this.o.group, topic: p.topic, partition: p.partition, error: err as Error });
      this.o.onFatal?.(err as Error);
    });
  }

  private pauseFetching(p: Pipelined): void {
    this.o.consumer.onConsumer('pause', p.topic, p.partition, (c) => c.pause([{ topic: p.topic, partitions: [p.partition] }]));
  }

  /**
   * After a chunk of a pipelined partition failed: once every chunk of it has settled, and after a
   * backoff that grows with failures in a row ({@link recoveryDelayMs}), kafkajs reads the partition
   * again from the offset after its last committed chunk. The next batch claims the partition again
   * if the failed transaction dropped the claim.
   */
  private async recover(p: Pipelined): Promise<void> {
    const { pipeline } = p;
    const { consumer, logger } = this.o;
    await pipeline.drained();
    p.failures++;
    const delayMs = recoveryDelayMs(p.failures);
    // The first record not committed. The pipeline outlives assignments, and until this claim's
    // first commit its offset may date from before the claim (before another owner's commits):
    // never below what others had committed when the claim was taken.
    const resumeAt = pipeline.resumeAt !== null && p.claimFloor !== undefined ? max(pipeline.resumeAt, p.claimFloor) : pipeline.resumeAt;
    this.o.noteError(pipeline.failure);
    logger.warn('a chunk failed; the partition is read again from its last committed chunk', {
      group: this.o.group,
      topic: p.topic,
      partition: p.partition,
      offset: resumeAt?.toString() ?? null,
      retry_in_ms: delayMs,
      error: errorMessage(pipeline.failure),
    });
    await new Promise((r) => setTimeout(r, delayMs));
    if (consumer.isStopping) return;
    // Not ours any more: the next owner (or our next assignment) starts from the committed offsets.
    if (resumeAt !== null && this.o.owns(p.topic, p.partition))
      consumer.onConsumer('seek', p.topic, p.partition, (c) => c.seek({ topic: p.topic, partition: p.partition, offset: resumeAt.toString() }));
    // The records from resumeAt on were handed on but not committed: the claim takes them again.
    if (resumeAt !== null && p.claim) p.claim.floors.set(p.topic, resumeAt);
    pipeline.reset();
    p.paused = false;
    consumer.onConsumer('resume', p.topic, p.partition, (c) => c.resume([{ topic: p.topic, partitions: [p.partition] }]));
  }
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
