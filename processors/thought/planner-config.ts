/**
 * Chooses the planner from configuration (TAO_PLANNER). Each planner implements the same
 * {@link Planner} interface, so Thought does not know which one it runs.
 *
 * | TAO_PLANNER | planner |
 * |---|---|
 * | graph (default) | {@link GraphPlanner} on the flow TAO_FLOW (`<id>@<version>`, default order-status@1) |
 */
import { ConfigError } from '../../runtime/errors.ts';
import type { ToolCatalog } from '../../tools/catalog.ts';
import type { PlanValidator, ToolContracts } from './plan.ts';
import { GraphPlanner, type Flow, type Planner } from './planner.ts';

export interface PlannerDeps {
  flows: Map<string, Flow>;
  catalog: ToolCatalog;
  tools: ToolContracts;
  validator: PlanValidator;
}

export function createPlanner(env: NodeJS.ProcessEnv, deps: PlannerDeps): Planner {
  const kind = env.TAO_PLANNER ?? 'graph';
  switch (kind) {
    case 'graph':
      return new GraphPlanner(flowFromEnv(env, deps.flows));
    default:
      throw new ConfigError(`TAO_PLANNER=${kind}: unknown planner (choose graph)`);
  }
}

export function flowFromEnv(env: NodeJS.ProcessEnv, flows: Map<string, Flow>): Flow {
  const key = env.TAO_FLOW ?? 'order-status@1';
  const flow = flows.get(key);
  if (!flow) throw new ConfigError(`TAO_FLOW=${key}: no such flow (have ${[...flows.keys()].join(', ')})`);
  return flow;
}
