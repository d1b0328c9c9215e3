// test-needs: kafka
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { Outcome, ThoughtRequest, ActionResult, ObservationResult } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scan, type TestCluster } from '../helpers/cluster.ts';

let cluster: TestCluster;
let tools: ToolServer;
let fleet: StageFleet;
let opsPorts: Record<string, number>;

before(async () => {
  tools = await startToolServer({ port: 0 });
  cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url });
  fleet = new StageFleet(cluster.env);
  const [thought, action, observation] = await Promise.all([fleet.start('thought'), fleet.start('action'), fleet.start('observation')]);
  opsPorts = { thought: thought.opsPort, action: action.opsPort, observation: observation.opsPort };
});

after(async () => {
  await fleet?.stop();
  await tools?.close();
});

test('50 submitted tasks all complete, every record is keyed by its run, and Action ran exactly the planned steps', { timeout: 180000 }, async () => {
  const follower = await followOutcomes(cluster);
  const tasks = Array.from({ length: 50 }, (_, i) =>
    buildTask({ text: `Where is my order? customer${i}@example.com`, source: 'test', external_id: `${cluster.namespace}-${i}` }),
  );
  const producer = cluster.kafka.producer({ idempotent: true });
  await producer.connect();
  await submitTasks(producer, cluster.codec, tasks);
  await producer.disconnect();

  await follower.waitFor(50, 120000);
  await follower.stop();
  const outcomes = [...follower.outcomes.values()].map((r) => r.value as unknown as Outcome);
  assert.deepEqual(
    outcomes.map((o) => o.status).filter((s) => s !== 'completed'),
    [],
    'every run completes',
  );
  const ids = new Set(tasks.map((t) => t.thought_id));
  assert.equal(ids.size, 50);
  for (const o of outcomes) {
    assert.ok(ids.has(o.thought_id));
    const output = JSON.parse(o.output_json!) as Record<string, string>;
    assert.match(output.order_id!, /^O-\d{8}$/);
    assert.ok(['gold', 'silver', 'bronze'].includes(output.tier!));
  }

  const records = await scan(cluster, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'], {
    until: (rs) => rs.filter((r) => r.topic === 'outcomes').length >= 50 && rs.filter((r) => r.topic === 'observationResults').length >= 150,
  });
  for (const r of records) assert.equal(r.key, r.value.thought_id, `${r.topic}@${r.partition}/${r.offset} is keyed by its thought_id`);

  const planned = records
    .filter((r) => r.topic === 'thoughtRequests')
    .flatMap((r) => (r.value as unknown as ThoughtRequest).steps.map((s) => `${r.key}:${s.idempotency_key}`));
  const executed = records
    .filter((r) => r.topic === 'actionResults')
    .flatMap((r) => (r.value as unknown as ActionResult).results.map((s) => `${r.key}:${s.idempotency_key}`));
  assert.equal(planned.length, 50 * 4, 'the flow plans 4 steps per run');
  assert.deepEqual([...executed].sort(), [...planned].sort(), 'Action executed exactly the steps Thought asked for');
  const judged = records.filter((r) => r.topic === 'observationResults').flatMap((r) => (r.value as unknown as ObservationResult).verdicts);
  assert.equal(judged.length, 200);
  assert.ok(judged.every((v) => v.valid && v.audit_trail.some((c) => c.name === 'response_schema' && c.passed)));

  // The tool server saw each step once, with the idempotency key Thought assigned.
  const stats = tools.stats();
  assert.equal(stats.total, 200);
  assert.deepEqual(stats.requests.map((r) => r.headers['idempotency-key']).sort(), planned.map((p) => p.slice(p.indexOf(':') + 1)).sort());
  // Runs have at least two waves where a step uses an earlier step's output: S1 -> {S2, S3} -> S4.
  const waves = records
    .filter((r) => r.topic === 'thoughtRequests' && r.key === tasks[0]!.thought_id)
    .map((r) => (r.value as unknown as ThoughtRequest).steps.map((s) => s.step_id).join('+'));
  assert.deepEqual(waves, ['S1', 'S2+S3', 'S4']);
});

test('each stage process serves /health and /metrics that count what it processed', async () => {
  for (const [stage, port] of Object.entries(opsPorts)) {
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    assert.equal(health.status, 200);
    const body = (await health.json()) as { ok: boolean; group: string; assigned: Record<string, number[]> };
    assert.equal(body.ok, true);
    assert.equal(body.group, `${cluster.namespace}.tao-${stage}`);
    assert.ok(Object.values(body.assigned).flat().length > 0, `${stage} holds partitions`);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const committed = metrics.split('\n').filter((l) => l.startsWith('tao_transactions_total') && l.includes('result="committed"'));
    assert.ok(committed.length === 1 && Number(committed[0]!.split(' ').pop()) > 0, `${stage} reports committed transactions:\n${committed.join('\n')}`);
  }
  const action = await (await fetch(`http://127.0.0.1:${opsPorts.action}/metrics`)).text();
  assert.match(
    action,
    new RegExp(`tao_records_in_total\\{stage="action",topic="${cluster.namespace}\\.thought\\.requests"[^}]*\\} 150`),
    'action consumed the 150 waves of the 50 runs',
  );
});
