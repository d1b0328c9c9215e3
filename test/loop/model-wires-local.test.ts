// test-needs: kafka, model
/**
 * The same ticket through each model wire (TAO_LLM_API=chat, responses, messages) against the REAL
 * local model server (llama.cpp's llama-server at TAO_TEST_MODEL_URL: its /v1/chat/completions,
 * /v1/responses and /v1/messages routes), on the real broker and registry with the three stages as
 * processes. The model is small, so what it answers is not asserted, only what every wire must
 * keep: every run ends with a reason; each model step went to that wire's route and is recorded as
 * received (`response_raw`, that API's shape) and as the chat completion the gate read (`data_json`,
 * naming the wire); no tool ran without the gate; a completed run has a gate-accepted final answer;
 * and `tao replay --verify` re-decides each run from the log with no model configured: no drift.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import type { ActionResult, ObservationResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';

const BASE = process.env.TAO_TEST_MODEL_URL ?? '';
const MODEL = process.env.TAO_TEST_MODEL_NAME ?? '';
if (!BASE || !MODEL) throw new Error('TAO_TEST_MODEL_URL and TAO_TEST_MODEL_NAME are not set: run this file through npm test (`// test-needs: model`)');

const TICKET = 'Where is my order O-12345678? It was a birthday present.';
/** The order-status skill of test/loop/react-local-model.test.ts: one tool, three short turns. */
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
/** What each wire's raw answer is, by a field only that API has. */
const RAW_SHAPE = { chat: /"object":"chat\.completion"/, responses: /"object":"response"/, messages: /"type":"message"/ };

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'tao-wires-'));
  mkdirSync(join(dir, 'skills', 'order-status'), { recursive: true });
  writeFileSync(join(dir, 'skills', 'order-status', 'SKILL.md'), SKILL_MD);
});
after(() => rmSync(dir, { recursive: true, force: true }));

for (const wire of ['chat', 'responses', 'messages'] as const) {
  describe(`the ticket through TAO_LLM_API=${wire}`, () => {
    let loop: RunningLoop;
    let id: string;
    let outcome: Outcome;
    const env = () => ({ TAO_PLANNER: 'react', TAO_SKILLS_DIR: join(dir, 'skills'), TAO_LLM_BASE_URL: BASE, TAO_LLM_MODEL: MODEL, TAO_LLM_API: wire });
    before(async () => {
      loop = await startLoop({ ...env(), TAO_LLM_TIMEOUT_MS: '180000' });
      const task = buildTask({ text: TICKET, source: 'test', external_id: `${loop.cluster.namespace}-${wire}` });
      id = task.thought_id;
      outcome = (await runTasks(loop.cluster, [task], 600_000)).get(id)!;
    });
    after(async () => {
      await loop?.stop();
    });

    test('the run ends with a reason; each model step went through the wire and is recorded as received and as the completion the gate read', async () => {
      assert.ok(outcome.reason.length > 0 && outcome.reason_code !== 'unspecified', `${outcome.reason_code} ${outcome.reason}`);
      const records = (await scanToEnd(loop.cluster, ['thoughtRequests', 'actionResults', 'observationResults'])).filter((r) => r.key === id);
      const steps = records.filter((r) => r.topic === 'actionResults').flatMap((r) => (r.value as unknown as ActionResult).results);
      const answers = steps.filter((s) => s.tool === 'model.chat' && s.status_code === 200);
      assert.ok(answers.length >= 1, 'the model answered at least once');
      for (const a of answers) {
        assert.match(a.response_raw!, RAW_SHAPE[wire], `the raw answer is the ${wire} API's`);
        const data = JSON.parse(a.data_json!) as { wire?: string; choices?: unknown[] };
        assert.equal(data.wire, wire === 'chat' ? undefined : wire);
        assert.ok(Array.isArray(data.choices), 'the gate reads a chat completion');
      }
      const verdicts = records.filter((r) => r.topic === 'observationResults').flatMap((r) => (r.value as unknown as ObservationResult).verdicts);
      const modelVerdict = new Map(verdicts.filter((v) => v.tool === 'model.chat').map((v) => [v.step_id, v]));
      const requests = records.filter((r) => r.topic === 'thoughtRequests').map((r) => r.value as unknown as ThoughtRequest);
      for (const step of requests.flatMap((r) => r.steps).filter((s) => s.tool !== 'model.chat'))
        assert.equal(modelVerdict.get(step.step_id.split('_')[0]!)?.valid, true, `${step.step_id} (${step.tool}) ran only after the gate accepted its turn`);
      if (outcome.status === 'completed') {
        const last = [...modelVerdict.values()].at(-1)!;
        assert.equal((JSON.parse(last.extracted_data_json!) as { kind: string }).kind, 'final');
      }
      console.log(`# ${wire}: ${outcome.status} (${outcome.reason_code}) after ${answers.length} model answer(s)`);
    });

    test('replay --verify re-decides the run from the log with no model configured: no drift', async () => {
      const { run, drift } = await verifyWithoutModel(id, { ...loop.cluster.env, TAO_SKILLS_DIR: join(dir, 'skills'), TAO_LLM_API: wire });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(drift, false, run.stdout);
    });
  });
}
