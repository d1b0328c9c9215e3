// test-needs: kafka, quiet
/**
 * Approvals under kill -9: 100 refund runs of the refund flow, every one over the approval threshold,
 * through Thought, Action, Observation and the scheduler as processes (test/helpers/cluster.ts's
 * StageFleet, as the other exactly-once tests), each SIGKILLed once while runs are in flight and
 * replaced. A driver answers each parked run as a person would, twice (a double click): 7 in 10
 * approved, 2 denied, 1 left to time out. Then: no run lost, each run parked once and ended once
 * with the outcome its decision calls for, no step committed twice, one refund wave at most per
 * run, and at the tool server (which de-duplicates by idempotency key and counts refunds made)
 * exactly one refund per approved run and none for the others.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import { watchRecords } from '../../client/watch.ts';
import type { Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { isRefundable, orderById } from '../../tool-server/data.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd } from '../helpers/cluster.ts';

const RUNS = 100;
const STAGES = ['thought', 'action', 'observation', 'scheduler'] as const;
/** What the driver does with run i's approval: i % 10. */
const plan = (i: number): 'approve' | 'deny' | 'none' => (i % 10 === 9 ? 'none' : i % 10 === 3 || i % 10 === 6 ? 'deny' : 'approve');

/** Distinct refundable orders over 50.00, so that no two runs refund the same order. */
function refundableOrders(n: number): string[] {
  const ids: string[] = [];
  for (let k = 20250000; ids.length < n; k++) {
    const order = orderById(`O-${k}`);
    if (isRefundable(order) && order.total_cents > 5000) ids.push(order.order_id);
  }
  return ids;
}

let tools: ToolServer;
let fleet: StageFleet | undefined;

before(async () => {
  tools = await startToolServer({ port: 0 });
});
after(async () => {
  await fleet?.stop();
  await tools?.close();
});

test(
  `kill -9 of Thought, Action, Observation and the scheduler during ${RUNS} runs that need approval: 0 lost, 0 refunds twice, 0 approvals applied twice`,
  { timeout: 420000 },
  async () => {
    // 60 s: the person answers when it reads the parked outcome; on a loaded machine (a fresh clone's suite) that and Thought's restart after its kill took over 20 s, and the scheduler's time-out came first.
    const cluster = await freshCluster({
      TAO_DEMO_TOOL_ORIGIN: tools.url,
      TAO_FLOW: 'refund-request@1',
      TAO_APPROVAL_RULES: 'refunds.create:amount_cents>5000',
      TAO_APPROVAL_TIMEOUT: '60s',
      TAO_SCHEDULER_TICK_MS: '200ms',
    });
    fleet = new StageFleet(cluster.env);
    const started = await Promise.all(STAGES.map((s) => fleet!.start(s)));
    const procs = Object.fromEntries(STAGES.map((s, i) => [s, started[i]!])) as Record<(typeof STAGES)[number], (typeof started)[number]>;
    const orders = refundableOrders(RUNS);
    const tasks: Task[] = orders.map((order, i) =>
      buildTask({ text: `Please refund my order ${order}.`, source: 'approval-eos', external_id: `${cluster.namespace}-${i}` }),
    );
    const index = new Map(tasks.map((t, i) => [t.thought_id, i]));
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();

    // The person: each parked run is answered twice (the second must change nothing).
    const answered = new Set<string>();
    const decisions: Array<Promise<void>> = [];
    const person = await watchRecords(cluster.kafka, cluster.codec, {
      topics: ['outcomes'],
      from: 'beginning',
      onRecord: (r) => {
        const o = r.value as unknown as Outcome;
        const i = index.get(o.thought_id);
        if (o.status !== 'awaiting_approval' || i === undefined || answered.has(o.thought_id)) return;
        answered.add(o.thought_id);
        const verdict = plan(i);
        if (verdict === 'none') return;
        const decision = (n: number) =>
          buildTask({
            text: `${verdict} (${n})`,
            source: 'approval-eos',
            thought_id: o.thought_id,
            decision: {
              verdict,
              step_id: null,
              wave: null,
              reason: `click ${n}`,
              decided_by: 'user:chaos',
              decided_at_ms: Date.now(),
              interrupt_id: null,
              edited_input_json: null,
            },
          });
        decisions.push(submitTasks(producer, cluster.codec, [decision(1), decision(2)]));
      },
    });
    const follower = await followOutcomes(cluster);
    const ended = () => [...follower.outcomes.values()].filter((r) => (r.value as unknown as Outcome).status !== 'awaiting_approval').length;

    const batch = RUNS / 4;
    let submitted = 0;
    try {
      for (const victim of STAGES) {
        await submitTasks(producer, cluster.codec, tasks.slice(submitted, submitted + batch));
        submitted += batch;
        // Kill once some runs of this batch have parked or ended and the rest are in flight.
        await fleet.explained(follower.waitFor(submitted - batch + 3, 120000), cluster);
        assert.ok(ended() < submitted, `the kill of ${victim} must land mid-flight (${ended()} of ${submitted} runs ended)`);
        procs[victim].child.kill('SIGKILL');
        assert.equal(await procs[victim].exited, 'SIGKILL');
        procs[victim] = await fleet.start(victim);
      }
      await fleet.explained(
        follower.waitUntil(() => ended() === RUNS, 240000),
        cluster,
      );
      await Promise.all(decisions);
    } finally {
      await person.stop();
      await follower.stop();
      await producer.disconnect();
    }

    const records = await scanToEnd(cluster, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']);
    const outcomes = records.filter((r) => r.topic === 'outcomes').map((r) => r.value as unknown as Outcome);
    // Each run parked once and ended once, as its decision says.
    const wrong: string[] = [];
    for (const [i, t] of tasks.entries()) {
      const mine = outcomes.filter((o) => o.thought_id === t.thought_id);
      const parked = mine.filter((o) => o.status === 'awaiting_approval');
      const final = mine.filter((o) => o.status !== 'awaiting_approval');
      const expected = { approve: 'completed/completed', deny: 'failed/approval_denied', none: 'failed/approval_timeout' }[plan(i)];
      if (parked.length !== 1 || final.length !== 1 || `${final[0]!.status}/${final[0]!.reason_code}` !== expected)
        wrong.push(`run ${i} (${plan(i)}): ${parked.length} parked, ${final.map((o) => `${o.status}/${o.reason_code} ${o.reason}`).join(' | ') || 'no end'}`);
    }
    assert.deepEqual(wrong, []);

    // No step requested, answered or judged twice; the refund wave at most once per run.
    const keys = (topic: 'thoughtRequests' | 'actionResults' | 'observationResults', list: (v: Record<string, unknown>) => Array<{ step_id: string }>) =>
      records
        .filter((r) => r.topic === topic)
        .flatMap((r) => list(r.value).map((s) => `${r.key}:${(r.value as unknown as { iteration: number }).iteration}:${s.step_id}`));
    assert.deepEqual(repeated(keys('thoughtRequests', (v) => (v as unknown as ThoughtRequest).steps)), [], 'a step requested twice');
    assert.deepEqual(repeated(keys('actionResults', (v) => v.results as Array<{ step_id: string }>)), [], 'a step result committed twice');
    assert.deepEqual(repeated(keys('observationResults', (v) => v.verdicts as Array<{ step_id: string }>)), [], 'a verdict committed twice');
    const refundWaves = records
      .filter((r) => r.topic === 'thoughtRequests' && (r.value as unknown as ThoughtRequest).steps.some((s) => s.tool === 'refunds.create'))
      .map((r) => r.key);
    assert.deepEqual(repeated(refundWaves), [], 'an approval applied twice (the refund wave dispatched twice)');
    const approved = tasks.filter((_, i) => plan(i) === 'approve').map((t) => t.thought_id);
    assert.deepEqual([...refundWaves].sort(), [...approved].sort(), 'a refund wave for each approved run, and only for those');

    // At the tool server: one refund per approved run (a call repeated after a kill carries the same key and is not refunded again).
    const refundKeys = tools
      .stats()
      .requests.filter((r) => r.route === 'refunds.create')
      .map((r) => r.headers['idempotency-key'] ?? '');
    assert.deepEqual([...new Set(refundKeys.map((k) => k.split(':')[0]!))].sort(), [...approved].sort(), 'refund calls only for approved runs');
    assert.equal(tools.stats().effects['refunds.create'], approved.length, 'refunds made: one per approved run');
    const decisionsIgnored = new Set(
      fleet.lines
        .filter((l) => l.includes('"msg":"input ignored"') && l.includes('not awaiting approval'))
        .map((l) => (JSON.parse(l.slice(l.indexOf('{'))) as { thought_id: string }).thought_id),
    );
    console.log(
      `approvals-exactly-once: ${RUNS} runs, ${approved.length} approved, ${refundKeys.length} refund requests over ${new Set(refundKeys).size} keys, ${decisionsIgnored.size} runs whose second decision was ignored`,
    );
  },
);

/** The values that occur more than once. */
function repeated(values: string[]): string[] {
  const seen = new Set<string>();
  return values.filter((v) => (seen.has(v) ? true : (seen.add(v), false)));
}
