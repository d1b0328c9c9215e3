/**
 * Dead-letter encoding: what a record that can never be processed becomes on `<input>.dlq`. The
 * stage runner (runtime/processor.ts) writes it in the same transaction as the chunk's other
 * outputs and its offset, so the partition moves on past it exactly once.
 */
import { createHash } from 'node:crypto';
import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import type { TaoError } from './errors.ts';

/** Names of the headers written on dead-letter records. */
export const DLQ_HEADERS = {
  errorCode: 'tao.error.code',
  errorClass: 'tao.error.class',
  errorMessage: 'tao.error.message',
  sourceTopic: 'tao.source.topic',
  sourcePartition: 'tao.source.partition',
  sourceOffset: 'tao.source.offset',
  stage: 'tao.stage',
  attempt: 'tao.attempt',
  /** Set when the original value was too large to keep: its size in bytes (the dead letter keeps its first 64 KiB). */
  originalBytes: 'tao.original.bytes',
  /** With `originalBytes`: the SHA-256 (hex) of the whole original value. */
  originalSha256: 'tao.original.sha256',
} as const;

/**
 * Largest value a dead letter carries whole. Dead-letter topics keep the broker's default
 * max.message.bytes (1 MiB); a dead letter they refuse fails its transaction with a non-retriable
 * error that stops the stage's consumer, so a larger original keeps only its head.
 */
export const MAX_DEAD_LETTER_VALUE_BYTES = 1024 * 1024 - 64 * 1024;
const DEAD_LETTER_HEAD_BYTES = 64 * 1024;

/**
 * The dead letter of `message`, which failed with `err` in `source.stage`: the original key, value
 * and headers, plus the {@link DLQ_HEADERS} (error code, class and message cut to 2,000 characters,
 * where it came from, and the attempt: one more than the original's own `tao.attempt`, so a
 * re-driven record that fails again counts up). A value over {@link MAX_DEAD_LETTER_VALUE_BYTES}
 * keeps its first 64 KiB, with its full size and SHA-256 in headers. Pure; never throws.
 */
export function deadLetter(message: KafkaMessage, err: TaoError, source: { topic: string; partition: number; stage: string }): Message {
  const headers: IHeaders = { ...message.headers };
  headers[DLQ_HEADERS.errorCode] = err.code;
  headers[DLQ_HEADERS.errorClass] = err.name;
  headers[DLQ_HEADERS.errorMessage] = err.message.slice(0, 2000);
  headers[DLQ_HEADERS.sourceTopic] = source.topic;
  headers[DLQ_HEADERS.sourcePartition] = String(source.partition);
  headers[DLQ_HEADERS.sourceOffset] = message.offset;
  headers[DLQ_HEADERS.stage] = source.stage;
  headers[DLQ_HEADERS.attempt] = String(Number(message.headers?.[DLQ_HEADERS.attempt]?.toString() ?? 0) + 1);
  const value = message.value;
  if (value && value.length > MAX_DEAD_LETTER_VALUE_BYTES) {
    headers[DLQ_HEADERS.originalBytes] = String(value.length);
    headers[DLQ_HEADERS.originalSha256] = createHash('sha256').update(value).digest('hex');
    return { key: message.key, value: value.subarray(0, DEAD_LETTER_HEAD_BYTES), headers };
  }
  return { key: message.key, value, headers };
}
