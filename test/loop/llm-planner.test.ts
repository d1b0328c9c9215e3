// test-needs: kafka
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { LlmRecord } from '../../processors/thought/planners/llm.ts';
import type { Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import type { ToolServer } from '../../tool-server/server.ts';
import { followOutcomes, scan, scanToEnd, startLoop, type RunningLoop, type TestCluster } from '../helpers/cluster.ts';
import { startLlmServer, type LlmServer } from '../helpers/llm-server.ts';

const KEY = 'sk-loop-test-5f1d2c3b4a';
const MODEL = 'scripted-planner-1';

/** The plan a good model would give for the demo tools; `email` is the only value it takes from the task. */
function plan(email: string) {
  return {
    flow: { id: 'llm', version: 1 },
    steps: [
      { id: 'S1', tool: 'crm.find_customer', input: { email }, depends_on: [] },
      { id: 'S2', tool: 'orders.latest', input: { customer_id: '{{S1.customer_id}}' }, depends_on: ['S1'] },
      { id: 'S3', tool: 'crm.tier', input: { customer_id: '{{S1.customer_id}}' }, depends_on: ['S1'] },
      { id: 'S4', tool: 'shipping.track', input: { order_id: '{{S2.order_id}}' }, depends_on: ['S2'] },
    ],
    // Names the flow does not use, so an outcome shows whose plan ran.
    output: { customer: '{{S1.customer_id}}', order: '{{S2.order_id}}', tier: '{{S3.tier}}', shipping: '{{S4.state}}' },
  };
}

// Each task names its own e-mail, and the LLM server picks the answer by the e-mail in the user
// message, so answers match tasks whatever order Thought processes them in.
const CASES = {
  valid: { email: 'llm-valid@example.com', content: JSON.stringify(plan('llm-valid@example.com')) },
  fenced: {
    email: 'llm-fenced@example.com',
    content: `Here is the plan.\n\n\`\`\`json\n${JSON.stringify(plan('llm-fenced@example.com'), null, 2)}\n\`\`\`\nIt looks up the customer first.`,
  },
  badJson: { email: 'llm-badjson@example.com', content: 'I think you should look up the customer, then the order {maybe}.' },
  cyclic: {
    email: 'llm-cyclic@example.com',
    content: JSON.stringify({
      ...plan('never-called@example.com'),
      steps: plan('never-called@example.com').steps.map((s) => (s.id === 'S1' ? { ...s, depends_on: ['S4'] } : s)),
    }),
  },
  timeout: { email: 'llm-timeout@example.com', content: null },
} as const;
type CaseName = keyof typeof CASES;

let llm: LlmServer;
let loop: RunningLoop;
let tools: ToolServer;
let cluster: TestCluster;

before(async () => {
  llm = await startLlmServer();
  for (const c of Object.values(CASES)) llm.when(c.email, c.content === null ? { hang: true } : { content: c.content });
  loop = await startLoop({
    TAO_PLANNER: 'llm',
    TAO_LLM_BASE_URL: llm.baseUrl,
    TAO_LLM_MODEL: MODEL,
    TAO_LLM_API_KEY: KEY,
    TAO_LLM_TIMEOUT_MS: '1500',
  });
  ({ cluster, tools } = loop);
});
after(async () => {
  await loop?.stop();
  await llm?.close();
});

test(
  'TAO_PLANNER=llm: valid and fenced LLM plans run as planned; bad JSON, a cycle and a timeout fall back to the graph flow; every answer is in the run records',
  { timeout: 180000 },
  async () => {
    const follower = await followOutcomes(cluster);
    const tasks = Object.fromEntries(
      Object.entries(CASES).map(([name, c]) => [
        name,
        buildTask({ text: `Where is my order? My e-mail is ${c.email}`, source: 'test', external_id: `${cluster.namespace}-${name}` }),
      ]),
    ) as Record<CaseName, ReturnType<typeof buildTask>>;
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();
    await submitTasks(producer, cluster.codec, Object.values(tasks));
    await producer.disconnect();

    await follower.waitFor(5, 90000);
    await follower.stop();
    const outcome = (name: CaseName) => follower.outcomes.get(tasks[name].thought_id)!.value as unknown as Outcome;
    for (const name of Object.keys(CASES) as CaseName[])
      assert.equal(outcome(name).status, 'completed', `${name}: ${outcome(name).reason} (planner ${outcome(name).planner})`);

    // The LLM's plans ran as the model wrote them (its output names, its flow id).
    for (const name of ['valid', 'fenced'] as const) {
      const o = outcome(name);
      assert.equal(o.planner, 'llm');
      assert.deepEqual([o.flow_id, o.flow_version], ['llm', 1]);
      const output = JSON.parse(o.output_json!) as Record<string, string>;
      assert.deepEqual(Object.keys(output).sort(), ['customer', 'order', 'shipping', 'tier']);
      assert.match(output.order!, /^O-\d{8}$/);
    }
    // The others fell back to the graph planner on the order-status flow, the reason in the planner name.
    const fallbacks: Array<[CaseName, RegExp]> = [
      ['badJson', /^llm->graph\(no JSON object in the answer\)$/],
      ['cyclic', /^llm->graph\(invalid plan: steps form a cycle: S1 -> S4 -> S2 -> S1\)$/],
      ['timeout', /^llm->graph\(timeout: no complete answer within 1500 ms\)$/],
    ];
    for (const [name, planner] of fallbacks) {
      const o = outcome(name);
      assert.match(o.planner, planner);
      assert.deepEqual([o.flow_id, o.flow_version], ['order-status', 1]);
      assert.deepEqual(Object.keys(JSON.parse(o.output_json!) as object).sort(), ['customer_id', 'order_id', 'order_status', 'shipping_state', 'tier']);
    }

    // The model's raw answer (or the failure to get one) travels in the run's records.
    const requests = await scan(cluster, ['thoughtRequests'], { until: (rs) => new Set(rs.map((r) => r.key)).size >= 5 && rs.length >= 15 });
    for (const name of Object.keys(CASES) as CaseName[]) {
      const mine = requests.filter((r) => r.key === tasks[name].thought_id).map((r) => r.value as unknown as ThoughtRequest);
      assert.deepEqual(
        mine.map((r) => r.steps.map((s) => s.step_id).join('+')),
        ['S1', 'S2+S3', 'S4'],
        `${name}: waves`,
      );
      const records = new Set(mine.map((r) => r.run.planner_record));
      assert.equal(records.size, 1, `${name}: every wave carries the same planner record`);
      const record = JSON.parse([...records][0]!) as LlmRecord;
      const expected = CASES[name].content;
      if (expected === null) assert.deepEqual([record.ok, !record.ok && record.error], [false, 'timeout'], `${name}: ${JSON.stringify(record)}`);
      else {
        assert.ok(record.ok, `${name}: ${JSON.stringify(record)}`);
        assert.equal(record.content, expected, `${name}: the answer is recorded verbatim`);
        assert.equal(record.model, MODEL);
      }
      const s1 = JSON.parse(mine[0]!.steps[0]!.input_json) as { email: string };
      assert.equal(s1.email, CASES[name].email, `${name}: S1 looked up the task's customer`);
    }

    // One request to the model per run, none from Action or Observation, each with the key from the environment.
    assert.equal(llm.count, 5, llm.requests.map((r) => `${r.method} ${r.path}`).join('\n'));
    for (const r of llm.requests) {
      assert.equal(`${r.method} ${r.path}`, 'POST /v1/chat/completions');
      assert.equal(r.headers.authorization, `Bearer ${KEY}`);
      assert.equal(r.body?.model, MODEL);
    }
    assert.deepEqual(
      llm.requests.map((r) => r.body!.messages!.at(-1)!.content).sort(),
      Object.values(tasks)
        .map((t) => t.text)
        .sort(),
    );

    // The cyclic plan never reached a tool: only the fallback's steps did.
    const paths = tools.stats().requests.map((r) => r.path);
    assert.equal(paths.filter((p) => p.includes('never-called')).length, 0, paths.join('\n'));
    assert.equal(paths.length, 5 * 4, 'four tool calls per run');

    // The key is in no record of the loop and in no line the stages logged.
    const all = await scanToEnd(cluster, ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes']);
    assert.ok(all.length >= 5 + 15 + 15 + 15 + 5);
    assert.ok(!JSON.stringify(all).includes(KEY), 'the API key is in no record');
    assert.ok(!loop.fleet.lines.some((l) => l.includes(KEY)), 'the API key is in no log line');
  },
);
