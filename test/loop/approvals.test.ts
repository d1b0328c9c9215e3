// test-needs: kafka
/**
 * Approval before side effects, on the real broker and registry with the three stages as processes
 * and the demo tool server (which counts every request): refunds above 50.00 (5000 cents) wait for a
 * person. `tao approve` lets exactly one refund reach the tool server, `tao deny` ends the run with
 * none, the ingress's approve route (a key with scope approve) does what `tao approve` does, an
 * approval nobody answers is timed out by `tao run scheduler`, a second decision does
 * nothing, and `replay --verify` re-decides all three runs from the log without drift.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { buildTask } from '../../client/tasks.ts';
import type { Outcome, Task } from '../../schemas/types.gen.ts';
import { followOutcomes, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';
import { keyOf } from '../processors/fixtures.ts';
import { submitTasks } from '../../client/tasks.ts';
import { hashApiKey, newApiKey } from '../../ingress/api-keys.ts';
import { startIngress } from '../../ingress/server.ts';
import { createLogger } from '../../runtime/log.ts';

const run = promisify(execFile);
let loop: RunningLoop;
/** Shipped or delivered orders (tool-server/data.ts), each over the threshold: 1277.88, 2867.13, 1991.72, 92.73. */
const ORDERS = { approve: 'O-20250002', deny: 'O-20250006', timeout: 'O-20250010', http: 'O-20250016' } as const;
const tasks: Record<keyof typeof ORDERS, Task> = {} as Record<keyof typeof ORDERS, Task>;
/** The refund each run parked with (its arguments), by task name. */
const parkedInputs: Partial<Record<keyof typeof ORDERS, Record<string, unknown>>> = {};

before(async () => {
  loop = await startLoop({ TAO_FLOW: 'refund-request@1', TAO_APPROVAL_RULES: 'refunds.create:amount_cents>5000', TAO_APPROVAL_TIMEOUT: '5s' });
});
after(async () => {
  await loop?.stop();
});

/** Requests that reached the tool server's refunds route, by idempotency key. */
function refundCalls(): string[] {
  return loop.tools
    .stats()
    .requests.filter((r) => r.route === 'refunds.create')
    .map((r) => r.headers['idempotency-key'] ?? '');
}

async function tao(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [TAO_BIN, ...args], { env: loop.cluster.env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test(
  'a refund above the threshold parks its run awaiting_approval with the call, its arguments and why; no refund reaches the tool server',
  { timeout: 120000 },
  async () => {
    const { cluster, fleet } = loop;
    const follower = await followOutcomes(cluster);
    for (const [name, order] of Object.entries(ORDERS) as Array<[keyof typeof ORDERS, string]>)
      tasks[name] = buildTask({
        text: `Please refund my order ${order}, it arrived broken.`,
        source: 'approvals',
        external_id: `${cluster.namespace}-${name}`,
      });
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, Object.values(tasks));
    await producer.disconnect();
    await fleet.explained(follower.waitFor(4, 90000), cluster);
    await follower.stop();
    for (const [name, task] of Object.entries(tasks)) {
      const parked = follower.outcomes.get(task.thought_id)!.value as unknown as Outcome;
      assert.equal(parked.status, 'awaiting_approval', `${name}: ${parked.reason}`);
      assert.equal(parked.reason_code, 'approval_required');
      const [call] = parked.approval!.calls;
      parkedInputs[name as keyof typeof ORDERS] = JSON.parse(call!.input_json) as Record<string, unknown>;
      assert.equal(call!.tool, 'refunds.create');
      assert.equal(JSON.parse(call!.input_json).order_id, ORDERS[name as keyof typeof ORDERS]);
      assert.ok(JSON.parse(call!.input_json).amount_cents > 5000);
      assert.match(call!.why, /^amount_cents \d+ > 5000$/);
      assert.equal(parked.approval!.timeout_ms, 5000);
    }
    assert.deepEqual(refundCalls(), [], 'nothing reached the refunds tool');
  },
);

test('`tao approve` resumes the run: exactly one refund reaches the tool server, and a second approve does nothing', { timeout: 120000 }, async () => {
  const id = tasks.approve.thought_id;
  const approved = await tao(['approve', id, '--reason', 'customer verified by phone', '--wait', '--timeout-s', '60']);
  assert.equal(approved.code, 0, approved.stderr);
  const outcome = JSON.parse(approved.stdout) as Outcome;
  assert.equal(outcome.status, 'completed', outcome.reason);
  assert.match(JSON.parse(outcome.output_json!).refund_id, /^R-\d{8}$/);
  assert.deepEqual(refundCalls(), [keyOf(id, 'S2', 'refunds.create', parkedInputs.approve!)], "one refund call, with the parked call's idempotency key");

  const again = await tao(['approve', id]);
  assert.equal(again.code, 0, again.stderr);
  const ignored = await loop.fleet.waitForLine(`approve by user:`, 60000).then(() => loop.fleet.waitForLine(`which is ended, not awaiting approval`, 60000));
  assert.match(ignored, new RegExp(id));
  assert.deepEqual(refundCalls(), [keyOf(id, 'S2', 'refunds.create', parkedInputs.approve!)], 'still one refund');
  assert.equal(loop.tools.stats().effects['refunds.create'], 1, 'one refund created');
});

test('`tao deny` ends the run failed (approval_denied) with who and why, and no refund', { timeout: 120000 }, async () => {
  const id = tasks.deny.thought_id;
  const denied = await tao(['deny', id, '--reason', 'over the goodwill limit', '--wait', '--timeout-s', '60']);
  assert.equal(denied.code, 1, 'a denied run is not completed');
  const outcome = JSON.parse(denied.stdout) as Outcome;
  assert.equal(outcome.status, 'failed');
  assert.equal(outcome.reason_code, 'approval_denied');
  assert.match(outcome.reason, /refunds\.create \(S2\) was denied by user:\S+: over the goodwill limit/);
  assert.equal(outcome.approval!.calls[0]!.decision, 'deny');
  assert.ok(!refundCalls().some((k) => k.startsWith(id)), 'no refund for the denied run');
});

test(
  'POST /v1/runs/{id}/approve on the ingress, with a key of scope approve, resumes the run: one refund, decided by the key',
  { timeout: 120000 },
  async () => {
    const { cluster } = loop;
    const id = tasks.http.thought_id;
    const key = newApiKey();
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    const ingress = await startIngress(
      {
        port: 0,
        host: '127.0.0.1',
        maxBodyBytes: 8192,
        auth: { mode: 'keys', keys: [{ id: 'supervisor', sha256: hashApiKey(key), sources: ['*'], rate_per_minute: 60, scopes: ['approve'] }] },
      },
      { producer, codec: cluster.codec, logger: createLogger({}, { level: 'error' }) },
    );
    const follower = await followOutcomes(cluster);
    try {
      const res = await fetch(`${ingress.url}/v1/runs/${id}/approve`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'within policy' }),
      });
      assert.equal(res.status, 202);
      await loop.fleet.explained(
        follower.waitUntil((o) => (o.get(id)?.value as unknown as Outcome | undefined)?.status === 'completed', 60000),
        cluster,
      );
    } finally {
      await follower.stop();
      await ingress.close();
      await producer.disconnect();
    }
    assert.deepEqual(
      refundCalls().filter((k) => k.startsWith(id)),
      [keyOf(id, 'S2', 'refunds.create', parkedInputs.http!)],
    );
    assert.equal(loop.tools.stats().effects['refunds.create'], 2, 'one more refund created');
    const decision = (await scanToEnd(cluster, ['tasks'])).map((r) => r.value as unknown as Task).find((t) => t.thought_id === id && t.kind === 'DECISION');
    assert.equal(decision?.decision?.decided_by, 'key:supervisor');
    assert.equal(decision?.decision?.reason, 'within policy');
  },
);

test('an approval nobody answers is timed out by the scheduler: the run ends approval_timeout without a refund', { timeout: 120000 }, async () => {
  const { cluster, fleet } = loop;
  const id = tasks.timeout.thought_id;
  const follower = await followOutcomes(cluster);
  await fleet.start('scheduler');
  await fleet.explained(
    follower.waitUntil((o) => (o.get(id)?.value as unknown as Outcome | undefined)?.status === 'failed', 60000),
    cluster,
  );
  await follower.stop();
  const outcome = follower.outcomes.get(id)!.value as unknown as Outcome;
  assert.equal(outcome.reason_code, 'approval_timeout');
  assert.equal(outcome.approval!.calls[0]!.decided_by, 'scheduler');
  assert.ok(!refundCalls().some((k) => k.startsWith(id)), 'no refund for the timed-out run');
  // The time-out is itself a record: one DECISION task for this run, written by the scheduler.
  const decisions = (await scanToEnd(cluster, ['tasks'])).filter((r) => r.key === id && (r.value as unknown as Task).kind === 'DECISION');
  assert.deepEqual(
    decisions.map((r) => (r.value as unknown as Task).decision?.verdict),
    ['timeout'],
  );
});

test('replay --verify re-decides the approved (CLI and HTTP), denied and timed-out runs from the log: no drift', { timeout: 120000 }, async () => {
  for (const [name, task] of Object.entries(tasks)) {
    const { run: cli, drift } = await verifyWithoutModel(task.thought_id, loop.cluster.env);
    assert.equal(cli.code, 0, `${name}: ${cli.stderr}`);
    assert.equal(drift, false, `${name}: ${cli.stdout}`);
    const report = JSON.parse(cli.stdout) as { checked: { thought_inputs: number } };
    assert.ok(report.checked.thought_inputs >= 3, `${name}: the task, the wave-1 observation and the decision were re-decided (${cli.stdout})`);
  }
});
