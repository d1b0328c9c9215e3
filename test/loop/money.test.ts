// test-needs: kafka
/**
 * Money on the real broker: ReAct runs through the scripted model SIMULATOR (model-sim/; not a
 * model) with a price table (TAO_LLM_PRICES). Each outcome carries what its model turns cost
 * (model_cost), equal to the recorded usage priced by the table; Thought's /metrics counts it by
 * model and skill (tao_model_cost_total), and cost per run is that over the runs. Then Thought is
 * replaced by one with a money budget (TAO_MONEY_BUDGET) that covers the most turn 1 can cost and
 * not turn 2 on top of it: every run ends budget_exhausted / money_budget before turn 2 is sent.
 * And a Thought given a bad price table does not start, saying why in one line.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { spawnStage } from '../../cli/processes.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { parsePriceTable, priceOf, turnCeiling, usageCost } from '../../processors/thought/model/state.ts';
import type { ActionResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { StageFleet, runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';

const PRICE_TEXT = JSON.stringify({ 'sim-1': { input: 3, cached: 0.3, output: 600 } });
const PRICES = parsePriceTable(PRICE_TEXT, 'test');
const TICKETS = ['O-12345678', 'O-20250002', 'O-20250003'];
let sim: ModelSim;
let loop: RunningLoop;
let budgeted: StageFleet | undefined;
let seq = 0;

before(async () => {
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_LLM_BASE_URL: `${sim.url}/v1`,
    TAO_LLM_MODEL: 'sim-1',
    TAO_LLM_TIMEOUT_MS: '5000',
    TAO_LLM_PRICES: PRICE_TEXT,
  });
});

after(async () => {
  await budgeted?.stop();
  await loop?.stop();
  await sim?.close();
});

const tasks = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    buildTask({ text: `Where is my order ${TICKETS[i % TICKETS.length]}?`, source: 'money-test', external_id: `${loop.cluster.namespace}-${seq++}` }),
  );

test(
  "each run's cost is in its outcome and on Thought's /metrics by model and skill; a money budget ends runs before the turn that would cross it",
  { timeout: 300000 },
  async () => {
    // 1. Priced runs, no budget.
    const priced = tasks(6);
    const outcomes = await loop.fleet.explained(runTasks(loop.cluster, priced, 120000), loop.cluster);
    const records = await scanToEnd(loop.cluster, ['thoughtRequests', 'actionResults']);
    let total = 0;
    for (const t of priced) {
      const o: Outcome = outcomes.get(t.thought_id)!;
      assert.equal(o.status, 'completed', `${o.reason_code} ${o.reason}`);
      // The recorded answers, priced by the table: what the outcome says.
      const answers = records
        .filter((r) => r.key === t.thought_id && r.topic === 'actionResults')
        .flatMap((r) => (r.value as unknown as ActionResult).results)
        .filter((s) => s.tool === 'model.chat');
      const expected = answers.reduce((sum, a) => {
        const completion = JSON.parse(a.data_json!) as {
          model: string;
          usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
        };
        return (
          sum + usageCost(priceOf(PRICES, completion.model)!, { ...completion.usage, cached_tokens: completion.usage.prompt_tokens_details?.cached_tokens })
        );
      }, 0);
      assert.ok(o.model_cost !== null && o.model_cost > 0, `a cost in the outcome (${o.model_cost})`);
      assert.ok(Math.abs(o.model_cost - expected) < 1e-6, `outcome ${o.model_cost} = the recorded usage priced by the table ${expected}`);
      total += o.model_cost;
    }
    const started = loop.fleet.lines.find((l) => l.startsWith('thought: ') && l.includes('"msg":"stage started"'))!;
    const port = (JSON.parse(started.slice('thought: '.length)) as { ops_port: number }).ops_port;
    const metrics = (await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).split('\n');
    const costLine = metrics.find((l) => l.startsWith('tao_model_cost_total{model="sim-1",skill="order-status@1"'));
    assert.ok(costLine, metrics.filter((l) => l.startsWith('tao_model_')).join('\n'));
    const counted = Number(costLine.split(' ').at(-1));
    assert.ok(Math.abs(counted - total) < 1e-6, `tao_model_cost_total ${counted} = the outcomes' sum ${total}`);
    const runsLine = metrics.find((l) => /^tao_model_turns_per_run_count\{[^}]*skill="order-status@1"/.test(l))!;
    const runs = Number(runsLine.split(' ').at(-1));
    assert.equal(runs, priced.length);
    console.log(
      `money: ${runs} runs cost ${counted.toFixed(6)} (tao_model_cost_total{model="sim-1",skill="order-status@1"}), ${(counted / runs).toFixed(6)} per run`,
    );

    // 2. The most turn 1 can cost, from its recorded request (prompt estimate, max_tokens) and the table.
    const first = records
      .filter((r) => r.key === priced[0]!.thought_id && r.topic === 'thoughtRequests')
      .map((r) => r.value as unknown as ThoughtRequest)
      .find((r) => r.steps[0]!.step_id === 'M1')!;
    const state = JSON.parse(first.run.model_state_json!) as { turn_tokens: Array<{ turn: number; prompt: number }> };
    const maxTokens = (JSON.parse(first.steps[0]!.input_json) as { max_tokens: number }).max_tokens;
    const ceiling1 = turnCeiling(PRICES['sim-1']!, state.turn_tokens.find((t) => t.turn === 1)!.prompt, maxTokens);
    const budget = ceiling1 + 1e-7;

    // 3. Thought replaced by one with that budget: turn 1 fits, turn 2 on top of what turn 1 cost does not.
    const thought = loop.fleet.processes.find((p) => p.name === 'thought')!;
    thought.child.kill('SIGTERM');
    await thought.exited;
    budgeted = new StageFleet({ ...loop.cluster.env, TAO_MONEY_BUDGET: String(budget) });
    await budgeted.start('thought');
    sim.resetStats();
    const limited = tasks(3).map((t) => ({ ...t, text: `Where is my order ${TICKETS[0]}?` }));
    const ended = await budgeted.explained(runTasks(loop.cluster, limited, 120000), loop.cluster);
    const after = await scanToEnd(loop.cluster, ['thoughtRequests']);
    for (const t of limited) {
      const o = ended.get(t.thought_id)!;
      assert.deepEqual([o.status, o.reason_code], ['budget_exhausted', 'money_budget'], o.reason);
      assert.match(
        o.reason,
        /^model turn 2 could cost up to [0-9.]+ \(about \d+ prompt tokens and \d+ max_tokens at sim-1's prices\) on top of [0-9.]+ spent: over the run's money budget of [0-9.]+$/,
      );
      assert.ok(o.model_cost !== null && o.model_cost > 0 && o.model_cost <= budget, `spent ${o.model_cost}, within the budget ${budget}`);
      const turns = after
        .filter((r) => r.key === t.thought_id)
        .flatMap((r) => (r.value as unknown as ThoughtRequest).steps)
        .filter((s) => /^M\d+$/.test(s.step_id));
      assert.deepEqual(
        turns.map((s) => s.step_id),
        ['M1'],
        'turn 2 was never dispatched',
      );
    }
    assert.equal(sim.stats().total, limited.length, 'the model was asked once per run');
    console.log(
      `money: budget ${budget.toFixed(6)} (turn 1's ceiling): ${limited.length} runs ended money_budget after turn 1, spending ${[...ended.values()].map((o) => o.model_cost).join(', ')}`,
    );
  },
);

test('a Thought given a bad price table exits 1 with one line naming the model and the field', { timeout: 60000 }, async () => {
  const lines: string[] = [];
  const proc = spawnStage('thought', { ...loop.cluster.env, TAO_OPS_PORT: '0', TAO_LLM_PRICES: '{"sim-1": {"input": 3, "output": "cheap"}}' }, (_who, line) =>
    lines.push(line),
  );
  assert.equal(await proc.exited, 1);
  const said = lines.filter((l) => l.includes('TAO_LLM_PRICES'));
  assert.deepEqual(said.length, 1, lines.join('\n'));
  assert.match(said[0]!, /TAO_LLM_PRICES: "sim-1"\."output" must be a number >= 0 \(price per million tokens\), got "cheap"/);
});
