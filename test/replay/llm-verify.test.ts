// test-needs: kafka
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { replayCommand } from '../../replay/cli.ts';
import type { Timeline } from '../../replay/timeline.ts';
import type { VerifyReport } from '../../replay/verify.ts';
import type { Outcome } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { startLlmServer, type LlmServer } from '../helpers/llm-server.ts';
import { runCli } from './helpers.ts';

const EMAIL = 'llm.replay@example.com';
const PLAN = {
  flow: { id: 'llm', version: 1 },
  steps: [
    { id: 'S1', tool: 'crm.find_customer', input: { email: EMAIL }, depends_on: [] },
    { id: 'S2', tool: 'orders.latest', input: { customer_id: '{{S1.customer_id}}' }, depends_on: ['S1'] },
  ],
  output: { customer: '{{S1.customer_id}}', order: '{{S2.order_id}}' },
};

let llm: LlmServer;
let tools: ToolServer;
let cluster: TestCluster;
let thoughtId = '';

/** One run planned by the LLM planner against the scripted model server; the stages stop before the tests. */
before(async () => {
  llm = await startLlmServer();
  llm.when(EMAIL, { content: JSON.stringify(PLAN) });
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({
    TAO_DEMO_TOOL_ORIGIN: tools.url,
    TAO_PLANNER: 'llm',
    TAO_LLM_BASE_URL: llm.baseUrl,
    TAO_LLM_MODEL: 'scripted-planner-1',
    TAO_LLM_API_KEY: 'sk-replay-test',
    TAO_LLM_TIMEOUT_MS: '3000',
  });
  const fleet = new StageFleet(cluster.env);
  try {
    await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
    const task = buildTask({ text: `Where is my order? ${EMAIL}`, source: 'test', external_id: `${cluster.namespace}-llm` });
    thoughtId = task.thought_id;
    const follower = await followOutcomes(cluster);
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, [task]);
    await producer.disconnect();
    await follower.waitFor(1, 60000);
    await follower.stop();
    assert.equal((follower.outcomes.get(thoughtId)!.value as unknown as Outcome).status, 'completed');
  } finally {
    await fleet.stop();
  }
});

after(async () => {
  await tools?.close();
  await llm?.close();
});

test('a run planned by an LLM replays and verifies from the recorded answer: the model and the tools get no request', { timeout: 60000 }, async () => {
  assert.equal(llm.count, 1, 'the model was asked once, when the run was planned');
  const toolRequests = tools.stats().total;

  const t = JSON.parse((await runCli(replayCommand, [thoughtId, '--format', 'json'], cluster.env)).stdout) as Timeline;
  assert.equal(t.plan?.planner, 'llm');
  assert.deepEqual(
    t.iterations.map((w) => w.steps.map((s) => s.step_id).join('+')),
    ['S1', 'S2'],
  );
  assert.equal((t.state?.planner_record as { content?: string } | null)?.content, JSON.stringify(PLAN), "the model's answer is in the run state");

  const verified = await runCli(replayCommand, [thoughtId, '--verify', '--format', 'json'], cluster.env);
  assert.equal(verified.code, 0, verified.stdout + verified.stderr);
  assert.equal((JSON.parse(verified.stdout) as VerifyReport).drift, false);
  // Pointing the planner at an address where nothing listens changes nothing: verify never asks.
  const offline = await runCli(replayCommand, [thoughtId, '--verify', '--format', 'json'], { ...cluster.env, TAO_LLM_BASE_URL: 'http://127.0.0.1:9/v1' });
  assert.equal(offline.code, 0, offline.stdout + offline.stderr);

  // A shell with another planner, or with no LLM settings at all: verify re-decides with the planner the run recorded (llm).
  const { TAO_LLM_BASE_URL: _url, TAO_LLM_MODEL: _model, TAO_LLM_API_KEY: _key, ...withoutLlm } = cluster.env;
  for (const env of [
    { ...cluster.env, TAO_PLANNER: 'graph' },
    { ...withoutLlm, TAO_PLANNER: 'graph' },
  ]) {
    const other = await runCli(replayCommand, [thoughtId, '--verify', '--format', 'json'], env);
    assert.equal(other.code, 0, other.stdout + other.stderr);
    const report = JSON.parse(other.stdout) as VerifyReport;
    assert.deepEqual([report.drift, report.configuration_drift], [false, []]);
  }

  assert.equal(llm.count, 1, 'replay and verify sent no request to the model');
  assert.equal(tools.stats().total, toolRequests, 'replay and verify sent no request to the tools');
});
