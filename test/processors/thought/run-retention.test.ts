/**
 * Thought's shell and the run retention, without Kafka: which stored runs may be swept, and the
 * guard that ignores an input of an unknown run a retention or more behind the partition's record
 * time (its run may have been swept, so acting on it could start the run twice). The broker-backed
 * half (tombstones in thought.runs, the store shrinking) is test/runtime/run-retention.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { thoughtStage } from '../../../processors/thought/stage.ts';
import { createLogger } from '../../../runtime/log.ts';
import type { InputRecord, StateView } from '../../../runtime/processor.ts';
import type { RunSnapshot } from '../../../schemas/types.gen.ts';
import { allValid, loadWorld, observe, onlyRequest, task, thoughtConfig } from '../fixtures.ts';
import { onTask } from '../../../processors/thought/core.ts';

const config = thoughtConfig(loadWorld());
const RETENTION = 60_000;
const T0 = Date.UTC(2025, 0, 1);

function stage() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ stage: 'thought' }, { write: (l) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  return { stage: thoughtStage(config, logger, undefined, { runRetentionMs: RETENTION }), lines };
}

function view(streamTimeMs: number | null, stored: Record<string, RunSnapshot> = {}): StateView {
  return { get: <V>(k: string) => stored[k] as V | undefined, streamTimeMs: () => streamTimeMs };
}

function input(topic: InputRecord['topic'], key: string, value: unknown, timestampMs: number): InputRecord {
  return { topic, partition: 0, offset: '7', timestampMs, key, value, headers: {} };
}

describe('Thought and the run retention', () => {
  test('only an ended run may be swept: a running or parked run keeps its snapshot whatever its age', () => {
    const { stage: s } = stage();
    assert.equal(s.storeRetention?.retentionMs, RETENTION);
    const snapshot = (status: RunSnapshot['status']) => ({ status }) as RunSnapshot;
    assert.equal(s.storeRetention?.expirable(snapshot('ended')), true);
    assert.equal(s.storeRetention?.expirable(snapshot('running')), false);
    assert.equal(s.storeRetention?.expirable(snapshot('awaiting_input')), false);
  });

  test('a NEW task of an unknown run a retention behind the record time is ignored, with the reason logged; within it, it starts the run', async () => {
    const { stage: s, lines } = stage();
    const t = task('Where is my order? alice@example.com', 'old-run');
    const late = await s.handle(input('tasks', 'old-run', t, T0), view(T0 + RETENTION));
    assert.deepEqual(late, [], 'nothing written: no second start of a run that may have been swept');
    const ignored = lines.find((l) => l.msg === 'input ignored');
    assert.match(String(ignored?.reason), /^task .+ of unknown run old-run: record time 2025-01-01T00:00:00\.000Z is 60 s behind the partition's record time/);

    const fresh = await s.handle(input('tasks', 'old-run', t, T0 + 1), view(T0 + RETENTION));
    assert.ok(
      fresh.some((o) => o.topic === 'thoughtRequests'),
      'one millisecond inside the retention: the run starts',
    );
  });

  test('a late NEW task of a run the store still has is the ordinary redelivery: ignored as such', async () => {
    const { stage: s, lines } = stage();
    const t = task('Where is my order? alice@example.com', 'kept');
    const ended = {
      thought_id: 'kept',
      status: 'ended',
      iteration: 1,
      task_id: t.task_id,
      task_text: t.text,
      missing_fields: [],
      run: null,
      outcome_status: 'completed',
      approval: null,
      parked_steps: [],
      dead_letter: null,
      parked_ttl_ms: null,
      manifest: null,
    } as RunSnapshot;
    assert.deepEqual(await s.handle(input('tasks', 'kept', t, T0), view(T0 + 10 * RETENTION, { kept: ended })), []);
    assert.match(String(lines.find((l) => l.msg === 'input ignored')?.reason), /already exists \(ended\); task .+ is a redelivery/);
  });

  test('an observation of an unknown run a retention behind is ignored too (a re-read of old records must not re-drive a swept run)', async () => {
    const { stage: s } = stage();
    const wave = onlyRequest(onTask(task('Where is my order? bob@example.com', 'gone'), config));
    const obs = observe(wave, allValid);
    assert.deepEqual(await s.handle(input('observationResults', 'gone', obs, T0), view(T0 + RETENTION)), []);
    assert.ok((await s.handle(input('observationResults', 'gone', obs, T0), view(null))).length > 0, 'no record time yet on the partition: nothing is late');
  });
});
