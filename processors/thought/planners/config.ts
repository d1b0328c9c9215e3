/** The planner's settings, read from the environment by the stages' composition root (processors/wiring). */
import { setting, type SettingValue } from '../../../runtime/config.ts';
import { DEFAULT_ROUTES_FILE } from './flows.ts';
import { DEFAULT_INTENT_MODEL_DIR } from './intent-model.ts';

export interface PlannerSettings {
  /** TAO_PLANNER. */
  kind: SettingValue<'TAO_PLANNER'>;
  /** TAO_FLOW: the graph planner's flow, `<id>@<version>`. */
  flow: string;
  /** TAO_ROUTES: the router's routing table. */
  routesFile: string;
  /** TAO_INTENT_MODEL_DIR: the ONNX intent model. */
  intentModelDir: string;
  /** TAO_INTENT_THRESHOLD: the router's confidence floor. */
  intentThreshold: number;
  /** TAO_ROUTE_MODEL_BELOW: an `unknown` route below this confidence asks the model to choose a skill (0: never). */
  routeModelBelow: number;
}

/** @throws ConfigError naming a variable whose value does not parse (a retired TAO_PLANNER value says what to use instead). */
export function plannerSettingsFromEnv(env: NodeJS.ProcessEnv): PlannerSettings {
  return {
    kind: setting(env, 'TAO_PLANNER'),
    flow: setting(env, 'TAO_FLOW'),
    routesFile: setting(env, 'TAO_ROUTES') ?? DEFAULT_ROUTES_FILE,
    intentModelDir: setting(env, 'TAO_INTENT_MODEL_DIR') ?? DEFAULT_INTENT_MODEL_DIR,
    intentThreshold: setting(env, 'TAO_INTENT_THRESHOLD'),
    routeModelBelow: setting(env, 'TAO_ROUTE_MODEL_BELOW'),
  };
}
