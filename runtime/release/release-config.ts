/**
 * Where a release's parts are and which run settings it has, as a deployment's environment says:
 * each part's variable or its default path, each run setting's value or its default. The one
 * reader of those settings for manifests (runtime/release/manifest.ts).
 */
import { resolve } from 'node:path';
import { setting, SETTINGS } from '../config.ts';
import { packagePath } from '../paths.ts';

/** The settings that decide a run: which planner and flow, the model and how it is asked, the bounds and the approval rules. */
export const RUN_SETTINGS = [
  'TAO_PLANNER',
  'TAO_FLOW',
  'TAO_INTENT_THRESHOLD',
  'TAO_ROUTE_MODEL_BELOW',
  'TAO_LLM_MODEL',
  'TAO_LLM_FALLBACK_MODEL',
  'TAO_LLM_API',
  'TAO_LLM_PARAMS',
  'TAO_LLM_TOOL_CALLS',
  'TAO_MAX_ITERATIONS',
  'TAO_MAX_PLAN_STEPS',
  'TAO_REPEAT_CAP',
  'TAO_REFLECT_AFTER',
  'TAO_NOVELTY_WAVES',
  'TAO_COST_BUDGET',
  'TAO_MONEY_BUDGET',
  'TAO_APPROVAL_RULES',
  'TAO_APPROVAL_TIMEOUT',
  'TAO_PARKED_RUN_TTL',
] as const satisfies readonly (keyof typeof SETTINGS)[];

export type RunSetting = (typeof RUN_SETTINGS)[number];

/** Checks a run setting's value by the variable's own rule (runtime/config.ts). @throws ConfigError naming the variable. */
export function checkRunSetting(name: RunSetting, value: string): void {
  setting({ [name]: value }, name);
}

/** The parts a manifest carries, each a part of a release folder. */
export const MANIFEST_PARTS = ['skills', 'catalog', 'flows', 'routes', 'observation-rules'] as const;
export type ManifestPartName = (typeof MANIFEST_PARTS)[number];

const DEFAULT_PATHS: Record<ManifestPartName, string> = {
  skills: packagePath('skills'),
  catalog: packagePath('tools', 'catalog'),
  flows: packagePath('flows'),
  routes: packagePath('flows', 'routes.json'),
  'observation-rules': packagePath('rules', 'observation.json'),
};
const PART_VARIABLES = {
  skills: 'TAO_SKILLS_DIR',
  catalog: 'TAO_TOOL_CATALOG_DIR',
  flows: 'TAO_FLOWS_DIR',
  routes: 'TAO_ROUTES',
  'observation-rules': 'TAO_OBSERVATION_RULES',
} as const satisfies Record<ManifestPartName, keyof typeof SETTINGS>;

/** A release's sources: each part's absolute path, the effective run settings, the intent model's folder. */
export interface ReleaseSources {
  paths: Record<ManifestPartName, string>;
  /** Each run setting's value, or its default (a setting unset without a default is absent). */
  settings: Record<string, string>;
  intentModelDir: string;
}

export function releaseSources(env: NodeJS.ProcessEnv): ReleaseSources {
  const paths = Object.fromEntries(MANIFEST_PARTS.map((name) => [name, resolve(setting(env, PART_VARIABLES[name]) ?? DEFAULT_PATHS[name])])) as Record<
    ManifestPartName,
    string
  >;
  const settings: Record<string, string> = {};
  for (const name of RUN_SETTINGS) {
    const raw = env[name];
    const value = raw !== undefined && raw !== '' ? raw : (SETTINGS[name] as { default?: string }).default;
    if (value !== undefined) settings[name] = value;
  }
  return { paths, settings, intentModelDir: resolve(setting(env, 'TAO_INTENT_MODEL_DIR') ?? packagePath('models', 'intent-router')) };
}
