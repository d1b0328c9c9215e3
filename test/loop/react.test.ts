// test-needs: kafka
/**
 * The model in the loop, end to end: the three stages as processes, TAO_PLANNER=react, the demo
 * tool server, and the scripted model SIMULATOR (model-sim/: an OpenAI-compatible server that
 * answers from scenario files; it is not a model). Each model turn is a step: Thought builds the
 * request, Action performs it, Observation's gate verifies the answer.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import type { ActionResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { runTasks, scan, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';

let sim: ModelSim;
let loop: RunningLoop;

const TICKETS = {
  orderStatus: 'Where is my order O-12345678? It was a birthday present.',
  hallucinated: 'Where is my order O-12345678? [sim:hallucinated_tool@1]',
  badArguments: 'Where is my order O-12345678? [sim:bad_arguments@1]',
  rateLimited: 'Where is my order O-12345678? [sim:rate_limit@2]',
  repeat: 'Where is my order O-12345678? [sim:endless_repeat*20]',
  down: 'Where is my order O-12345678? [sim:server_error*50]',
  notJson: 'Where is my order O-12345678? [sim:not_json@1]',
} as const;

const outcomes = new Map<keyof typeof TICKETS, Outcome>();
const ids = new Map<keyof typeof TICKETS, string>();

before(async () => {
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({ TAO_PLANNER: 'react', TAO_LLM_BASE_URL: `${sim.url}/v1`, TAO_LLM_MODEL: 'sim-1', TAO_LLM_TIMEOUT_MS: '5000' });
  const tasks = Object.entries(TICKETS).map(([name, text]) => {
    const task = buildTask({ text, source: 'test', external_id: `${loop.cluster.namespace}-${name}` });
    ids.set(name as keyof typeof TICKETS, task.thought_id);
    return task;
  });
  const byId = await runTasks(loop.cluster, tasks, 150000);
  for (const [name, id] of ids) outcomes.set(name, byId.get(id)!);
});

after(async () => {
  await loop?.stop();
  await sim?.close();
});

test('a ReAct run of 3 model turns completes: look the order up, track it, answer; each turn is a recorded request and answer', async () => {
  const outcome = outcomes.get('orderStatus')!;
  assert.equal(outcome.status, 'completed', outcome.reason);
  assert.equal(outcome.planner_kind, 'react');
  const output = JSON.parse(outcome.output_json!) as { answer: string; turns: number; skill: string };
  assert.equal(output.turns, 3);
  assert.equal(output.skill, 'order-status@1');
  assert.match(output.answer, /O-12345678/);

  const id = ids.get('orderStatus')!;
  const records = await scan(loop.cluster, ['thoughtRequests', 'actionResults'], {
    until: (rs) => rs.filter((r) => r.key === id && r.topic === 'actionResults').length >= 5,
  });
  const requests = records.filter((r) => r.key === id && r.topic === 'thoughtRequests').map((r) => r.value as unknown as ThoughtRequest);
  const modelSteps = requests.flatMap((r) => r.steps).filter((s) => s.tool === 'model.chat');
  assert.deepEqual(
    modelSteps.map((s) => s.step_id),
    ['M1', 'M2', 'M3'],
  );
  const third = JSON.parse(modelSteps[2]!.input_json) as {
    messages: Array<{ role: string; content: string | null }>;
    tools: Array<{ function: { name: string } }>;
  };
  assert.match(third.messages[0]!.content!, /^Skill: order-status@1\n/);
  assert.ok(
    third.messages.some((m) => m.role === 'tool'),
    'the third prompt carries the tool results',
  );
  assert.ok(third.tools.some((t) => t.function.name === 'shipping__track'));
  const answers = records
    .filter((r) => r.key === id && r.topic === 'actionResults')
    .flatMap((r) => (r.value as unknown as ActionResult).results)
    .filter((s) => s.tool === 'model.chat');
  assert.equal(answers.length, 3);
  for (const a of answers) assert.match(a.response_raw ?? '', /"system_fingerprint":"tao-model-sim"/);

  // Thought's /metrics: model turns, tokens and latency by model and skill, turns per ended run.
  const started = loop.fleet.lines.find((l) => l.startsWith('thought: ') && l.includes('"msg":"stage started"'))!;
  const port = (JSON.parse(started.slice('thought: '.length)) as { ops_port: number }).ops_port;
  const metrics = (await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())
    .split('\n')
    .filter((l) => l.startsWith('tao_model_'))
    .join('\n');
  assert.match(metrics, /^tao_model_turns_total\{model="sim-1",skill="order-status@1",kind="final"[^}]*\} [1-9]/m);
  assert.match(metrics, /^tao_model_tokens_total\{model="sim-1",skill="order-status@1",type="prompt"[^}]*\} [1-9]/m);
  assert.match(metrics, /^tao_model_latency_seconds_count\{[^}]*model="sim-1",skill="order-status@1"[^}]*\} [1-9]/m);
  assert.match(metrics, /^tao_model_turns_per_run_count\{[^}]*skill="order-status@1"[^}]*\} [1-9]/m);
});

test('injected model faults end as designed, and no hallucinated tool or invalid argument reaches Action or the tool server', async () => {
  const hallucinated = outcomes.get('hallucinated')!;
  assert.equal(hallucinated.status, 'completed', `a rejected answer is fed back and the next turn recovers: ${hallucinated.reason}`);
  const badArguments = outcomes.get('badArguments')!;
  assert.equal(badArguments.status, 'completed', badArguments.reason);
  assert.equal(outcomes.get('rateLimited')!.status, 'completed', 'a 429 is retried by Action honouring Retry-After');
  const repeat = outcomes.get('repeat')!;
  assert.equal(repeat.reason_code, 'model_repeat', repeat.reason);
  const down = outcomes.get('down')!;
  assert.deepEqual([down.status, down.reason_code], ['failed', 'model_unavailable'], down.reason);
  assert.equal(outcomes.get('notJson')!.status, 'completed', outcomes.get('notJson')!.reason);

  // Observation's gate stopped the bad answers: Action never got a call that breaks its contract
  // (no invalid_input result), and the tool server no request outside its routes.
  const gated = new Set([ids.get('hallucinated')!, ids.get('badArguments')!]);
  const records = await scanToEnd(loop.cluster, ['actionResults']);
  const results = records.filter((r) => gated.has(r.key) && r.topic === 'actionResults').flatMap((r) => (r.value as unknown as ActionResult).results);
  assert.ok(
    results.some((r) => r.tool === 'orders.get'),
    'the runs recovered and looked the order up',
  );
  assert.deepEqual(
    results.filter((r) => r.error?.type === 'invalid_input'),
    [],
  );
  assert.equal(loop.tools.stats().requests.filter((r) => r.route === 'unmatched').length, 0);
  assert.ok(sim.stats().byFault.hallucinated_tool! >= 1 && sim.stats().byFault.bad_arguments! >= 1 && sim.stats().byFault.rate_limit! >= 1);
});

test('replay --verify re-decides the ReAct run from the log with the model server stopped: no drift, no request', async () => {
  await loop.fleet.stop();
  await sim.close();
  const id = ids.get('orderStatus')!;
  const { run, drift } = await verifyWithoutModel(id, loop.cluster.env);
  assert.equal(run.code, 0, `${run.stderr}\n${run.stdout.slice(0, 2000)}`);
  assert.equal(drift, false);
});
