// test-needs: kafka
/**
 * The model asks the customer, and the reply continues the same conversation: the three stages as
 * processes, TAO_PLANNER=react, the demo tool server and the scripted model SIMULATOR (model-sim/,
 * not a model). A ticket without an order id makes the simulator call `ask_customer`; the run parks
 * `awaiting_input`; a REPLY with the id goes on at turn 2, and its recorded prompt holds turn 1's
 * question and the reply after the original ticket.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import type { Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { followOutcomes, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';

let sim: ModelSim;
let loop: RunningLoop;
let id: string;
const TICKET = 'My order has not arrived yet. Can you check where it is?';
const REPLY = 'Sorry, the order number is O-12345678.';
const seen: Outcome[] = [];

async function submit(task: Task): Promise<void> {
  const producer = loop.cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, loop.cluster.codec, [task]);
  await producer.disconnect();
}

before(async () => {
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({ TAO_PLANNER: 'react', TAO_LLM_BASE_URL: `${sim.url}/v1`, TAO_LLM_MODEL: 'sim-1', TAO_LLM_TIMEOUT_MS: '5000' });
  const follower = await followOutcomes(loop.cluster);
  const task = buildTask({ text: TICKET, source: 'test', external_id: `${loop.cluster.namespace}-ask` });
  id = task.thought_id;
  const status = () => (follower.outcomes.get(id)?.value as unknown as Outcome | undefined)?.status;
  await submit(task);
  await follower.waitUntil(() => status() === 'awaiting_input', 60000);
  seen.push(follower.outcomes.get(id)!.value as unknown as Outcome);
  await submit(buildTask({ thought_id: id, kind: 'REPLY', text: REPLY, source: 'test' }));
  await follower.waitUntil(() => status() !== 'awaiting_input', 90000);
  seen.push(follower.outcomes.get(id)!.value as unknown as Outcome);
  await follower.stop();
});

after(async () => {
  await loop?.stop();
  await sim?.close();
});

test("ask_customer parks the run with the model's question; the reply continues it: the second turn's recorded prompt holds the first turn's history", async () => {
  const [parked, ended] = seen;
  assert.equal(parked!.status, 'awaiting_input');
  assert.match(parked!.reason, /the model asks the customer: .*order number/);
  assert.equal(ended!.status, 'completed', ended!.reason);
  const output = JSON.parse(ended!.output_json!) as { answer: string; turns: number; tokens: number };
  assert.match(output.answer, /O-12345678/);
  assert.equal(output.turns, 4, 'the question counts: 1 ask + lookup + tracking + answer, not a restart at turn 1');
  const asked = JSON.parse(parked!.output_json!) as { tokens: number };
  assert.ok(output.tokens > asked.tokens, 'token counts carry over from before the reply');

  const steps = (await scanToEnd(loop.cluster, ['thoughtRequests'])).filter((r) => r.key === id).flatMap((r) => (r.value as unknown as ThoughtRequest).steps);
  assert.deepEqual(
    steps.filter((s) => s.tool === 'model.chat').map((s) => s.step_id),
    ['M1', 'M2', 'M3', 'M4'],
    'no turn was asked twice',
  );
  const second = JSON.parse(steps.find((s) => s.step_id === 'M2')!.input_json) as { messages: Array<{ role: string; content: string }> };
  const roles = second.messages.map((m) => m.role);
  assert.deepEqual(roles, ['system', 'user', 'assistant', 'user']);
  assert.equal(second.messages[1]!.content, TICKET);
  assert.match(second.messages[2]!.content, /order number/, "turn 1: the model's question");
  assert.equal(second.messages[3]!.content.split('\n')[0], REPLY, "then the customer's reply");
  assert.match(second.messages[3]!.content, /\n\(Reply with one tool call and no other text: /, 'and last, what the turn may answer with');
});

test('replay --verify re-decides the continued run from the log: no drift', async () => {
  await loop.fleet.stop();
  const { run, drift } = await verifyWithoutModel(id, loop.cluster.env);
  assert.equal(run.code, 0, `${run.stderr}\n${run.stdout.slice(0, 2000)}`);
  assert.equal(drift, false);
});
