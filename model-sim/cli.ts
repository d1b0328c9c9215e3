/**
 * `tao run model-sim`: runs the scripted model SIMULATOR until SIGINT/SIGTERM.
 *
 * @module
 */
import { parseArgs } from 'node:util';

import { DEFAULT_MODEL_SIM_PORT, DEFAULT_SCENARIOS_DIR, startModelSim } from './server.ts';

/** Usage of `tao run model-sim`. */
export const MODEL_SIM_USAGE = `usage: tao run model-sim [--port ${DEFAULT_MODEL_SIM_PORT}] [--host 127.0.0.1] [--latency-ms 0] [--scenarios <dir>] [--api-key-env <VAR>]
  Serves a SIMULATED OpenAI-compatible API (POST /v1/chat/completions, GET /v1/models, GET /health)
  answering from scripted scenario files, not from a model; faults via /__control/faults or
  [sim:<kind>] markers in the user text (model-sim/README.md).
  --port          TCP port (0: any free port)                       default ${DEFAULT_MODEL_SIM_PORT}
  --host          interface to bind                                 default 127.0.0.1
  --latency-ms    delay of every chat-completions answer            default 0
  --scenarios     folder of <skill-name>.json scenario files        default model-sim/scenarios
  --api-key-env   require Authorization: Bearer <the value of this environment variable>`;

function intFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw new RangeError(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return n;
}

/**
 * Parses the flags, starts the simulator and prints one banner line.
 *
 * @param onStarted - given the stop function once listening (the CLI wires it to signals).
 * @returns 0 for `--help`, 2 for bad flags, -1 once running (a long-running process).
 * @throws ScenarioError (one line) when a scenario file is invalid.
 */
export async function modelSimCommand(args: string[], onStarted: (stop: () => Promise<void>) => void): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        port: { type: 'string' },
        host: { type: 'string' },
        'latency-ms': { type: 'string' },
        scenarios: { type: 'string' },
        'api-key-env': { type: 'string' },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${MODEL_SIM_USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(MODEL_SIM_USAGE);
    return 0;
  }
  let port: number | undefined;
  let latencyMs: number | undefined;
  try {
    port = intFlag('port', values.port, 0, 65535);
    latencyMs = intFlag('latency-ms', values['latency-ms'], 0, 600_000);
  } catch (err) {
    console.error(`${(err as Error).message}\n${MODEL_SIM_USAGE}`);
    return 2;
  }
  let apiKey: string | undefined;
  const keyVar = values['api-key-env'];
  if (keyVar !== undefined) {
    apiKey = process.env[keyVar];
    if (!apiKey) {
      console.error(`--api-key-env: environment variable ${keyVar} is not set or empty`);
      return 2;
    }
  }
  const scenariosDir = values.scenarios ?? DEFAULT_SCENARIOS_DIR;
  const sim = await startModelSim({ port: port ?? DEFAULT_MODEL_SIM_PORT, host: values.host, latencyMs, scenariosDir, apiKey });
  // The key itself is never printed, only whether one is required.
  console.log(
    `tao-model-sim: a scripted SIMULATOR, not a model, listening on ${sim.url}/v1 ` +
      `(scenarios ${sim.scenarios.join(', ')} from ${scenariosDir}; latency ${latencyMs ?? 0} ms; ` +
      `${apiKey ? `Bearer key required (from ${keyVar})` : 'no API key'})`,
  );
  onStarted(() => sim.close());
  return -1;
}
