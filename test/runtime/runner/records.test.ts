/**
 * The record processor without Kafka: what one record becomes (outputs, or one dead letter), and
 * how a chunk's records are handled (one run's records in order, a retriable error thrown only once
 * the chunk has settled, its store writes unstaged).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ContractViolation, TransientError } from '../../../runtime/errors.ts';
import { createLogger } from '../../../runtime/log.ts';
import { StageMetrics } from '../../../runtime/metrics.ts';
import { DLQ_HEADERS, MAX_OUTPUT_VALUE_BYTES, type StageDefinition } from '../../../runtime/processor.ts';
import { RecordProcessor, sourcesOf, type Processed } from '../../../runtime/runner/record-processor.ts';
import type { ChangelogStore } from '../../../runtime/state-store.ts';
import { OUTCOMES, TASKS_DLQ, jsonCodec, latch, record, stage } from './fakes.ts';

let n = 0;
function processor(def: StageDefinition, store: ChangelogStore<unknown> | null = null) {
  const metrics = new StageMetrics(`records-${++n}`);
  const records = new RecordProcessor({
    def,
    codec: jsonCodec,
    logger: createLogger({}, { level: 'error', write: () => undefined }),
    store,
    limiter: null,
    handleSeconds: metrics.handleSeconds.labels({ stage: def.stage }),
  });
  return { records, source: sourcesOf(def, jsonCodec, metrics)[0]! };
}

const deadLetterCode = (p: Processed) => p.encoded[0]!.messages[0]!.headers![DLQ_HEADERS.errorCode];

describe('RecordProcessor', () => {
  test('an input over maxInputBytes is dead-lettered unread, as RECORD_TOO_LARGE', async () => {
    let handled = false;
    const { records, source } = processor(stage({ maxInputBytes: 10, handle: async () => ((handled = true), []) }));
    const p = await records.processOne(source, 0, record(0, 'a', JSON.stringify({ thought_id: 'a', pad: 'x'.repeat(20) })));
    assert.equal(handled, false);
    assert.equal(p.encoded[0]!.topic, TASKS_DLQ);
    assert.equal(deadLetterCode(p), 'RECORD_TOO_LARGE');
    assert.deepEqual(p.deadLetter, { topic: source.name, reason: 'RECORD_TOO_LARGE' });
    assert.equal(p.handled, null);
  });

  test("a catalog record whose key is not its value's thought_id is dead-lettered as a contract violation", async () => {
    const { records, source } = processor(stage());
    const p = await records.processOne(source, 0, record(0, 'a', JSON.stringify({ thought_id: 'b' })));
    assert.equal(deadLetterCode(p), 'CONTRACT_VIOLATION');
  });

  test('an output over the record limit is replaced by what fitOutputs returns; one that still does not fit is dead-lettered', async () => {
    const big = 'x'.repeat(MAX_OUTPUT_VALUE_BYTES);
    const handle = async () => [{ topic: 'outcomes' as const, key: 'a', value: { thought_id: 'a', big }, span: 'unit' }];
    const fitted = processor(stage({ handle, fitOutputs: () => [{ topic: 'outcomes', key: 'a', value: { thought_id: 'a', small: true }, span: 'unit' }] }));
    const p = await fitted.records.processOne(fitted.source, 0, record(0, 'a'));
    assert.equal(p.encoded[0]!.topic, OUTCOMES);
    assert.deepEqual(JSON.parse(String(p.encoded[0]!.messages[0]!.value)), { thought_id: 'a', small: true });

    for (const fitOutputs of [undefined, () => null, () => [{ topic: 'outcomes' as const, key: 'a', value: { big }, span: 'unit' }]]) {
      const { records, source } = processor(stage({ handle, fitOutputs }));
      assert.equal(deadLetterCode(await records.processOne(source, 0, record(0, 'a'))), 'RECORD_TOO_LARGE');
    }
  });

  test("a dead-lettered record that decoded tells its run in the same write: the stage's deadLettered records follow the dead letter, with its code and where it was", async () => {
    const seen: unknown[] = [];
    const def = stage({
      handle: async () => {
        throw new ContractViolation('step S1 names unknown tool "x.y"', { code: 'UNKNOWN_TOOL' });
      },
      deadLettered: (letter) => (
        seen.push(letter.ref),
        [{ topic: 'outcomes', key: letter.input.key, value: { thought_id: letter.input.key, told: letter.ref }, span: 'unit' }]
      ),
    });
    const { records, source } = processor(def);
    const p = await records.processOne(source, 2, record(7, 'a'));
    assert.deepEqual(
      p.encoded.map((e) => e.topic),
      [TASKS_DLQ, OUTCOMES],
    );
    assert.equal(deadLetterCode(p), 'UNKNOWN_TOOL');
    const ref = { code: 'UNKNOWN_TOOL', message: 'step S1 names unknown tool "x.y"', stage: 'unit', topic: source.name, partition: 2, offset: 7 };
    assert.deepEqual(seen, [ref]);
    assert.deepEqual(JSON.parse(String(p.encoded[1]!.messages[0]!.value)), { thought_id: 'a', told: ref });
    assert.deepEqual(p.deadLetter, { topic: source.name, reason: 'UNKNOWN_TOOL' });
  });

  test('a record that does not decode, or whose deadLettered records cannot be written, is dead-lettered alone', async () => {
    const told = () => [{ topic: 'outcomes' as const, key: 'a', value: { thought_id: 'a' }, span: 'unit' }];
    const undecodable = processor(stage({ deadLettered: told }));
    const p = await undecodable.records.processOne(undecodable.source, 0, record(0, 'a', 'not json'));
    assert.deepEqual(
      p.encoded.map((e) => e.topic),
      [TASKS_DLQ],
    );
    const failing = async () => {
      throw new ContractViolation('bad');
    };
    const throwing = processor(
      stage({
        handle: failing,
        deadLettered: () => {
          throw new Error('cannot');
        },
      }),
    );
    assert.deepEqual(
      (await throwing.records.processOne(throwing.source, 0, record(0, 'a'))).encoded.map((e) => e.topic),
      [TASKS_DLQ],
    );
    const big = 'x'.repeat(MAX_OUTPUT_VALUE_BYTES);
    const oversized = processor(stage({ handle: failing, deadLettered: () => [{ topic: 'outcomes', key: 'a', value: { big }, span: 'unit' }] }));
    assert.deepEqual(
      (await oversized.records.processOne(oversized.source, 0, record(0, 'a'))).encoded.map((e) => e.topic),
      [TASKS_DLQ],
    );
  });

  test('a retriable error fails the chunk only once its other records have settled, and unstages its store writes', async () => {
    const slow = latch();
    let settled = false;
    const aborted: number[] = [];
    const store = {
      topic: 'runs',
      abort: (p: number) => void aborted.push(p),
      get: () => undefined,
      streamTime: () => null,
      stage: () => undefined,
    } as unknown as ChangelogStore<unknown>;
    const { records, source } = processor(
      stage({
        handle: async (r) => {
          if (r.key === 'a') throw new TransientError('down');
          await slow.wait;
          settled = true;
          return [];
        },
      }),
      store,
    );
    const chunk = records.handleChunk(source, 3, [record(0, 'a'), record(1, 'b')]);
    setTimeout(() => slow.open(), 20);
    await assert.rejects(chunk, /down/);
    assert.equal(settled, true, 'b had settled before the chunk failed');
    assert.deepEqual(aborted, [3]);
  });

  test("one run's records are handled one after another in offset order, and in the order the strategy asks", async () => {
    const order: string[] = [];
    const { records, source } = processor(
      stage({
        concurrency: 4,
        handle: async (r) => {
          order.push(`start ${r.offset}`);
          await new Promise((res) => setTimeout(res, r.offset === '0' ? 20 : 0));
          order.push(`end ${r.offset}`);
          return [];
        },
      }),
    );
    const asked: string[] = [];
    const processed = await records.handleChunk(source, 0, [record(0, 'a'), record(1, 'b'), record(2, 'a')], (key, fn) => (asked.push(key), fn()));
    assert.equal(processed.length, 3);
    assert.ok(order.indexOf('end 0') < order.indexOf('start 2'), "a's second record waits for its first");
    assert.ok(order.indexOf('start 1') < order.indexOf('end 0'), 'b runs beside a');
    assert.deepEqual(asked.sort(), ['a', 'a', 'b']);
  });
});
