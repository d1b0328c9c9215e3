// test-needs: kafka
/**
 * Structured final answers end to end: the three stages as processes, TAO_PLANNER=react, the demo
 * tool server and the scripted model SIMULATOR (model-sim/, not a model). The skills are the shipped
 * ones, with an output schema added to order-status: the final turn offers a `final_answer` tool of
 * that schema, the gate checks the answer, and the outcome carries it as `result_json`. An injected
 * fault makes the simulator's first final answer break the schema: it is rejected and the model is
 * asked again.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Ajv } from 'ajv';
import { buildTask } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { DEFAULT_SKILLS_DIR } from '../../processors/thought/skills.ts';
import type { ObservationResult, Outcome, ThoughtRequest } from '../../schemas/types.gen.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { verifyWithoutModel } from '../replay/helpers.ts';

const OUTPUT = {
  type: 'object',
  additionalProperties: false,
  required: ['order_id', 'status', 'reply'],
  properties: {
    order_id: { type: 'string', pattern: '^O-[0-9]{8}$' },
    status: { enum: ['placed', 'shipped', 'delivered'] },
    eta: { type: 'string' },
    reply: { type: 'string', minLength: 1 },
  },
};
const TICKETS = {
  good: 'Where is my order O-12345678?',
  // Turn 3 is the final answer: the fault gives its first required field the wrong type.
  broken: 'Where is my order O-12345678? [sim:bad_arguments@3]',
} as const;

let sim: ModelSim;
let loop: RunningLoop;
let skillsDir: string;
const ids = new Map<keyof typeof TICKETS, string>();
const outcomes = new Map<keyof typeof TICKETS, Outcome>();
const matches = new Ajv({ strict: false }).compile(OUTPUT);

before(async () => {
  skillsDir = join(mkdtempSync(join(tmpdir(), 'tao-skills-')), 'skills');
  cpSync(DEFAULT_SKILLS_DIR, skillsDir, { recursive: true });
  writeFileSync(join(skillsDir, 'order-status', 'output.schema.json'), JSON.stringify(OUTPUT));
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({
    TAO_PLANNER: 'react',
    TAO_SKILLS_DIR: skillsDir,
    TAO_LLM_BASE_URL: `${sim.url}/v1`,
    TAO_LLM_MODEL: 'sim-1',
    TAO_LLM_TIMEOUT_MS: '5000',
  });
  const tasks = Object.entries(TICKETS).map(([name, text]) => {
    const task = buildTask({ text, source: 'test', external_id: `${loop.cluster.namespace}-${name}` });
    ids.set(name as keyof typeof TICKETS, task.thought_id);
    return task;
  });
  const byId = await runTasks(loop.cluster, tasks, 120000);
  for (const [name, id] of ids) outcomes.set(name, byId.get(id)!);
});

after(async () => {
  await loop?.stop();
  await sim?.close();
});

test('a skill with an output schema: the outcome carries a result that matches it, beside the text', () => {
  const outcome = outcomes.get('good')!;
  assert.equal(outcome.status, 'completed', outcome.reason);
  assert.ok(outcome.result_json, 'the outcome has a result');
  const result = JSON.parse(outcome.result_json) as Record<string, unknown>;
  assert.ok(matches(result), JSON.stringify(matches.errors));
  assert.equal(result.order_id, 'O-12345678');
  assert.match((JSON.parse(outcome.output_json!) as { answer: string }).answer, /O-12345678/);
});

test('a final answer that breaks the schema is rejected by the gate, the model is asked again, and the run completes with a valid result', async () => {
  const id = ids.get('broken')!;
  const outcome = outcomes.get('broken')!;
  assert.equal(outcome.status, 'completed', outcome.reason);
  assert.ok(matches(JSON.parse(outcome.result_json!)), outcome.result_json!);
  const records = (await scanToEnd(loop.cluster, ['thoughtRequests', 'observationResults'])).filter((r) => r.key === id);
  const verdicts = records.filter((r) => r.topic === 'observationResults').flatMap((r) => (r.value as unknown as ObservationResult).verdicts);
  const third = verdicts.find((v) => v.step_id === 'M3')!;
  assert.deepEqual([third.valid, third.error_type], [false, 'schema_mismatch']);
  assert.match(third.audit_trail.find((c) => c.name === 'model_answer')!.evidence, /^the final answer breaks the skill's output schema/);
  const fourth = records
    .filter((r) => r.topic === 'thoughtRequests')
    .flatMap((r) => (r.value as unknown as ThoughtRequest).steps)
    .find((s) => s.step_id === 'M4')!;
  const messages = (JSON.parse(fourth.input_json) as { messages: Array<{ role: string; content: string }> }).messages;
  assert.ok(
    messages.some((m) => m.role === 'user' && /rejected .*schema_mismatch/.test(m.content)),
    'the next prompt says why',
  );
  assert.equal(verdicts.find((v) => v.step_id === 'M4')?.valid, true);
});

test('replay --verify re-checks the structured answers from the log: no drift', async () => {
  await loop.fleet.stop();
  for (const name of ['good', 'broken'] as const) {
    const { run, drift } = await verifyWithoutModel(ids.get(name)!, { ...loop.cluster.env, TAO_SKILLS_DIR: skillsDir });
    assert.equal(run.code, 0, `${run.stderr}\n${run.stdout.slice(0, 2000)}`);
    assert.equal(drift, false, name);
  }
});
