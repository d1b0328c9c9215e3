/**
 * One entry point over the two ways of getting a broker and a registry: the local JVM/Go processes
 * of {@link ./local.ts} (the default) and the throw-away containers of {@link ./docker.ts}
 * (testcontainers). `tao infra up [--docker]` and `npm test` (TAO_INFRA) go through here.
 */
import { upWithDocker, type TestcontainersImporter } from './docker.ts';
import { InfraError, down, up, type InfraEndpoints } from './local.ts';

export const INFRA_MODES = ['local', 'docker'] as const;
export type InfraMode = (typeof INFRA_MODES)[number];

/**
 * Reads an infra mode, e.g. the value of TAO_INFRA: unset or empty means `local`. Throws
 * {@link InfraError} `CONFIG_INVALID` naming `variable` and the value when it is neither mode.
 */
export function parseInfraMode(value: string | undefined, variable = 'TAO_INFRA'): InfraMode {
  if (value === undefined || value === '') return 'local';
  if ((INFRA_MODES as readonly string[]).includes(value)) return value as InfraMode;
  throw new InfraError('CONFIG_INVALID', `${variable} must be ${INFRA_MODES.join(' or ')}, not "${value}"`);
}

/** A broker and a registry that {@link startInfra} made sure of. */
export interface StartedInfra extends InfraEndpoints {
  mode: InfraMode;
  /**
   * Undoes the start. local: `infra down` (stops both processes, wipes the Kafka data); docker:
   * removes the containers and their network. A local infra otherwise outlives this process; a
   * docker one lives at most as long as it (testcontainers' reaper removes it at exit).
   */
  stop(): Promise<void>;
}

export interface StartInfraOptions {
  /** Receives progress lines. Default: stderr. */
  log?: (line: string) => void;
  /** docker mode: how testcontainers is imported (tests play a missing package with it). */
  importer?: TestcontainersImporter;
  /** The environment local mode reads its settings from and runs its tools with (infra/local.ts). */
  env: NodeJS.ProcessEnv;
}

/**
 * Starts (or finds running) a broker and a registry in `mode` (a string as for TAO_INFRA) and
 * resolves with where they answer, e.g. `{ brokers: '127.0.0.1:9092', registryUrl: 'http://127.0.0.1:8081' }`.
 * Errors are {@link InfraError}s with a one-line message: `CONFIG_INVALID` for an unknown mode,
 * `PREREQUISITE_MISSING` where Java/Maven/Go (local) or testcontainers or a Docker engine (docker)
 * is missing, and the start-up codes of each mode.
 */
export async function startInfra(mode: string | undefined, options: StartInfraOptions): Promise<StartedInfra> {
  const chosen = parseInfraMode(mode);
  if (chosen === 'docker') {
    const docker = await upWithDocker({ log: options.log, importer: options.importer, env: options.env });
    return { mode: chosen, brokers: docker.brokers, registryUrl: docker.registryUrl, stop: docker.stop };
  }
  const log = options.log;
  const endpoints = await up({ env: options.env, ...(log ? { log } : {}) });
  return { mode: chosen, ...endpoints, stop: () => down({ env: options.env, ...(log ? { log } : {}) }) };
}
