/**
 * Records one run in-process the way the three stages write it (the real Thought and Observation
 * cores; Action's results from the fixtures' demo data), as a replay log: for replay tests that
 * need a recorded run without a broker, or records to write to one.
 */
import { observe, type ObservationConfig } from '../../processors/observation/core.ts';
import { onObservation, onTask, type ThoughtConfig } from '../../processors/thought/core.ts';
import type { Plan } from '../../processors/plan.ts';
import type { Planner } from '../../processors/thought/planners/planner.ts';
import type { LoggedRecord, RunLog } from '../../replay/log.ts';
import type { ActionResult, RunSnapshot, StepCall, StepResult, Task, ThoughtRequest } from '../../schemas/types.gen.ts';
import type { TopicId } from '../../topics/catalog.ts';
import { DATA } from '../processors/fixtures.ts';

/** The run's thought_id unless the caller names one. */
export const DEFAULT_ID = 'run-cfg';
/** The e-mail address the default task gives (an order-status ticket). */
export const EMAIL = 'alice@example.com';

/** The tool answers of the order-status flow (a 404 for `unknown` customers). */
export function answer(call: StepCall, padBytes = 0): StepResult {
  const base = {
    step_id: call.step_id,
    tool: call.tool,
    input_json: call.input_json,
    idempotency_key: call.idempotency_key,
    attempts: 1,
    response_time_ms: 12,
    error: null,
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: null,
  };
  if (call.input_json.includes('unknown'))
    return { ...base, status_code: 404, response_raw: '{"error":"customer_not_found"}', data_json: '{"error":"customer_not_found"}' };
  const known = DATA[call.step_id as keyof typeof DATA];
  // A chatty API: the customer record with a long made-up history, carried in the run's state from then on.
  const data = JSON.stringify(padBytes && call.step_id === 'S1' ? { ...known, history: 'h'.repeat(padBytes) } : known);
  return { ...base, status_code: 200, response_raw: data, data_json: data };
}

/** Records one run to its end the way the three stages write it. */
export async function recordRun(
  thought: ThoughtConfig,
  observation: ObservationConfig,
  plannerRecord: string | null,
  run: { thoughtId?: string; text?: string } = {},
): Promise<RunLog> {
  const ID = run.thoughtId ?? DEFAULT_ID;
  const records: LoggedRecord[] = [];
  let clock = 1_700_000_000_000;
  const offsets = new Map<TopicId, number>();
  const add = (topic: TopicId, value: object) => {
    const offset = (offsets.get(topic) ?? -1) + 1;
    offsets.set(topic, offset);
    records.push({
      topic,
      ref: { topic: `ns.${topic}`, partition: 0, offset: String(offset) },
      timestamp: (clock += 10),
      key: ID,
      headers: {},
      value: value as Record<string, unknown>,
      decodeError: null,
    });
  };
  let snapshot: RunSnapshot | undefined;
  const decide = (outputs: ReturnType<typeof onTask>['outputs']): ThoughtRequest | undefined => {
    let request: ThoughtRequest | undefined;
    for (const o of outputs) {
      add(o.topic, o.value);
      if (o.topic === 'thoughtRuns') snapshot = o.value;
      if (o.topic === 'thoughtRequests') request = o.value;
    }
    return request;
  };
  const task: Task = {
    thought_id: ID,
    task_id: 'task-1',
    kind: 'NEW',
    text: run.text ?? `Where is my order? ${EMAIL}`,
    source: 'test',
    external_id: null,
    metadata: {},
    submitted_at_ms: 1,
    decision: null,
    timer: null,
  };
  add('tasks', task);
  let pending = decide(onTask(task, thought, snapshot, plannerRecord).outputs);
  while (pending) {
    const result: ActionResult = { thought_id: ID, iteration: pending.iteration, run: pending.run, results: pending.steps.map(answer), dead_letter: null };
    add('actionResults', result);
    const obs = await observe(result, observation);
    add('observationResults', obs);
    pending = decide(onObservation(obs, thought, snapshot).outputs);
  }
  return { thoughtId: ID, namespace: 'ns', bounds: { fromMs: null, toMs: null }, scanned: [], records, deadLetters: [] };
}

/** What the retired llm planner recorded as its `planner_record`: the model's answer, verbatim. */
export const LLM_ANSWER_RECORD = JSON.stringify({
  ok: true,
  model: 'scripted-planner-1',
  content: '{"steps":[]}',
  finish_reason: 'stop',
  usage: { prompt_tokens: 812, completion_tokens: 164, total_tokens: 976 },
});

/**
 * The retired `llm` planner as runs recorded it, to write such runs today: named `llm`, its fallback
 * flow as its configuration, and the model's plan (here the graph planner's steps under the flow
 * `llm@1`) run as planned.
 */
export function retiredLlmPlanner(graph: Planner): Planner {
  return {
    name: 'llm',
    config: graph.config,
    plan: (task) => {
      const result = graph.plan(task, null);
      return result.kind === 'plan' ? { kind: 'plan', planner: 'llm', plan: { ...(result.plan as Plan), flow: { id: 'llm', version: 1 } } } : result;
    },
  };
}
