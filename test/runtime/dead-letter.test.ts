/**
 * Dead-letter encoding: what an operator (and `tao dlq redrive`) finds on `<input>.dlq` for a record
 * that could not be processed: the original bytes, why it failed, where it came from, and, for an
 * original too large for the dead-letter topic, its head with the full size and digest.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import type { KafkaMessage } from 'kafkajs';
import { DLQ_HEADERS, MAX_DEAD_LETTER_VALUE_BYTES, deadLetter } from '../../runtime/dead-letter.ts';
import { ContractViolation, DecodeError } from '../../runtime/errors.ts';

function message(value: Buffer | null, headers: KafkaMessage['headers'] = {}): KafkaMessage {
  return { key: Buffer.from('run-1'), value, headers, offset: '41', timestamp: '0', attributes: 0 } as KafkaMessage;
}

const source = { topic: 'ns.action.results', partition: 3, stage: 'observation' };

function header(m: { headers?: KafkaMessage['headers'] }, name: string): string | undefined {
  return m.headers?.[name]?.toString();
}

describe('deadLetter', () => {
  test('keeps the original key, value and headers, and says what failed, where, and in which stage', () => {
    const original = Buffer.from([0, 0, 0, 0, 7, 1, 2, 3]);
    const dl = deadLetter(message(original, { traceparent: '00-abc-def-01' }), new DecodeError('unknown magic byte'), source);
    assert.equal(dl.key?.toString(), 'run-1');
    assert.deepEqual(dl.value, original);
    assert.equal(header(dl, 'traceparent'), '00-abc-def-01');
    assert.deepEqual(Object.fromEntries(Object.values(DLQ_HEADERS).map((h) => [h, header(dl, h)])), {
      [DLQ_HEADERS.errorCode]: 'DECODE_FAILED',
      [DLQ_HEADERS.errorClass]: 'DecodeError',
      [DLQ_HEADERS.errorMessage]: 'unknown magic byte',
      [DLQ_HEADERS.sourceTopic]: 'ns.action.results',
      [DLQ_HEADERS.sourcePartition]: '3',
      [DLQ_HEADERS.sourceOffset]: '41',
      [DLQ_HEADERS.stage]: 'observation',
      [DLQ_HEADERS.attempt]: '1',
      [DLQ_HEADERS.originalBytes]: undefined,
      [DLQ_HEADERS.originalSha256]: undefined,
    });
  });

  test('counts attempts up when a re-driven record fails again, replacing the earlier failure', () => {
    const first = deadLetter(message(Buffer.from('x')), new ContractViolation('bad plan'), source);
    const again = deadLetter(message(Buffer.from('x'), first.headers), new ContractViolation('still bad', { code: 'UNKNOWN_TOOL' }), source);
    assert.equal(header(again, DLQ_HEADERS.attempt), '2');
    assert.equal(header(again, DLQ_HEADERS.errorCode), 'UNKNOWN_TOOL');
    assert.equal(header(again, DLQ_HEADERS.errorMessage), 'still bad');
  });

  test('cuts a long error message to 2,000 characters', () => {
    const dl = deadLetter(message(Buffer.from('x')), new ContractViolation('e'.repeat(5000)), source);
    assert.equal(header(dl, DLQ_HEADERS.errorMessage), 'e'.repeat(2000));
  });

  test('keeps a null value (a tombstone) as null', () => {
    assert.equal(deadLetter(message(null), new DecodeError('empty'), source).value, null);
  });

  test('keeps an original of exactly the limit whole', () => {
    const original = Buffer.alloc(MAX_DEAD_LETTER_VALUE_BYTES, 1);
    const dl = deadLetter(message(original), new ContractViolation('too large', { code: 'RECORD_TOO_LARGE' }), source);
    assert.equal((dl.value as Buffer).length, MAX_DEAD_LETTER_VALUE_BYTES);
    assert.equal(header(dl, DLQ_HEADERS.originalBytes), undefined);
  });

  test('keeps only the first 64 KiB of a larger original, with its full size and SHA-256, so the dead-letter topic accepts it', () => {
    const original = Buffer.alloc(MAX_DEAD_LETTER_VALUE_BYTES + 1);
    for (let i = 0; i < original.length; i++) original[i] = i % 251;
    const dl = deadLetter(message(original), new ContractViolation('too large', { code: 'RECORD_TOO_LARGE' }), source);
    assert.ok(MAX_DEAD_LETTER_VALUE_BYTES < 1024 * 1024, 'below the broker default max.message.bytes');
    assert.deepEqual(dl.value, original.subarray(0, 64 * 1024));
    assert.equal(header(dl, DLQ_HEADERS.originalBytes), String(original.length));
    assert.equal(header(dl, DLQ_HEADERS.originalSha256), createHash('sha256').update(original).digest('hex'));
  });
});
