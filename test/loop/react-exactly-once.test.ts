// test-needs: kafka
/**
 * The model in the loop under kill -9: 100 ReAct runs (TAO_PLANNER=react, the scripted model
 * SIMULATOR of model-sim/, the demo tool server) through the three stages as processes, with
 * Thought, Action and Observation each SIGKILLed once while runs are in flight and replaced.
 * No run is lost, and no model turn or step is committed twice: a model turn (M1, M2, ...) is in
 * one committed wave unless that wave's answer failed Observation's gate and Thought asked again.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTask, submitTasks } from '../../client/tasks.ts';
import type { LoopRecord } from '../../client/watch.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import type { ActionResult, ObservationResult, Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { StageFleet, followOutcomes, freshCluster, scanToEnd } from '../helpers/cluster.ts';

const RUNS = 100;
const STAGES = ['thought', 'action', 'observation'] as const;
/** The demo data's orders (docs/DEMO-DOMAIN.md): delivered and shipped take 3 model turns, placed takes 2. */
const ORDERS = ['O-12345678', 'O-20250002', 'O-20250003'] as const;
const isModelTurn = (stepId: string) => /^M\d+$/.test(stepId);

let sim: ModelSim;
let tools: ToolServer;
let fleet: StageFleet | undefined;

before(async () => {
  sim = await startModelSim({ port: 0 });
  tools = await startToolServer({ port: 0 });
});

after(async () => {
  await fleet?.stop();
  await tools?.close();
  await sim?.close();
});

test(
  `kill -9 of Thought, Action and Observation during ${RUNS} ReAct runs: every run completes once, no model turn or step is committed twice`,
  { timeout: 240000 },
  async () => {
    const cluster = await freshCluster({
      TAO_DEMO_TOOL_ORIGIN: tools.url,
      TAO_PLANNER: 'react',
      TAO_LLM_BASE_URL: `${sim.url}/v1`,
      TAO_LLM_MODEL: 'sim-1',
      TAO_LLM_TIMEOUT_MS: '5000',
    });
    fleet = new StageFleet(cluster.env);
    const [thought, action, observation] = await Promise.all(STAGES.map((s) => fleet!.start(s)));
    const procs = { thought: thought!, action: action!, observation: observation! };
    const follower = await followOutcomes(cluster);
    const tasks: Task[] = Array.from({ length: RUNS }, (_, i) =>
      buildTask({ text: `Where is my order ${ORDERS[i % ORDERS.length]}?`, source: 'react-eos', external_id: `${cluster.namespace}-${i}` }),
    );
    const producer = cluster.kafka.producer({ idempotent: true });
    await producer.connect();

    // The load arrives in four batches; each kill lands after some runs of the batches so far ended
    // and while the rest are still in flight, and the next batch goes in once the replacement runs.
    const batch = RUNS / 4;
    let submitted = 0;
    const submitBatch = async () => {
      await submitTasks(producer, cluster.codec, tasks.slice(submitted, submitted + batch));
      submitted += batch;
    };
    try {
      await submitBatch();
      for (const victim of STAGES) {
        await fleet.explained(follower.waitFor(submitted - batch + 5, 90000), cluster);
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

    // Every run: exactly one committed outcome, and it is completed.
    const outcomes = of('outcomes').map((r) => r.value as unknown as Outcome);
    const perRun = new Map<string, Outcome[]>();
    for (const o of outcomes) perRun.set(o.thought_id, [...(perRun.get(o.thought_id) ?? []), o]);
    assert.deepEqual(
      tasks.filter((t) => perRun.get(t.thought_id)?.length !== 1).map((t) => `${t.thought_id}: ${perRun.get(t.thought_id)?.length ?? 0} outcomes`),
      [],
    );
    assert.deepEqual(
      outcomes.filter((o) => o.status !== 'completed').map((o) => `${o.thought_id}: ${o.status} ${o.reason_code} ${o.reason}`),
      [],
    );
    for (const o of outcomes) assert.equal(o.planner_kind, 'react', `${o.thought_id} ran the ReAct loop`);

    // thought.requests: each (thought_id, iteration, step_id) once.
    const requests = of('thoughtRequests').map((r) => r.value as unknown as ThoughtRequest);
    const stepKeys = requests.flatMap((r) => r.steps.map((s) => `${r.thought_id}:${r.iteration}:${s.step_id}`));
    assert.deepEqual(repeated(stepKeys), [], 'a step requested twice in thought.requests');

    // A model turn is dispatched in a second wave only when its earlier wave's answer failed the gate.
    const verdicts = new Map<string, boolean>();
    for (const r of of('observationResults').map((x) => x.value as unknown as ObservationResult)) {
      for (const v of r.verdicts) verdicts.set(`${r.thought_id}:${r.iteration}:${v.step_id}`, v.valid);
    }
    const turnWaves = new Map<string, number[]>();
    for (const r of requests) {
      for (const s of r.steps.filter((x) => isModelTurn(x.step_id))) {
        assert.equal(s.tool, 'model.chat', `${r.thought_id} ${s.step_id} is a model turn`);
        const key = `${r.thought_id}:${s.step_id}`;
        turnWaves.set(key, [...(turnWaves.get(key) ?? []), r.iteration]);
      }
    }
    const redone: string[] = [];
    for (const [key, waves] of turnWaves) {
      const [id, step] = key.split(':') as [string, string];
      const sorted = [...waves].sort((a, b) => a - b);
      for (const earlier of sorted.slice(0, -1)) {
        if (verdicts.get(`${id}:${earlier}:${step}`) !== false)
          redone.push(`${key} in waves ${sorted.join(', ')} (wave ${earlier}: ${verdicts.has(`${id}:${earlier}:${step}`) ? 'valid' : 'no verdict'})`);
      }
    }
    assert.deepEqual(redone, [], 'a model turn committed in two waves although the first answer was not rejected');
    assert.ok(turnWaves.size >= RUNS * 2, `every run took at least 2 model turns (${turnWaves.size} turns for ${RUNS} runs)`);

    // action.results: each (thought_id, iteration, step_id) once, and every requested step has its result.
    const results = of('actionResults').map((r) => r.value as unknown as ActionResult);
    const resultKeys = results.flatMap((r) => r.results.map((s) => `${r.thought_id}:${r.iteration}:${s.step_id}`));
    assert.deepEqual(repeated(resultKeys), [], 'a step result committed twice in action.results');
    assert.deepEqual(
      [...new Set(stepKeys)].filter((k) => !resultKeys.includes(k)),
      [],
      'a requested step without a committed result',
    );

    // The model was really in the loop: one chat completion per committed model turn at least (a
    // killed Action may have asked again before its transaction committed; only one answer counts).
    assert.ok(sim.stats().total >= turnWaves.size, `the simulator answered ${sim.stats().total} requests for ${turnWaves.size} turns`);
  },
);

/** The values that occur more than once. */
function repeated(values: string[]): string[] {
  const seen = new Set<string>();
  return values.filter((v) => (seen.has(v) ? true : (seen.add(v), false)));
}
