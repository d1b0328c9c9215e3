import { readFileSync } from 'node:fs';
import type { Ajv } from 'ajv';
import { ConfigError } from '../../runtime/errors.ts';
import { packagePath } from '../../runtime/paths.ts';
import { INTENTS, type IntentRoute } from './intent-router.ts';
import type { ToolContracts } from '../plan.ts';
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

export const DEFAULT_ROUTES_FILE = packagePath('flows', 'routes.json');

/** Reads and checks the routing table: known intents only, every flow loaded. */
export function loadRoutes(path: string, ajv: Ajv, flows: Map<string, Flow>): Routes {
  const raw: unknown = JSON.parse(readFileSync(path, 'utf8'));
  const validate = ajv.compile<Routes>(routesSchema);
  if (!validate(raw)) throw new ConfigError(`${path}: ${ajv.errorsText(validate.errors)}`);
  for (const [intent, keys] of Object.entries(raw.intents)) {
    if (!(INTENTS as readonly string[]).includes(intent) || intent === 'unknown')
      throw new ConfigError(`${path}: "${intent}" is not a routable intent (${INTENTS.filter((i) => i !== 'unknown').join(', ')})`);
    for (const key of keys) if (!flows.has(key)) throw new ConfigError(`${path}: intent ${intent} routes to flow ${key}, which is not loaded`);
  }
  return raw;
}

/** The async part of routing (onnxruntime inference), injected so the planner itself stays testable. */
export interface IntentSource {
  route(text: string): Promise<IntentRoute>;
}

/**
 * Routes a task to a flow with the ONNX intent router, and takes the flow's inputs from the task text
 * with the flow's own patterns (slots live in the flow configuration, see `slots.ts`). `gather` runs
 * the model (its answer is recorded with the run, so a replay reads it back); `plan` is pure. An
 * `unknown` intent — off-domain, or below the router's confidence threshold — is escalated to a
 * person: the planner never guesses. The intent comes from the wording alone, so a ticket whose id is
 * missing or in a shape the tools do not accept still reaches its intent; among the intent's flows the
 * first whose inputs are all present and accepted by its tools is used, and when none is, the run asks
 * for the preferred flow's inputs (`needs_input` naming them).
 */
export class RouterPlanner implements Planner {
  readonly name = 'router';
  private readonly planners = new Map<string, GraphPlanner>();

  constructor(
    private readonly router: IntentSource,
    private readonly routes: Routes,
    flows: Map<string, Flow>,
    tools: Pick<ToolContracts, 'refusesInput'>,
  ) {
    for (const keys of Object.values(routes.intents)) for (const key of keys) this.planners.set(key, new GraphPlanner(flows.get(key)!, tools));
  }

  get config(): string {
    return `routes@${this.routes.version}`;
  }

  async gather(task: PlannerTask): Promise<string> {
    return JSON.stringify(await this.router.route(task.text));
  }

  plan(task: PlannerTask, record: string | null): PlanningResult {
    if (record === null) return { kind: 'escalate', planner: this.name, reason: 'no routing decision was recorded for this task' };
    const route = JSON.parse(record) as IntentRoute;
    const keys = this.routes.intents[route.intent];
    if (route.intent === 'unknown' || !keys) {
      const why =
        route.candidate === 'unknown'
          ? `off-domain (the router says unknown at ${route.confidence.toFixed(3)})`
          : `unclear (${route.candidate} at ${route.confidence.toFixed(3)} is below the routing threshold)`;
      return { kind: 'escalate', planner: `router(${route.model})`, reason: `the ticket is ${why}; a person takes it` };
    }
    const results = keys.map((k) => this.planners.get(k)!.plan(task));
    const result = results.find((r) => r.kind === 'plan') ?? results[0]!;
    return { ...result, planner: `router(${route.intent} ${route.confidence.toFixed(3)})` };
  }
}
