// test-needs: kafka
/**
 * Plan-and-replan end to end: the three stages as processes, TAO_PLANNER=plan-replan, the demo tool
 * server, and the scripted model SIMULATOR (model-sim/, not a model). The model writes the whole
 * plan in one turn; Thought runs it without asking again; the order service is down (a tool fault),
 * so the lookup fails twice, the rule-based reflection calls for a new plan, and the model re-plans
 * through the customer's account. Exactly two model turns: the plan and the re-plan.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import type { ActionResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';

let sim: ModelSim;
let loop: RunningLoop;
let outcome: Outcome;
let id: string;

before(async () => {
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({ TAO_PLANNER: 'plan-replan', TAO_LLM_BASE_URL: `${sim.url}/v1`, TAO_LLM_MODEL: 'sim-1', TAO_LLM_TIMEOUT_MS: '5000' });
  loop.tools.setFault({ route: 'orders.get', mode: 'server_error' });
  const task = buildTask({
    text: 'Where is my order O-78711382? It has not arrived. (maria@example.com)',
    source: 'test',
    external_id: `${loop.cluster.namespace}-replan`,
  });
  id = task.thought_id;
  outcome = (await runTasks(loop.cluster, [task], 120000)).get(id)!;
});

after(async () => {
  await loop?.stop();
  await sim?.close();
});

test('the first plan fails, a reflection calls for a new plan, the model re-plans once, and the run completes: two model turns in the log', async () => {
  assert.deepEqual([outcome.status, outcome.reason_code], ['completed', 'completed'], outcome.reason);
  assert.equal(outcome.planner_kind, 'plan-replan');
  assert.equal(outcome.flow_id, 'plan-replan:order-status');
  const output = JSON.parse(outcome.output_json!) as Record<string, unknown>;
  assert.deepEqual([output.order_id, output.status], ['O-78711382', 'shipped'], "found through the account: maria@example.com's latest order");
  assert.ok(typeof output.carrier === 'string' && typeof output.eta === 'string', 'the new plan tracked the shipment');
  const reflection = outcome.reflections.at(-1)!;
  assert.deepEqual([reflection.step_id, reflection.tool, reflection.action, reflection.author], ['M1_S1', 'orders.get', 'change_plan', 'rules']);

  const records = await scanToEnd(loop.cluster, ['thoughtRequests', 'actionResults']);
  const requests = records.filter((r) => r.key === id && r.topic === 'thoughtRequests').map((r) => r.value as unknown as ThoughtRequest);
  const steps = requests.flatMap((r) => r.steps);
  assert.deepEqual(
    steps.filter((s) => s.tool === 'model.chat').map((s) => s.step_id),
    ['M1', 'M2'],
    'the plan and the re-plan, each once',
  );
  assert.deepEqual(
    steps.filter((s) => s.tool !== 'model.chat').map((s) => s.step_id),
    ['M1_S1', 'M1_S1', 'M2_S1', 'M2_S2', 'M2_S3'],
    'the first plan until its lookup failed twice, then the new plan; no model turn between waves',
  );
  const replan = JSON.parse(steps.find((s) => s.step_id === 'M2')!.input_json) as {
    messages: Array<{ role: string; content: string | null }>;
    response_format: { json_schema: { name: string } };
  };
  assert.equal(replan.response_format.json_schema.name, 'plan');
  assert.ok(
    replan.messages.some((m) => m.role === 'tool' && /"error"/.test(m.content ?? '')),
    'the failure is in the re-plan prompt',
  );
  assert.ok(
    replan.messages.some((m) => m.role === 'system' && /rule-based reflection on M1_S1 \(orders\.get, change_plan\)/.test(m.content ?? '')),
    'and the reflection',
  );

  const answers = records
    .filter((r) => r.key === id && r.topic === 'actionResults')
    .flatMap((r) => (r.value as unknown as ActionResult).results)
    .filter((s) => s.tool === 'model.chat');
  assert.equal(answers.length, 2, 'one committed answer per model turn');
  assert.equal(sim.stats().bySkill['order-status'], 2, 'the simulator was asked twice');
});

test('replay --verify re-decides the plan-replan run from the log with the model server stopped: no drift', async () => {
  await loop.fleet.stop();
  await sim.close();
  const { run, drift } = await verifyWithoutModel(id, loop.cluster.env);
  assert.equal(run.code, 0, `${run.stderr}\n${run.stdout.slice(0, 2000)}`);
  assert.equal(drift, false);
});
