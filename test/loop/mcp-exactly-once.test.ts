// test-needs: kafka
/**
 * MCP tools under kill -9: 100 runs of the order-lookup flow whose tools (orders.get,
 * shipping.track) are served by a real MCP server and imported with `tao tools import-mcp`, through
 * the three stages as processes, with Thought, Action and Observation each SIGKILLed once while runs
 * are in flight and replaced. No run is lost, no step is requested, answered or judged twice, and no
 * MCP call's result is committed twice: each committed MCP result has its own idempotency key, which
 * the MCP server saw in the call's `_meta` (a call repeated after Action's kill carries the same
 * key, so a server can de-duplicate it; only one result is committed).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { LoopRecord } from '../../client/watch.ts';
import type { ActionResult, ObservationResult, Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { startMcpToolServer, type McpToolServer } from '../../tool-server/mcp-server.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd } from '../helpers/cluster.ts';
import { mcpCatalog } from '../helpers/mcp.ts';

const RUNS = 100;
const STAGES = ['thought', 'action', 'observation'] as const;
const SERVED = ['orders.get', 'shipping.track'];
/** Delivered, shipped (orders.get then shipping.track) and placed (orders.get only). */
const ORDERS = ['O-12345678', 'O-20250002', 'O-20250003'] as const;

let mcp: McpToolServer;
let tools: ToolServer;
let fleet: StageFleet | undefined;

before(async () => {
  mcp = await startMcpToolServer({ port: 0, tools: SERVED });
  tools = await startToolServer({ port: 0 });
});

after(async () => {
  await fleet?.stop();
  await tools?.close();
  await mcp?.close();
});

test(
  `kill -9 of Thought, Action and Observation during ${RUNS} runs calling MCP tools: every run completes once, no MCP result is committed twice`,
  { timeout: 300000 },
  async () => {
    const { dir } = await mcpCatalog(mcp.url, SERVED);
    // Each MCP call takes a little while, so the kills find calls in flight.
    const cluster = await freshCluster({ TAO_DEMO_TOOL_ORIGIN: tools.url, TAO_TOOL_CATALOG_DIR: dir, TAO_FLOW: 'order-lookup@1' });
    mcp.setFault({ mode: 'timeout', delayMs: 40 });
    fleet = new StageFleet(cluster.env);
    const [thought, action, observation] = await Promise.all(STAGES.map((s) => fleet!.start(s)));
    const procs = { thought: thought!, action: action!, observation: observation! };
    const follower = await followOutcomes(cluster);
    const tasks: Task[] = Array.from({ length: RUNS }, (_, i) =>
      buildTask({ text: `Where is my order ${ORDERS[i % ORDERS.length]}?`, source: 'mcp-eos', external_id: `${cluster.namespace}-${i}` }),
    );
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();

    // Four batches; each kill lands after some runs of the batches so far ended and while the rest
    // are in flight, and the next batch goes in once the replacement runs.
    const batch = RUNS / 4;
    let submitted = 0;
    const submitBatch = async () => {
      await submitTasks(producer, cluster.codec, tasks.slice(submitted, submitted + batch));
      submitted += batch;
    };
    try {
      await submitBatch();
      for (const victim of STAGES) {
        await fleet.explained(follower.waitFor(submitted - batch + 3, 90000), cluster);
        const ended = follower.outcomes.size;
        assert.ok(ended < submitted, `the kill of ${victim} must land mid-flight (${ended} of ${submitted} submitted runs already ended)`);
        procs[victim].child.kill('SIGKILL');
        assert.equal(await procs[victim].exited, 'SIGKILL');
        procs[victim] = await fleet.start(victim);
        await submitBatch();
      }
    } finally {
      await producer.disconnect();
    }
    assert.equal(submitted, RUNS);
    await fleet.explained(follower.waitFor(RUNS, 150000), cluster);
    await follower.stop();

    const records = await scanToEnd(cluster, ['thoughtRequests', 'actionResults', 'observationResults', 'outcomes']);
    const of = (topic: LoopRecord['topic']) => records.filter((r) => r.topic === topic);

    // Every run: exactly one committed outcome, completed.
    const outcomes = of('outcomes').map((r) => r.value as unknown as Outcome);
    const perRun = new Map<string, number>();
    for (const o of outcomes) perRun.set(o.thought_id, (perRun.get(o.thought_id) ?? 0) + 1);
    assert.deepEqual(
      tasks.filter((t) => perRun.get(t.thought_id) !== 1).map((t) => `${t.thought_id}: ${perRun.get(t.thought_id) ?? 0} outcomes`),
      [],
    );
    assert.deepEqual(
      outcomes.filter((o) => o.status !== 'completed').map((o) => `${o.thought_id}: ${o.status} ${o.reason_code} ${o.reason}`),
      [],
    );

    // Each (thought_id, iteration, step) requested once, answered once, judged once.
    const requests = of('thoughtRequests').map((r) => r.value as unknown as ThoughtRequest);
    const stepKeys = requests.flatMap((r) => r.steps.map((s) => `${r.thought_id}:${r.iteration}:${s.step_id}`));
    assert.deepEqual(repeated(stepKeys), [], 'a step requested twice');
    const results = of('actionResults').map((r) => r.value as unknown as ActionResult);
    const resultKeys = results.flatMap((r) => r.results.map((s) => `${r.thought_id}:${r.iteration}:${s.step_id}`));
    assert.deepEqual(repeated(resultKeys), [], 'a step result committed twice');
    assert.deepEqual(
      [...new Set(stepKeys)].filter((k) => !resultKeys.includes(k)),
      [],
      'a requested step without a committed result',
    );
    const verdictKeys = of('observationResults').flatMap((r) =>
      (r.value as unknown as ObservationResult).verdicts.map((v) => `${r.key}:${(r.value as unknown as ObservationResult).iteration}:${v.step_id}`),
    );
    assert.deepEqual(repeated(verdictKeys), [], 'a verdict committed twice');

    // The MCP calls: each committed result once per idempotency key, each key seen by the MCP server.
    const mcpResults = results.flatMap((r) => r.results.filter((s) => SERVED.includes(s.tool)));
    const mcpKeys = mcpResults.map((s) => s.idempotency_key);
    assert.deepEqual(repeated(mcpKeys), [], "an MCP call's result committed twice");
    const expected = tasks.reduce((n, t) => n + (t.text.includes('O-20250003') ? 1 : 2), 0);
    assert.ok(mcpResults.length >= expected, `at least one MCP call per planned MCP step (${mcpResults.length} results, ${expected} steps)`);
    assert.deepEqual(
      mcpResults.filter((s) => s.error !== null).map((s) => `${s.idempotency_key}: ${s.error!.type} ${s.error!.message}`),
      [],
    );
    const seen = mcp.stats().keys;
    assert.deepEqual(
      mcpKeys.filter((k) => !seen[k]),
      [],
      'every committed MCP result was called through the MCP server with its key in _meta',
    );
    const calledAgain = Object.entries(seen).filter(([, n]) => n > 1);
    const calls = Object.values(seen).reduce((a, b) => a + b, 0);
    console.log(
      `mcp-exactly-once: ${RUNS} runs, ${mcpResults.length} committed MCP results, ${calls} tools/call requests at the server over ${Object.keys(seen).length} keys; ${calledAgain.length} keys called more than once (a call repeated after a kill: ${
        calledAgain
          .slice(0, 5)
          .map(([k, n]) => `${k} x${n}`)
          .join(', ') || 'none'
      })`,
    );
  },
);

/** The values that occur more than once. */
function repeated(values: string[]): string[] {
  const seen = new Set<string>();
  return values.filter((v) => (seen.has(v) ? true : (seen.add(v), false)));
}
