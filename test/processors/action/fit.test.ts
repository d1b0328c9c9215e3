/**
 * A wave whose result record would be over the loop record limit: Action turns its largest
 * responses into `too_large` error results, as few as bring the record under the limit, and keeps
 * the others whole (processors/action/stage.ts, `withoutLargestResponses`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withoutLargestResponses } from '../../../processors/action/stage.ts';
import type { ActionResult, StepResult } from '../../../schemas/types.gen.ts';
import { onTask } from '../../../processors/thought/core.ts';
import { encodedValueBytes } from '../../../runtime/codec.ts';
import { MAX_OUTPUT_VALUE_BYTES } from '../../../runtime/processor.ts';
import { loadWorld, onlyRequest, task, thoughtConfig } from '../fixtures.ts';

function step(id: string, bodyBytes: number): StepResult {
  const raw = bodyBytes ? JSON.stringify({ blob: 'b'.repeat(bodyBytes) }) : null;
  return {
    step_id: id,
    tool: 'crm.find_customer',
    input_json: '{}',
    idempotency_key: id,
    attempts: 1,
    status_code: 200,
    response_time_ms: 5,
    response_raw: raw,
    data_json: raw,
    error: null,
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: null,
  };
}

function wave(...steps: StepResult[]): ActionResult {
  return { thought_id: 't-1', iteration: 1, run: {} as ActionResult['run'], results: steps, dead_letter: null };
}

test('the largest response goes first, and only as many as the excess needs', () => {
  const result = wave(step('small', 1000), step('big', 400_000), step('mid', 200_000));
  // 100 KB over the limit: dropping `big` (2 × 400 KB) is enough; `mid` and `small` stay whole.
  const fitted = withoutLargestResponses(result, { bytes: 1_100_000, limit: 1_000_000 })!;
  assert.deepEqual(
    fitted.results.map((r) => [r.step_id, r.error?.type ?? 'ok']),
    [
      ['small', 'ok'],
      ['big', 'too_large'],
      ['mid', 'ok'],
    ],
  );
  const big = fitted.results[1]!;
  assert.equal(big.response_raw, null);
  assert.equal(big.data_json, null);
  assert.equal(big.status_code, 200, 'what the tool answered is kept');
  assert.equal(big.error!.retryable, false);
  assert.match(
    big.error!.message,
    /^the response \(\d+ bytes with its parsed data\) would make the wave's result record 1100000 bytes, over the 1000000-byte limit of loop records$/,
  );
  assert.deepEqual(fitted.results[2], result.results[2]);
});

test('several responses go when one is not enough, largest first', () => {
  const result = wave(step('a', 300_000), step('b', 300_000), step('c', 250_000), step('d', 10));
  const fitted = withoutLargestResponses(result, { bytes: 1_900_000, limit: 1_000_000 })!;
  assert.deepEqual(
    fitted.results.map((r) => r.error?.type ?? 'ok'),
    ['too_large', 'too_large', 'ok', 'ok'],
  );
});

test('every response goes when even that is not enough (the runner measures again); null when there is none to drop', () => {
  const fitted = withoutLargestResponses(wave(step('a', 1000), step('none', 0)), { bytes: 1_500_000, limit: 1_000_000 })!;
  assert.deepEqual(
    fitted.results.map((r) => r.error?.type ?? 'ok'),
    ['too_large', 'ok'],
  );
  assert.equal(withoutLargestResponses(wave(step('none', 0)), { bytes: 1_500_000, limit: 1_000_000 }), null);
});

test('measured with the real schema: a wave over the record limit fits once fitted, the small response kept', () => {
  const run = onlyRequest(onTask(task('Where is my order? alice@example.com', 'big'), thoughtConfig(loadWorld()))).run;
  const result: ActionResult = { ...wave(step('S2', 300_000), step('S3', 200), step('S4', 250_000)), run };
  const bytes = encodedValueBytes('actionResults', result);
  assert.ok(bytes > MAX_OUTPUT_VALUE_BYTES, `${bytes} bytes`);
  const fitted = withoutLargestResponses(result, { bytes, limit: MAX_OUTPUT_VALUE_BYTES })!;
  assert.ok(encodedValueBytes('actionResults', fitted) <= MAX_OUTPUT_VALUE_BYTES);
  assert.deepEqual(
    fitted.results.map((r) => r.error?.type ?? 'ok'),
    ['too_large', 'ok', 'ok'],
  );
});
