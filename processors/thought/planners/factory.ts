/**
 * Builds the planner its settings name (TAO_PLANNER; read by ./config.ts). Each planner implements the same
 * {@link Planner} interface, so Thought does not know which one it runs. The variables (kinds,
 * defaults, ranges) are declared in runtime/settings/thought.ts.
 *
 * | TAO_PLANNER | planner |
 * |---|---|
 * | router (default) | {@link RouterPlanner}: the ONNX intent router picks the flow (routing table TAO_ROUTES, default flows/routes.json; model TAO_INTENT_MODEL_DIR; threshold TAO_INTENT_THRESHOLD, default 0.4); the flow's own input patterns take its inputs from the text; unclear tasks are escalated |
 * | graph | {@link GraphPlanner} on the flow TAO_FLOW (`<id>@<version>`, default order-status@1) |
 * | react, plan-replan | {@link SkillPlanner}: the router picks a skill; a model takes the run (every turn, or whole plans re-planned on reflection), by default as the value says |
 *
 * `llm` (a model asked for the plan inside Thought's `gather`) is retired: TAO_PLANNER=llm is a
 * one-line ConfigError pointing at plan-replan, whose model calls are Action's recorded steps.
 */
import { ConfigError } from '../../../runtime/errors.ts';
import { createContractAjv } from '../../../tools/catalog.ts';
import type { ToolContracts } from '../../plan.ts';
import type { PlannerSettings } from './config.ts';
import { loadRoutes, type Flow } from './flows.ts';
import { GraphPlanner } from './graph.ts';
import { IntentRouter } from './intent-model.ts';
import type { Planner } from './planner.ts';
import { RouterPlanner } from './router.ts';
import { SkillPlanner, type RoutableSkill } from './skill.ts';

export interface PlannerDeps {
  flows: Map<string, Flow>;
  /** The skills, for TAO_PLANNER=react and plan-replan. */
  skills?: { forIntent(intent: string): RoutableSkill | undefined; list(): RoutableSkill[] };
  tools: ToolContracts;
}

/**
 * The planner `settings.kind` names.
 * @throws ConfigError for an unknown flow, a routing table that does not load, or react/plan-replan without skills.
 */
export function createPlanner(settings: PlannerSettings, deps: PlannerDeps): Planner {
  switch (settings.kind) {
    case 'graph':
      return new GraphPlanner(namedFlow(settings.flow, deps.flows), deps.tools);
    case 'router':
      return routerPlanner(settings, deps);
    case 'react':
    case 'plan-replan':
      if (!deps.skills) throw new ConfigError(`TAO_PLANNER=${settings.kind} needs the skills (TAO_SKILLS_DIR)`);
      return new SkillPlanner(routerPlanner(settings, deps), deps.skills, settings.kind, settings.routeModelBelow);
  }
}

/** The `router` planner; its model is loaded on first use, so building the configuration stays synchronous. */
function routerPlanner(settings: PlannerSettings, deps: PlannerDeps): RouterPlanner {
  const routes = loadRoutes(settings.routesFile, createContractAjv(), deps.flows);
  let router: Promise<IntentRouter> | null = null;
  const source = {
    route: async (text: string) => {
      router ??= IntentRouter.load(settings.intentModelDir, { threshold: settings.intentThreshold });
      return (await router).route(text);
    },
  };
  return new RouterPlanner(source, routes, deps.flows, deps.tools);
}

/**
 * The flow `key` (`<id>@<version>`, TAO_FLOW) names.
 * @throws ConfigError when no loaded flow has that key.
 */
function namedFlow(key: string, flows: Map<string, Flow>): Flow {
  const flow = flows.get(key);
  if (!flow) throw new ConfigError(`TAO_FLOW=${key}: no such flow (have ${[...flows.keys()].join(', ')})`);
  return flow;
}
