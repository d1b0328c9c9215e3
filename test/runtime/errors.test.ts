/**
 * What a stage's /health shows of its last error is data an operator can alert on: a code and a
 * message, never a code read back out of a message.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ContractViolation, TransientError, errorReport } from '../../runtime/errors.ts';

test('a runtime error reports its code; a Kafka error its protocol error type; anything else its class', () => {
  assert.deepEqual(errorReport(new TransientError('broker away')), { code: 'TRANSIENT', message: 'broker away' });
  assert.deepEqual(errorReport(new ContractViolation('no such tool', { code: 'UNKNOWN_TOOL' })), { code: 'UNKNOWN_TOOL', message: 'no such tool' });
  const fenced = Object.assign(new Error('Producer attempted to produce with an old epoch'), { name: 'KafkaJSProtocolError', type: 'INVALID_PRODUCER_EPOCH' });
  assert.deepEqual(errorReport(fenced), { code: 'INVALID_PRODUCER_EPOCH', message: 'Producer attempted to produce with an old epoch' });
  assert.deepEqual(errorReport(new RangeError('bad offset')), { code: 'RangeError', message: 'bad offset' });
  assert.deepEqual(errorReport('thrown text'), { code: 'INTERNAL', message: 'thrown text' });
});
