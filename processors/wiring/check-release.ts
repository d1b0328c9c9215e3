/**
 * Whether a release would load in the stages (`tao manifest publish` asks before it writes one): its
 * Thought and Observation configurations built from its parts, as each stage builds them.
 */
import { ConfigError, errorMessage } from '../../runtime/errors.ts';
import { releaseEnv } from '../../runtime/release/folder.ts';
import { materialize, type Manifest } from '../../runtime/release/manifest.ts';
import { observationConfig, thoughtConfig } from './index.ts';
import { CACHE_DIR } from './releases.ts';

/**
 * Builds Thought's and Observation's configurations of `manifest` as the stages will (a release a
 * stage could not load would dead-letter every input naming it).
 * @throws ConfigError (one line) naming what does not load.
 */
export async function checkRelease(manifest: Manifest, env: NodeJS.ProcessEnv): Promise<void> {
  const releaseVars = { ...env, ...releaseEnv(materialize(manifest, CACHE_DIR)) };
  try {
    await thoughtConfig(releaseVars);
    await observationConfig({ ...releaseVars, TAO_SEMANTIC_CHECK: 'off' });
  } catch (err) {
    throw new ConfigError(`release ${manifest.digest.slice(0, 12)} does not load: ${errorMessage(err)}`);
  }
}
