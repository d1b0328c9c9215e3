// test-needs: kafka
/**
 * Approval in a run a model drives, end to end: the three stages as processes, TAO_PLANNER=react,
 * the demo tool server and the scripted model SIMULATOR (model-sim/: answers from scenario files; not
 * a model). The simulated model proposes a refund over the threshold; the run parks; `tao deny`
 * turns the refused call into what the model sees in its next turn, which answers the customer
 * without a refund; `replay --verify` re-decides the run from the log without drift.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import type { Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { followOutcomes, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';

let sim: ModelSim;
let loop: RunningLoop;

before(async () => {
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_LLM_BASE_URL: `${sim.url}/v1`,
    TAO_LLM_MODEL: 'sim-1',
    TAO_LLM_TIMEOUT_MS: '5000',
    TAO_APPROVAL_RULES: 'refunds.create:amount_cents>5000',
  });
});
after(async () => {
  await loop?.stop();
  await sim?.close();
});

test(
  "the model's refund waits for approval; denied, the model sees why in its next turn and answers without a refund; no drift on replay",
  { timeout: 180000 },
  async () => {
    const { cluster, fleet, tools } = loop;
    const task = buildTask({ text: 'Please refund my order O-20250002, it arrived broken.', source: 'test', external_id: `${cluster.namespace}-react-deny` });
    const follower = await followOutcomes(cluster);
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, [task]);
    await producer.disconnect();
    await fleet.explained(follower.waitFor(1, 120000), cluster);
    await follower.stop();
    const parked = follower.outcomes.get(task.thought_id)!.value as unknown as Outcome;
    assert.equal(parked.status, 'awaiting_approval', parked.reason);
    assert.equal(parked.planner_kind, 'react');
    assert.deepEqual(
      parked.approval!.calls.map((c) => [c.tool, JSON.parse(c.input_json).order_id, c.rule]),
      [['refunds.create', 'O-20250002', 'refunds.create:amount_cents>5000 (TAO_APPROVAL_RULES)']],
    );

    let stdout: string;
    try {
      ({ stdout } = await promisify(execFile)(
        process.execPath,
        [TAO_BIN, 'deny', task.thought_id, '--reason', 'a replacement is on its way instead', '--wait', '--timeout-s', '90'],
        { env: cluster.env },
      ));
    } catch (err) {
      stdout = (err as { stdout: string }).stdout; // exit 1 unless completed
    }
    const ended = JSON.parse(stdout) as Outcome;
    assert.equal(ended.status, 'completed', `the model answered after the denial: ${ended.reason}`);
    assert.ok(!tools.stats().requests.some((r) => r.route === 'refunds.create'), 'no refund reached the tool server');

    // The turn after the denial: its prompt (the recorded request) carries the refused call's result.
    const requests = (await scanToEnd(cluster, ['thoughtRequests'])).filter((r) => r.key === task.thought_id).map((r) => r.value as unknown as ThoughtRequest);
    const modelTurns = requests.flatMap((r) => r.steps.filter((s) => s.tool === 'model.chat'));
    const afterDenial = JSON.parse(modelTurns.at(-1)!.input_json) as { messages: Array<{ role: string; content: string | null }> };
    const toolResults = afterDenial.messages.filter((m) => m.role === 'tool').map((m) => m.content ?? '');
    assert.match(toolResults.at(-1)!, /approval_denied/);
    assert.match(toolResults.at(-1)!, /denied by user:\S+: a replacement is on its way instead/);
    assert.ok(!requests.some((r) => r.steps.some((s) => s.tool === 'refunds.create')), 'the refund was never dispatched');

    const { run: cli, drift } = await verifyWithoutModel(task.thought_id, cluster.env);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(drift, false, cli.stdout);
  },
);
