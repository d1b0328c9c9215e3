/**
 * The claim/fence protocol: how ownership of a partition changes hands between instances of a
 * stage without a chunk being committed twice.
 *
 * Ownership of a partition changes hands by a claim, before the new owner processes anything: it
 * initialises the partition's transactional ids (fencing the previous owner, which may still be
 * alive and mid-chunk after a rebalance: its open transaction is aborted, a commit it already asked
 * for completes first, and nothing later of it can commit), then reads the group's committed offsets
 * and skips what lies below them. Reading first and fencing later is not enough: kafkajs commits
 * offsets without the group generation (no KIP-447), so the old owner's late commit would be
 * accepted after the new owner had read the offset before it, and both would process the chunk.
 * A failed transaction drops the claim and the next attempt claims again: only a claim creates
 * producers, so no commit happens without a read of the committed offsets taken after its fence.
 *
 * Proven against the real broker by test/runtime/handover.test.ts, which forces the bad order (an
 * old owner that commits after the new owner has taken the partition over); the order of the steps
 * inside one claim is pinned by test/runtime/claims.test.ts.
 */
import type { Admin, Kafka, Producer } from 'kafkajs';
import { createProducer } from './kafka.ts';
import type { Logger } from './log.ts';
import type { ChangelogStore } from './state-store.ts';

/** A claim still under way after this long is logged with the step it waits in (nothing of the partition is processed meanwhile). */
export const CLAIM_SLOW_MS = 10000;

/**
 * A partition taken over: its transactional producers (one per input topic) and, per input, the
 * floor below which records are not to be handled again: the committed offset at the time of the
 * claim, moved on by the runner as the claim hands records on ({@link advanceFloor}).
 */
export type Claim = { producers: Map<string, Producer>; floors: Map<string, bigint> };

/**
 * Moves the claim's floor of `topic` to `next` (never back), once the records before it are
 * committed or, in a pipelined stage, handed to the partition's pipeline. kafkajs can deliver
 * records again within one claim: after a leader change, a fetch from the new leader that was asked
 * from the last resolved offset while a batch of the old one was still being handled. Below the
 * moved floor they are skipped, as a previous owner's are. (A pipeline's failure moves it back to
 * the first record not committed.)
 */
export function advanceFloor(claim: Claim, topic: string, next: bigint): void {
  const floor = claim.floors.get(topic);
  if (floor === undefined || next > floor) claim.floors.set(topic, next);
}

/** How many of `messages` (in offset order) lie below `floor`: the leading records to skip. */
export function below(messages: ReadonlyArray<{ offset: string }>, floor: bigint): number {
  const first = messages.findIndex((m) => BigInt(m.offset) >= floor);
  return first === -1 ? messages.length : first;
}

/** What a claim works with. */
export interface ClaimResources {
  /** Makes the partition's transactional producers. */
  kafka: Pick<Kafka, 'producer'>;
  /** Reads the group's committed offsets. */
  admin: Pick<Admin, 'fetchOffsets'>;
  /** The consumer group; transactional ids are `<group>.<topic>.<partition>`. */
  group: string;
  /** The stage's input topic names (full names): a claim takes partition p of each of them. */
  topics: readonly string[];
  /**
   * The stage's state store, if any: a claim catches it up after the fence and before reading the
   * offsets, and the chunks of one partition then run one after another (see {@link PartitionClaims.runChunk}).
   */
  store: Pick<ChangelogStore<unknown>, 'catchUp'> | null;
  /**
   * Whether the chunks of one partition run one after another without a store too (a stage that is
   * not pipelined: its batches of a partition follow each other anyway, unless kafkajs delivers
   * some records twice, and then the second chunk must see the first one's floor).
   */
  serialChunks?: boolean;
  /** Where a slow claim is reported, once it has taken `slowClaimMs` (default {@link CLAIM_SLOW_MS}), and again when it ends. */
  logger?: Pick<Logger, 'warn' | 'info'>;
  slowClaimMs?: number;
}

/**
 * The claims of one stage instance, per partition number (partition p of every input topic is
 * claimed together: the co-partitioned assigner gives them to one member). The stage runner asks
 * for the current claim before each chunk, runs the chunk through {@link runChunk}, commits with
 * the claim's producer, and {@link drop}s the claim when the transaction failed.
 */
export class PartitionClaims {
  /** Per partition, the claim chunks of the current assignment commit under (gone once it failed). */
  private claims = new Map<number, Promise<Claim>>();
  /** Per partition, the latest claim of any assignment: claims of one partition run one after another. */
  private readonly latestClaims = new Map<number, Promise<Claim>>();
  /** Per partition, the chunks being processed or committed (a claim waits for them). */
  private readonly chunksInFlight = new Map<number, Set<Promise<void>>>();

  constructor(private readonly res: ClaimResources) {}

  /**
   * Takes `partition` of every input over, once per assignment and again after a transaction of it
   * failed: waits for this instance's chunks still in flight on it, replaces the previous claim's
   * producers with fresh ones (initialising their transactional ids fences every other holder),
   * catches the state store up, and then reads the committed offset of each input topic (records
   * below it were processed by a previous owner). Only a claim creates producers, so no transaction
   * commits without a look at the committed offsets taken after its producer's fence.
   *
   * Returns the partition's current claim if it has one. A claim that fails has disconnected the
   * producers it made and is forgotten, so the next call claims again.
   */
  claim(partition: number): Promise<Claim> {
    let claim = this.claims.get(partition);
    if (!claim) {
      const claims = this.claims;
      const previous = this.latestClaims.get(partition);
      claim = (async (): Promise<Claim> => {
        let step = 'waiting for the previous claim and the chunks in flight, disconnecting its producers';
        const slowMs = this.res.slowClaimMs ?? CLAIM_SLOW_MS;
        const started = performance.now();
        let warned = false;
        const slow = setTimeout(() => {
          warned = true;
          this.res.logger?.warn('partition claim slow; nothing of the partition is processed until it ends', { partition, step, waited_ms: slowMs });
        }, slowMs);
        let ended = 'failed';
        try {
          const taken = await this.take(partition, previous, (s) => (step = s));
          ended = 'claimed';
          return taken;
        } finally {
          clearTimeout(slow);
          // The slow line's other end: the partition is processed again (or the claim is tried anew).
          if (warned)
            this.res.logger?.info('partition claim ended after a slow wait', { partition, status: ended, waited_ms: Math.round(performance.now() - started) });
        }
      })();
      claim.catch(() => {
        if (claims.get(partition) === claim) claims.delete(partition);
      });
      claims.set(partition, claim);
      this.latestClaims.set(partition, claim);
    }
    return claim;
  }

  /** The steps of one claim ({@link claim}); `at` names each step as it begins, for the slow-claim line. */
  private async take(partition: number, previous: Promise<Claim> | undefined, at: (step: string) => void): Promise<Claim> {
    const before = await previous?.catch(() => null);
    await Promise.allSettled(this.chunksInFlight.get(partition) ?? []);
    await disconnectAll(before?.producers);
    const producers = new Map<string, Producer>();
    try {
      at('fencing the transactional ids');
      const fenced = await Promise.allSettled(
        this.res.topics.map(async (topic) => {
          const transactionalId = `${this.res.group}.${topic}.${partition}`;
          const producer = createProducer(this.res.kafka, { transactionalId });
          producers.set(topic, producer);
          await producer.connect();
          // kafkajs initialises the transactional id (InitProducerId: the epoch bump that
          // fences) when the producer's first transaction begins; an empty one ends without a request.
          await (await producer.transaction()).abort();
        }),
      );
      const failed = fenced.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      at('catching the state store up');
      await this.res.store?.catchUp(partition, [...producers.values()]);
      at('reading the committed offsets');
      // After the fence no earlier owner can commit; a commit it had asked for is complete, its
      // offsets included (Kafka >= 3.9.1 answers InitProducerId only once they are materialised).
      const offsets = await this.res.admin.fetchOffsets({ groupId: this.res.group, topics: [...this.res.topics] });
      const floors = new Map<string, bigint>();
      for (const { topic, partitions } of offsets) {
        const committed = partitions.find((p) => p.partition === partition)?.offset;
        if (committed !== undefined && BigInt(committed) >= 0n) floors.set(topic, BigInt(committed));
      }
      return { producers, floors };
    } catch (err) {
      await disconnectAll(producers);
      throw err;
    }
  }

  /** The claim chunks of `partition` commit under now: a chunk whose claim is no longer this one stops. */
  current(partition: number): Promise<Claim> | undefined {
    return this.claims.get(partition);
  }

  /**
   * Forgets `claim` after one of its transactions failed. A fenced or broken producer can't be
   * reused, and a fresh one must not simply take its place: initialising it would fence whoever
   * fenced us, without a new look at what they committed. The next chunk claims again.
   */
  drop(partition: number, claim: Promise<Claim>): void {
    if (this.claims.get(partition) === claim) this.claims.delete(partition);
  }

  /** A new assignment: every partition is claimed again before its next chunk (the producers stay until then). */
  reassigned(): void {
    this.claims = new Map();
  }

  /** Disconnects the producers of a partition this instance lost, once its chunks in flight have settled. */
  async retire(partition: number): Promise<void> {
    const claim = this.latestClaims.get(partition);
    await Promise.allSettled(this.chunksInFlight.get(partition) ?? []);
    if (!claim || this.latestClaims.get(partition) !== claim) return; // claimed again meanwhile: that claim replaces them
    this.latestClaims.delete(partition);
    await disconnectAll((await claim.catch(() => null))?.producers);
  }

  /**
   * Runs one chunk of `partition`, visible to a claim of the partition until it has settled. With a
   * state store, chunks of one partition (of its different input topics) run one after another: the
   * store's staged writes are per partition and settle with one chunk's transaction. With
   * `serialChunks` too.
   */
  async runChunk(partition: number, chunk: () => Promise<void>): Promise<void> {
    let chunks = this.chunksInFlight.get(partition);
    if (!chunks) this.chunksInFlight.set(partition, (chunks = new Set()));
    const before = this.res.store || this.res.serialChunks ? [...chunks] : [];
    const running = before.length ? Promise.allSettled(before).then(chunk) : chunk();
    chunks.add(running);
    try {
      await running;
    } finally {
      chunks.delete(running);
    }
  }

  /** Forgets every claim and disconnects their producers (the stage is stopping). */
  async stop(): Promise<void> {
    const claims = [...this.latestClaims.values()];
    this.latestClaims.clear();
    this.claims.clear();
    await Promise.all(claims.map(async (c) => disconnectAll((await c.catch(() => null))?.producers)));
  }
}

async function disconnectAll(producers: Map<string, Producer> | undefined): Promise<void> {
  await Promise.all([...(producers?.values() ?? [])].map((p) => p.disconnect().catch(() => undefined)));
}
