/**
 * The stage contract: what a stage declares ({@link StageDefinition}: what it reads and writes, how
 * it decides, its limits) and what the runtime hands it ({@link InputRecord}, {@link StateView}).
 * Declarations only; the runner that keeps the contract is `StageRunner` (../processor.ts),
 * whose parts live beside this file: the record processor (./record-processor.ts: decode, handle,
 * fit, encode, dead-letter), the transaction committer (./committer.ts), the partition strategies
 * (./strategy.ts) and the consumer supervisor (./supervisor.ts).
 */
import type { Kafka } from 'kafkajs';
import type { AvroCodec } from '../codec.ts';

import type { Logger } from '../log.ts';
import type { StageMetrics } from '../metrics.ts';

import { MAX_DEAD_LETTER_VALUE_BYTES } from '../dead-letter.ts';
import type { TopicId } from '../../topics/catalog.ts';

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
 * - throws a `TaoError` that is not `retriable` for input that can never be processed: the
 *   record goes to `<input>.dlq` with the error in its headers and the partition moves on;
 * - throws a `retriable` TaoError when a dependency is down: nothing is committed and the batch is
 *   retried from the last committed offset.
 *
 * Who keeps which clause: the record processor (./record-processor.ts) calls `handle` and turns a
 * non-retriable error into a dead letter; the transaction committer (./committer.ts) writes the
 * outputs, dead letters and offset in one transaction; the partition strategies (./serial.ts,
 * ./pipelined.ts) read the partition again from its last committed offset after a failure.
 */
export interface StageDefinition {
  stage: string;
  inputs: readonly TopicId[];
  outputs: readonly TopicId[];
  /**
   * A keyed state store backed by this compacted output topic (see `ChangelogStore`). Records
   * the handler writes to it are visible through `state.get` to later records at once.
   */
  storeTopic?: TopicId;
  /**
   * For a stage with a store: entries that leave it after a retention of record time
   * (../retention.ts). Each transaction of a partition then also writes tombstones, in the store
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
   * Partitions whose batches this instance handles at the same time (default 3; kafkajs's
   * `partitionsConsumedConcurrently`). A stage whose handler mostly waits on I/O raises it so every
   * partition it owns feeds `maxInFlight`.
   */
  partitionsConcurrently?: number;
  /** Records per transaction. */
  maxRecordsPerTransaction: number;
  /**
   * Hand each chunk to its partition's pipeline and return to kafkajs at once (../pipeline.ts): the
   * next fetch comes while earlier chunks are still being handled, and chunks commit one after
   * another in offset order, those handled while a transaction of their partition commits
   * together in the next one (up to `maxRecordsPerTransaction`). For a stage whose records mostly
   * wait on I/O (Action); not with a store. A partition holding twice
   * `maxRecordsPerTransaction` uncommitted records or more keeps its batch until it holds fewer
   * (kafkajs fetches again once every batch of its last fetch has returned). `lingerMs`: how long a
   * handled chunk waits, at most, for the chunks behind it still being handled, to share their
   * transaction (`PipelineCommitter.lingerMs`).
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
  /**
   * Called when a record of the stage's input that decoded (and whose key is its thought_id) is
   * dead-lettered: the records that tell its run so, written with the dead letter in the same
   * transaction (Action and Observation: the wave's result marked as dead-lettered, so Thought ends
   * the run instead of waiting for ever). Their failing to be made or encoded (or one over the
   * record limit) leaves the dead letter alone, logged. Not for a stage with a store.
   */
  deadLettered?(letter: DeadLettered): OutputRecord[];
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
  /** Topics the stage follows outside its consumer group (tao.manifests: the releases), checked at start with its own. */
  follows?: readonly TopicId[];
  /**
   * Called once the stage's topics are checked and before it joins its group: starts what the
   * stage follows (the release watcher), resolving once it is ready; resolves with what stops it.
   */
  prepare?(io: { kafka: Kafka; codec: AvroCodec; logger: Logger }): Promise<() => Promise<void>>;
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

/** A decoded input record being dead-lettered: the record, and why and where (the fields of a `DeadLetterRef`). */
export interface DeadLettered {
  input: InputRecord;
  ref: { code: string; message: string; stage: string; topic: string; partition: number; offset: number };
}

/** The output that did not fit: which of the handler's outputs, and its encoded size. */
export interface OversizedOutput {
  index: number;
  topic: TopicId;
  bytes: number;
  limit: number;
}
