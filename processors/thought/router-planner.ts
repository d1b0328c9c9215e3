import { readFileSync } from 'node:fs';
import type { Ajv } from 'ajv';
import { ConfigError } from '../../runtime/errors.ts';
import { INTENTS, type IntentRoute } from './intent-router.ts';
import { GraphPlanner, type Flow, type Planner, type PlannerTask, type PlanningResult } from './planner.ts';

/** The routing table (flows/routes.json): for each intent, the flows that serve it, preferred first. */
export interface Routes {
  version: number;
  intents: Record<string, string[]>;
}

const routesSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'intents'],
  properties: {
    version: { type: 'integer', minimum: 1 },
    intents: { type: 'object', additionalProperties: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^[a-z][a-z0-9-]*@[0-9]+$' } } },
  },
} as const;

export const DEFAULT_ROUTES_FILE = new URL('../../flows/routes.json', import.meta.url).pathname;

/** Reads and checks the routing table: known intents only, every flow loaded. */
export function loadRoutes(path: string, ajv: Ajv, flows: Map<string, Flow>): Routes {
  const raw: unknown = JSON.parse(readFileSync(path, 'utf8'));
  const validate = ajv.compile<Routes>(routesSchema);
  if (!validate(raw)) throw new ConfigError(`${path}: ${ajv.errorsText(validate.errors)}`);
  for (const [intent, keys] of Object.entries(raw.intents)) {
    if (!(INTENTS as readonly string[]).includes(intent) || intent === 'unknown') throw new ConfigError(`${path}: "${intent}" is not a routable intent (${INTENTS.filter((i) => i !== 'unknown').join(', ')})`);
    for (const key of keys) if (!flows.has(key)) throw new ConfigError(`${path}: intent ${intent} routes to flow ${key}, which is not loaded`);
  }
  return raw;
}

/** The async part of routing (onnxruntime inference), injected so the planner itself stays testable. */
export interface IntentSource {
  route(text: string): Promise<IntentRoute>;
}

/**
 * Routes a task to a flow with the ONNX intent router, and fills the flow's inputs from the slots
 * the router extracted. `gather` runs the model (its answer is recorded with the run, so a replay
 * reads it back); `plan` is pure. An `unknown` intent — off-domain, or below the router's confidence
 * threshold — is escalated to a person: the planner never guesses. Among an intent's flows the first
 * whose inputs are all present is used; when none is, the run asks for the preferred flow's inputs.
 */
export class RouterPlanner implements Planner {
  readonly name = 'router';

  constructor(
    private readonly router: IntentSource,
    private readonly routes: Routes,
    private readonly flows: Map<string, Flow>,
  ) {}

  get config(): string {
    return `routes@${this.routes.version}`;
  }

  async gather(task: PlannerTask): Promise<string> {
    return JSON.stringify(await this.router.route(task.text));
  }

  plan(task: PlannerTask, record: string | null): PlanningResult {
    void task;
    if (record === null) return { kind: 'escalate', planner: this.name, reason: 'no routing decision was recorded for this task' };
    const route = JSON.parse(record) as IntentRoute;
    const keys = this.routes.intents[route.intent];
    if (route.intent === 'unknown' || !keys) {
      const why = route.candidate === 'unknown' ? `off-domain (the router says unknown at ${route.confidence.toFixed(3)})` : `unclear (${route.candidate} at ${route.confidence.toFixed(3)} is below the routing threshold)`;
      return { kind: 'escalate', planner: `router(${route.model})`, reason: `the ticket is ${why}; a person takes it` };
    }
    const planners = keys.map((k) => new GraphPlanner(this.flows.get(k)!));
    const usable = planners.find((p) => Object.keys(p.flow.inputs).every((name) => route.slots[name] !== undefined)) ?? planners[0]!;
    const result = usable.instantiate(route.slots);
    return { ...result, planner: `router(${route.intent} ${route.confidence.toFixed(3)})` };
  }
}
