/**
 * The three stages' cores driven in one process, without Kafka: Thought's core decides, Action's real
 * executor calls the real model server (the simulator under a server profile, or llama-server) and
 * the real demo tool server over HTTP, Observation's core judges. Each record a stage would write is
 * handed to the next stage's core in order, so what a model server refuses or answers is met exactly
 * as the running loop meets it. For the wire rules of real servers; the loop on the broker is tested
 * in test/loop/*.test.ts files that declare `test-needs: kafka`. Used by test/loop/real-server-rules.test.ts
 * and by `npm run models:loop` (bench/model-loop.ts).
 */
import { onObservation, onTask } from '../../processors/thought/core.ts';
import { observe } from '../../processors/observation/core.ts';
import { ToolExecutor } from '../../processors/action/executor.ts';
import { realHttpDeps } from '../../processors/action/invoke.ts';
import { loadCatalog, observationConfig, thoughtConfig } from '../../processors/wiring/index.ts';
import { createContractAjv } from '../../tools/catalog.ts';
import type { ActionResult, ObservationResult, Outcome, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import { envSecrets } from '../../tools/secrets.ts';

export interface LoopRun {
  outcome: Outcome;
  /** Every model request as sent (the step's input plus the model the tool adds), in order. */
  modelRequests: Array<Record<string, unknown>>;
  /** Every observation (the verdicts of each wave), in order. */
  observations: ObservationResult[];
  /** Every action result, in order. */
  actions: ActionResult[];
}

/**
 * Runs one ticket to its outcome. `env` configures the stages as their processes would be (the
 * model's TAO_LLM_* and TAO_DEMO_TOOL_ORIGIN at least); TAO_PLANNER defaults to react.
 */
export async function runTicket(text: string, env: NodeJS.ProcessEnv, thoughtId = 'wire-1', maxWaves = 60): Promise<LoopRun> {
  const stageEnv: NodeJS.ProcessEnv = { TAO_PLANNER: 'react', TAO_SEMANTIC_CHECK: 'off', ...env };
  const thought = await thoughtConfig(stageEnv);
  const observation = await observationConfig(stageEnv);
  const catalog = loadCatalog(stageEnv, createContractAjv(), 'call');
  const executor = new ToolExecutor(catalog, realHttpDeps());
  const task: Task = {
    thought_id: thoughtId,
    task_id: `task-${thoughtId}`,
    kind: 'NEW',
    text,
    source: 'test',
    external_id: null,
    metadata: {},
    submitted_at_ms: 1_700_000_000_000,
    decision: null,
    timer: null,
  };
  const record = thought.planner.gather ? await thought.planner.gather({ thought_id: thoughtId, text, metadata: {} }) : null;
  let decision = onTask(task, thought, undefined, record);
  const run: Omit<LoopRun, 'outcome'> = { modelRequests: [], observations: [], actions: [] };
  for (let wave = 0; wave < maxWaves; wave++) {
    const outcome = decision.outputs.find((o) => o.topic === 'outcomes')?.value as Outcome | undefined;
    if (outcome) return { outcome, ...run };
    const request = decision.outputs.find((o) => o.topic === 'thoughtRequests')?.value as ThoughtRequest | undefined;
    if (!request) throw new Error(`wave ${wave}: Thought wrote neither a request nor an outcome`);
    const results = await Promise.all(
      request.steps.map(async (step) => {
        const tool = catalog.get(step.tool);
        if (!tool) throw new Error(`Thought asked for ${step.tool}, which the catalog does not have`);
        const input = JSON.parse(step.input_json) as Record<string, unknown>;
        if (tool.spec.kind === 'model') run.modelRequests.push({ ...tool.spec.defaultBody, ...input });
        return executor.execute(tool, step.step_id, input, {
          idempotencyKey: step.idempotency_key,
          traceparent: '00-00000000000000000000000000000001-0000000000000001-01',
          secrets: envSecrets(stageEnv),
          thoughtId,
        });
      }),
    );
    const action: ActionResult = { thought_id: request.thought_id, iteration: request.iteration, run: request.run, results, dead_letter: null };
    run.actions.push(action);
    const observed = await observe(action, observation);
    run.observations.push(observed);
    decision = onObservation(observed, thought);
  }
  throw new Error(`no outcome after ${maxWaves} waves`);
}
