// test-needs: kafka
/**
 * Skill policies end to end: the three stages as processes, TAO_PLANNER=react, the demo tool server
 * (which counts every request it gets) and the scripted model SIMULATOR (model-sim/, not a model).
 * The simulator asks for the amount the customer names, so a customer asking for more than the
 * order's total makes it propose a refund the refund skill's `refund_within_order_total` policy
 * forbids. Observation's gate refuses that answer: the refund never reaches the tool server, and the
 * model's next prompt names the policy.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import type { ObservationResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';

let sim: ModelSim;
let loop: RunningLoop;

const TICKETS = {
  over: 'Please refund 900000 cents for order O-12345678: the order and the trouble it caused.',
  total: 'I want a refund for order O-12345678',
} as const;
const ids = new Map<keyof typeof TICKETS, string>();
const outcomes = new Map<keyof typeof TICKETS, Outcome>();

before(async () => {
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({ TAO_PLANNER: 'react', TAO_LLM_BASE_URL: `${sim.url}/v1`, TAO_LLM_MODEL: 'sim-1', TAO_LLM_TIMEOUT_MS: '5000' });
  const tasks = Object.entries(TICKETS).map(([name, text]) => {
    const task = buildTask({ text, source: 'test', external_id: `${loop.cluster.namespace}-${name}` });
    ids.set(name as keyof typeof TICKETS, task.thought_id);
    return task;
  });
  const byId = await runTasks(loop.cluster, tasks, 120000);
  for (const [name, id] of ids) outcomes.set(name, byId.get(id)!);
});

after(async () => {
  await loop?.stop();
  await sim?.close();
});

/** The refunds the demo tool server received for a run (its Idempotency-Key starts with the run's id). */
const refundsOf = (id: string) => loop.tools.stats().requests.filter((r) => r.route === 'refunds.create' && r.headers['idempotency-key']?.startsWith(`${id}:`));

test('a refund above the order total proposed by the model never reaches the tool server, and the next prompt names the policy', async () => {
  const id = ids.get('over')!;
  const outcome = outcomes.get('over')!;
  assert.equal(outcome.status, 'completed', outcome.reason);
  assert.match((JSON.parse(outcome.output_json!) as { answer: string }).answer, /refund_within_order_total/);
  assert.deepEqual(refundsOf(id), [], 'no refund request reached the tool server');

  const records = await scanToEnd(loop.cluster, ['thoughtRequests', 'observationResults']);
  const mine = records.filter((r) => r.key === id);
  // The gate's verdict on the model's second answer: refused by the policy, with its name.
  const verdicts = mine.filter((r) => r.topic === 'observationResults').flatMap((r) => (r.value as unknown as ObservationResult).verdicts);
  const refused = verdicts.find((v) => v.step_id === 'M2')!;
  assert.deepEqual([refused.valid, refused.error_type], [false, 'policy_violation']);
  assert.match(
    refused.audit_trail.find((c) => c.name === 'policies')!.evidence,
    /^policy "refund_within_order_total" .*amount_cents must be <= 38312 \(actual: 900000\)/,
  );
  // No wave ever carried a refunds.create step for Action.
  const steps = mine.filter((r) => r.topic === 'thoughtRequests').flatMap((r) => (r.value as unknown as ThoughtRequest).steps);
  assert.deepEqual(
    steps.filter((s) => s.tool === 'refunds.create'),
    [],
  );
  // The next model turn's recorded prompt tells the model which policy refused its answer.
  const third = steps.find((s) => s.step_id === 'M3')!;
  const messages = (JSON.parse(third.input_json) as { messages: Array<{ role: string; content: string }> }).messages;
  assert.ok(
    messages.some((m) => m.role === 'user' && /policy_violation/.test(m.content) && /refund_within_order_total/.test(m.content)),
    JSON.stringify(messages.slice(-2)),
  );
});

test('a refund within the policies goes through, exactly once', () => {
  const outcome = outcomes.get('total')!;
  assert.equal(outcome.status, 'completed', outcome.reason);
  assert.match((JSON.parse(outcome.output_json!) as { answer: string }).answer, /^Refund R-\d{8} of 38312 cents for order O-12345678 is pending\.$/);
  assert.equal(refundsOf(ids.get('total')!).length, 1);
});

test('replay --verify re-judges the refused answer from the log: no drift', async () => {
  await loop.fleet.stop();
  const { run, drift } = await verifyWithoutModel(ids.get('over')!, loop.cluster.env);
  assert.equal(run.code, 0, `${run.stderr}\n${run.stdout.slice(0, 2000)}`);
  assert.equal(drift, false);
});
