/**
 * Chunks of one partition handled at the same time and committed in offset order: the stage runner's
 * pipelined mode (runtime/processor.ts, {@link StageDefinition.pipelined}), for a stage whose records
 * mostly wait on I/O (Action). Nothing here knows Kafka.
 *
 * Why: kafkajs fetches again from a broker only once every batch of its last fetch has been handled,
 * and a partition's next records wait for its current chunk to commit. When a chunk's records wait
 * 300 ms on a tool, the instance's slots stand idle while records of its other partitions, or later
 * records of the same one, wait for the slowest call of the fetch. In the pipelined mode the runner
 * hands each chunk to its partition's pipeline and returns to kafkajs at once, so the next fetch
 * brings the next records while the earlier ones are still being handled.
 *
 * What keeps exactly-once: a chunk still commits its outputs and the offset after it in one
 * transaction, and the chunks of a partition commit one after another, in offset order, each only
 * after every earlier one has committed; once one fails, none after it commits, and the runner
 * reads the partition again from the offset after the last committed chunk ({@link resumeAt}).
 * The committed log therefore sees exactly what the one-chunk-at-a-time mode writes. Records of one
 * run (one key) are handled in offset order across chunks too ({@link inKeyOrder}).
 */

/** One partition's chunks in flight. */
export class PartitionPipeline {
  /** The commit of the latest chunk added: the next chunk's commit waits for it (it never rejects). */
  private commitTail: Promise<void> = Promise.resolve();
  /** Per key, the handling of its latest record: the next record of the key waits for it. */
  private readonly keyTails = new Map<string, Promise<unknown>>();
  private readonly inFlight = new Set<Promise<void>>();
  private added = 0;
  /** Sequence number of the earliest chunk that failed since the last {@link reset} (no chunk from it on commits). */
  private failedFrom: number | null = null;
  private firstFailure: unknown = null;
  private resume: bigint | null = null;
  private held = 0;

  /** Records of the chunks added and not yet settled (committed, failed or given up). */
  get records(): number {
    return this.held;
  }

  /** The first error since the last {@link reset}, or null while every chunk has committed. */
  get failure(): unknown {
    return this.failedFrom === null ? null : this.firstFailure;
  }

  /**
   * The offset to read the partition from again after a failure: the offset after the last chunk
   * that committed, or the first offset of the first chunk added since the last {@link reset}.
   */
  get resumeAt(): bigint | null {
    return this.resume;
  }

  /**
   * Adds a chunk whose records start at offset `from` and whose commit moves the partition to
   * `next`. `handle` starts at once; `commit` runs with its result once every earlier chunk has
   * committed, and not at all if `handle` or an earlier chunk failed. Settles when the chunk has
   * committed or been given up; never rejects (the error is in {@link failure}).
   */
  add<T>(records: number, from: bigint, next: bigint, handle: () => Promise<T>, commit: (handled: T) => Promise<void>): Promise<void> {
    const seq = this.added++;
    if (this.resume === null) this.resume = from;
    this.held += records;
    const handled = handle();
    // Rejections are read below, after the wait for earlier commits; not an unhandled rejection meanwhile.
    handled.catch(() => undefined);
    const previous = this.commitTail;
    const chunk = (async () => {
      try {
        let result: T;
        try {
          result = await handled;
        } catch (err) {
          this.fail(seq, err);
          return;
        }
        await previous;
        if (this.failedFrom !== null && seq >= this.failedFrom) return;
        try {
          await commit(result);
          this.resume = next;
        } catch (err) {
          this.fail(seq, err);
        }
      } finally {
        this.held -= records;
      }
    })();
    this.commitTail = chunk;
    this.inFlight.add(chunk);
    void chunk.finally(() => this.inFlight.delete(chunk));
    return chunk;
  }

  /** Runs `fn` once the handling of every earlier record of `key` in this pipeline has settled. */
  inKeyOrder<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.keyTails.get(key);
    const run = before ? before.then(fn, fn) : fn();
    const tail = run.catch(() => undefined);
    this.keyTails.set(key, tail);
    void tail.then(() => {
      if (this.keyTails.get(key) === tail) this.keyTails.delete(key);
    });
    return run;
  }

  /** Settles once every chunk added so far has settled. */
  async drained(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Forgets the failure and the resume offset: the partition is being read again from {@link resumeAt}. */
  reset(): void {
    this.failedFrom = null;
    this.firstFailure = null;
    this.resume = null;
  }

  private fail(seq: number, err: unknown): void {
    if (this.failedFrom === null) this.firstFailure = err;
    if (this.failedFrom === null || seq < this.failedFrom) this.failedFrom = seq;
  }
}
