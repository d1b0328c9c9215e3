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
 * What keeps exactly-once: the outputs of a chunk and the offset after it commit in one
 * transaction, and the chunks of a partition commit one after another, in offset order, each only
 * after every earlier one has committed; once one fails, none after it commits, and the runner
 * reads the partition again from the offset after the last committed chunk ({@link resumeAt}).
 * The committed log therefore sees what the one-chunk-at-a-time mode writes. Records of one run
 * (one key) are handled in offset order across chunks too ({@link inKeyOrder}).
 *
 * Chunks that are handled while a transaction of their partition is committing wait for it and then
 * commit together, in one transaction (up to {@link PipelineCommitter.maxRecords} records): under
 * load, transactions grow with the records waiting. With slow calls, chunks finish one at a time,
 * each a few milliseconds after the last; {@link PipelineCommitter.lingerMs} lets a handled chunk
 * wait that long for the chunks behind it that are still being handled, so that they share its
 * transaction (as Kafka Streams' commit interval does). A chunk with nothing behind it commits at once.
 */

/** How a pipeline commits (the stage runner's transaction). */
export interface PipelineCommitter<T> {
  /**
   * Commits chunks handled in a row, in offset order, in one transaction whose offset is `next`
   * (after the last of them). Called for one group at a time; a rejection fails the group and
   * every chunk after it.
   */
  commit(handled: T[], next: bigint): Promise<void>;
  /** Whether two handled chunks may share a transaction (the runner: the same claim's producer). */
  mergeable(a: T, b: T): boolean;
  /** Records one transaction takes at most when it merges chunks (a chunk alone may have more). */
  maxRecords: number;
  /**
   * How long a handled chunk waits, at most, for later chunks of its partition that are still
   * being handled, to commit with them (0: commit at once).
   */
  lingerMs?: number;
}

type Entry<T> = { seq: number; records: number; next: bigint; state: 'handling' | 'handled' | 'failed'; result?: T; handledAt?: number; settle(): void };

/** One partition's chunks in flight. */
export class PartitionPipeline<T> {
  /** Chunks not yet committed or given up, in offset order. */
  private readonly queue: Entry<T>[] = [];
  private committing = false;
  /** Per key, the handling of its latest record: the next record of the key waits for it. */
  private readonly keyTails = new Map<string, Promise<unknown>>();
  private added = 0;
  /** Sequence number of the earliest chunk that failed since the last {@link reset} (no chunk from it on commits). */
  private failedFrom: number | null = null;
  private firstFailure: unknown = null;
  private resume: bigint | null = null;
  private held = 0;
  private waiters: Array<{ records: number; resolve(): void }> = [];
  /** The pending wake-up of a lingering head chunk. */
  private lingering: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly committer: PipelineCommitter<T>) {}

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
   * Adds a chunk of `records` (at least one) records from offset `from`, whose commit moves the partition to
   * `next`. `handle` starts at once; its result is committed once every earlier chunk has, and not
   * at all if `handle` or an earlier chunk failed. Settles when the chunk has committed, or has
   * been given up and its `handle` has settled; never rejects (the error is in {@link failure}).
   */
  add(records: number, from: bigint, next: bigint, handle: () => Promise<T>): Promise<void> {
    const seq = this.added++;
    if (this.resume === null) this.resume = from;
    this.held += records;
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const entry: Entry<T> = { seq, records, next, state: 'handling', settle };
    this.queue.push(entry);
    handle()
      .then(
        (result) => {
          entry.state = 'handled';
          entry.result = result;
          entry.handledAt = performance.now();
        },
        (err: unknown) => {
          entry.state = 'failed';
          this.fail(seq, err);
        },
      )
      .finally(() => this.pump());
    return settled;
  }

  /** Runs `fn` once the handling of every earlier record of `key` in this pipeline has settled. */
  inKeyOrder<R>(key: string, fn: () => Promise<R>): Promise<R> {
    const before = this.keyTails.get(key);
    const run = before ? before.then(fn, fn) : fn();
    const tail = run.catch(() => undefined);
    this.keyTails.set(key, tail);
    void tail.then(() => {
      if (this.keyTails.get(key) === tail) this.keyTails.delete(key);
    });
    return run;
  }

  /** Resolves once the pipeline holds fewer than `records` records (at once if it does). */
  below(records: number): Promise<void> {
    if (this.held < records) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ records, resolve }));
  }

  /** Settles once every chunk added so far has settled (a chunk holds at least one record). */
  drained(): Promise<void> {
    return this.below(1);
  }

  /** Forgets the failure and the resume offset: the partition is being read again from {@link resumeAt}. */
  reset(): void {
    this.failedFrom = null;
    this.firstFailure = null;
    this.resume = null;
  }

  /** Commits the handled chunks at the head of the queue, or gives up those past a failure. */
  private pump(): void {
    if (this.committing) return;
    const failedFrom = this.failedFrom;
    const head = this.queue[0];
    if (!head) return;
    if (failedFrom !== null && head.seq >= failedFrom) {
      // Nothing from here on can commit: settle each chunk whose handling is over (the others when theirs is).
      for (const e of this.queue.filter((e) => e.state !== 'handling')) this.finish(e);
      return;
    }
    if (head.state !== 'handled') return;
    const group = [head];
    let records = head.records;
    for (let i = 1; i < this.queue.length; i++) {
      const e = this.queue[i]!;
      if (
        e.state !== 'handled' ||
        (failedFrom !== null && e.seq >= failedFrom) ||
        records + e.records > this.committer.maxRecords ||
        !this.committer.mergeable(head.result as T, e.result as T)
      )
        break;
      group.push(e);
      records += e.records;
    }
    // Later chunks still being handled (nothing failed): wait a little for them, while the group has room.
    const linger = this.committer.lingerMs ?? 0;
    if (
      linger > 0 &&
      failedFrom === null &&
      records < this.committer.maxRecords &&
      this.queue.length > group.length &&
      this.queue[group.length]!.state === 'handling'
    ) {
      const left = head.handledAt! + linger - performance.now();
      if (left > 0) {
        if (this.lingering === null) {
          this.lingering = setTimeout(() => {
            this.lingering = null;
            this.pump();
          }, left);
        }
        return;
      }
    }
    if (this.lingering !== null) {
      clearTimeout(this.lingering);
      this.lingering = null;
    }
    this.queue.splice(0, group.length);
    this.committing = true;
    const next = group[group.length - 1]!.next;
    this.committer
      .commit(
        group.map((e) => e.result as T),
        next,
      )
      .then(
        () => void (this.resume = next),
        (err: unknown) => this.fail(head.seq, err),
      )
      .finally(() => {
        this.committing = false;
        for (const e of group) this.finish(e);
        this.pump();
      });
  }

  private finish(e: Entry<T>): void {
    const i = this.queue.indexOf(e);
    if (i >= 0) this.queue.splice(i, 1);
    this.held -= e.records;
    e.settle();
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => this.held < w.records);
    this.waiters = this.waiters.filter((w) => this.held >= w.records);
    for (const w of ready) w.resolve();
  }

  private fail(seq: number, err: unknown): void {
    if (this.failedFrom === null) this.firstFailure = err;
    if (this.failedFrom === null || seq < this.failedFrom) this.failedFrom = seq;
  }
}
