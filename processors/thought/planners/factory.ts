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
 * | llm | {@link LlmPlanner}: asks an OpenAI-compatible chat-completions endpoint (TAO_LLM_BASE_URL and TAO_LLM_MODEL required; key in the variable TAO_LLM_API_KEY_ENV names; TAO_LLM_TIMEOUT_MS, TAO_LLM_MAX_TOKENS; the prompt states TAO_MAX_PLAN_STEPS); falls back to the graph planner on TAO_FLOW |
 */
import { setting } from '../../../runtime/config.ts';
import { ConfigError } from '../../../runtime/errors.ts';
import type { ToolCatalog } from '../../../tools/catalog.ts';
import { createContractAjv } from '../../../tools/catalog.ts';
import type { PlanValidator, ToolContracts } from '../../plan.ts';
import { DEFAULT_ROUTES_FILE, loadRoutes, type Flow } from './flows.ts';
import { GraphPlanner } from './graph.ts';
import { DEFAULT_INTENT_MODEL_DIR, IntentRouter } from './intent-model.ts';
import { LlmPlanner } from './llm.ts';
import type { Planner } from './planner.ts';
import { RouterPlanner } from './router.ts';
import { SkillPlanner, type RoutableSkill } from './skill.ts';

export interface PlannerDeps {
  flows: Map<string, Flow>;
  /** The skills, for TAO_PLANNER=react. */
  skills?: { forIntent(intent: string): RoutableSkill | undefined };
  catalog: ToolCatalog;
  tools: ToolContracts;
  validator: PlanValidator;
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
    case 'llm':
      return llmPlannerFromEnv(env, deps);
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

/** The `llm` planner from its TAO_LLM_* settings, with the graph planner on TAO_FLOW as fallback. */
function llmPlannerFromEnv(env: NodeJS.ProcessEnv, deps: PlannerDeps): LlmPlanner {
  const baseUrl = required(setting(env, 'TAO_LLM_BASE_URL'), 'TAO_LLM_BASE_URL');
  const model = required(setting(env, 'TAO_LLM_MODEL'), 'TAO_LLM_MODEL');
  const keyEnv = setting(env, 'TAO_LLM_API_KEY_ENV');
  return new LlmPlanner({
    baseUrl,
    model,
    apiKey: env[keyEnv],
    timeoutMs: setting(env, 'TAO_LLM_TIMEOUT_MS'),
    maxTokens: setting(env, 'TAO_LLM_MAX_TOKENS'),
    maxSteps: setting(env, 'TAO_MAX_PLAN_STEPS'),
    fallback: new GraphPlanner(flowFromEnv(env, deps.flows), deps.tools),
    validator: deps.validator,
    tools: deps.tools,
    catalog: deps.catalog,
  });
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

function required(value: string | undefined, name: string): string {
  if (!value) throw new ConfigError(`${name} is required when TAO_PLANNER=llm`);
  return value;
}
