// test-needs: kafka
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { LoopRecord } from '../../client/watch.ts';
import { replayCommand } from '../../replay/cli.ts';
import type { Timeline } from '../../replay/timeline.ts';
import type { VerifyReport } from '../../replay/verify.ts';
import type { ActionResult, ObservationResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scan, scanToEnd, type TestCluster } from '../helpers/cluster.ts';
import { runCli } from './helpers.ts';

let cluster: TestCluster;
let tools: ToolServer;
let fleet: StageFleet;
let parent = '';

const LOOP = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'] as const;

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  fleet = new StageFleet(cluster.env);
  await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
  const task = buildTask({ text: 'Where is my order? fork.parent@example.com', source: 'test', external_id: `${cluster.namespace}-parent` });
  parent = task.thought_id;
  const follower = await followOutcomes(cluster);
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, [task]);
  await producer.disconnect();
  await follower.waitFor(1, 60000);
  await follower.stop();
});

after(async () => {
  await fleet?.stop();
  await tools?.close();
});

/** Every committed record of `thoughtId` on the loop topics, as comparable JSON. */
async function recordsOf(thoughtId: string, until?: (rs: LoopRecord[]) => boolean): Promise<LoopRecord[]> {
  // Without `until` the run has ended: its records are the committed log as it stands.
  const all = until ? await scan(cluster, [...LOOP], { until: (rs) => until(rs.filter((r) => r.key === thoughtId)) }) : await scanToEnd(cluster, [...LOOP]);
  const order = (r: LoopRecord) => `${r.topic}/${r.partition}/${r.offset.padStart(12, '0')}`;
  return all.filter((r) => r.key === thoughtId).sort((a, b) => (order(a) < order(b) ? -1 : 1));
}

test(
  'a fork from wave 2 with an overridden step input runs to completion in the live loop as a new run that references its parent; the parent is untouched',
  { timeout: 120000 },
  async () => {
    const parentBefore = await recordsOf(parent);
    assert.equal(parentBefore.filter((r) => r.topic === 'outcomes').length, 1);
    const parentS1 = JSON.parse(
      (
        parentBefore.find((r) => r.topic === 'observationResults' && (r.value as unknown as ObservationResult).iteration === 1)!
          .value as unknown as ObservationResult
      ).verdicts[0]!.extracted_data_json!,
    ) as { customer_id: string };
    assert.notEqual(parentS1.customer_id, 'C-000001');
    const toolRequestsBefore = tools.stats().total;

    const follower = await followOutcomes(cluster);
    const forked = await runCli(replayCommand, [parent, '--fork', '2', '--set', 'S2.customer_id=C-000001'], cluster.env);
    assert.equal(forked.code, 0, forked.stderr);
    const child = forked.stdout.trim();
    assert.match(child, /^[0-9a-f-]{36}$/, 'the new thought_id is printed');
    assert.notEqual(child, parent);
    await follower.waitFor(2, 60000);
    await follower.stop();
    const outcome = follower.outcomes.get(child)!.value as unknown as Outcome;
    assert.equal(outcome.status, 'completed', outcome.reason);
    const output = JSON.parse(outcome.output_json!) as Record<string, string>;
    assert.equal(output.customer_id, parentS1.customer_id, "S1's output is the parent's, kept from before the fork point");

    const records = await recordsOf(child, (rs) => rs.some((r) => r.topic === 'outcomes') && rs.filter((r) => r.topic === 'observationResults').length >= 2);
    const requests = records.filter((r) => r.topic === 'thoughtRequests').map((r) => r.value as unknown as ThoughtRequest);
    assert.deepEqual(
      requests.map((r) => [r.iteration, r.steps.map((s) => s.step_id).join('+')]),
      [
        [2, 'S2+S3'],
        [3, 'S4'],
      ],
      'the fork starts at wave 2; S1 does not run again',
    );
    const s2 = requests[0]!.steps.find((s) => s.step_id === 'S2')!;
    const s3 = requests[0]!.steps.find((s) => s.step_id === 'S3')!;
    assert.deepEqual(JSON.parse(s2.input_json), { customer_id: 'C-000001' }, 'the override changed S2');
    assert.deepEqual(JSON.parse(s3.input_json), { customer_id: parentS1.customer_id }, 'S3 still reads the kept S1 output');
    assert.deepEqual(
      records.filter((r) => r.topic === 'tasks'),
      [],
      'no task record: Thought would start a second run from it',
    );
    // Every record of the new run points at the parent: the first by its headers, all by their task id.
    const first = records.find((r) => r.topic === 'thoughtRequests')!;
    assert.equal(first.headers['tao.fork.parent'], parent);
    assert.equal(first.headers['tao.fork.point'], '2');
    assert.deepEqual(JSON.parse(first.headers['tao.fork.overrides']!), ['S2.customer_id=C-000001']);
    for (const r of records) {
      const taskId = r.topic === 'outcomes' ? (r.value as unknown as Outcome).task_id : (r.value as unknown as ThoughtRequest).run.task_id;
      assert.ok(taskId.startsWith(`fork:${parent}:2:`), `${r.topic}@${r.offset} references the parent (task_id ${taskId})`);
    }
    const executed = records.filter((r) => r.topic === 'actionResults').flatMap((r) => (r.value as unknown as ActionResult).results.map((s) => s.tool));
    assert.deepEqual(executed.sort(), ['crm.tier', 'orders.latest', 'shipping.track']);
    assert.equal(tools.stats().total - toolRequestsBefore, 3, 'the fork called the tools of waves 2 and 3 only');

    const parentAfter = await recordsOf(parent);
    assert.deepEqual(parentAfter, parentBefore, "the parent's records are unchanged");

    const { stdout } = await runCli(replayCommand, [child, '--format', 'json'], cluster.env);
    const t = JSON.parse(stdout) as Timeline;
    assert.deepEqual(t.forked_from, { thought_id: parent, fork_point: '2', iteration: 2, overrides: ['S2.customer_id=C-000001'], flow: null });
    assert.equal(t.status, 'completed');
    assert.ok(t.iterations[0]!.requests[0]!.fork);
    const verified = await runCli(replayCommand, [child, '--verify', '--format', 'json'], cluster.env);
    assert.equal(verified.code, 0, verified.stdout);
    assert.equal((JSON.parse(verified.stdout) as VerifyReport).drift, false);
  },
);

test('a fork point can be a step id, the JSON answer names the first wave, and impossible forks are refused with the reason', { timeout: 60000 }, async () => {
  const ok = await runCli(replayCommand, [parent, '--fork', 'S4', '--format', 'json'], cluster.env);
  assert.equal(ok.code, 0, ok.stderr);
  const answer = JSON.parse(ok.stdout) as { thought_id: string; forked_from: string; iteration: number; kept: string[]; steps: Array<{ step_id: string }> };
  assert.equal(answer.forked_from, parent);
  assert.equal(answer.iteration, 3);
  assert.deepEqual(answer.kept.sort(), ['S1', 'S2', 'S3']);
  assert.deepEqual(
    answer.steps.map((s) => s.step_id),
    ['S4'],
  );

  const cases: Array<[string[], RegExp]> = [
    [['--fork', '9'], /has no wave 9/],
    [['--fork', 'S9'], /never ran a step "S9"/],
    [['--fork', '2', '--set', 'S1.email=x@example.com'], /S1 finished before the fork point/],
    [['--fork', '2', '--set', 'S7.customer_id=C-1'], /the plan has no step S7/],
    [['--fork', '2', '--set', 'nonsense'], /--set must look like STEP\.field=value/],
    [['--fork', '2', '--flow', 'no-such-flow@3'], /no flow no-such-flow@3/],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(replayCommand, [parent, ...args], cluster.env);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}`);
    assert.match(r.stderr, message, args.join(' '));
  }
  const usage = await runCli(replayCommand, [parent, '--set', 'S2.x=1'], cluster.env);
  assert.equal(usage.code, 2);
});
