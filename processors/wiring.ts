/**
 * The one place where stages are declared and wired to their configuration. Each stage's options
 * come from the environment, are validated here, and a bad value stops the process at start-up.
 */
import { ConfigError } from '../runtime/errors.ts';
import type { Logger } from '../runtime/log.ts';
import type { StageMetrics } from '../runtime/metrics.ts';
import type { ExecutorEvents } from './action/executor.ts';
import type { StageDefinition } from '../runtime/processor.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog, createContractAjv } from '../tools/catalog.ts';
import type { Ajv, ValidateFunction } from 'ajv';
import { actionStage } from './action/stage.ts';
import { realHttpDeps } from './action/invoke.ts';
import { DEFAULT_RULES_FILE, loadObservationRules } from './observation/rules.ts';
import { observationStage } from './observation/stage.ts';
import { PlanValidator, type ToolContracts } from './thought/plan.ts';
import { DEFAULT_FLOWS_DIR, loadFlows } from './thought/planner.ts';
import { createPlanner } from './thought/planner-config.ts';
import type { ThoughtConfig } from './thought/core.ts';
import type { ObservationConfig, PayloadClassifier } from './observation/core.ts';
import { DEFAULT_ERROR_MODEL_DIR, ErrorClassifier } from './observation/classifier.ts';
import { thoughtStage } from './thought/stage.ts';

export const STAGES = ['thought', 'action', 'observation'] as const;
export type StageName = (typeof STAGES)[number];

/** Default ports of each process's /health and /metrics server (override with TAO_OPS_PORT). */
export const DEFAULT_OPS_PORTS: Record<StageName, number> = { thought: 9401, action: 9402, observation: 9403 };

/**
 * | variable | meaning | default |
 * |---|---|---|
 * | TAO_TOOL_CATALOG_DIR | folder of tool catalog files | tools/catalog |
 * | TAO_FLOWS_DIR | folder of flow files | flows |
 * | TAO_PLANNER, TAO_FLOW | the planner and its settings: see thought/planner-config.ts | graph, order-status@1 |
 * | TAO_MAX_PLAN_STEPS | steps a plan may have | 50 |
 * | TAO_MAX_ITERATIONS | waves per run before budget_exhausted | 10 |
 * | TAO_COST_BUDGET | cost units per run (0: unlimited) | 0 |
 * | TAO_NOVELTY_WAVES | waves without new information that end a run | 3 |
 * | TAO_REPEAT_CAP | identical calls (tool + input) per run | 3 |
 * | TAO_REFLECT_AFTER | consecutive failures of a step before reflection | 2 |
 * | TAO_ACTION_CONCURRENCY | waves in flight per partition in Action | 32 |
 * | TAO_OBSERVATION_RULES | Observation's rules file | rules/observation.json |
 * | TAO_SEMANTIC_CHECK, TAO_ERROR_MODEL_DIR | Observation's ONNX classifier on/off, and its model | on, models/error-classifier |
 */
export async function defineStage(name: StageName, env: NodeJS.ProcessEnv, logger: Logger, metrics?: StageMetrics): Promise<StageDefinition> {
  switch (name) {
    case 'thought':
      return thoughtStage(await thoughtConfig(env), logger, metrics?.runMetrics());
    case 'action': {
      const catalog = ToolCatalog.load(env.TAO_TOOL_CATALOG_DIR ?? DEFAULT_CATALOG_DIR, env, createContractAjv());
      return actionStage({ catalog, http: realHttpDeps(), env, concurrency: intSetting(env, 'TAO_ACTION_CONCURRENCY', 32, 1, 1000), events: metrics && toolMetrics(metrics), logger });
    }
    case 'observation':
      return observationStage(await observationConfig(env), { logger, stepMetrics: metrics?.stepMetrics() });
  }
}

/** Thought's configuration, as the stage runs it (also used by replay to re-decide recorded runs). */
export async function thoughtConfig(env: NodeJS.ProcessEnv): Promise<ThoughtConfig> {
  const ajv = createContractAjv();
  const catalog = ToolCatalog.load(env.TAO_TOOL_CATALOG_DIR ?? DEFAULT_CATALOG_DIR, env, ajv);
  const flows = loadFlows(env.TAO_FLOWS_DIR ?? DEFAULT_FLOWS_DIR, ajv);
  const tools = toolContracts(catalog);
  const validator = new PlanValidator(ajv, intSetting(env, 'TAO_MAX_PLAN_STEPS', 50, 1, 1000));
  return {
    planner: createPlanner(env, { flows, catalog, tools, validator }),
    validator,
    tools,
    maxIterations: intSetting(env, 'TAO_MAX_ITERATIONS', 10, 1, 1000),
    costBudget: intSetting(env, 'TAO_COST_BUDGET', 0, 0, 1_000_000),
    noveltyWaves: intSetting(env, 'TAO_NOVELTY_WAVES', 3, 1, 100),
    repeatCap: intSetting(env, 'TAO_REPEAT_CAP', 3, 1, 100),
    reflectAfter: intSetting(env, 'TAO_REFLECT_AFTER', 2, 1, 20),
  };
}

/** Observation's configuration, as the stage runs it (also used by replay). */
export async function observationConfig(env: NodeJS.ProcessEnv): Promise<ObservationConfig> {
  const ajv = createContractAjv();
  const catalog = ToolCatalog.load(env.TAO_TOOL_CATALOG_DIR ?? DEFAULT_CATALOG_DIR, env, ajv);
  const rules = loadObservationRules(env.TAO_OBSERVATION_RULES ?? DEFAULT_RULES_FILE, ajv, (tool) => catalog.get(tool) !== undefined);
  return { catalog, ajv, rules, classifier: await semanticClassifier(env) };
}

/** The ONNX error-payload classifier (TAO_ERROR_MODEL_DIR; `TAO_SEMANTIC_CHECK=off` runs without it). */
export async function semanticClassifier(env: NodeJS.ProcessEnv): Promise<PayloadClassifier | null> {
  const setting = env.TAO_SEMANTIC_CHECK ?? 'on';
  if (setting === 'off') return null;
  if (setting !== 'on') throw new ConfigError(`TAO_SEMANTIC_CHECK must be on or off, got "${setting}"`);
  const model = await ErrorClassifier.load(env.TAO_ERROR_MODEL_DIR ?? DEFAULT_ERROR_MODEL_DIR);
  return { model: model.modelId, classify: (text) => model.classify(text) };
}

/** What plan validation and the planners need to know of the catalog. */
export function toolContracts(catalog: ToolCatalog): ToolContracts {
  let ajv: Ajv | null = null;
  const fieldChecks = new Map<string, ValidateFunction | null>();
  return {
    refusesInput: (tool, field, value) => {
      const key = `${tool}\u0000${field}`;
      if (!fieldChecks.has(key)) {
        const schema = (catalog.get(tool)?.spec.parameters as { properties?: Record<string, unknown> } | undefined)?.properties?.[field];
        ajv ??= createContractAjv();
        fieldChecks.set(key, schema === undefined ? null : ajv.compile(schema as object));
      }
      const check = fieldChecks.get(key)!;
      if (check === null || check(value)) return null;
      return (check.errors ?? []).map((e) => e.message ?? 'invalid').join(', ');
    },
    has: (tool) => catalog.get(tool) !== undefined,
    responseFields: (tool) => {
      const props = (catalog.get(tool)?.spec.response as { properties?: Record<string, unknown> } | undefined)?.properties;
      return props ? Object.keys(props) : null;
    },
    cost: (tool) => catalog.get(tool)?.spec.cost ?? 1,
  };
}

const BREAKER_LEVEL = { closed: 0, half_open: 1, open: 2 } as const;

function toolMetrics(metrics: StageMetrics): ExecutorEvents {
  return {
    onCall: (tool, result) => {
      const status = result.status_code !== null ? String(result.status_code) : (result.error?.type ?? 'none');
      metrics.toolCallSeconds.observe({ tool, status }, result.response_time_ms / 1000);
      if (result.attempts > 1) metrics.toolRetries.inc({ tool }, result.attempts - 1);
    },
    onFallback: (tool, fallback) => metrics.fallbacks.inc({ tool, fallback }),
    onBreaker: (tool, state) => metrics.breakerState.set({ tool }, BREAKER_LEVEL[state]),
  };
}

export function intSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return value;
}
