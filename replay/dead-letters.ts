/**
 * Reading dead letters: the error headers a stage wrote (see runtime/processor.ts DLQ_HEADERS) and
 * the original record, decoded through the registry when it still decodes.
 */
import type { IHeaders } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { toTaoError } from '../runtime/errors.ts';
import { DLQ_HEADERS } from '../runtime/processor.ts';
import { DEAD_LETTERED, type TopicId, type TopicNames } from '../topics/catalog.ts';
import type { RawRecord } from '../runtime/log-reader.ts';

/** Where a record sits in the log. */
export interface RecordRef {
  topic: string;
  partition: number;
  offset: string;
}

/** The original record of a dead letter, as far as it can be read. */
export interface OriginalRecord {
  bytes: number;
  /** Schema id from the Confluent framing, when the bytes carry one. */
  schemaId: number | null;
  /** The value decoded through the registry into this code's schema, or null. */
  value: Record<string, unknown> | null;
  /** Why it does not decode (error code and message), or null. */
  decodeError: { code: string; message: string } | null;
  /** First bytes in hex, and a printable UTF-8 preview (non-printable characters as `.`). */
  hex: string;
  utf8: string;
}

/** One dead letter: where it is, why it is there, where it came from, and the original record. */
export interface DeadLetter {
  ref: RecordRef;
  /** The loop topic it was dead-lettered from (by catalog id), or null for a topic outside the catalog. */
  of: TopicId | null;
  timestamp: number;
  key: string | null;
  /** Error code (runtime/errors.ts ERROR_CODES), class and message from the headers. */
  code: string;
  errorClass: string;
  message: string;
  source: RecordRef | null;
  stage: string;
  attempt: number;
  /** Every header of the dead letter (the original record's plus the error headers). */
  headers: Record<string, string>;
  original: OriginalRecord;
}

const PREVIEW_BYTES = 96;

/** The catalog id of the loop topic whose dead-letter topic is `dlqTopic`, or null. */
export function dlqSource(topics: TopicNames, dlqTopic: string): TopicId | null {
  return DEAD_LETTERED.find((id) => topics.dlq(id) === dlqTopic) ?? null;
}

/**
 * Reads a dead letter's headers and decodes its original bytes as a record of its source topic.
 * @throws TransientError when the registry can't be reached (a decode that fails for the record's own reasons is reported, not thrown).
 */
export async function readDeadLetter(raw: RawRecord, codec: AvroCodec): Promise<DeadLetter> {
  const h = raw.headers;
  const of = dlqSource(codec.topics, raw.topic);
  const source =
    h[DLQ_HEADERS.sourceTopic] !== undefined
      ? { topic: h[DLQ_HEADERS.sourceTopic]!, partition: Number(h[DLQ_HEADERS.sourcePartition] ?? -1), offset: h[DLQ_HEADERS.sourceOffset] ?? '' }
      : null;
  return {
    ref: { topic: raw.topic, partition: raw.partition, offset: raw.offset },
    of,
    timestamp: raw.timestamp,
    key: raw.key,
    code: h[DLQ_HEADERS.errorCode] ?? 'unknown',
    errorClass: h[DLQ_HEADERS.errorClass] ?? 'unknown',
    message: h[DLQ_HEADERS.errorMessage] ?? '',
    source,
    stage: h[DLQ_HEADERS.stage] ?? 'unknown',
    attempt: Number(h[DLQ_HEADERS.attempt] ?? 0),
    headers: h,
    original: await decodeOriginal(raw.value, of, codec),
  };
}

/** Decodes `value` as a record of topic `of` when possible; otherwise says why and shows the bytes. */
export async function decodeOriginal(value: Buffer | null, of: TopicId | null, codec: AvroCodec): Promise<OriginalRecord> {
  const bytes = value ?? Buffer.alloc(0);
  const framed = bytes.length >= 5 && bytes[0] === 0;
  const base = {
    bytes: bytes.length,
    schemaId: framed ? bytes.readInt32BE(1) : null,
    hex: bytes.subarray(0, PREVIEW_BYTES).toString('hex'),
    utf8: printable(bytes.subarray(0, PREVIEW_BYTES)),
  };
  if (of === null)
    return { ...base, value: null, decodeError: { code: 'INTERNAL', message: 'the dead-letter topic is not one of the catalog: no schema to decode with' } };
  try {
    return { ...base, value: await codec.decode<Record<string, unknown>>(of, value), decodeError: null };
  } catch (raw) {
    const err = toTaoError(raw);
    if (err.retriable) throw err;
    return { ...base, value: null, decodeError: { code: err.code, message: err.message } };
  }
}

/** The headers of a dead letter that describe the failure rather than the original record. */
export const FAILURE_HEADERS: readonly string[] = [
  DLQ_HEADERS.errorCode,
  DLQ_HEADERS.errorClass,
  DLQ_HEADERS.errorMessage,
  DLQ_HEADERS.sourceTopic,
  DLQ_HEADERS.sourcePartition,
  DLQ_HEADERS.sourceOffset,
  DLQ_HEADERS.stage,
];

/** The original record's headers: the dead letter's minus the failure description (`tao.attempt` stays: a second failure counts from it). */
export function originalHeaders(headers: IHeaders): IHeaders {
  const out: IHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (!FAILURE_HEADERS.includes(k) && v !== undefined) out[k] = v;
  return out;
}

function printable(bytes: Buffer): string {
  return bytes.toString('utf8').replace(/[^\x20-\x7e]/g, '.');
}
