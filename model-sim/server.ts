/**
 * tao-model-sim: a scripted SIMULATOR of an OpenAI-compatible chat-completions
 * server, for tests, the demo and the bench. It is not a model: every answer
 * comes from a scenario file (model-sim/scenarios/<skill>.json) chosen by the
 * `Skill: <name>@<version>` line of the first system message, and is a
 * deterministic function of the conversation (model-sim/README.md).
 *
 * Routes (node:http, no framework):
 * - `POST /v1/chat/completions` — non-streaming chat completions with tool
 *   calling; `stream: true` is refused (400). Errors use OpenAI's shape
 *   `{error: {message, type, param, code}}`.
 * - `POST /v1/responses`, `POST /v1/messages` — the same answers through the
 *   OpenAI Responses and Anthropic Messages APIs, in their shapes
 *   (model-sim/wires/); not under a profile of the other provider.
 * - `GET /v1/models` — one model, owned by `tao-model-sim (simulator)`.
 * - `GET /health`.
 * - Control API (never authenticated, never counted): `POST|GET|DELETE
 *   /__control/faults`, `GET|DELETE /__control/stats`.
 *
 * A PROFILE (`openai`, `ollama`, `llamacpp`, `vllm`; default `lenient`) makes
 * the simulator refuse what that server refuses, in its error shape, and shape
 * answers as it does (model-sim/profiles.ts).
 *
 * This file starts the server and routes; `chat.ts` answers chat completions, `control.ts` serves the
 * control API, `stats.ts` counts requests, `http.ts` holds the HTTP plumbing.
 *
 * @module
 */
import { listenStandIn } from '../runtime/listen.ts';
import http from 'node:http';
import type { Socket } from 'node:net';

import { packagePath } from '../runtime/paths.ts';
import { chatHandler } from './chat.ts';
import { controlHandler, faultMethods, routeRequests, type StandInRoute, type StandInServer } from '../runtime/stand-in-http.ts';
import { FaultRegistry, FaultSpecError, type FaultSpec, type FaultState } from './faults.ts';
import { bearerMatches, openAiError, sendJson } from './http.ts';
import { profileConfig, validateProfileConfig, type ProfileConfig, type ProfileName } from './profiles.ts';
import { loadScenarios, type ScenarioSet } from './scenarios.ts';
import { RequestStats, type ModelSimStats } from './stats.ts';
import { MESSAGES_WIRE } from './wires/messages.ts';
import { RESPONSES_WIRE } from './wires/responses.ts';

export { MAX_REQUEST_BYTES, SYSTEM_FINGERPRINT } from './chat.ts';
export { FAULT_KINDS, FaultSpecError, HALLUCINATED_TOOL, QUIRK_KINDS, type FaultKind, type FaultSpec, type FaultState } from './faults.ts';
export { PROSE_INSTEAD, REFUSAL_TEXT } from './quirks.ts';
export { PROFILES, RULES, type ProfileName, type ProfileQuirk, type RuleName } from './profiles.ts';
export { ScenarioError } from './scenarios.ts';
export { MAX_RECORDED_REQUESTS, type ModelSimStats, type Outcome, type RecordedRequest } from './stats.ts';

/** The model id `GET /v1/models` lists (requests may name any model; it is echoed back). */
export const MODEL_ID = 'tao-model-sim';
/** `owned_by` of that model: says plainly that this is a simulator. */
export const OWNED_BY = 'tao-model-sim (simulator)';
/** The scenarios shipped with the simulator. */
export const DEFAULT_SCENARIOS_DIR = packagePath('model-sim', 'scenarios');
/** Default TCP port of `tao run model-sim`. */
export const DEFAULT_MODEL_SIM_PORT = 7071;

/** Options of {@link startModelSim}. */
export interface ModelSimOptions {
  /** TCP port; 0 picks an ephemeral port. Default 7071. */
  port: number;
  /** Interface to bind. Default `127.0.0.1`. */
  host: string;
  /** Folder of `<skill-name>.json` scenario files. Default: the shipped `model-sim/scenarios`. */
  scenariosDir: string;
  /** Every chat-completions answer is delayed by this many ms (a model's think time). Default 0. */
  latencyMs: number;
  /** When set, `/v1/*` requires `Authorization: Bearer <apiKey>` (401 otherwise). Never logged or recorded. */
  apiKey?: string;
  /** Idle keep-alive sockets are closed after this many ms. Default 5000. */
  keepAliveTimeoutMs: number;
  /** Clock for the `created` field, ms since the epoch. Default `Date.now`. */
  clock: () => number;
  /** The server the simulator behaves like (model-sim/profiles.ts). Default `lenient` (accepts what real servers refuse). */
  profile: ProfileName;
  /** Models refused `max_tokens` and `temperature` ≠ 1 under any profile (under `openai` also `o<digit>…`/`gpt-5…`). Default none. */
  reasoningModels?: string[];
  /** Context window in tokens (prompt = ceil(JSON of messages+tools / 4)); over it a 400, or under `ollama` a silent truncation. Default none. */
  contextWindow?: number;
  /** `vllm` only: `mistral` — tool-call ids of 9 `[a-zA-Z0-9]` required and answered. Default `random`. */
  toolIdFormat?: 'random' | 'mistral';
}

/** A running simulator. The in-process methods mirror the control API. */
export interface ModelSim extends StandInServer<ModelSimStats, FaultSpec, FaultState> {
  /** Base URL without `/v1`, e.g. `http://127.0.0.1:7071`. */
  url: string;
  /** Names of the loaded scenarios. */
  scenarios: string[];
  /** Removes every control fault and forgets the requests `[sim:...]` markers have seen. */
  clearFaults(): void;
}

const DEFAULTS: ModelSimOptions = {
  port: DEFAULT_MODEL_SIM_PORT,
  host: '127.0.0.1',
  scenariosDir: DEFAULT_SCENARIOS_DIR,
  latencyMs: 0,
  keepAliveTimeoutMs: 5000,
  clock: Date.now,
  profile: 'lenient',
};

function validateOptions(o: ModelSimOptions): void {
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) throw new RangeError(`port must be an integer between 0 and 65535, got ${String(o.port)}`);
  if (typeof o.host !== 'string' || o.host === '') throw new RangeError('host must be a non-empty string');
  if (!Number.isInteger(o.latencyMs) || o.latencyMs < 0) throw new RangeError(`latencyMs must be a non-negative integer, got ${String(o.latencyMs)}`);
  if (!Number.isInteger(o.keepAliveTimeoutMs) || o.keepAliveTimeoutMs < 1)
    throw new RangeError(`keepAliveTimeoutMs must be a positive integer, got ${String(o.keepAliveTimeoutMs)}`);
  if (o.apiKey !== undefined && (typeof o.apiKey !== 'string' || o.apiKey === '')) throw new RangeError('apiKey must be a non-empty string when given');
}

/**
 * Starts the simulator. Scenario files are loaded and validated first.
 *
 * @param opts - overrides of {@link ModelSimOptions}.
 * @returns the running simulator once it is listening.
 * @throws {@link ScenarioError} (one line naming the file and JSON path) when a scenario file is invalid;
 *   RangeError for invalid options; the listen error when the port cannot be bound.
 */
export async function startModelSim(opts: Partial<ModelSimOptions> = {}): Promise<ModelSim> {
  const options: ModelSimOptions = { ...DEFAULTS, ...stripUndefined(opts) };
  validateOptions(options);
  const profile: ProfileConfig = profileConfig({
    profile: options.profile,
    reasoningModels: options.reasoningModels,
    contextWindow: options.contextWindow,
    toolIdFormat: options.toolIdFormat,
  });
  validateProfileConfig(profile);
  const scenarios: ScenarioSet = loadScenarios(options.scenariosDir);
  const { apiKey, clock } = options;

  const registry = new FaultRegistry();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const requestStats = new RequestStats(profile.profile);
  const resetStats = (): void => requestStats.reset();
  const stats = (): ModelSimStats => requestStats.snapshot();

  /** setTimeout cleared when the response closes or the server stops. */
  const schedule = (res: http.ServerResponse, ms: number, fn: () => void): void => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
    res.once('close', () => {
      clearTimeout(t);
      timers.delete(t);
    });
  };

  /** Sends after the configured latency. */
  const later = (res: http.ServerResponse, send: () => void): void => {
    if (options.latencyMs === 0) send();
    else schedule(res, options.latencyMs, send);
  };

  const chatContext = { profile, scenarios, registry, stats: requestStats, apiKey, clock, schedule, later };
  const handleChat = chatHandler(chatContext);
  // The other wires (model-sim/wires/): each profile of a provider serves only that provider's routes.
  const handleWire = {
    '/v1/chat/completions': profile.profile === 'anthropic' ? null : handleChat,
    '/v1/responses': profile.profile === 'anthropic' ? null : chatHandler(chatContext, RESPONSES_WIRE),
    '/v1/messages': profile.profile === 'openai' || profile.profile === 'openai-responses' ? null : chatHandler(chatContext, MESSAGES_WIRE),
  } as Record<string, ((req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>) | null>;
  const handleControl = controlHandler({
    faults: registry,
    stats,
    resetStats,
    specError: (err) => (err instanceof FaultSpecError ? { field: err.field, message: err.message } : undefined),
    errorBody: (code, message, field) => openAiError(message, 'invalid_request_error', field ?? null, code),
  });

  const route: StandInRoute = (req, res, pathname, fail) => {
    const method = req.method ?? 'GET';
    const only = (allowed: string, fn: () => void): void => {
      if (method === allowed) fn();
      else {
        req.resume();
        sendJson(res, 405, openAiError(`method ${method} not allowed on ${pathname}`, 'invalid_request_error'), { allow: allowed });
      }
    };
    const handler = handleWire[pathname];
    if (handler) {
      only('POST', () => handler(req, res).catch(fail));
    } else if (pathname === '/v1/models') {
      only('GET', () => {
        req.resume();
        if (apiKey !== undefined && !bearerMatches(req.headers.authorization, apiKey)) {
          sendJson(
            res,
            401,
            openAiError('Incorrect or missing API key (tao-model-sim checks Authorization: Bearer <key>).', 'invalid_request_error', null, 'invalid_api_key'),
          );
          return;
        }
        sendJson(res, 200, { object: 'list', data: [{ id: MODEL_ID, object: 'model', created: 0, owned_by: OWNED_BY }] });
      });
    } else if (pathname === '/health') {
      only('GET', () => {
        req.resume();
        sendJson(res, 200, { ok: true, simulator: true, profile: profile.profile, scenarios: [...scenarios.keys()] });
      });
    } else if (pathname === '/__control' || pathname.startsWith('/__control/')) {
      handleControl(req, res, pathname).catch(fail);
    } else {
      req.resume();
      sendJson(res, 404, openAiError(`Unknown request URL: ${method} ${pathname}.`, 'invalid_request_error', null, 'unknown_url'));
    }
  };
  const server = http.createServer(
    routeRequests(route, {
      badTarget: openAiError('invalid request target', 'invalid_request_error'),
      internal: (err) => openAiError(`tao-model-sim internal error: ${String(err)}`, 'server_error'),
    }),
  );

  const listening = await listenStandIn(server, { ...options, sockets, timers });
  return { ...listening, scenarios: [...scenarios.keys()], stats, resetStats, ...faultMethods(registry) };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
