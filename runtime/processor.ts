/**
 * The stage runtime's public entry: the stage contract ({@link StageDefinition}) and the batch loop
 * that keeps it ({@link StageRunner}). Its parts live beside it: the claim/fence protocol in
 * ./claims.ts, dead-letter encoding in ./dead-letter.ts, concurrency helpers in ./concurrency.ts.
 */
import type { Admin, Consumer, EachBatchPayload, IHeaders, Kafka, KafkaMessage, Message, RecordMetadata, Transaction } from 'kafkajs';
import type { AvroCodec } from './codec.ts';
import { ContractViolation, TaoError, TransientError, errorMessage, toTaoError } from './errors.ts';
import type { Logger } from './log.ts';
import type { StageMetrics } from './metrics.ts';
import { traceparentFor } from './trace.ts';
import { coPartitionedAssigner } from './assigner.ts';
import { ChangelogStore } from './state-store.ts';
import { PartitionClaims, advanceFloor, below, type Claim } from './claims.ts';
import { Limiter, mapLimit, whileHeartbeating } from './concurrency.ts';
import { PartitionPipeline, type PipelineCommitter } from './pipeline.ts';
import { MAX_DEAD_LETTER_VALUE_BYTES, deadLetter } from './dead-letter.ts';
import type { TopicId } from '../topics/catalog.ts';

export { DLQ_HEADERS, MAX_DEAD_LETTER_VALUE_BYTES } from './dead-letter.ts';

/** One decoded input record, as a stage's handler sees it. */
export interface InputRecord<T = unknown> {
  /** The catalog topic, or 'external' for a record of an {@link ExternalInput}. */
  topic: TopicId | 'external';
  partition: number;
  offset: string;
  /**
   * The record's timestamp (ms since epoch): its record time, the only time a decision may use.
   * The runner always sets it; a record made by hand (a test) may leave it out.
   */
  timestampMs?: number;
  /** The run's thought_id (the record key). */
  key: string;
  value: T;
  headers: Record<string, string>;
}

/** A record a handler asks to write. Keyed by the run's thought_id; `span` names the writer for tracing. */
export interface OutputRecord {
  topic: TopicId;
  key: string;
  value: unknown;
  span: string;
}

/** An input record a committed transaction consumed, and the records its handler wrote for it. */
export interface HandledRecord {
  input: InputRecord;
  outputs: readonly OutputRecord[];
}

/**
 * A stage of the loop, declared by what it reads and writes and how it decides. The runtime calls
 * `handle` once per input record (possibly again after a crash, since only committed outputs count)
 * and writes its outputs, together with the input offset, in one Kafka transaction.
 *
 * `handle` contract:
 * - returns the records to write (possibly none);
 * - throws a {@link TaoError} that is not `retriable` for input that can never be processed: the
 *   record goes to `<input>.dlq` with the error in its headers and the partition moves on;
 * - throws a `retriable` TaoError when a dependency is down: nothing is committed and the batch is
 *   retried from the last committed offset.
 */
export interface StageDefinition {
  stage: string;
  inputs: readonly TopicId[];
  outputs: readonly TopicId[];
  /**
   * A keyed state store backed by this compacted output topic (see {@link ChangelogStore}). Records
   * the handler writes to it are visible through `state.get` to later records at once.
   */
  storeTopic?: TopicId;
  /**
   * For a stage with a store: entries that leave it after a retention of record time
   * (./retention.ts). Each transaction of a partition then also writes tombstones, in the store
   * topic, for up to `sweepPerTransaction` entries for which `expirable` holds and that were written
   * `retentionMs` or more before the partition's stream time; the store drops them from memory.
   */
  storeRetention?: StoreRetention;
  handle(record: InputRecord, state: StateView): Promise<OutputRecord[]>;
  /** Topics outside the catalog this stage also reads (an ingress source), each with its decoder and dead-letter topic. */
  externalInputs?: readonly ExternalInput[];
  /** Records handled concurrently within one partition's batch (they belong to different runs). */
  concurrency: number;
  /**
   * Records handled at once by this instance across all its partitions (unset: no cap beyond
   * `concurrency` per chunk). With it, an instance's I/O capacity is a fixed number of calls in
   * flight, so another instance adds that much again (Action: TAO_ACTION_CONCURRENCY).
   */
  maxInFlight?: number;
  /**
   * Partitions whose batches this instance handles at the same time (default 3). A stage whose
   * handler mostly waits on I/O raises it so every partition it owns feeds `maxInFlight`.
   */
  partitionsConcurrently?: number;
  /** Records per transaction. */
  maxRecordsPerTransaction: number;
  /**
   * Hand each chunk to its partition's pipeline and return to kafkajs at once (./pipeline.ts): the
   * next fetch comes while earlier chunks are still being handled, and chunks commit one after
   * another in offset order, those handled while a transaction of their partition commits
   * together in the next one (up to `maxRecordsPerTransaction`). For a stage whose records mostly
   * wait on I/O (Action); not with a store. A partition holding twice
   * `maxRecordsPerTransaction` uncommitted records or more keeps its batch until it holds fewer
   * (kafkajs fetches again once every batch of its last fetch has returned). `lingerMs`: how long a
   * handled chunk waits, at most, for the chunks behind it still being handled, to share their
   * transaction ({@link PipelineCommitter.lingerMs}).
   */
  pipelined?: { lingerMs: number };
  /** Larger input values are dead-lettered unread. */
  maxInputBytes: number;
  /**
   * Called when an output of `input` would be over {@link MAX_OUTPUT_VALUE_BYTES} (the broker would
   * refuse it): the outputs to write instead, smaller (Action drops the largest responses, Thought
   * ends the run as failed), or null to dead-letter the input as RECORD_TOO_LARGE. Replacements
   * over the limit are dead-lettered too.
   */
  fitOutputs?(input: InputRecord, outputs: readonly OutputRecord[], over: OversizedOutput): OutputRecord[] | null;
  /** Stage-specific state for /health (for example breaker states). */
  describe?(): Record<string, unknown>;
  /**
   * Called once a transaction has committed, with every record of it that was handled (dead letters
   * excluded) and what the handler wrote for it: the place for counters and log lines that must
   * match the committed log. A chunk that aborts is not reported; its retry is, once it commits.
   * Runs synchronously between transactions; an exception is logged, never retried.
   */
  committed?(records: readonly HandledRecord[]): void;
  /**
   * For a stage with a store: whether a stored value is a run in flight. The runner then exports
   * `tao_runs_in_flight`, the number of such values in the partitions this instance owns, counted
   * at each scrape in the store's mirror of the store topic (so it is right again after a restart).
   */
  inFlight?(stored: unknown): boolean;
}

export interface StageResources {
  kafka: Kafka;
  codec: AvroCodec;
  logger: Logger;
  metrics: StageMetrics;
  sessionTimeoutMs: number;
  /**
   * How long the group waits for every member to rejoin a rebalance; a member still handling a chunk
   * by then is removed. Default the larger of 30 s and twice the session timeout.
   */
  rebalanceTimeoutMs?: number;
  /** Partitions of different topics/partitions processed at the same time. */
  partitionsConsumedConcurrently?: number;
  /** Called when the consumer has stopped for good (kafkajs will not restart it). */
  onFatal?(error: Error): void;
}

/**
 * A topic outside the loop's catalog (an existing business topic) that a stage reads. Its records are
 * not keyed by thought_id and not in the loop's Avro contracts: `decode` turns the bytes into the
 * value the handler gets, and throws a non-retriable TaoError for a record that can't be read.
 */
export interface ExternalInput {
  /** The topic's full name, used as is (no namespace prefix). */
  topic: string;
  /** Where its bad records go. */
  dlq: string;
  decode(value: Buffer | null): Promise<unknown>;
}

/** An input of a stage as the runner sees it: a catalog topic or an external one. */
interface Source {
  id: TopicId | 'external';
  name: string;
  dlq: string;
  decode(value: Buffer | null): Promise<unknown>;
  /** Catalog records are keyed by the thought_id their value carries. */
  keyed: boolean;
  /** `tao_records_in_total` of this stage and topic (the labelled series, looked up once). */
  recordsIn: { inc(): void };
}

/** Read access to the stage's state store (empty when the stage declares none). */
export interface StateView {
  get<V>(key: string): V | undefined;
  /**
   * The partition's stream time: the largest input record time of the chunks processed before this
   * one (restored from the changelog after a restart); null before any, or without a store. The
   * runner always provides it; a view made by hand (a test) may leave it out.
   */
  streamTimeMs?(): number | null;
}

/** How a stage's store sheds entries by record time (see {@link StageDefinition.storeRetention}). */
export interface StoreRetention {
  retentionMs: number;
  /** Whether a stored value may leave the store once the retention has passed (Thought: an ended run). */
  expirable(stored: unknown): boolean;
  /** Tombstones per transaction, at most (bounds the work a sweep adds to a chunk). */
  sweepPerTransaction: number;
}

/** Largest output value a stage writes; an input whose output is larger is dead-lettered as RECORD_TOO_LARGE (unless the stage's {@link StageDefinition.fitOutputs} makes it fit). */
export const MAX_OUTPUT_VALUE_BYTES = MAX_DEAD_LETTER_VALUE_BYTES;

/** The output that did not fit: which of the handler's outputs, and its encoded size. */
export interface OversizedOutput {
  index: number;
  topic: TopicId;
  bytes: number;
  limit: number;
}

type TopicMessages = { topic: string; messages: Message[] };
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
/** What processing one record produced: the encoded records, and what to report once they commit. */
type Processed = { encoded: TopicMessages[]; handled: HandledRecord | null; deadLetter: { topic: string; reason: string } | null };

/**
 * Runs a {@link StageDefinition}: a read_committed consumer group, and one transactional producer
 * per input topic-partition (transactional id `<group>.<topic>.<partition>`). Each transaction holds
 * the outputs of a chunk of records and the offset after the chunk: a crash at any point either
 * commits both or neither.
 *
 * Ownership of a partition changes hands by a claim (./claims.ts, where the fencing argument is
 * written out): before a batch of a partition is processed, the partition is claimed (the previous
 * owner fenced, the store caught up, the committed offsets read after the fence) and records below
 * the committed offset are skipped; every chunk commits with its claim's producer, and a failed
 * transaction drops the claim, so the next attempt claims again.
 */
export class StageRunner {
  private consumer: Consumer;
  private stopping = false;
  /** Consumers rebuilt in a row since the last successful join (see {@link rebuild}). */
  private rebuilds = 0;
  private readonly sources: Source[];
  private readonly group: string;
  private running = false;
  /** Consumers kafkajs stopped for good (a crash without restart): one may crash inside its own `run()`. */
  private readonly stoppedConsumers = new WeakSet<Consumer>();
  private lastError: string | null = null;
  private assigned: Record<string, number[]> = {};
  private readonly store: ChangelogStore<unknown> | null;
  private readonly admin: Admin;
  /** Bumped at every assignment; a batch of an earlier one stops before its next chunk. */
  private generation = 0;
  /** This instance's partition claims: the producers every chunk commits with (./claims.ts). */
  private readonly claims: PartitionClaims;
  /** Lag gauge label sets this instance has set, so a revoked partition's series can be removed. */
  private readonly lagSeries = new Map<string, { group: string; topic: string; partition: string }>();
  /** The instance-wide cap of {@link StageDefinition.maxInFlight} (null: none). */
  private readonly limiter: Limiter | null;
  /** Pipelined stages: per input topic-partition, its chunks in flight and its recovery state (see {@link StageDefinition.pipelined}). */
  private readonly pipelines = new Map<string, Pipelined>();
  private readonly series: { handle: { startTimer(): () => void }; batch: { startTimer(): () => void }; committed: { inc(): void }; aborted: { inc(): void } };

  constructor(
    private readonly def: StageDefinition,
    private readonly res: StageResources,
  ) {
    this.group = res.codec.topics.group(def.stage);
    this.consumer = this.createConsumer();
    this.store = def.storeTopic ? new ChangelogStore(res.kafka, res.codec, def.storeTopic, res.logger, res.onFatal, def.storeRetention?.expirable) : null;
    this.admin = res.kafka.admin();
    this.limiter = def.maxInFlight ? new Limiter(def.maxInFlight) : null;
    if (def.pipelined && def.storeTopic) throw new TaoError('INTERNAL', `stage ${def.stage}: a pipelined stage can't have a store (its staged writes settle with one chunk at a time)`);
    const { codec, metrics } = res;
    const recordsIn = (topic: string) => metrics.recordsIn.labels({ stage: def.stage, topic });
    this.sources = [
      ...def.inputs.map((id): Source => ({ id, name: codec.topics.name(id), dlq: codec.topics.dlq(id), decode: (v) => codec.decode(id, v), keyed: true, recordsIn: recordsIn(codec.topics.name(id)) })),
      ...(def.externalInputs ?? []).map((x): Source => ({ id: 'external', name: x.topic, dlq: x.dlq, decode: (v) => x.decode(v), keyed: false, recordsIn: recordsIn(x.topic) })),
    ];
    // The per-record and per-transaction series, looked up once: prom-client hashes the labels of every call that passes them.
    this.series = {
      handle: metrics.handleSeconds.labels({ stage: def.stage }),
      batch: metrics.batchSeconds.labels({ stage: def.stage }),
      committed: metrics.transactions.labels({ stage: def.stage, result: 'committed' }),
      aborted: metrics.transactions.labels({ stage: def.stage, result: 'aborted' }),
    };
    this.claims = new PartitionClaims({ kafka: res.kafka, admin: this.admin, group: this.group, topics: this.sources.map((s) => s.name), store: this.store, serialChunks: !def.pipelined, logger: res.logger });
  }

  health(): { ok: boolean; stage: string; group: string; running: boolean; assigned: Record<string, number[]>; lastError: string | null } & Record<string, unknown> {
    return { ok: this.running, stage: this.def.stage, group: this.group, running: this.running, assigned: this.assigned, lastError: this.lastError, ...this.def.describe?.() };
  }

  async start(): Promise<void> {
    const { res } = this;
    const store = this.store;
    if (store) {
      await store.start();
      res.metrics.trackStoreSize(() => store.size());
    }
    const { inFlight } = this.def;
    // Counted in the store's own mirror of the topic: a second reader of it would fetch and decode
    // every snapshot again.
    if (inFlight && store) res.metrics.trackInFlight(() => store.count(inFlight, new Set(Object.values(this.assigned).flat())));
    await this.admin.connect();
    await this.runConsumer();
  }

  /** The stage's group consumer, with the handlers that follow its assignments, lag and crashes. */
  private createConsumer(): Consumer {
    const { res } = this;
    const consumer = res.kafka.consumer({
      groupId: this.group,
      readUncommitted: false,
      sessionTimeout: res.sessionTimeoutMs,
      heartbeatInterval: this.heartbeatIntervalMs,
      rebalanceTimeout: res.rebalanceTimeoutMs ?? Math.max(30000, res.sessionTimeoutMs * 2),
      maxBytesPerPartition: 1024 * 1024,
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 10000 },
      partitionAssigners: [coPartitionedAssigner],
    });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      this.rebuilds = 0;
      const now = new Set(Object.values(payload.memberAssignment).flat());
      const revoked = [...new Set(Object.values(this.assigned).flat())].filter((p) => !now.has(p));
      this.store?.release(revoked);
      for (const partition of revoked) void this.claims.retire(partition);
      this.generation++;
      this.claims.reassigned();
      this.assigned = payload.memberAssignment;
      this.forgetRevokedLag(payload.memberAssignment);
      res.logger.info('partitions assigned', { group: this.group, assigned: payload.memberAssignment });
    });
    // A fetch that returned only transaction markers (or aborted records) never reaches eachBatch,
    // yet moves the position past offsets that would otherwise show as lag forever.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.batchSize === 0) this.setLag(payload.topic, payload.partition, BigInt(payload.highWatermark) - BigInt(payload.lastOffset) - 1n);
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (consumer !== this.consumer) return;
      this.lastError = errorMessage(payload.error);
      this.running = payload.restart;
      if (!payload.restart) this.stoppedConsumers.add(consumer);
      res.logger.error('consumer crashed', { group: this.group, error: payload.error, restart: payload.restart });
      if (!payload.restart) void this.rebuild(payload.error);
    });
    return consumer;
  }

  private async runConsumer(): Promise<void> {
    const consumer = this.consumer;
    await consumer.connect();
    for (const source of this.sources) await consumer.subscribe({ topic: source.name, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.res.partitionsConsumedConcurrently ?? this.def.partitionsConcurrently ?? 3,
      eachBatch: (payload) => this.eachBatch(payload),
    });
    // kafkajs's run() resolves even when its first join failed for good (it reports that as a
    // crash, already handled above): such a consumer is not running.
    if (!this.stoppedConsumers.has(consumer)) this.running = true;
  }

  /**
   * kafkajs stops a consumer for good on errors it does not classify as retriable, some of which
   * are passing (no group coordinator while the broker restarts). The runner replaces the consumer
   * with a new one, up to 5 times in a row with a growing pause (the count resets once a new one
   * joins the group), and gives up through `onFatal` after that: the process then exits for its
   * supervisor.
   */
  private async rebuild(error: Error): Promise<void> {
    while (!this.stopping) {
      if (++this.rebuilds > 5) {
        this.res.logger.error('consumer could not be rebuilt 5 times in a row; giving up', { group: this.group, error });
        this.res.onFatal?.(error);
        return;
      }
      const pauseMs = 2000 * this.rebuilds;
      this.res.logger.warn('rebuilding the stopped consumer', { group: this.group, attempt: this.rebuilds, pause_ms: pauseMs });
      await new Promise((r) => setTimeout(r, pauseMs));
      if (this.stopping) return;
      await this.consumer.disconnect().catch(() => undefined);
      this.consumer = this.createConsumer();
      try {
        await this.runConsumer();
        return;
      } catch (err) {
        this.lastError = errorMessage(err);
        error = err as Error;
      }
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.running = false;
    await this.consumer.disconnect();
    // Chunks already handed to a pipeline commit (or fail) before their producers go.
    await Promise.all([...this.pipelines.values()].map((p) => p.pipeline.drained()));
    await this.admin.disconnect();
    await this.store?.stop();
    await this.claims.stop();
  }

  private sourceOf(topic: string): Source {
    const source = this.sources.find((s) => s.name === topic);
    if (!source) throw new TaoError('INTERNAL', `received a record from unsubscribed topic ${topic}`);
    return source;
  }

  private async eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const source = this.sourceOf(batch.topic);
    const { logger } = this.res;
    // kafkajs may rejoin the group from one fetcher while batches of another are queued or running
    // (stale metadata after a broker restart): a batch of a partition this instance no longer owns,
    // or of an earlier assignment, must not claim, process or resolve anything.
    const generation = this.generation;
    const current = () => generation === this.generation && this.assigned[batch.topic]?.includes(batch.partition) === true;
    if (!current()) return;
    const pipelined = this.def.pipelined ? this.pipelined(batch.topic, batch.partition) : null;
    // A failed chunk: the partition is paused and will be read again from its last committed chunk;
    // what kafkajs fetched before the pause is not handled. A consumer restarted by kafkajs since
    // has lost the pause: paused again here, or it would fetch the partition in a loop until then.
    if (pipelined?.pipeline.failure) {
      this.pauseFetching(pipelined);
      return;
    }
    const noticed = pipelined?.failuresNoticed;
    // A member the group has evicted learns it here and rejoins, instead of claiming (and fencing
    // the partition's real owner) again and again while kafkajs retries the batch.
    await heartbeat();
    let claimed: Promise<Claim>;
    let claim: Claim;
    try {
      claimed = this.claims.claim(batch.partition);
      claim = await whileHeartbeating(claimed, heartbeat, this.heartbeatIntervalMs);
    } catch (err) {
      this.lastError = errorMessage(err);
      throw new TransientError(`claiming ${batch.topic}[${batch.partition}] failed (${errorMessage(err)}); retried`);
    }
    // A chunk of the pipelined partition may have failed while this batch waited for its claim: a
    // chunk added now could still be in hand when the recovery resets the failure, and would then
    // commit an offset past the failed records. kafkajs delivers the batch again after the rewind.
    // So may a chunk that failed and was already recovered from meanwhile (a slow claim): this batch
    // was fetched before the recovery's rewind, and its records after the failed ones would
    // otherwise be handed on ahead of them.
    if (!current() || pipelined?.pipeline.failure || pipelined?.failuresNoticed !== noticed) return;
    // The claim's floor: what a previous owner committed, moved on by what this claim has handed
    // on since (see advanceFloor). From here to the last enqueue nothing awaits, so two batches of
    // one pipelined partition can't both take the same records.
    let messages = batch.messages;
    const floor = claim.floors.get(batch.topic);
    const skipped = floor === undefined ? 0 : below(messages, floor);
    if (skipped > 0) {
      logger.info('records below the claim\'s floor were skipped (committed by a previous owner, or taken already and delivered again by kafkajs)', { group: this.group, topic: batch.topic, partition: batch.partition, skipped, committed: floor!.toString() });
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
      if (pipelined) {
        if (pipelined.claim !== claim) {
          // A new claim's first chunk: what others had committed when it was taken (see recover).
          pipelined.claim = claim;
          pipelined.claimFloor = claim.floors.get(batch.topic);
        }
        // kafkajs reads on from here; a failure rewinds it (see recover).
        this.enqueue(pipelined, source, batch, chunk, next, claimed);
        advanceFloor(claim, batch.topic, next);
        resolveOffset(last.offset);
        continue;
      }
      // The chunks of a partition run one after another (./claims.ts): a chunk kafkajs delivered
      // again in a second batch meanwhile finds the records the first one committed below the floor.
      let committed = false;
      const run = async () => {
        // The chunk before it failed and dropped the claim: kafkajs delivers this one again too.
        if (this.claims.current(batch.partition) !== claimed) return;
        const floorNow = claim.floors.get(batch.topic);
        const fresh = floorNow === undefined ? chunk : chunk.slice(below(chunk, floorNow));
        if (fresh.length > 0) await this.processChunk(source, batch.partition, fresh, next, claimed);
        advanceFloor(claim, batch.topic, next);
        committed = true;
      };
      await whileHeartbeating(this.claims.runChunk(batch.partition, run), heartbeat, this.heartbeatIntervalMs);
      // Not committed (the claim was dropped): kafkajs fetches again from the last resolved offset.
      // Committed, but the partition was reassigned meanwhile: kafkajs starts again from the
      // committed offsets. Either way there is nothing to resolve.
      if (!committed || !current()) return;
      this.setLag(batch.topic, batch.partition, BigInt(batch.highWatermark) - next);
      resolveOffset(last.offset);
      await heartbeat();
    }
    // Back-pressure: kafkajs fetches again once this returns. (Pausing the partition instead would
    // stall it: kafkajs sleeps its whole fetch wait when every partition is paused, and a resumed
    // partition waits for a fetch already in progress without it.)
    if (pipelined) await whileHeartbeating(pipelined.pipeline.below(this.backlogLimit), heartbeat, this.heartbeatIntervalMs);
  }

  /** The pipeline of one input topic-partition (made on first use, kept across assignments). */
  private pipelined(topic: string, partition: number): Pipelined {
    const key = `${topic}\u0000${partition}`;
    let p = this.pipelines.get(key);
    if (!p) {
      const source = this.sourceOf(topic);
      const pipeline = new PartitionPipeline<HandledChunk>({
        maxRecords: this.def.maxRecordsPerTransaction,
        lingerMs: this.def.pipelined?.lingerMs ?? 0,
        // One transaction is one claim's producer.
        mergeable: (a, b) => a.claim === b.claim,
        commit: async (chunks, next) => {
          const messages = chunks.flatMap((c) => c.messages);
          await this.commitChunk(source, partition, messages, next, chunks[0]!.claim, chunks.flatMap((c) => c.processed), () => {
            for (const c of chunks) c.endBatch();
          });
          p!.failures = 0;
          this.setLag(topic, partition, chunks[chunks.length - 1]!.highWatermark - next);
        },
      });
      this.pipelines.set(key, (p = { topic, partition, pipeline, paused: false, failures: 0, failuresNoticed: 0, claim: null, claimFloor: undefined }));
    }
    return p;
  }

  /** Hands a chunk to its partition's pipeline: handled now, committed after the chunks before it (with those waiting beside it). */
  private enqueue(p: Pipelined, source: Source, batch: EachBatchPayload['batch'], messages: KafkaMessage[], next: bigint, claim: Promise<Claim>): void {
    const { pipeline, partition } = p;
    const endBatch = this.series.batch.startTimer();
    const highWatermark = BigInt(batch.highWatermark);
    const handle = async (): Promise<HandledChunk> => ({ messages, claim, endBatch, highWatermark, processed: await this.handleChunk(source, partition, messages, pipeline) });
    const settled = this.claims.runChunk(partition, () => pipeline.add(messages.length, BigInt(messages[0]!.offset), next, handle));
    void settled.then(() => {
      if (pipeline.failure) this.pause(p);
    });
  }

  /** Uncommitted records at which a pipelined partition's next batch waits (and so kafkajs's next fetch): two full transactions. */
  private get backlogLimit(): number {
    return 2 * this.def.maxRecordsPerTransaction;
  }

  /** Stops fetching a pipelined partition whose chunk failed, and schedules reading it again ({@link recover}). */
  private pause(p: Pipelined): void {
    if (p.paused) return;
    p.paused = true;
    p.failuresNoticed++;
    this.pauseFetching(p);
    this.recover(p).catch((err: unknown) => {
      // The partition would stay paused for good: exit for the supervisor instead.
      this.res.logger.error('recovering a failed partition failed', { group: this.group, topic: p.topic, partition: p.partition, error: err as Error });
      this.res.onFatal?.(err as Error);
    });
  }

  private pauseFetching(p: Pipelined): void {
    this.onConsumer('pause', p, (c) => c.pause([{ topic: p.topic, partitions: [p.partition] }]));
  }

  /**
   * Pauses, seeks or resumes the current consumer. kafkajs refuses these (throws) between a crash
   * and its restart, and a rebuilt consumer refuses them until it runs: a consumer in either state
   * joins the group again with nothing paused and reads every partition from its committed offset,
   * which is where a failed partition is to be read again from anyway, so the call is skipped.
   */
  private onConsumer(what: 'pause' | 'seek' | 'resume', p: Pipelined, call: (consumer: Consumer) => void): void {
    try {
      call(this.consumer);
    } catch (err) {
      this.res.logger.info(`${what} skipped: the consumer is restarting and reads the partition from its committed offset`, { group: this.group, topic: p.topic, partition: p.partition, error: errorMessage(err) });
    }
  }

  /**
   * After a chunk of a pipelined partition failed: once every chunk of it has settled, and after a
   * backoff that grows with failures in a row (300 ms to 10 s, as kafkajs retries a batch), kafkajs
   * reads the partition again from the offset after its last committed chunk. The next batch claims
   * the partition again if the failed transaction dropped the claim.
   */
  private async recover(p: Pipelined): Promise<void> {
    const { pipeline } = p;
    await pipeline.drained();
    p.failures++;
    const delayMs = Math.min(10000, 300 * 2 ** (p.failures - 1));
    // The first record not committed. The pipeline outlives assignments, and until this claim's
    // first commit its offset may date from before the claim (before another owner's commits):
    // never below what others had committed when the claim was taken.
    const resumeAt = pipeline.resumeAt !== null && p.claimFloor !== undefined ? max(pipeline.resumeAt, p.claimFloor) : pipeline.resumeAt;
    this.lastError = errorMessage(pipeline.failure);
    this.res.logger.warn('a chunk failed; the partition is read again from its last committed chunk', { group: this.group, topic: p.topic, partition: p.partition, offset: resumeAt?.toString() ?? null, retry_in_ms: delayMs, error: errorMessage(pipeline.failure) });
    await new Promise((r) => setTimeout(r, delayMs));
    if (this.stopping) return;
    // Not ours any more: the next owner (or our next assignment) starts from the committed offsets.
    if (resumeAt !== null && this.assigned[p.topic]?.includes(p.partition)) this.onConsumer('seek', p, (c) => c.seek({ topic: p.topic, partition: p.partition, offset: resumeAt.toString() }));
    // The records from resumeAt on were handed on but not committed: the claim takes them again.
    if (resumeAt !== null && p.claim) p.claim.floors.set(p.topic, resumeAt);
    pipeline.reset();
    p.paused = false;
    this.onConsumer('resume', p, (c) => c.resume([{ topic: p.topic, partitions: [p.partition] }]));
  }

  /** The group heartbeat's interval: kafkajs's own, and the runner's while a claim or chunk is in progress. */
  private get heartbeatIntervalMs(): number {
    return Math.max(500, Math.floor(this.res.sessionTimeoutMs / 5));
  }

  /** Handles a chunk of one partition and commits its outputs with the offset `next` (after the chunk), in one transaction. */
  private async processChunk(source: Source, partition: number, chunk: KafkaMessage[], next: bigint, claim: Promise<Claim>): Promise<void> {
    const endBatch = this.series.batch.startTimer();
    let processed: Processed[];
    try {
      processed = await this.handleChunk(source, partition, chunk, null);
    } catch (err) {
      this.store?.abort(partition);
      throw err;
    }
    await this.commitChunk(source, partition, chunk, next, claim, processed, endBatch);
  }

  /**
   * Handles every record of a chunk of one partition (dead letters included) and returns what each
   * produced, in the chunk's order. In a pipeline, a run's records also wait for its records of
   * earlier chunks. Throws the first retriable error, once nothing of the chunk is still running.
   */
  private async handleChunk(source: Source, partition: number, chunk: KafkaMessage[], pipeline: PartitionPipeline<HandledChunk> | null): Promise<Processed[]> {
    // Records of one run are handled in order (a later one may read what an earlier one stored);
    // different runs are handled concurrently.
    const byKey = new Map<string, KafkaMessage[]>();
    for (const m of chunk) {
      const key = m.key?.toString('utf8') ?? '';
      const same = byKey.get(key);
      if (same) same.push(m);
      else byKey.set(key, [m]);
    }
    const processed = new Map<KafkaMessage, Processed>();
    const one = (m: KafkaMessage) => (this.limiter ? this.limiter.run(() => this.processOne(source, partition, m)) : this.processOne(source, partition, m));
    await mapLimit([...byKey.entries()], this.def.concurrency, async ([key, messages]) => {
      for (const m of messages) processed.set(m, await (pipeline ? pipeline.inKeyOrder(key, () => one(m)) : one(m)));
    });
    return chunk.map((m) => processed.get(m)!);
  }

  /** Commits what a chunk of one partition produced with the offset `next` (after the chunk), in one transaction. */
  private async commitChunk(source: Source, partition: number, chunk: KafkaMessage[], next: bigint, claim: Promise<Claim>, processed: Processed[], endBatch: () => void): Promise<void> {
    const { metrics, logger } = this.res;
    const outputs = processed.map((p) => p.encoded);
    const swept = this.sweep(partition, chunk);
    let transaction: Transaction | null = null;
    try {
      const producer = (await claim).producers.get(source.name)!;
      transaction = await producer.transaction();
      const topicMessages = mergeByTopic([...outputs.flat(), ...swept]);
      const written = topicMessages.length > 0 ? await transaction.sendBatch({ topicMessages }) : [];
      await transaction.sendOffsets({
        consumerGroupId: this.group,
        topics: [{ topic: source.name, partitions: [{ partition, offset: next.toString() }] }],
      });
      await transaction.commit();
      this.store?.commit(partition, this.lastStoreOffset(partition, topicMessages, written));
      // The stream time moves with the committed chunk (a retried chunk sees the same one).
      for (const m of chunk) this.store?.observe(partition, Number(m.timestamp));
      this.series.committed.inc();
      for (const { topic, messages } of topicMessages) metrics.recordsOut.inc({ stage: this.def.stage, topic }, messages.length);
    } catch (err) {
      this.series.aborted.inc();
      this.store?.abort(partition);
      await transaction?.abort().catch((abortErr: Error) => logger.warn('transaction abort failed', { error: abortErr }));
      // The producer can't be reused: the next attempt claims the partition again (fence, then read
      // the committed offsets; PartitionClaims.drop says why).
      this.claims.drop(partition, claim);
      this.lastError = errorMessage(err);
      logger.warn('transaction aborted; the chunk is retried from the last committed offset', { group: this.group, topic: source.name, partition, records: chunk.length, error: errorMessage(err) });
      // Retriable whatever the cause, so that kafkajs retries the batch from the last committed
      // offset (and rejoins the group) instead of stopping this consumer for good: a producer fenced
      // by a partition's new owner is a normal part of a rebalance. Not chained as a cause: kafkajs
      // decides whether to restart from the innermost cause.
      throw new TransientError(`transaction on ${source.name}[${partition}] failed and was aborted (${errorMessage(err)}); the chunk is retried from the last committed offset`);
    }
    endBatch();
    if (swept.length) logger.debug('expired store entries tombstoned', { group: this.group, partition, entries: swept[0]!.messages.length });
    this.reportCommitted(processed);
  }

  /**
   * Stages a tombstone for each store entry that has expired by the stream time the chunk moves the
   * partition to (at most `sweepPerTransaction`), to be written in the chunk's transaction: swept in
   * the same transaction as the offsets, a tombstone is written once.
   */
  private sweep(partition: number, chunk: readonly KafkaMessage[]): TopicMessages[] {
    const { store } = this;
    const retention = this.def.storeRetention;
    if (!store || !retention) return [];
    const now = chunk.reduce((t, m) => Math.max(t, Number(m.timestamp)), store.streamTime(partition) ?? -Infinity);
    if (!Number.isFinite(now)) return [];
    const keys = store.expired(partition, now, retention.retentionMs, retention.sweepPerTransaction);
    if (keys.length === 0) return [];
    for (const key of keys) store.stage(partition, key, null, now);
    return [{ topic: this.res.codec.topics.name(store.topic), messages: keys.map((key) => ({ key, value: null, partition, timestamp: String(now) })) }];
  }

  /** The changelog offset of the transaction's last write to the store's `partition` (null when it wrote none, or the broker did not say). */
  private lastStoreOffset(partition: number, sent: TopicMessages[], written: RecordMetadata[]): bigint | null {
    if (!this.store) return null;
    const topic = this.res.codec.topics.name(this.store.topic);
    const count = sent.find((t) => t.topic === topic)?.messages.length ?? 0;
    const meta = written.find((w) => w.topicName === topic && w.partition === partition);
    if (count === 0 || meta?.baseOffset === undefined) return null;
    // One batch per partition in a produce request: its records take consecutive offsets.
    return BigInt(meta.baseOffset) + BigInt(count - 1);
  }

  /** Counts and reports what a just-committed chunk did; a failing report must not fail the batch. */
  private reportCommitted(processed: Processed[]): void {
    for (const p of processed) if (p.deadLetter) this.res.metrics.deadLetters.inc({ stage: this.def.stage, ...p.deadLetter });
    if (!this.def.committed) return;
    try {
      this.def.committed(processed.flatMap((p) => (p.handled ? [p.handled] : [])));
    } catch (err) {
      this.res.logger.error('committed hook failed; its metrics or logs for this chunk are missing', { error: err });
    }
  }

  private setLag(topic: string, partition: number, lag: bigint): void {
    const labels = { group: this.group, topic, partition: String(partition) };
    this.lagSeries.set(`${topic}:${partition}`, labels);
    this.res.metrics.consumerLag.set(labels, Number(lag > 0n ? lag : 0n));
  }

  private forgetRevokedLag(assignment: Record<string, number[]>): void {
    for (const [key, labels] of this.lagSeries) {
      if (assignment[labels.topic]?.includes(Number(labels.partition))) continue;
      this.res.metrics.consumerLag.remove(labels);
      this.lagSeries.delete(key);
    }
  }

  /** Decodes and handles one record; returns the encoded records to write (outputs, or one dead letter). */
  private async processOne(source: Source, partition: number, message: KafkaMessage): Promise<Processed> {
    const { codec, metrics, logger } = this.res;
    const sourceTopic = source.name;
    source.recordsIn.inc();
    const endHandle = this.series.handle.startTimer();
    const key = message.key?.toString('utf8') ?? '';
    try {
      if (message.value && message.value.length > this.def.maxInputBytes) {
        throw new ContractViolation(`record of ${message.value.length} bytes exceeds the ${this.def.maxInputBytes}-byte limit of stage ${this.def.stage}`, { code: 'RECORD_TOO_LARGE' });
      }
      const value = (await source.decode(message.value)) as { thought_id?: unknown };
      if (source.keyed && (!key || value.thought_id !== key)) {
        throw new ContractViolation(`record key "${key}" does not match its thought_id "${String(value.thought_id)}"`);
      }
      const store = this.store;
      const state: StateView = { get: <V>(k: string) => store?.get(partition, k) as V | undefined, streamTimeMs: () => store?.streamTime(partition) ?? null };
      const timestampMs = Number(message.timestamp);
      const input: InputRecord = { topic: source.id, partition, offset: message.offset, timestampMs, key, value, headers: stringHeaders(message.headers) };
      let outputs = await this.def.handle(input, state);
      let values = await encodeAll(codec, outputs);
      let over = oversized(outputs, values);
      if (over !== null && this.def.fitOutputs) {
        const fitted = this.def.fitOutputs(input, outputs, over);
        if (fitted !== null) {
          const fittedValues = await encodeAll(codec, fitted);
          const still = oversized(fitted, fittedValues);
          if (still === null) {
            logger.warn('output over the loop record limit; the stage wrote a smaller one instead', { thought_id: key, topic: sourceTopic, partition, offset: message.offset, output_topic: over.topic, bytes: over.bytes, limit: over.limit });
            outputs = fitted;
            values = fittedValues;
          }
          over = still;
        }
      }
      // The broker would refuse it and fail the whole transaction, again at every retry: the
      // input that produced it is dead-lettered instead, so the partition moves on.
      if (over !== null) {
        throw new ContractViolation(`the ${over.topic} record this input produces is ${over.bytes} bytes, over the ${over.limit}-byte limit of loop records (topics keep the broker's 1 MiB max.message.bytes)`, { code: 'RECORD_TOO_LARGE' });
      }
      const encoded: TopicMessages[] = outputs.map((out, i) => {
        const toStore = store !== null && out.topic === store.topic;
        // A store entry lives in the partition of the input that wrote it (the one this instance
        // owns) and carries the input's record time, from which retention is measured.
        return { topic: codec.topics.name(out.topic), messages: [{ key: out.key, value: values[i]!, headers: { traceparent: traceparentFor(out.key, out.span) }, ...(toStore ? { partition, timestamp: String(timestampMs) } : {}) }] };
      });
      // Staged only once every output is known to be writable (a dead-lettered input stages nothing).
      for (const out of outputs) if (store !== null && out.topic === store.topic) store.stage(partition, out.key, out.value, timestampMs);
      return { encoded, handled: { input, outputs }, deadLetter: null };
    } catch (raw) {
      const err = toTaoError(raw);
      if (err.retriable) throw err;
      // Not retriable: a bad record, or a bug this record triggers. Either way the record must not
      // block its partition; it goes to the dead-letter topic with everything needed to re-drive it.
      logger.warn('record dead-lettered', { thought_id: key, topic: sourceTopic, partition, offset: message.offset, error_code: err.code, error: err.message });
      return {
        encoded: [{ topic: source.dlq, messages: [deadLetter(message, err, { topic: sourceTopic, partition, stage: this.def.stage })] }],
        handled: null,
        deadLetter: { topic: sourceTopic, reason: err.code },
      };
    } finally {
      endHandle();
    }
  }
}

/** Each of `outputs` encoded, in order, one after another (as the runner always has: no Promise.all on the hot path). */
async function encodeAll(codec: AvroCodec, outputs: readonly OutputRecord[]): Promise<Buffer[]> {
  const values: Buffer[] = [];
  for (const out of outputs) values.push(await codec.encode(out.topic, out.value));
  return values;
}

/** The first of `outputs` whose encoded value (`values`, in the same order) is over the loop record limit. */
function oversized(outputs: readonly OutputRecord[], values: readonly Buffer[]): OversizedOutput | null {
  const index = values.findIndex((v) => v.length > MAX_OUTPUT_VALUE_BYTES);
  return index === -1 ? null : { index, topic: outputs[index]!.topic, bytes: values[index]!.length, limit: MAX_OUTPUT_VALUE_BYTES };
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function stringHeaders(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) if (v !== undefined) out[k] = Array.isArray(v) ? String(v[0]) : v.toString();
  return out;
}

function mergeByTopic(items: TopicMessages[]): TopicMessages[] {
  const byTopic = new Map<string, Message[]>();
  for (const { topic, messages } of items) {
    const merged = byTopic.get(topic);
    if (merged) for (const m of messages) merged.push(m);
    else byTopic.set(topic, messages.slice());
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}
