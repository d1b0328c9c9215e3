/**
 * Shared fixtures for the pure-core tests: the real catalog, the real order-status flow and the
 * ThoughtConfig / ObservationConfig built the way processors/wiring/index.ts builds them.
 */
import { createHash } from 'node:crypto';
import type { Ajv } from 'ajv';
import type { Check, ObservationResult, Outcome, RunSnapshot, RunState, StepCall, Task, ThoughtRequest, Verdict } from '../../schemas/types.gen.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog, createContractAjv } from '../../tools/catalog.ts';
import { DEFAULT_RULES_FILE, loadObservationRules } from '../../processors/observation/rules.ts';
import type { ObservationConfig } from '../../processors/observation/core.ts';
import type { ThoughtConfig, ThoughtDecision } from '../../processors/thought/core.ts';
import { toolContracts } from '../../processors/wiring/index.ts';
import { runState as makeRunState } from '../../schemas/records.ts';
import { PlanValidator, type Plan, type ToolContracts } from '../../processors/plan.ts';
import { DEFAULT_FLOWS_DIR, loadFlows, type Flow } from '../../processors/thought/planners/flows.ts';
import { GraphPlanner } from '../../processors/thought/planners/graph.ts';
import type { Planner } from '../../processors/thought/planners/planner.ts';

export interface World {
  ajv: Ajv;
  catalog: ToolCatalog;
  flow: Flow;
  tools: ToolContracts;
}

/** Loads the real catalog and flows exactly like defineStage() does (one shared contract ajv). */
export function loadWorld(env: NodeJS.ProcessEnv = {}): World {
  const ajv = createContractAjv();
  const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, env, ajv);
  const flow = loadFlows(DEFAULT_FLOWS_DIR, ajv).get('order-status@1');
  if (!flow) throw new Error('flows/order-status.v1.json did not load as order-status@1');
  return { ajv, catalog, flow, tools: toolContracts(catalog) };
}

/** ThoughtConfig as wiring.ts builds it with its defaults. */
export function thoughtConfig(world: World, overrides: Partial<ThoughtConfig> = {}): ThoughtConfig {
  return {
    planner: new GraphPlanner(world.flow, world.tools),
    validator: new PlanValidator(world.ajv, 50),
    tools: world.tools,
    maxIterations: 10,
    costBudget: 0,
    noveltyWaves: 3,
    repeatCap: 3,
    reflectAfter: 2,
    ...overrides,
  };
}

/** ObservationConfig as wiring.ts builds it. */
export function observationConfig(world: World): ObservationConfig {
  return {
    catalog: world.catalog,
    ajv: world.ajv,
    rules: loadObservationRules(DEFAULT_RULES_FILE, world.ajv, (t) => world.catalog.get(t) !== undefined),
    classifier: null,
  };
}

/** The plan the graph planner makes from the real flow for a task text that names an e-mail. */
export function flowPlan(world: World, text = 'Where is my order? alice@example.com'): Plan {
  const result = new GraphPlanner(world.flow, world.tools).plan({ thought_id: 't-1', text, metadata: {} });
  if (result.kind !== 'plan') throw new Error(`expected a plan, got ${result.kind}`);
  return structuredClone(result.plan) as Plan;
}

export function task(text: string, thoughtId = 't-1'): Task {
  return {
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
}

/** A person's reply to a run (kind REPLY), with its own task id. */
export function reply(text: string, thoughtId = 't-1', n = 1): Task {
  return { ...task(text, thoughtId), task_id: `reply-${n}-${thoughtId}`, kind: 'REPLY', submitted_at_ms: 1_700_000_000_000 + n };
}

export function runState(plan: Plan, overrides: Partial<RunState> = {}): RunState {
  return makeRunState({
    task_id: 'task-t-1',
    task_text: 'x',
    planner: 'graph',
    flow_id: plan.flow.id,
    flow_version: plan.flow.version,
    plan_json: JSON.stringify(plan),
    ...overrides,
  });
}

/** A planner that returns a fixed candidate plan, for testing how Thought treats a bad planner. */
export function fixedPlanner(plan: unknown): Planner {
  return { name: 'fixed', config: 'fixed@1', plan: () => ({ kind: 'plan', planner: 'fixed', plan }) };
}

/** Realistic valid data for each step of the order-status flow. */
export const DATA = {
  S1: { customer_id: 'C-123456', email: 'alice@example.com', name: 'Alice Tan' },
  S2: { order_id: 'O-12345678', customer_id: 'C-123456', status: 'shipped', total_cents: 4200, placed_at: '2025-03-14T09:26:53+08:00' },
  S3: { customer_id: 'C-123456', tier: 'gold' },
  S4: { order_id: 'O-12345678', carrier: 'DHL', state: 'in_transit', eta: '2025-03-17T04:00:00Z' },
} as const;

export function validVerdict(stepId: string, tool: string, data: unknown): Verdict {
  return {
    step_id: stepId,
    tool,
    valid: true,
    extracted_data_json: JSON.stringify(data),
    confidence_score: 1,
    error_type: 'ok',
    audit_trail: [],
    status_code: 200,
    response_time_ms: 12,
    attempts: 1,
    fallback_from: null,
  };
}

export function failedVerdict(stepId: string, tool: string, errorType: Verdict['error_type'], auditTrail: Check[] = []): Verdict {
  return {
    step_id: stepId,
    tool,
    valid: false,
    extracted_data_json: null,
    confidence_score: 0,
    error_type: errorType,
    audit_trail: auditTrail,
    status_code: null,
    response_time_ms: 12,
    attempts: 1,
    fallback_from: null,
  };
}

/** Tools of the order-status flow, by step id. */
export const TOOL = { S1: 'crm.find_customer', S2: 'orders.latest', S3: 'crm.tier', S4: 'shipping.track' } as const;

/** What Observation would answer to a wave: one verdict per dispatched step, chosen by `verdictFor`. */
export function observe(request: ThoughtRequest, verdictFor: (call: StepCall) => Verdict): ObservationResult {
  return {
    thought_id: request.thought_id,
    iteration: request.iteration,
    run: request.run,
    verdicts: request.steps.map(verdictFor),
    rules_version: null,
    classifier_model: null,
    dead_letter: null,
  };
}

/** A valid verdict for every step of the order-status flow, with its realistic DATA. */
export function allValid(call: StepCall): Verdict {
  const id = call.step_id as keyof typeof DATA;
  return validVerdict(id, call.tool, DATA[id]);
}

/** The wave's step calls with their inputs parsed. */
/**
 * The idempotency key the rule (processors/thought/run-end.ts `callKey`) gives a call with a flat
 * input, computed here from its written form: `<thought_id>:<step_id>:<16 hex of sha256(tool NUL canonical-JSON input
 * [NUL round, from round 2])>`.
 */
export function keyOf(thoughtId: string, stepId: string, tool: string, input: Record<string, unknown>, round = 1): string {
  const sorted = JSON.stringify(Object.fromEntries(Object.entries(input).sort(([a], [b]) => (a < b ? -1 : 1))));
  const text = `${tool}\u0000${sorted}${round > 1 ? `\u0000${round}` : ''}`;
  return `${thoughtId}:${stepId}:${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
}

export function stepsOf(request: ThoughtRequest): Array<StepCall & { input: unknown }> {
  return request.steps.map((s) => ({ ...s, input: JSON.parse(s.input_json) as unknown }));
}

/** The catalog's contracts plus extra tools (e.g. an alternative to fall back to), and optional costs. */
export function withTools(base: ToolContracts, extra: Record<string, string[] | null>, costs: Record<string, number> = {}): ToolContracts {
  return {
    has: (tool) => tool in extra || base.has(tool),
    responseFields: (tool) => (tool in extra ? extra[tool]! : base.responseFields(tool)),
    cost: (tool) => costs[tool] ?? (tool in extra ? 1 : base.cost(tool)),
    refusesInput: (tool, field, value) => (tool in extra ? null : base.refusesInput(tool, field, value)),
    refusesArguments: (tool, args) => (tool in extra ? null : base.refusesArguments(tool, args)),
  };
}

/** The single ThoughtRequest among Thought's outputs (fails the test otherwise). */
export function onlyRequest(decision: ThoughtDecision): ThoughtRequest {
  const outputs = decision.outputs.filter((o) => o.topic !== 'thoughtRuns');
  const [first] = outputs;
  if (outputs.length !== 1 || first?.topic !== 'thoughtRequests') throw new Error(`expected one thoughtRequests record, got ${JSON.stringify(outputs)}`);
  return first.value;
}

/** The single RunSnapshot (thought.runs) among Thought's outputs (fails the test otherwise). */
export function onlySnapshot(decision: ThoughtDecision): RunSnapshot {
  const runs = decision.outputs.filter((o) => o.topic === 'thoughtRuns');
  const [first] = runs;
  if (runs.length !== 1 || first?.topic !== 'thoughtRuns') throw new Error(`expected one thoughtRuns record, got ${JSON.stringify(runs)}`);
  return first.value;
}

/** The single Outcome among Thought's outputs (fails the test otherwise). */
export function onlyOutcome(decision: ThoughtDecision): Outcome {
  const outputs = decision.outputs.filter((o) => o.topic !== 'thoughtRuns');
  const [first] = outputs;
  if (outputs.length !== 1 || first?.topic !== 'outcomes') throw new Error(`expected one outcomes record, got ${JSON.stringify(outputs)}`);
  return first.value;
}
