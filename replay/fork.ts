/**
 * Forking a recorded run: a new run (new thought_id) that starts at wave `k` of its parent, with the
 * parent's state at that point, optional overrides of step inputs and optionally another flow, and
 * is then carried on by the live loop like any run.
 *
 * The fork's first wave is decided by Thought's own core, from the parent's recorded input to that
 * decision: for `k >= 2`, the observation result of wave `k - 1` (its run state and verdicts), with
 * the overrides applied to the plan it carries; for `k = 1`, the run's task, re-planned with the
 * recorded planner answer and the overrides applied to the plan. Only that first
 * `thought.requests` record is written; Action, Observation and Thought take it from there. The
 * parent's records are not touched.
 *
 * The parent link: the first record carries `tao.fork.*` headers, and the fork's task id
 * (`RunState.task_id`, which every later record of the run and its outcome carry) is
 * `fork:<parent thought_id>:<wave>:<nonce>`.
 */
import { randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { onObservation, onTask, type ThoughtConfig, type ThoughtDecision } from '../processors/thought/core.ts';
import type { Plan } from '../processors/plan.ts';
import type { Flow } from '../processors/thought/planners/flows.ts';
import { GraphPlanner } from '../processors/thought/planners/graph.ts';
import type { Planner } from '../processors/thought/planners/planner.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import { ContractViolation } from '../runtime/errors.ts';
import { traceparentFor } from '../runtime/tracing/ids.ts';
import type { ObservationResult, RunState, Task, ThoughtRequest } from '../schemas/types.gen.ts';
import type { LoggedRecord, RunLog } from './log.ts';
import { FORK_HEADERS, refKey } from './record-format.ts';

/** What to fork: where, and what to change. */
export interface ForkSpec {
  /** A wave number (`2`) or a step id (`S2`: the first wave that ran it). */
  point: string;
  /** `STEP.field=value` (nested fields with dots); the value is JSON when it parses as JSON, else a string. */
  overrides: string[];
  /** `<flow id>@<version>`: re-plan the fork on this flow (steps with the same id and tool keep their outputs). */
  flow: string | null;
}

/** What planning a fork needs besides the parent's log. */
export interface ForkDeps {
  /** Today's Thought configuration (processors/wiring/index.ts thoughtConfig). */
  thought: ThoughtConfig;
  /** Loaded flows, needed only with `flow`. */
  flows?: Map<string, Flow>;
  /** Injected for tests; default a random UUID. */
  newThoughtId?: string;
}

/** A fork ready to be written. */
export interface ForkPlan {
  thought_id: string;
  parent: string;
  point: string;
  iteration: number;
  task_id: string;
  request: ThoughtRequest;
  headers: Record<string, string>;
  /** Steps whose outputs the fork keeps from the parent. */
  kept: string[];
}

interface Override {
  step: string;
  path: string[];
  value: unknown;
  text: string;
}

/**
 * Works out the fork's first wave (pure: reads only `log` and the configuration).
 * @throws ContractViolation when the point is not in the run, an override names an unknown step
 *         or one that finished before the point, the flow is unknown, or Thought would end the
 *         fork at once (its reason in the message).
 */
export function planFork(log: RunLog, spec: ForkSpec, deps: ForkDeps): ForkPlan {
  const parent = log.thoughtId;
  const live = log.records.filter((r) => r.value !== null && !log.deadLetters.some((d) => d.source && refKey(d.source) === refKey(r.ref)));
  const requests = live.filter((r) => r.topic === 'thoughtRequests') as Array<LoggedRecord & { value: ThoughtRequest & Record<string, unknown> }>;
  if (requests.length === 0) throw new ContractViolation(`run ${parent} has no wave in the log to fork from`);
  const waves = [...new Set(requests.map((r) => r.value.iteration))].sort((a, b) => a - b);
  const k = /^\d+$/.test(spec.point) ? Number(spec.point) : requests.find((r) => r.value.steps.some((s) => s.step_id === spec.point))?.value.iteration;
  if (k === undefined)
    throw new ContractViolation(
      `run ${parent} never ran a step "${spec.point}" (its waves ran ${[...new Set(requests.flatMap((r) => r.value.steps.map((s) => s.step_id)))].join(', ')})`,
    );
  if (!waves.includes(k)) throw new ContractViolation(`run ${parent} has no wave ${k} (its waves: ${waves.join(', ')})`);
  const overrides = spec.overrides.map(parseOverride);
  const thoughtId = deps.newThoughtId ?? randomUUID();
  const taskId = `fork:${parent}:${k}:${randomUUID().slice(0, 8)}`;
  const flow = spec.flow === null ? null : flowFor(spec.flow, deps.flows);

  let decision: ThoughtDecision;
  if (k === 1) {
    const first = requests.find((r) => r.value.iteration === 1)!;
    const task = live.find((r) => r.topic === 'tasks')?.value as Task | undefined;
    const base = flow ? new GraphPlanner(flow, deps.thought.tools) : deps.thought.planner;
    // The planner is Thought's injection point: the fork re-plans the recorded task and edits the plan it returns.
    const planner: Planner = {
      name: base.name,
      config: base.config,
      plan: (t, record) => {
        const result = base.plan(t, record);
        return result.kind === 'plan' ? { ...result, plan: applyOverrides(result.plan as Plan, overrides, new Set()) } : result;
      },
    };
    const forkTask: Task = {
      thought_id: thoughtId,
      task_id: taskId,
      kind: 'NEW',
      text: first.value.run.task_text,
      source: task?.source ?? 'fork',
      external_id: null,
      metadata: task?.metadata ?? {},
      submitted_at_ms: first.timestamp,
      decision: null,
      timer: null,
    };
    decision = onTask(forkTask, { ...deps.thought, planner }, undefined, flow ? null : first.value.run.planner_record);
  } else {
    const observations = live.filter((r) => r.topic === 'observationResults' && r.value!.iteration === k - 1) as Array<
      LoggedRecord & { value: ObservationResult & Record<string, unknown> }
    >;
    const obs = observations[observations.length - 1];
    if (!obs)
      throw new ContractViolation(
        `cannot fork run ${parent} at wave ${k}: the observation result of wave ${k - 1}, which Thought decided wave ${k} from, is not in the log`,
      );
    let run: RunState = { ...obs.value.run, task_id: taskId };
    let verdicts = obs.value.verdicts;
    let plan = JSON.parse(run.plan_json) as Plan;
    if (flow) {
      const replanned = new GraphPlanner(flow, deps.thought.tools).plan({ thought_id: thoughtId, text: run.task_text, metadata: {} });
      if (replanned.kind !== 'plan')
        throw new ContractViolation(`flow ${spec.flow} can't plan this run: ${'reason' in replanned ? replanned.reason : replanned.kind}`);
      const next = replanned.plan as Plan;
      const same = (id: string) => {
        const a = plan.steps.find((s) => s.id === id);
        const b = next.steps.find((s) => s.id === id);
        return a !== undefined && b !== undefined && a.tool === b.tool;
      };
      const outputs = JSON.parse(run.outputs_json) as Record<string, unknown>;
      run = {
        ...run,
        planner: replanned.planner,
        flow_id: next.flow.id,
        flow_version: next.flow.version,
        planner_record: null,
        outputs_json: JSON.stringify(Object.fromEntries(Object.entries(outputs).filter(([id]) => same(id)))),
        step_attempts: Object.fromEntries(Object.entries(run.step_attempts).filter(([id]) => same(id))),
        failure_streaks: Object.fromEntries(Object.entries(run.failure_streaks).filter(([id]) => same(id))),
        error_history: Object.fromEntries(Object.entries(run.error_history).filter(([id]) => same(id))),
        skipped: run.skipped.filter(same),
      };
      verdicts = verdicts.filter((v) => same(v.step_id));
      plan = next;
    }
    const done = new Set([...Object.keys(JSON.parse(run.outputs_json) as object), ...run.skipped, ...verdicts.filter((v) => v.valid).map((v) => v.step_id)]);
    plan = applyOverrides(plan, overrides, done);
    const problems = deps.thought.validator.validate(plan, deps.thought.tools);
    if (problems.length) throw new ContractViolation(`the fork's plan is invalid: ${problems.join('; ')}`);
    run = { ...run, plan_json: JSON.stringify(plan) };
    decision = onObservation({ ...obs.value, thought_id: thoughtId, run, verdicts }, deps.thought, undefined);
  }

  const request = decision.outputs.find((o) => o.topic === 'thoughtRequests')?.value as ThoughtRequest | undefined;
  if (!request) {
    const outcome = decision.outputs.find((o) => o.topic === 'outcomes')?.value as { status?: string; reason?: string } | undefined;
    throw new ContractViolation(
      `Thought would end the fork at once${outcome ? `: ${outcome.status} (${outcome.reason})` : decision.ignored ? `: ${decision.ignored}` : ''}`,
    );
  }
  const finished = Object.keys(JSON.parse(request.run.outputs_json) as object);
  for (const o of overrides) {
    if (finished.includes(o.step) && !request.steps.some((s) => s.step_id === o.step))
      throw new ContractViolation(
        `step ${o.step} finished before wave ${k}; its output is kept, so ${o.text} would change nothing (fork at the wave that runs ${o.step})`,
      );
  }
  return {
    thought_id: thoughtId,
    parent,
    point: spec.point,
    iteration: request.iteration,
    task_id: taskId,
    request,
    kept: finished,
    headers: {
      traceparent: traceparentFor(thoughtId, `fork:${request.iteration}`),
      [FORK_HEADERS.parent]: parent,
      [FORK_HEADERS.point]: spec.point,
      [FORK_HEADERS.iteration]: String(request.iteration),
      [FORK_HEADERS.overrides]: JSON.stringify(spec.overrides),
      ...(spec.flow ? { [FORK_HEADERS.flow]: spec.flow } : {}),
    },
  };
}

/**
 * Writes the fork's first wave to `thought.requests` (acknowledged by all in-sync replicas). The
 * codec must have the thought.requests schema registered.
 */
export async function writeFork(producer: Producer, codec: AvroCodec, fork: ForkPlan): Promise<void> {
  await producer.send({
    topic: codec.topics.name('thoughtRequests'),
    acks: -1,
    messages: [{ key: fork.thought_id, value: await codec.encode('thoughtRequests', fork.request), headers: fork.headers }],
  });
}

function flowFor(key: string, flows: Map<string, Flow> | undefined): Flow {
  if (!/^[a-z][a-z0-9-]*@[0-9]+$/.test(key)) throw new ContractViolation(`--flow must be <flow id>@<version>, got "${key}"`);
  const flow = flows?.get(key);
  if (!flow) throw new ContractViolation(`no flow ${key} (have ${[...(flows?.keys() ?? [])].join(', ') || 'none'})`);
  return flow;
}

/** Parses `STEP.field[.sub]=value`; the value is JSON when it parses as JSON, else the text itself. */
export function parseOverride(text: string): Override {
  const m = /^([A-Za-z][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)=(.*)$/s.exec(text);
  if (!m) throw new ContractViolation(`--set must look like STEP.field=value (for example S2.customer_id=C-000001), got "${text}"`);
  let value: unknown = m[3]!;
  try {
    value = JSON.parse(m[3]!);
  } catch {
    // Not JSON: the text is the value (C-000001, an e-mail address, ...).
  }
  return { step: m[1]!, path: m[2]!.split('.'), value, text };
}

/** The plan with each override's value set in its step's input (a new plan; `plan` is not changed). */
function applyOverrides(plan: Plan, overrides: Override[], done: ReadonlySet<string>): Plan {
  if (overrides.length === 0) return plan;
  const copy = JSON.parse(JSON.stringify(plan)) as Plan;
  for (const o of overrides) {
    const step = copy.steps.find((s) => s.id === o.step);
    if (!step) throw new ContractViolation(`--set ${o.text}: the plan has no step ${o.step} (steps: ${copy.steps.map((s) => s.id).join(', ')})`);
    if (done.has(o.step))
      throw new ContractViolation(
        `--set ${o.text}: step ${o.step} finished before the fork point; its output is kept (fork at the wave that runs ${o.step} to change its input)`,
      );
    let target = step.input as Record<string, unknown>;
    for (const part of o.path.slice(0, -1)) {
      const next = target[part];
      target = (target[part] = next !== null && typeof next === 'object' && !Array.isArray(next) ? next : {}) as Record<string, unknown>;
    }
    target[o.path[o.path.length - 1]!] = o.value;
  }
  return copy;
}
