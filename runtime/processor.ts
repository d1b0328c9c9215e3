/**
 * The stage runtime's public entry: the stage contract ({@link StageDefinition}, declared in
 * ./runner/contract.ts and re-exported here) and the runner that keeps it ({@link StageRunner}).
 * The runner is the batch loop below and the parts it is made of, each with the argument for what it
 * keeps written beside its code:
 *
 * - ./claims.ts: the claim/fence protocol (who may commit a partition's chunks);
 * - ./runner/supervisor.ts: the group consumer, its crashes and its rebuilds;
 * - ./runner/strategy.ts: how a partition's chunks are handled and committed, serially
 *   (./runner/serial.ts) or through a pipeline (./runner/pipelined.ts, ./pipeline.ts);
 * - ./runner/record-processor.ts: one record's decode, handle, fit, encode or dead letter;
 * - ./runner/committer.ts: the transaction (outputs, dead letters, store tombstones and offset);
 * - ./dead-letter.ts, ./concurrency.ts, ./runner/lag.ts: dead-letter encoding, concurrency helpers,
 *   the lag gauge.
 */
import type { Admin, EachBatchPayload } from 'kafkajs';
import { TaoError, TransientError, errorMessage, errorReport, type ErrorReport } from './errors.ts';
import { ChangelogStore } from './state-store.ts';
import { PartitionClaims, below, type Claim } from './claims.ts';
import { Limiter, whileHeartbeating } from './concurrency.ts';
import type { StageDefinition, StageResources } from './runner/contract.ts';
import { RecordProcessor, sourcesOf, type Source } from './runner/record-processor.ts';
import { TransactionCommitter } from './runner/committer.ts';
import { LagGauge } from './runner/lag.ts';
import { ConsumerSupervisor } from './runner/supervisor.ts';
import type { PartitionStrategy, StrategyParts } from './runner/strategy.ts';
import { SerialStrategy } from './runner/serial.ts';
import { PipelinedStrategy } from './runner/pipelined.ts';

export type {
  DeadLettered,
  ExternalInput,
  HandledRecord,
  InputRecord,
  OutputRecord,
  OversizedOutput,
  StageDefinition,
  StageResources,
  StateView,
  StoreRetention,
} from './runner/contract.ts';
export { MAX_OUTPUT_VALUE_BYTES } from './runner/contract.ts';
export { DLQ_HEADERS, MAX_DEAD_LETTER_VALUE_BYTES } from './dead-letter.ts';

/**
 * Runs a {@link StageDefinition}: a read_committed consumer group, and one transactional producer
 * per input topic-partition (transactional id `<group>.<topic>.<partition>`). Each transaction holds
 * the outputs of a chunk of records and the offset after the chunk: a crash at any point either
 * commits both or neither (./runner/committer.ts).
 *
 * Ownership of a partition changes hands by a claim (./claims.ts, where the fencing argument is
 * written out): before a batch of a partition is processed, the partition is claimed (the previous
 * owner fenced, the store caught up, the committed offsets read after the fence) and records below
 * the committed offset are skipped; every chunk commits with its claim's producer, and a failed
 * transaction drops the claim, so the next attempt claims again. After a failure the partition is
 * read again from its last committed offset (./runner/serial.ts, ./runner/pipelined.ts).
 *
 * The batch loop ({@link eachBatch}) does what both strategies share; the unit tests drive it with a
 * fake consumer and fake transactional producers (test/runtime/runner/), the broker tests with a
 * real one (test/runtime/handover.test.ts, test/loop/exactly-once.test.ts).
 */
export class StageRunner {
  private readonly supervisor: ConsumerSupervisor;
  private readonly sources: Source[];
  private readonly group: string;
  private lastError: ErrorReport | null = null;
  private assigned: Record<string, number[]> = {};
  private readonly store: ChangelogStore<unknown> | null;
  private readonly admin: Admin;
  /** Bumped at every assignment; a batch of an earlier one stops before its next chunk. */
  private generation = 0;
  /** This instance's partition claims: the producers every chunk commits with (./claims.ts). */
  private readonly claims: PartitionClaims;
  private readonly lag: LagGauge;
  private readonly strategy: PartitionStrategy;
  /** The group heartbeat's interval: kafkajs's own, and the runner's while a claim or chunk is in progress. */
  private readonly heartbeatIntervalMs: number;

  constructor(
    private readonly def: StageDefinition,
    private readonly res: StageResources,
  ) {
    if (def.pipelined && def.storeTopic)
      throw new TaoError('INTERNAL', `stage ${def.stage}: a pipelined stage can't have a store (its staged writes settle with one chunk at a time)`);
    const { kafka, codec, logger, metrics } = res;
    const noteError = (err: unknown) => void (this.lastError = errorReport(err));
    this.group = codec.topics.group(def.stage);
    this.heartbeatIntervalMs = Math.max(500, Math.floor(res.sessionTimeoutMs / 5));
    this.sources = sourcesOf(def, codec, metrics);
    this.supervisor = new ConsumerSupervisor(
      {
        kafka,
        group: this.group,
        topics: this.sources.map((s) => s.name),
        sessionTimeoutMs: res.sessionTimeoutMs,
        heartbeatIntervalMs: this.heartbeatIntervalMs,
        rebalanceTimeoutMs: res.rebalanceTimeoutMs ?? Math.max(30000, res.sessionTimeoutMs * 2),
        partitionsConcurrently: def.partitionsConcurrently ?? 3,
        logger,
        onFatal: res.onFatal,
      },
      {
        assigned: (assignment) => this.onAssigned(assignment),
        emptyFetch: (topic, partition, lag) => this.lag.set(topic, partition, lag),
        eachBatch: (payload) => this.eachBatch(payload),
        noteError,
      },
    );
    this.store = def.storeTopic ? new ChangelogStore(kafka, codec, def.storeTopic, logger, res.onFatal, def.storeRetention?.expirable) : null;
    this.admin = kafka.admin();
    this.lag = new LagGauge(metrics.consumerLag, this.group);
    // Chunks of a partition run one after another unless they are pipelined (see PartitionClaims.runChunk).
    this.claims = new PartitionClaims({
      kafka,
      admin: this.admin,
      group: this.group,
      topics: this.sources.map((s) => s.name),
      store: this.store,
      serialChunks: !def.pipelined,
      logger,
    });
    // The per-record and per-transaction series, looked up once: prom-client hashes the labels of every call that passes them.
    const stage = { stage: def.stage };
    const parts: StrategyParts = {
      claims: this.claims,
      records: new RecordProcessor({
        def,
        codec,
        logger,
        store: this.store,
        limiter: def.maxInFlight ? new Limiter(def.maxInFlight) : null,
        handleSeconds: metrics.handleSeconds.labels(stage),
      }),
      committer: new TransactionCommitter({
        def,
        group: this.group,
        codec,
        logger,
        metrics,
        store: this.store,
        claims: this.claims,
        transactions: {
          committed: metrics.transactions.labels({ ...stage, result: 'committed' }),
          aborted: metrics.transactions.labels({ ...stage, result: 'aborted' }),
        },
        noteError,
      }),
      lag: this.lag,
      heartbeatIntervalMs: this.heartbeatIntervalMs,
      batchSeconds: metrics.batchSeconds.labels(stage),
    };
    this.strategy = def.pipelined
      ? new PipelinedStrategy({
          ...parts,
          maxRecordsPerTransaction: def.maxRecordsPerTransaction,
          lingerMs: def.pipelined.lingerMs,
          group: this.group,
          logger,
          consumer: this.supervisor,
          owns: (topic, partition) => this.assigned[topic]?.includes(partition) === true,
          noteError,
          onFatal: res.onFatal,
        })
      : new SerialStrategy(parts);
  }

  health(): { ok: boolean; stage: string; group: string; running: boolean; assigned: Record<string, number[]>; lastError: ErrorReport | null } & Record<
    string,
    unknown
  > {
    const running = this.supervisor.isRunning;
    // The store's partitions and entries: what this instance holds in memory (its assigned partitions, once restored).
    const store = this.store && { partitions: this.store.partitions(), entries: this.store.size() };
    return {
      ok: running,
      stage: this.def.stage,
      group: this.group,
      running,
      assigned: this.assigned,
      lastError: this.lastError,
      ...(store && { store }),
      ...this.def.describe?.(),
    };
  }

  async start(): Promise<void> {
    const { res } = this;
    const store = this.store;
    if (store) {
      await store.start();
      res.metrics.trackStoreSize(() => store.size());
    }
    const { inFlight } = this.def;
    // Counted in the store's own mirror of its partitions: a second reader of the topic would fetch
    // and decode every snapshot again.
    if (inFlight && store) res.metrics.trackInFlight(() => store.count(inFlight, new Set(Object.values(this.assigned).flat())));
    await this.admin.connect();
    await this.supervisor.start();
  }

  async stop(): Promise<void> {
    await this.supervisor.stop();
    // Chunks already handed to a pipeline commit (or fail) before their producers go.
    await this.strategy.drained();
    await this.admin.disconnect();
    await this.store?.stop();
    await this.claims.stop();
  }

  /**
   * A consumer joined the group: the store takes on the partitions it got (their restore starts
   * now; a claim's catch-up waits for it), the partitions it lost are retired and, once their chunks
   * in flight have settled, let go by the store unless assigned again meanwhile; every partition is
   * claimed again before its next chunk.
   */
  private onAssigned(assignment: Record<string, number[]>): void {
    const now = new Set(Object.values(assignment).flat());
    const revoked = [...new Set(Object.values(this.assigned).flat())].filter((p) => !now.has(p));
    for (const partition of now) this.store?.hold(partition);
    for (const partition of revoked)
      void this.claims.retire(partition).then(() => {
        if (!Object.values(this.assigned).some((ps) => ps.includes(partition))) this.store?.release([partition]);
      });
    this.generation++;
    this.claims.reassigned();
    this.assigned = assignment;
    this.lag.forgetRevoked(assignment);
    this.res.logger.info('partitions assigned', { group: this.group, assigned: assignment });
  }

  private sourceOf(topic: string): Source {
    const source = this.sources.find((s) => s.name === topic);
    if (!source) throw new TaoError('INTERNAL', `received a record from unsubscribed topic ${topic}`);
    return source;
  }

  /**
   * One batch of one partition: dropped if it belongs to an earlier assignment, else claimed, its
   * records below the claim's floor skipped (and resolved), the rest cut into chunks of
   * `maxRecordsPerTransaction` handed to the strategy one by one while the batch is still current.
   */
  private async eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const source = this.sourceOf(batch.topic);
    const { logger } = this.res;
    // kafkajs may rejoin the group from one fetcher while batches of another are queued or running
    // (stale metadata after a broker restart): a batch of a partition this instance no longer owns,
    // or of an earlier assignment, must not claim, process or resolve anything.
    const generation = this.generation;
    const current = () => generation === this.generation && this.assigned[batch.topic]?.includes(batch.partition) === true;
    if (!current()) return;
    const turn = this.strategy.begin({ source, partition: batch.partition, highWatermark: BigInt(batch.highWatermark), resolveOffset, heartbeat, current });
    if (!turn) return;
    // A member the group has evicted learns it here and rejoins, instead of claiming (and fencing
    // the partition's real owner) again and again while kafkajs retries the batch.
    await heartbeat();
    let claimed: Promise<Claim>;
    let claim: Claim;
    try {
      claimed = this.claims.claim(batch.partition);
      claim = await whileHeartbeating(claimed, heartbeat, this.heartbeatIntervalMs);
    } catch (err) {
      this.lastError = errorReport(err);
      throw new TransientError(`claiming ${batch.topic}[${batch.partition}] failed (${errorMessage(err)}); retried`);
    }
    if (!current() || !turn.admits()) return;
    // The claim's floor: what a previous owner committed, moved on by what this claim has handed
    // on since (see advanceFloor). A strategy that hands chunks on answers synchronously, so from
    // here to the last chunk nothing awaits, and two batches of one partition can't both take the
    // same records.
    let messages = batch.messages;
    const floor = claim.floors.get(batch.topic);
    const skipped = floor === undefined ? 0 : below(messages, floor);
    if (skipped > 0) {
      logger.info("records below the claim's floor were skipped (committed by a previous owner, or taken already and delivered again by kafkajs)", {
        group: this.group,
        topic: batch.topic,
        partition: batch.partition,
        skipped,
        committed: floor!.toString(),
      });
      resolveOffset(messages[skipped - 1]!.offset);
      messages = messages.slice(skipped);
    }
    for (let i = 0; i < messages.length; i += this.def.maxRecordsPerTransaction) {
      // A batch of an earlier assignment or claim stops here: the partition may be another
      // instance's now, and kafkajs delivers the rest again from the last resolved offset.
      if (!isRunning() || isStale() || !current() || this.claims.current(batch.partition) !== claimed) return;
      const chunk = messages.slice(i, i + this.def.maxRecordsPerTransaction);
      const last = chunk[chunk.length - 1]!;
      // The batch's last chunk commits past the batch's trailing transaction markers too
      // (lastOffset() counts them), which would otherwise read as a lag of 1 on an idle partition.
      const next = i + chunk.length >= messages.length ? max(BigInt(batch.lastOffset()), BigInt(last.offset)) + 1n : BigInt(last.offset) + 1n;
      const handled = turn.chunk({ messages: chunk, next, claimed, claim });
      if (!(typeof handled === 'boolean' ? handled : await handled)) return;
    }
    await turn.end();
  }
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
