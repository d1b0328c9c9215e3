/** The model endpoint a command that runs the loop against a model uses (`tao eval`, `npm run models:patterns`). */

/** The model a command runs against, and how to stop it when the command started it. */
export interface ModelEndpoint {
  baseUrl: string;
  model: string;
  /** Whether this command started the local model server (then {@link stop} stops it). */
  started: boolean;
  stop(): Promise<void>;
}

/**
 * `baseUrl` and `model` when given; otherwise the local model (TAO_MODEL_* settings), started when
 * it is not running and then stopped by `stop()`.
 */
export async function modelEndpoint(
  baseUrl: string | undefined,
  model: string | undefined,
  say: (line: string) => void,
  env: NodeJS.ProcessEnv,
): Promise<ModelEndpoint> {
  if (baseUrl && model) return { baseUrl, model, started: false, stop: async () => {} };
  const { modelDown, modelStatus, modelUp } = await import('../infra/model/server.ts');
  const started = !(await modelStatus({ env })).healthy;
  const endpoint = await modelUp({ env, log: (line) => say(line) });
  let stopped = !started;
  return {
    baseUrl: endpoint.baseUrl,
    model: endpoint.model,
    started,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await modelDown({ env, log: () => {} });
    },
  };
}
