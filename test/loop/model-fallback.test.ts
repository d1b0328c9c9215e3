// test-needs: kafka
/**
 * A fallback model on another endpoint, through the whole loop on the real broker: TAO_PLANNER=react
 * with two scripted model SIMULATORs (model-sim/; not models), each with its own API key. The
 * primary answers every request 503; Action asks the fallback (TAO_LLM_FALLBACK_BASE_URL,
 * TAO_LLM_FALLBACK_MODEL, its key from TAO_LLM_FALLBACK_API_KEY_ENV), first after the primary's
 * retries and then, its breaker open, at once. Every run completes on the fallback, and the
 * outcome names the model that answered.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import type { ActionResult, Outcome } from '../../schemas/types.gen.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';

const RUNS = 6;
const PRIMARY_KEY = `pk-${Math.random().toString(36).slice(2)}`;
const FALLBACK_KEY = `fk-${Math.random().toString(36).slice(2)}`;
let primary: ModelSim;
let backup: ModelSim;
let loop: RunningLoop;

before(async () => {
  primary = await startModelSim({ port: 0, apiKey: PRIMARY_KEY });
  backup = await startModelSim({ port: 0, apiKey: FALLBACK_KEY });
  primary.setFault({ kind: 'server_error', status: 503 });
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_LLM_BASE_URL: `${primary.url}/v1`,
    TAO_LLM_MODEL: 'sim-primary',
    TAO_LLM_API_KEY: PRIMARY_KEY,
    TAO_LLM_FALLBACK_BASE_URL: `${backup.url}/v1`,
    TAO_LLM_FALLBACK_MODEL: 'sim-fallback',
    TAO_LLM_FALLBACK_API_KEY_ENV: 'TAO_TEST_FALLBACK_KEY',
    TAO_TEST_FALLBACK_KEY: FALLBACK_KEY,
    TAO_LLM_TIMEOUT_MS: '5000',
  });
});

after(async () => {
  await loop?.stop();
  await primary?.close();
  await backup?.close();
});

test(
  `with the primary answering 503, ${RUNS} ReAct runs complete on the fallback model at another endpoint, and the outcome names it`,
  { timeout: 240000 },
  async () => {
    const tasks = Array.from({ length: RUNS }, (_, i) =>
      buildTask({
        text: `Where is my order ${['O-12345678', 'O-20250002', 'O-20250003'][i % 3]}?`,
        source: 'fallback-test',
        external_id: `${loop.cluster.namespace}-${i}`,
      }),
    );
    const outcomes = await loop.fleet.explained(runTasks(loop.cluster, tasks, 180000), loop.cluster);
    for (const t of tasks) {
      const o: Outcome = outcomes.get(t.thought_id)!;
      assert.equal(o.status, 'completed', `${t.text}: ${o.status} ${o.reason_code} ${o.reason}`);
      const output = JSON.parse(o.output_json!) as { model: string; fallback_from?: string; answer: string };
      assert.equal(output.model, 'sim-fallback', 'the outcome names the model that answered');
      assert.equal(output.fallback_from, 'model.chat', 'and the model tool it stood in for');
    }

    // Every model turn was answered by the fallback tool; the primary's failure is recorded with it.
    const records = await scanToEnd(loop.cluster, ['actionResults']);
    const turns = records.flatMap((r) => (r.value as unknown as ActionResult).results).filter((s) => /^M\d+$/.test(s.step_id));
    assert.ok(turns.length >= RUNS * 2, `at least two model turns per run (${turns.length})`);
    for (const s of turns) {
      assert.deepEqual([s.tool, s.fallback_from, s.error], ['model.chat_fallback', 'model.chat', null], JSON.stringify(s.fallback_reason));
      assert.match(s.fallback_reason!, /^model\.chat: (http_status: HTTP 503|circuit_open: )/);
      assert.equal((JSON.parse(s.data_json!) as { model: string }).model, 'sim-fallback');
    }
    const retriedThenOpen = turns.filter((s) => /HTTP 503/.test(s.fallback_reason!)).length;
    const open = turns.filter((s) => /circuit_open/.test(s.fallback_reason!)).length;
    assert.ok(open > 0, `the primary's breaker opened after its failures (${retriedThenOpen} turns after 503s, ${open} with the breaker open)`);
    assert.equal(backup.stats().byOutcome.unauthorized ?? 0, 0, 'the fallback endpoint got its own key');
    assert.equal(primary.stats().byOutcome.unauthorized ?? 0, 0);
    assert.equal(backup.stats().total, turns.length, 'one fallback request per committed turn');
    console.log(
      `model-fallback: ${RUNS} runs completed on sim-fallback; ${turns.length} model turns: ${retriedThenOpen} after the primary's 503s (${primary.stats().total} primary requests), ${open} with its breaker open`,
    );
  },
);
