/** Where the skills are (TAO_SKILLS_DIR): read by the composition roots (processors/wiring, `tao skills`). */
import { resolve } from 'node:path';
import { setting } from '../../runtime/config.ts';
import { DEFAULT_SKILLS_DIR } from './skills.ts';

/** Loader options. */
export interface SkillsOptions {
  /** The folder holding one sub-folder per skill. */
  dir: string;
}

/**
 * TAO_SKILLS_DIR (default: `skills/` at the package root).
 */
export function skillsOptionsFromEnv(env: NodeJS.ProcessEnv): SkillsOptions {
  // As for every setting (runtime/config.ts), an empty value counts as unset.
  const dir = setting(env, 'TAO_SKILLS_DIR');
  return { dir: dir ? resolve(dir) : DEFAULT_SKILLS_DIR };
}
