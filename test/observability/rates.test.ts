/**
 * The run-level rates as the stages count them, without Kafka: Thought's and Observation's
 * `committed` hooks driven with the real cores, checked against the definitions (processors/rates.ts, docs/ARCHITECTURE.md)
 * and against what the core itself records in the run state.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { onObservation, onTask } from '../../processors/thought/core.ts';
import { thoughtStage } from '../../processors/thought/stage.ts';
import { observationStage } from '../../processors/observation/stage.ts';
import { createLogger } from '../../runtime/log.ts';
import { StageMetrics } from '../../runtime/metrics.ts';
import type { InputRecord, OutputRecord, StageDefinition } from '../../runtime/processor.ts';
import { classifyRunEnd, evidenceComplete, waveFailures } from '../../processors/rates.ts';
import type { ActionResult, ObservationResult, RunSnapshot, StepCall, StepResult, ThoughtRequest, Verdict } from '../../schemas/types.gen.ts';
import { allValid, failedVerdict, loadWorld, observationConfig, observe, onlyRequest, task, thoughtConfig } from '../processors/fixtures.ts';
import { parseMetrics, sample } from './metrics-text.ts';

const world = loadWorld();
const config = thoughtConfig(world);

describe('waveFailures', () => {
  test('is the increment the Thought core adds to failures_seen for a wave (invalid, retried, fallback)', () => {
    const wave1 = onlyRequest(onTask(task('Where is my order? alice@example.com'), config));
    const retried = (call: StepCall): Verdict => ({ ...allValid(call), attempts: 2 });
    const obs1 = observe(wave1, retried);
    const wave2 = onlyRequest(onObservation(obs1, config));
    assert.equal(wave2.run.failures_seen, 0 + waveFailures(obs1.verdicts));
    assert.equal(wave2.run.failures_seen, 1);

    // S2 times out (retried next wave), S3 was served by a fallback tool.
    const obs2 = observe(wave2, (call) =>
      call.step_id === 'S2' ? failedVerdict('S2', call.tool, 'timeout') : { ...allValid(call), fallback_from: 'crm.tier_primary' },
    );
    const wave3 = onlyRequest(onObservation(obs2, config));
    assert.deepEqual(
      wave3.steps.map((s) => s.step_id),
      ['S2'],
    );
    assert.equal(wave3.run.failures_seen, obs2.run.failures_seen + waveFailures(obs2.verdicts));
    assert.equal(wave3.run.failures_seen, 3);
  });

  test('a clean wave adds nothing', () => {
    assert.equal(waveFailures([{ valid: true, attempts: 1, fallback_from: null }]), 0);
  });
});

describe('classifyRunEnd', () => {
  test('recovered means: hit a failure, completed, no person involved', () => {
    assert.deepEqual(classifyRunEnd('completed', 2, false), { completed: true, hitFailure: true, recovered: true });
    assert.deepEqual(classifyRunEnd('completed', 2, true), { completed: true, hitFailure: true, recovered: false });
    assert.deepEqual(classifyRunEnd('failed', 2, false), { completed: false, hitFailure: true, recovered: false });
    assert.deepEqual(classifyRunEnd('completed', 0, false), { completed: true, hitFailure: false, recovered: false });
  });
});

describe('evidenceComplete', () => {
  const ok: StepResult = {
    step_id: 'S1',
    tool: 't',
    input_json: '{"email":"a@example.com"}',
    idempotency_key: 'r:1:S1',
    attempts: 1,
    status_code: 200,
    response_time_ms: 12,
    response_raw: '{}',
    data_json: '{}',
    error: null,
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: null,
  };
  test('a step with id, input, response, duration and status code is complete; so is a timeout with its error', () => {
    assert.equal(evidenceComplete(ok), true);
    assert.equal(
      evidenceComplete({ ...ok, status_code: null, response_raw: null, error: { type: 'timeout', message: 'no response within 300 ms', retryable: true } }),
      true,
    );
  });
  test('missing any piece of evidence makes it incomplete', () => {
    assert.equal(evidenceComplete({ ...ok, step_id: '' }), false, 'no step id');
    assert.equal(evidenceComplete({ ...ok, idempotency_key: '' }), false, 'no unique id');
    assert.equal(evidenceComplete({ ...ok, input_json: 'not json' }), false, 'inputs unreadable');
    assert.equal(evidenceComplete({ ...ok, response_raw: null }), false, 'neither response nor error');
    assert.equal(evidenceComplete({ ...ok, response_time_ms: Number.NaN }), false, 'no duration');
    assert.equal(evidenceComplete({ ...ok, status_code: null }), false, 'no result code');
    assert.equal(
      evidenceComplete({ ...ok, response_raw: null, status_code: null, error: { type: '', message: 'x', retryable: false } }),
      false,
      'an error without a code',
    );
  });
});

/** Drives a stage the way the runner does: handle, then committed with the same input objects. */
class Harness {
  readonly store = new Map<string, RunSnapshot>();
  readonly lines: Array<Record<string, unknown>> = [];
  readonly metrics = new StageMetrics('test');
  readonly logger = createLogger({ stage: 'thought' }, { write: (l) => this.lines.push(JSON.parse(l) as Record<string, unknown>) });

  async feed(stage: StageDefinition, topic: InputRecord['topic'], key: string, value: unknown): Promise<OutputRecord[]> {
    const input: InputRecord = { topic, partition: 0, offset: '0', key, value, headers: {} };
    const outputs = await stage.handle(input, { get: <V>(k: string) => this.store.get(k) as V | undefined });
    for (const o of outputs) if (o.topic === 'thoughtRuns') this.store.set(o.key, o.value as RunSnapshot);
    stage.committed?.([{ input, outputs }]);
    return outputs;
  }
}

/** Runs one order-status run through the Thought stage, answering each wave with `answer`. */
async function run(h: Harness, stage: StageDefinition, id: string, answer: (call: StepCall, wave: number) => Verdict): Promise<void> {
  let outputs = await h.feed(stage, 'tasks', id, task(`Where is my order? ${id}@example.com`, id));
  for (let i = 0; i < 20; i++) {
    const request = outputs.find((o) => o.topic === 'thoughtRequests')?.value as ThoughtRequest | undefined;
    if (!request) return;
    const obs: ObservationResult = observe(request, (call) => answer(call, request.iteration));
    outputs = await h.feed(stage, 'observationResults', id, obs);
  }
  throw new Error(`run ${id} did not end`);
}

describe('Thought stage counting', () => {
  test('outcomes, runs with failures and the TCR/SRR gauges follow the committed outcomes; each decision is one log line', async () => {
    const h = new Harness();
    const stage = thoughtStage(config, h.logger, h.metrics.runMetrics());
    await run(h, stage, 'clean', allValid);
    // S1's first call needed a retry: a failure the run recovered from by itself.
    await run(h, stage, 'recovers', (call, wave) => (wave === 1 ? { ...allValid(call), attempts: 2 } : allValid(call)));
    // Refused: reflection escalates to a person.
    await run(h, stage, 'refused', (call) => (call.step_id === 'S3' ? failedVerdict('S3', call.tool, 'auth_failed') : allValid(call)));
    // Nothing found: the run is parked for a person (not ended).
    await run(h, stage, 'unknown', (call) => failedVerdict(call.step_id, call.tool, 'not_found'));

    const m = parseMetrics(await h.metrics.registry.metrics());
    assert.equal(sample(m, 'tao_runs_ended_total', { status: 'completed', reason_code: 'completed' }), 2);
    assert.equal(sample(m, 'tao_runs_ended_total', { status: 'escalated', reason_code: 'reflection' }), 1);
    assert.equal(sample(m, 'tao_runs_ended_total', { status: 'awaiting_input', reason_code: 'reflection' }), 1);
    assert.equal(sample(m, 'tao_runs_with_failure_total', { recovered: 'true' }), 1);
    assert.equal(sample(m, 'tao_runs_with_failure_total', { recovered: 'false' }), 1);
    assert.equal(sample(m, 'tao_task_completion_rate', {}), 2 / 3, 'awaiting_input parks a run: 3 ended, 2 completed');
    assert.equal(sample(m, 'tao_self_recovery_rate', {}), 1 / 2);

    const decisions = h.lines.filter((l) => ['wave dispatched', 'run ended', 'run awaiting input'].includes(String(l.msg)));
    const clean = decisions.filter((l) => l.thought_id === 'clean');
    assert.deepEqual(
      clean.map((l) => [l.msg, l.iteration, l.step]),
      [
        ['wave dispatched', 1, 'S1'],
        ['wave dispatched', 2, 'S2,S3'],
        ['wave dispatched', 3, 'S4'],
        ['run ended', 3, null],
      ],
    );
    for (const l of decisions) {
      for (const field of ['thought_id', 'iteration', 'step', 'stage', 'tool', 'status', 'duration_ms', 'error_code'])
        assert.ok(field in l, `${l.msg} carries ${field}`);
    }
    const refused = decisions.find((l) => l.thought_id === 'refused' && l.msg === 'run ended')!;
    assert.deepEqual([refused.status, refused.error_code, refused.failures_seen], ['escalated', 'reflection', 1]);
  });

  test('a rate with nothing counted yet is NaN, not 0 or 1', async () => {
    const metrics = new StageMetrics('test');
    metrics.runMetrics();
    metrics.stepMetrics();
    const m = parseMetrics(await metrics.registry.metrics());
    assert.ok(Number.isNaN(sample(m, 'tao_task_completion_rate', {})));
    assert.ok(Number.isNaN(sample(m, 'tao_self_recovery_rate', {})));
    assert.ok(Number.isNaN(sample(m, 'tao_traceability_index', {})));
  });
});

describe('Observation stage counting', () => {
  test('every committed step is counted by the completeness of its evidence and logged with its verdict', async () => {
    const metrics = new StageMetrics('test');
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ stage: 'observation' }, { write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
    const stage = observationStage(observationConfig(world), { logger, stepMetrics: metrics.stepMetrics() });
    const wave = onlyRequest(onTask(task('Where is my order? alice@example.com', 'r1'), config));
    const step = (over: Partial<StepResult>): StepResult => ({
      step_id: 'S1',
      tool: 'crm.find_customer',
      input_json: '{"email":"alice@example.com"}',
      idempotency_key: 'r1:1:S1',
      attempts: 1,
      status_code: 200,
      response_time_ms: 20,
      response_raw: '{"customer_id":"C-123456","email":"alice@example.com","name":"A"}',
      data_json: '{"customer_id":"C-123456","email":"alice@example.com","name":"A"}',
      error: null,
      fallback_from: null,
      fallback_reason: null,
      attempt_time_ms: null,
      ...over,
    });
    const results: ActionResult = {
      thought_id: 'r1',
      iteration: 1,
      run: wave.run,
      results: [
        step({}),
        step({
          step_id: 'S9',
          idempotency_key: 'r1:1:S9',
          status_code: null,
          response_raw: null,
          data_json: null,
          error: { type: 'timeout', message: 'no complete response within 300 ms', retryable: true },
        }),
        step({ step_id: 'S8', idempotency_key: '', input_json: '{}' }),
      ],
      dead_letter: null,
    };
    const input: InputRecord = { topic: 'actionResults', partition: 0, offset: '0', key: 'r1', value: results, headers: {} };
    const outputs = await stage.handle(input, { get: () => undefined });
    stage.committed?.([{ input, outputs }]);

    const m = parseMetrics(await metrics.registry.metrics());
    assert.equal(sample(m, 'tao_steps_observed_total', { complete: 'true' }), 2);
    assert.equal(sample(m, 'tao_steps_observed_total', { complete: 'false' }), 1);
    assert.equal(sample(m, 'tao_traceability_index', {}), 2 / 3);
    const logged = lines.filter((l) => l.msg === 'step observed');
    assert.deepEqual(
      logged.map((l) => [l.thought_id, l.iteration, l.step, l.evidence_complete]),
      [
        ['r1', 1, 'S1', true],
        ['r1', 1, 'S9', true],
        ['r1', 1, 'S8', false],
      ],
    );
    assert.deepEqual([logged[0]!.status, logged[0]!.error_code], ['valid', null]);
    assert.deepEqual([logged[1]!.status, logged[1]!.error_code, logged[1]!.duration_ms], ['invalid', 'timeout', 20]);
    for (const l of logged) assert.ok(!JSON.stringify(l).includes('alice@example.com'), 'step inputs and bodies are not logged');
  });
});
