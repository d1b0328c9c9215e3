/**
 * `tao run model-sim`: runs the scripted model SIMULATOR until SIGINT/SIGTERM.
 *
 * @module
 */
import { commandFlags, intFlag, secretFromEnv, usageError } from '../runtime/command-flags.ts';
import { PROFILES, type ProfileName } from './profiles.ts';
import { DEFAULT_MODEL_SIM_PORT, DEFAULT_SCENARIOS_DIR, startModelSim } from './server.ts';

/** Usage of `tao run model-sim`. */
export const MODEL_SIM_USAGE = `usage: tao run model-sim [--port ${DEFAULT_MODEL_SIM_PORT}] [--host 127.0.0.1] [--latency-ms 0] [--scenarios <dir>] [--api-key-env <VAR>]
                         [--profile lenient] [--context-window <tokens>] [--reasoning-models <m1,m2>] [--tool-id-format random]
  Serves a SIMULATED OpenAI-compatible API (POST /v1/chat/completions, GET /v1/models, GET /health)
  answering from scripted scenario files, not from a model; faults via /__control/faults or
  [sim:<kind>] markers in the user text (model-sim/README.md).
  --port              TCP port (0: any free port)                   default ${DEFAULT_MODEL_SIM_PORT}
  --host              interface to bind                             default 127.0.0.1
  --latency-ms        delay of every chat-completions answer        default 0
  --scenarios         folder of <skill-name>.json scenario files    default model-sim/scenarios
  --api-key-env       require Authorization: Bearer <the value of this environment variable>
  --profile           ${PROFILES.join('|')}                default lenient
                      behave like that server: refuse (400, in its error shape) what it refuses --
                      unanswered or unmatched tool calls, duplicate ids; ollama: content null without
                      tool_calls, non-JSON arguments; llamacpp: a system message after the first, two
                      trailing assistant messages (one is a prefill), one tool call unless
                      parallel_tool_calls: true; vllm: 9-character ids with --tool-id-format mistral --
                      and answer with its tool-call ids. lenient accepts everything (as before).
  --context-window    prompt tokens (ceil(JSON of messages+tools / 4)) over which the request is
                      refused (ollama: silently truncated)          default none
  --reasoning-models  comma-separated models refused max_tokens and temperature != 1 (under
                      --profile openai also o<digit>* and gpt-5*)   default none
  --tool-id-format    random|mistral (vllm only)                    default random`;

/**
 * Parses the flags, starts the simulator and prints one banner line.
 *
 * @param onStarted - given the stop function once listening (the CLI wires it to signals).
 * @returns 0 for `--help`, 2 for bad flags, -1 once running (a long-running process).
 * @throws ScenarioError (one line) when a scenario file is invalid.
 */
export async function modelSimCommand(args: string[], onStarted: (stop: () => Promise<void>) => void): Promise<number> {
  const parsed = commandFlags(
    args,
    {
      port: { type: 'string' },
      host: { type: 'string' },
      'latency-ms': { type: 'string' },
      scenarios: { type: 'string' },
      'api-key-env': { type: 'string' },
      profile: { type: 'string' },
      'context-window': { type: 'string' },
      'reasoning-models': { type: 'string' },
      'tool-id-format': { type: 'string' },
    },
    MODEL_SIM_USAGE,
  );
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  let port: number | undefined;
  let latencyMs: number | undefined;
  let contextWindow: number | undefined;
  let apiKey: string | undefined;
  const keyVar = values['api-key-env'];
  const profile = values.profile as ProfileName | undefined;
  const toolIdFormat = values['tool-id-format'];
  const reasoningModels = values['reasoning-models']
    ?.split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '');
  try {
    port = intFlag('port', values.port, 0, 65535);
    latencyMs = intFlag('latency-ms', values['latency-ms'], 0, 600_000);
    contextWindow = intFlag('context-window', values['context-window'], 1, 100_000_000);
    if (profile !== undefined && !(PROFILES as readonly string[]).includes(profile)) {
      throw new RangeError(`--profile must be one of ${PROFILES.join(', ')}, got ${JSON.stringify(profile)}`);
    }
    if (toolIdFormat !== undefined && toolIdFormat !== 'random' && toolIdFormat !== 'mistral') {
      throw new RangeError(`--tool-id-format must be random or mistral, got ${JSON.stringify(toolIdFormat)}`);
    }
    if (toolIdFormat === 'mistral' && profile !== 'vllm') throw new RangeError('--tool-id-format mistral applies only to --profile vllm');
    apiKey = secretFromEnv('api-key-env', keyVar, process.env);
  } catch (err) {
    return usageError((err as Error).message, MODEL_SIM_USAGE);
  }
  const scenariosDir = values.scenarios ?? DEFAULT_SCENARIOS_DIR;
  const sim = await startModelSim({
    port: port ?? DEFAULT_MODEL_SIM_PORT,
    host: values.host,
    latencyMs,
    scenariosDir,
    apiKey,
    profile,
    contextWindow,
    reasoningModels,
    toolIdFormat: toolIdFormat as 'random' | 'mistral' | undefined,
  });
  // The key itself is never printed, only whether one is required.
  console.log(
    `tao-model-sim: a scripted SIMULATOR, not a model, listening on ${sim.url}/v1 ` +
      `(profile ${profile ?? 'lenient'}; scenarios ${sim.scenarios.join(', ')} from ${scenariosDir}; latency ${latencyMs ?? 0} ms; ` +
      `${apiKey ? `Bearer key required (from ${keyVar})` : 'no API key'})`,
  );
  onStarted(() => sim.close());
  return -1;
}
