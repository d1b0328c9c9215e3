// test-needs: kafka
/**
 * An old run of the retired `llm` planner, in Kafka. TAO_PLANNER=llm can no longer be started, so
 * the run is recorded in-process by the real Thought and Observation cores with the planner as such
 * runs recorded it (test/replay/record-run.ts), and its records are written to the topics with
 * their record times, as the stages wrote them. `tao replay` reads them back; `--verify` says the
 * run was planned by the retired planner (a configuration drift row, not an exception) and
 * re-decides every decision after the plan from the log.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Producer } from 'kafkajs';
import { observationConfig, thoughtConfig } from '../../processors/wiring/index.ts';
import { replayCommand } from '../../replay/cli.ts';
import type { Timeline } from '../../replay/timeline.ts';
import type { VerifyReport } from '../../replay/verify.ts';
import { freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { runCli } from './helpers.ts';
import { LLM_ANSWER_RECORD, recordRun, retiredLlmPlanner } from './record-run.ts';

let cluster: TestCluster;
let producer: Producer | undefined;
let thoughtId = '';

before(async () => {
  cluster = await freshCluster();
  await cluster.codec.register(['thoughtRuns']);
  thoughtId = `${cluster.namespace}-llm`;
  const graph = await thoughtConfig({ TAO_PLANNER: 'graph', TAO_FLOW: 'order-status@1' });
  const observation = await observationConfig({}); // with the classifier, as the stage runs by default
  const log = await recordRun({ ...graph, planner: retiredLlmPlanner(graph.planner) }, observation, LLM_ANSWER_RECORD, { thoughtId });
  producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  // In log order, one send at a time: the run's records keep their order and their record times.
  for (const r of log.records) {
    const value = await cluster.codec.encode(r.topic, r.value);
    await producer.send({ topic: cluster.codec.topics.name(r.topic), acks: -1, messages: [{ key: thoughtId, value, timestamp: String(r.timestamp) }] });
  }
});

after(async () => {
  await producer?.disconnect();
});

test(
  'an old run of the retired llm planner replays, and verify names the retired planner and re-decides every later decision from the log',
  { timeout: 60000 },
  async () => {
    const t = JSON.parse((await runCli(replayCommand, [thoughtId, '--format', 'json'], cluster.env)).stdout) as Timeline;
    assert.equal(t.plan?.planner, 'llm');
    assert.deepEqual(
      t.iterations.map((w) => w.steps.map((s) => s.step_id).join('+')),
      ['S1', 'S2+S3', 'S4'],
      'the waves of the recorded plan',
    );
    assert.equal((t.state?.planner_record as { content?: string } | null)?.content, '{"steps":[]}', "the model's answer is in the run state");

    // Whatever the shell's planner, and with no model configured: no exception, one row naming the retired planner.
    const { TAO_LLM_BASE_URL: _url, TAO_LLM_MODEL: _model, ...withoutModel } = cluster.env;
    for (const env of [cluster.env, { ...withoutModel, TAO_PLANNER: 'router' }]) {
      const verified = await runCli(replayCommand, [thoughtId, '--verify', '--format', 'json'], env);
      assert.equal(verified.code, 1, `configuration drift is drift: ${verified.stderr}`);
      const report = JSON.parse(verified.stdout) as VerifyReport;
      assert.deepEqual(
        report.configuration_drift.map((c) => [c.setting, c.recorded, c.today]),
        [['planner', 'llm', null]],
      );
      assert.match(report.configuration_drift[0]!.explanation, /retired llm planner/);
      assert.deepEqual([report.code_drift, report.first_divergence], [false, null]);
      assert.deepEqual([report.checked.thought_inputs, report.checked.observation_inputs], [4, 3], 'the task and the three waves were re-decided');
    }
    const text = await runCli(replayCommand, [thoughtId, '--verify'], cluster.env);
    assert.match(text.stdout, /CONFIGURATION DRIFT/);
    assert.match(text.stdout, /the run was planned by the retired llm planner \(TAO_PLANNER=llm; CHANGELOG\.md, Migration\)/);
    assert.doesNotMatch(text.stdout, /CODE DRIFT/);
  },
);
