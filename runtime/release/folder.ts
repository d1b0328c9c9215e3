/**
 * A release folder: everything that decides how a run goes, in one folder, so a candidate can be
 * evaluated (`tao eval`), recorded as a manifest and rolled out as one thing (docs/RELEASES.md).
 *
 *   <folder>/skills/                  TAO_SKILLS_DIR          SKILL.md, references, policies, output schema
 *   <folder>/catalog/                 TAO_TOOL_CATALOG_DIR    the tool catalog entries
 *   <folder>/flows/                   TAO_FLOWS_DIR           the graph planner's flows
 *   <folder>/flows/routes.json        TAO_ROUTES              the router's intent → flow table
 *   <folder>/observation-rules.json   TAO_OBSERVATION_RULES   Observation's rules
 *   <folder>/settings.json            the run settings below, as { "TAO_PLANNER": "react", ... }
 *
 * Every part is optional: a part the folder lacks is the deployment's (its variable, or the default).
 * The connection, the model endpoint's address and keys, ports and limits are the deployment's, never
 * a release's: settings.json refuses them.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkRunSetting, RUN_SETTINGS } from './release-config.ts';
import { ConfigError } from '../errors.ts';

/** The folder parts, each with the variable it stands for. */
export const RELEASE_PARTS = [
  { path: 'skills', variable: 'TAO_SKILLS_DIR', kind: 'folder' },
  { path: 'catalog', variable: 'TAO_TOOL_CATALOG_DIR', kind: 'folder' },
  { path: 'flows', variable: 'TAO_FLOWS_DIR', kind: 'folder' },
  { path: join('flows', 'routes.json'), variable: 'TAO_ROUTES', kind: 'file' },
  { path: 'observation-rules.json', variable: 'TAO_OBSERVATION_RULES', kind: 'file' },
] as const;

export { RUN_SETTINGS, type RunSetting } from './release-config.ts';

/**
 * The variables a release folder sets: its parts' paths and its settings.json. Laid over the
 * deployment's environment (`{ ...env, ...releaseEnv(folder) }`), they make the stages, replay and
 * `tao eval` run that release.
 * @throws ConfigError (one line) for a folder that does not exist, a part of the wrong kind, or a
 *   settings.json that does not parse, names a variable that is not a run setting, or holds a value
 *   the variable refuses.
 */
export function releaseEnv(folder: string): Record<string, string> {
  const root = resolve(folder);
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new ConfigError(`release folder ${folder}: no such folder`);
  const env: Record<string, string> = {};
  for (const part of RELEASE_PARTS) {
    const path = join(root, part.path);
    if (!existsSync(path)) continue;
    const isFolder = statSync(path).isDirectory();
    if (isFolder !== (part.kind === 'folder')) throw new ConfigError(`release folder ${folder}: ${part.path} must be a ${part.kind}`);
    env[part.variable] = path;
  }
  const settingsFile = join(root, 'settings.json');
  if (existsSync(settingsFile)) Object.assign(env, releaseSettings(readFileSync(settingsFile, 'utf8'), settingsFile));
  return env;
}

/**
 * A release's settings.json: run settings only, each value checked by the variable's own rule.
 * @throws ConfigError (one line naming the file and the variable).
 */
export function releaseSettings(text: string, file: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file}: not JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`${file}: must be an object of run settings`);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (!(RUN_SETTINGS as readonly string[]).includes(name))
      throw new ConfigError(`${file}: ${name} is not a run setting (a release sets only ${RUN_SETTINGS.join(', ')})`);
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
      throw new ConfigError(`${file}: ${name} must be a string, number or boolean`);
    try {
      checkRunSetting(name as (typeof RUN_SETTINGS)[number], String(value));
    } catch (err) {
      throw new ConfigError(`${file}: ${(err as Error).message}`);
    }
    out[name] = String(value);
  }
  return out;
}
