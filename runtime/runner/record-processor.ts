/**
 * The record processor: what the runner does with one input record, and with the records of one
 * chunk, before anything is written. It keeps the per-record half of the `handle` contract
 * ({@link StageDefinition}):
 *
 * - an input over `maxInputBytes`, one that does not decode, or (catalog topics) one whose key is
 *   not the thought_id its value carries, never reaches `handle`;
 * - `handle`'s outputs are encoded; one over {@link MAX_OUTPUT_VALUE_BYTES} (the broker would refuse
 *   it, and fail the whole transaction again at every retry) is offered to `fitOutputs`, and
 *   dead-lettered as RECORD_TOO_LARGE when it still does not fit;
 * - a non-retriable error becomes one dead letter on the source's dead-letter topic, returned like
 *   any output so that the committer writes it in the chunk's transaction: the partition moves on
 *   past the record exactly once;
 * - a retriable error is thrown: nothing of the chunk is committed, and the partition is read again
 *   from its last committed offset (./serial.ts, ./pipelined.ts).
 *
 * Writes to the stage's store are staged once every output is known to be writable, and unstaged
 * when the chunk fails (the committer settles them with the transaction). Nothing here writes to
 * Kafka. Pinned without a broker by test/runtime/runner/records.test.ts and the dead-letter cases of
 * test/runtime/runner/serial.test.ts.
 */
import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import type { AvroCodec } from '../codec.ts';
import { ContractViolation, errorMessage, toTaoError, type TaoError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { StageMetrics } from '../metrics.ts';
import { traceparentFor } from '../tracing/ids.ts';
import type { ChangelogStore } from '../state-store.ts';
import { mapLimit, type Limiter } from '../concurrency.ts';
import { deadLetter } from '../dead-letter.ts';
import { CAUSE_HEADER, causeOf } from '../run-stream/cause.ts';
import type { TopicId } from '../../topics/catalog.ts';
import {
  MAX_OUTPUT_VALUE_BYTES,
  type HandledRecord,
  type InputRecord,
  type OutputRecord,
  type OversizedOutput,
  type StageDefinition,
  type StateView,
} from './contract.ts';

/** Records to write to one topic (kafkajs's `topicMessages` entry). */
export type TopicMessages = { topic: string; messages: Message[] };

/** What processing one record produced: the encoded records, and what to report once they commit. */
export type Processed = { encoded: TopicMessages[]; handled: HandledRecord | null; deadLetter: { topic: string; reason: string } | null };

/** An input of a stage as the runner sees it: a catalog topic or an external one. */
export interface Source {
  id: TopicId | 'external';
  name: string;
  dlq: string;
  decode(value: Buffer | null): Promise<unknown>;
  /** Catalog records are keyed by the thought_id their value carries. */
  keyed: boolean;
  /** `tao_records_in_total` of this stage and topic (the labelled series, looked up once). */
  recordsIn: { inc(): void };
}

/** The inputs of `def`: its catalog topics, then its external ones. */
export function sourcesOf(def: StageDefinition, codec: AvroCodec, metrics: StageMetrics): Source[] {
  const recordsIn = (topic: string) => metrics.recordsIn.labels({ stage: def.stage, topic });
  return [
    ...def.inputs.map((id): Source => ({
      id,
      name: codec.topics.name(id),
      dlq: codec.topics.dlq(id),
      decode: (v) => codec.decode(id, v),
      keyed: true,
      recordsIn: recordsIn(codec.topics.name(id)),
    })),
    ...(def.externalInputs ?? []).map((x): Source => ({
      id: 'external',
      name: x.topic,
      dlq: x.dlq,
      decode: (v) => x.decode(v),
      keyed: false,
      recordsIn: recordsIn(x.topic),
    })),
  ];
}

/**
 * Runs `fn`, the handling of one record of `key`, in the order the strategy wants records of one
 * run handled: at once (a serial chunk is the partition's only one in flight), or after the key's
 * records of earlier chunks (a pipeline: PartitionPipeline.inKeyOrder, ../pipeline.ts).
 */
export type KeyOrder = <R>(key: string, fn: () => Promise<R>) => Promise<R>;

const atOnce: KeyOrder = (_key, fn) => fn();

export interface RecordProcessorOptions {
  def: StageDefinition;
  codec: AvroCodec;
  logger: Logger;
  store: ChangelogStore<unknown> | null;
  /** The instance-wide cap of {@link StageDefinition.maxInFlight} (null: none). */
  limiter: Limiter | null;
  /** `tao_record_handle_seconds` of the stage (looked up once). */
  handleSeconds: { startTimer(): () => void };
}

export class RecordProcessor {
  constructor(private readonly o: RecordProcessorOptions) {}

  /**
   * Handles every record of a chunk of one partition (dead letters included) and returns what each
   * produced, in the chunk's order. Records of one run (one key) are handled in order, one after
   * another (a later one may read what an earlier one stored), and after `order` lets them;
   * different runs concurrently, up to `concurrency`. Throws the first retriable error, once
   * nothing of the chunk is still running, after unstaging the chunk's store writes.
   */
  async handleChunk(source: Source, partition: number, chunk: KafkaMessage[], order: KeyOrder = atOnce): Promise<Processed[]> {
    const byKey = new Map<string, KafkaMessage[]>();
    for (const m of chunk) {
      const key = m.key?.toString('utf8') ?? '';
      const same = byKey.get(key);
      if (same) same.push(m);
      else byKey.set(key, [m]);
    }
    const { limiter } = this.o;
    const processed = new Map<KafkaMessage, Processed>();
    const one = (m: KafkaMessage) => (limiter ? limiter.run(() => this.processOne(source, partition, m)) : this.processOne(source, partition, m));
    try {
      await mapLimit([...byKey.entries()], this.o.def.concurrency, async ([key, messages]) => {
        for (const m of messages) processed.set(m, await order(key, () => one(m)));
      });
    } catch (err) {
      this.o.store?.abort(partition);
      throw err;
    }
    return chunk.map((m) => processed.get(m)!);
  }

  /** Decodes and handles one record; returns the encoded records to write (outputs, or one dead letter). */
  async processOne(source: Source, partition: number, message: KafkaMessage): Promise<Processed> {
    const { def, codec, logger, store } = this.o;
    const sourceTopic = source.name;
    source.recordsIn.inc();
    const endHandle = this.o.handleSeconds.startTimer();
    const key = message.key?.toString('utf8') ?? '';
    // Set once the record has decoded and its key is its thought_id: a dead letter of it can tell its run.
    let input: InputRecord | null = null;
    try {
      if (message.value && message.value.length > def.maxInputBytes) {
        throw new ContractViolation(`record of ${message.value.length} bytes exceeds the ${def.maxInputBytes}-byte limit of stage ${def.stage}`, {
          code: 'RECORD_TOO_LARGE',
        });
      }
      const value = (await source.decode(message.value)) as { thought_id?: unknown };
      if (source.keyed && (!key || value.thought_id !== key)) {
        throw new ContractViolation(`record key "${key}" does not match its thought_id "${String(value.thought_id)}"`);
      }
      const state: StateView = { get: <V>(k: string) => store?.get(partition, k) as V | undefined, streamTimeMs: () => store?.streamTime(partition) ?? null };
      const timestampMs = Number(message.timestamp);
      input = { topic: source.id, partition, offset: message.offset, timestampMs, key, value, headers: stringHeaders(message.headers) };
      let outputs = await def.handle(input, state);
      let values = await encodeAll(codec, outputs);
      let over = oversized(outputs, values);
      if (over !== null && def.fitOutputs) {
        const fitted = def.fitOutputs(input, outputs, over);
        if (fitted !== null) {
          const fittedValues = await encodeAll(codec, fitted);
          const still = oversized(fitted, fittedValues);
          if (still === null) {
            logger.warn('output over the loop record limit; the stage wrote a smaller one instead', {
              thought_id: key,
              topic: sourceTopic,
              partition,
              offset: message.offset,
              output_topic: over.topic,
              bytes: over.bytes,
              limit: over.limit,
            });
            outputs = fitted;
            values = fittedValues;
          }
          over = still;
        }
      }
      // The broker would refuse it and fail the whole transaction, again at every retry: the
      // input that produced it is dead-lettered instead, so the partition moves on.
      if (over !== null) {
        throw new ContractViolation(
          `the ${over.topic} record this input produces is ${over.bytes} bytes, over the ${over.limit}-byte limit of loop records (topics keep the broker's 1 MiB max.message.bytes)`,
          { code: 'RECORD_TOO_LARGE' },
        );
      }
      const encoded: TopicMessages[] = outputs.map((out, i) => {
        const toStore = store !== null && out.topic === store.topic;
        // A store entry lives in the partition of the input that wrote it (the one this instance
        // owns) and carries the input's record time, from which retention is measured.
        return {
          topic: codec.topics.name(out.topic),
          messages: [
            {
              key: out.key,
              value: values[i]!,
              headers: { traceparent: traceparentFor(out.key, out.span), [CAUSE_HEADER]: causeOf(input!) },
              ...(toStore ? { partition, timestamp: String(timestampMs) } : {}),
            },
          ],
        };
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
      const told = input === null ? [] : await this.tellRun(input, err, sourceTopic);
      return {
        encoded: [{ topic: source.dlq, messages: [deadLetter(message, err, { topic: sourceTopic, partition, stage: def.stage })] }, ...told],
        handled: null,
        deadLetter: { topic: sourceTopic, reason: err.code },
      };
    } finally {
      endHandle();
    }
  }

  /**
   * The records the stage writes beside the dead letter of `input` ({@link StageDefinition.deadLettered}),
   * encoded; none when it declares none, or when they can't be made, encoded or fit (logged: the
   * dead letter is written alone).
   */
  private async tellRun(input: InputRecord, err: TaoError, sourceTopic: string): Promise<TopicMessages[]> {
    const { def, codec, logger, store } = this.o;
    if (!def.deadLettered || store !== null) return [];
    const ref = {
      code: err.code,
      message: err.message.slice(0, 500),
      stage: def.stage,
      topic: sourceTopic,
      partition: input.partition,
      offset: Number(input.offset),
    };
    try {
      const outputs = def.deadLettered({ input, ref });
      const values = await encodeAll(codec, outputs);
      const over = oversized(outputs, values);
      if (over !== null) throw new ContractViolation(`its ${over.topic} record would be ${over.bytes} bytes, over the ${over.limit}-byte limit`);
      return outputs.map((out, i) => ({
        topic: codec.topics.name(out.topic),
        messages: [{ key: out.key, value: values[i]!, headers: { traceparent: traceparentFor(out.key, out.span), [CAUSE_HEADER]: causeOf(input) } }],
      }));
    } catch (raw) {
      logger.warn("the dead letter's run is not told (its stage's record could not be made); the dead letter is written alone", {
        thought_id: input.key,
        topic: sourceTopic,
        partition: input.partition,
        offset: input.offset,
        error: errorMessage(raw),
      });
      return [];
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

function stringHeaders(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) if (v !== undefined) out[k] = Array.isArray(v) ? String(v[0]) : v.toString();
  return out;
}
