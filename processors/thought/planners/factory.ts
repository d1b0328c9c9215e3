/**
 * Chooses the planner from configuration (TAO_PLANNER). Each planner implements the same
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
import { setting } from '../../../runtime/config.ts';
import { ConfigError } from '../../../runtime/errors.ts';
import { createContractAjv } from '../../../tools/catalog.ts';
import type { ToolContracts } from '../../plan.ts';
import { DEFAULT_ROUTES_FILE, loadRoutes, type Flow } from './flows.ts';
import { GraphPlanner } from './graph.ts';
import { DEFAULT_INTENT_MODEL_DIR, IntentRouter } from './intent-model.ts';
import type { Planner } from './planner.ts';
import { RouterPlanner } from './router.ts';
import { SkillPlanner, type RoutableSkill } from './skill.ts';

export interface PlannerDeps {
  flows: Map<string, Flow>;
  /** The skills, for TAO_PLANNER=react and plan-replan. */
  skills?: { forIntent(intent: string): RoutableSkill | undefined };
  tools: ToolContracts;
}

/**
 * Builds the planner TAO_PLANNER names from the environment.
 * @throws ConfigError for an unknown planner, an unknown flow, or a missing or invalid setting (naming the variable).
 */
export function createPlanner(env: NodeJS.ProcessEnv, deps: PlannerDeps): Planner {
  const kind = setting(env, 'TAO_PLANNER');
  switch (kind) {
    case 'graph':
      return new GraphPlanner(flowFromEnv(env, deps.flows), deps.tools);
    case 'router':
      return routerPlannerFromEnv(env, deps);
    case 'react':
    case 'plan-replan':
      if (!deps.skills) throw new ConfigError(`TAO_PLANNER=${kind} needs the skills (TAO_SKILLS_DIR)`);
      return new SkillPlanner(routerPlannerFromEnv(env, deps), deps.skills, kind);
  }
}

/** The `router` planner; its model is loaded on first use, so building the configuration stays synchronous. */
function routerPlannerFromEnv(env: NodeJS.ProcessEnv, deps: PlannerDeps): RouterPlanner {
  const routes = loadRoutes(setting(env, 'TAO_ROUTES') ?? DEFAULT_ROUTES_FILE, createContractAjv(), deps.flows);
  const threshold = setting(env, 'TAO_INTENT_THRESHOLD');
  let router: Promise<IntentRouter> | null = null;
  const source = {
    route: async (text: string) => {
      router ??= IntentRouter.load(setting(env, 'TAO_INTENT_MODEL_DIR') ?? DEFAULT_INTENT_MODEL_DIR, { threshold });
      return (await router).route(text);
    },
  };
  return new RouterPlanner(source, routes, deps.flows, deps.tools);
}

/**
 * The flow TAO_FLOW names (default order-status@1).
 * @throws ConfigError when no loaded flow has that key.
 */
export function flowFromEnv(env: NodeJS.ProcessEnv, flows: Map<string, Flow>): Flow {
  const key = setting(env, 'TAO_FLOW');
  const flow = flows.get(key);
  if (!flow) throw new ConfigError(`TAO_FLOW=${key}: no such flow (have ${[...flows.keys()].join(', ')})`);
  return flow;
}
