/**
 * Chooses the planner from configuration (TAO_PLANNER). Each planner implements the same
 * {@link Planner} interface, so Thought does not know which one it runs.
 *
 * | TAO_PLANNER | planner |
 * |---|---|
 * | graph (default) | {@link GraphPlanner} on the flow TAO_FLOW (`<id>@<version>`, default order-status@1) |
 * | llm | {@link LlmPlanner}: asks an OpenAI-compatible chat-completions endpoint; falls back to the graph planner on TAO_FLOW |
 * | router | {@link RouterPlanner}: the ONNX intent router picks the flow (routing table TAO_ROUTES, default flows/routes.json; model TAO_INTENT_MODEL_DIR; threshold TAO_INTENT_THRESHOLD, default 0.4); the flow's own input patterns take its inputs from the text; unclear tasks are escalated |
 *
 * Settings of `llm`:
 *
 * | variable | meaning | default |
 * |---|---|---|
 * | TAO_LLM_BASE_URL | API base URL up to its version segment; requests go to `<base>/chat/completions` | required |
 * | TAO_LLM_MODEL | model name | required |
 * | TAO_LLM_API_KEY_ENV | name of the variable holding the API key (sent as a Bearer token; unset or empty: no Authorization header) | TAO_LLM_API_KEY |
 * | TAO_LLM_TIMEOUT_MS | budget of one request (1 to 600000) | 20000 |
 * | TAO_LLM_MAX_TOKENS | `max_tokens` of a request (1 to 1000000) | 2048 |
 * | TAO_MAX_PLAN_STEPS | step limit stated in the prompt (the one the validator enforces) | 50 |
 */
import { ConfigError } from '../../runtime/errors.ts';
import type { ToolCatalog } from '../../tools/catalog.ts';
import { LlmPlanner } from './llm-planner.ts';
import { DEFAULT_INTENT_MODEL_DIR, DEFAULT_INTENT_THRESHOLD, IntentRouter } from './intent-router.ts';
import { DEFAULT_ROUTES_FILE, RouterPlanner, loadRoutes } from './router-planner.ts';
import { createContractAjv } from '../../tools/catalog.ts';
import type { PlanValidator, ToolContracts } from './plan.ts';
import { GraphPlanner, type Flow, type Planner } from './planner.ts';

export interface PlannerDeps {
  flows: Map<string, Flow>;
  catalog: ToolCatalog;
  tools: ToolContracts;
  validator: PlanValidator;
}

/**
 * Builds the planner TAO_PLANNER names from the environment.
 * @throws ConfigError for an unknown planner, an unknown flow, or a missing or invalid setting (naming the variable).
 */
export function createPlanner(env: NodeJS.ProcessEnv, deps: PlannerDeps): Planner {
  const kind = env.TAO_PLANNER ?? 'graph';
  switch (kind) {
    case 'graph':
      return new GraphPlanner(flowFromEnv(env, deps.flows), deps.tools);
    case 'llm':
      return llmPlannerFromEnv(env, deps);
    case 'router':
      return routerPlannerFromEnv(env, deps);
    default:
      throw new ConfigError(`TAO_PLANNER=${kind}: unknown planner (choose graph, llm or router)`);
  }
}

/** The `router` planner; its model is loaded on first use, so building the configuration stays synchronous. */
function routerPlannerFromEnv(env: NodeJS.ProcessEnv, deps: PlannerDeps): RouterPlanner {
  const routes = loadRoutes(env.TAO_ROUTES ?? DEFAULT_ROUTES_FILE, createContractAjv(), deps.flows);
  const threshold = Number(env.TAO_INTENT_THRESHOLD ?? DEFAULT_INTENT_THRESHOLD);
  if (!(threshold >= 0 && threshold <= 1)) throw new ConfigError(`TAO_INTENT_THRESHOLD must be a number from 0 to 1, got "${env.TAO_INTENT_THRESHOLD}"`);
  let router: Promise<IntentRouter> | null = null;
  const source = {
    route: async (text: string) => {
      router ??= IntentRouter.load(env.TAO_INTENT_MODEL_DIR ?? DEFAULT_INTENT_MODEL_DIR, { threshold });
      return (await router).route(text);
    },
  };
  return new RouterPlanner(source, routes, deps.flows, deps.tools);
}

/** The `llm` planner from its TAO_LLM_* settings, with the graph planner on TAO_FLOW as fallback. */
function llmPlannerFromEnv(env: NodeJS.ProcessEnv, deps: PlannerDeps): LlmPlanner {
  const baseUrl = required(env, 'TAO_LLM_BASE_URL');
  const model = required(env, 'TAO_LLM_MODEL');
  const keyEnv = env.TAO_LLM_API_KEY_ENV || 'TAO_LLM_API_KEY';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv)) throw new ConfigError(`TAO_LLM_API_KEY_ENV must name an environment variable, got "${keyEnv}"`);
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new ConfigError(`TAO_LLM_BASE_URL "${baseUrl}" is not a URL`);
  }
  if (!/^https?:$/.test(base.protocol)) throw new ConfigError(`TAO_LLM_BASE_URL must be http:// or https://, got "${baseUrl}"`);
  return new LlmPlanner({
    baseUrl,
    model,
    apiKey: env[keyEnv],
    timeoutMs: intOption(env, 'TAO_LLM_TIMEOUT_MS', 20000, 1, 600000),
    maxTokens: intOption(env, 'TAO_LLM_MAX_TOKENS', 2048, 1, 1000000),
    maxSteps: intOption(env, 'TAO_MAX_PLAN_STEPS', 50, 1, 1000),
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
  const key = env.TAO_FLOW ?? 'order-status@1';
  const flow = flows.get(key);
  if (!flow) throw new ConfigError(`TAO_FLOW=${key}: no such flow (have ${[...flows.keys()].join(', ')})`);
  return flow;
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (!value) throw new ConfigError(`${name} is required when TAO_PLANNER=llm`);
  return value;
}

// Same rule as wiring's intSetting, which this module cannot import (wiring imports it).
function intOption(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return value;
}
