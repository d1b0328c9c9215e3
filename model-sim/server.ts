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
 * - `GET /v1/models` — one model, owned by `tao-model-sim (simulator)`.
 * - `GET /health`.
 * - Control API (never authenticated, never counted): `POST|GET|DELETE
 *   /__control/faults`, `GET|DELETE /__control/stats`.
 *
 * A PROFILE (`openai`, `ollama`, `llamacpp`, `vllm`; default `lenient`) makes
 * the simulator refuse what that server refuses, in its error shape, and shape
 * answers as it does (model-sim/profiles.ts).
 *
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';

import { packagePath } from '../runtime/paths.ts';
import { InvalidRequestError, readConversation, toWireName, type Conversation } from './conversation.ts';
import {
  DEFAULT_RETRY_AFTER_SECONDS,
  FaultRegistry,
  FaultSpecError,
  applyQuirk,
  badArguments,
  hallucinated,
  isQuirkKind,
  quirkApplies,
  repeated,
  type ChosenFault,
  type FaultKind,
  type FaultSpec,
  type FaultState,
} from './faults.ts';
import {
  checkRequest,
  profileConfig,
  reasoningKey,
  shapeAnswer,
  validateProfileConfig,
  type ProfileConfig,
  type ProfileName,
  type ProfileQuirk,
  type RuleName,
  type WireCompletion,
  type WireMessage,
} from './profiles.ts';
import { decide, loadScenarios, type Answer, type ScenarioSet } from './scenarios.ts';

export { FAULT_KINDS, FaultSpecError, HALLUCINATED_TOOL, PROSE_INSTEAD, QUIRK_KINDS, REFUSAL_TEXT, type FaultKind, type FaultSpec, type FaultState } from './faults.ts';
export { PROFILES, RULES, type ProfileName, type ProfileQuirk, type RuleName } from './profiles.ts';
export { ScenarioError } from './scenarios.ts';

/** The model id `GET /v1/models` lists (requests may name any model; it is echoed back). */
export const MODEL_ID = 'tao-model-sim';
/** `owned_by` of that model: says plainly that this is a simulator. */
export const OWNED_BY = 'tao-model-sim (simulator)';
/** `system_fingerprint` of every answer. */
export const SYSTEM_FINGERPRINT = 'tao-model-sim';
/** The scenarios shipped with the simulator. */
export const DEFAULT_SCENARIOS_DIR = packagePath('model-sim', 'scenarios');
/** Default TCP port of `tao run model-sim`. */
export const DEFAULT_MODEL_SIM_PORT = 7071;
/** Largest accepted request body; a larger one is answered 413. */
export const MAX_REQUEST_BYTES = 8 * 1024 * 1024;
/** How many request records stats keep. */
export const MAX_RECORDED_REQUESTS = 10_000;

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

/** What became of a chat-completions request. */
export type Outcome = 'tool_calls' | 'content' | 'json' | 'no_rule' | 'fault' | 'invalid_request' | 'unauthorized';

/** One counted chat-completions request. */
export interface RecordedRequest {
  /** Arrival, ms since the epoch. */
  at: number;
  /** Skill named by the `Skill:` line; `(none)` without one, `(unread)` when the request could not be read. */
  skill: string;
  /** Model turn (1 + assistant messages so far); 0 when the request could not be read. */
  turn: number;
  /** `Turn:` line (e.g. `reflection`), or `null`. */
  turnKind: string | null;
  /** Scenario that answered (`null` when none was consulted). */
  scenario: string | null;
  /** Rule that answered (`null` when none applied). */
  rule: string | null;
  outcome: Outcome;
  fault: FaultKind | null;
  /** Control fault id, `marker` for a `[sim:...]` marker, or `null`. */
  faultId: string | null;
  /** HTTP status sent (`null` while a `timeout` holds the request). */
  status: number | null;
  /** The simulator's profile. */
  profile: ProfileName;
  /** The profile rule that refused the request (model-sim/profiles.ts `RULES`), or `null`. */
  refused: RuleName | null;
  /** Profile quirks applied to the answer (`prefill`, `parallel_tool_calls_trimmed`, `context_truncated`). */
  quirks: ProfileQuirk[];
  /** llamacpp: the trailing assistant text the answer continued (the request ended with an assistant message); else `null`. */
  prefill: string | null;
}

/** Request accounting, as returned by `GET /__control/stats`. */
export interface ModelSimStats {
  /** Chat-completions requests received. */
  total: number;
  bySkill: Record<string, number>;
  byOutcome: Record<string, number>;
  byFault: Record<string, number>;
  /** Refused requests per profile rule. */
  byRefused: Record<string, number>;
  /** The simulator's profile. */
  profile: ProfileName;
  /** The most recent {@link MAX_RECORDED_REQUESTS} requests, oldest first. */
  requests: RecordedRequest[];
}

/** A running simulator. The in-process methods mirror the control API. */
export interface ModelSim {
  /** Base URL without `/v1`, e.g. `http://127.0.0.1:7071`. */
  url: string;
  port: number;
  /** Names of the loaded scenarios. */
  scenarios: string[];
  /** Stops listening and destroys every open socket (held requests included). Idempotent. */
  close(): Promise<void>;
  stats(): ModelSimStats;
  resetStats(): void;
  /** @throws {@link FaultSpecError} when the spec is invalid. @returns the fault id. */
  setFault(f: FaultSpec): string;
  /** Removes every control fault and forgets the requests `[sim:...]` markers have seen. */
  clearFaults(): void;
  faults(): FaultState[];
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
  if (!Number.isInteger(o.keepAliveTimeoutMs) || o.keepAliveTimeoutMs < 1) throw new RangeError(`keepAliveTimeoutMs must be a positive integer, got ${String(o.keepAliveTimeoutMs)}`);
  if (o.apiKey !== undefined && (typeof o.apiKey !== 'string' || o.apiKey === '')) throw new RangeError('apiKey must be a non-empty string when given');
}

/** OpenAI's error body. */
function openAiError(message: string, type: string, param: string | null = null, code: string | null = null): unknown {
  return { error: { message, type, param, code } };
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  sendText(res, status, JSON.stringify(body), headers);
}

function sendText(res: http.ServerResponse, status: number, text: string, headers: http.OutgoingHttpHeaders = {}): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Reads a body up to a byte limit; resolves `null` when it is larger. */
function readBody(req: http.IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > limit ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function formatUrl(host: string, port: number): string {
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
}

function bearerMatches(header: string | undefined, key: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  if (!m?.[1]) return false;
  const a = Buffer.from(m[1].trim());
  const b = Buffer.from(key);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The assistant message of an answer. */
function assistantMessage(answer: Answer, turn: number): WireMessage {
  switch (answer.kind) {
    case 'tool_calls':
      return {
        role: 'assistant',
        content: null,
        tool_calls: answer.calls.map((c, i) => ({
          id: `call_${turn}_${i + 1}`,
          type: 'function',
          function: { name: toWireName(c.tool), arguments: JSON.stringify(c.arguments) },
        })),
        refusal: null,
      };
    case 'content':
      return { role: 'assistant', content: answer.content, refusal: null };
    case 'json':
      return { role: 'assistant', content: JSON.stringify(answer.value), refusal: null };
  }
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
  let total = 0;
  let bySkill: Record<string, number> = {};
  let byOutcome: Record<string, number> = {};
  let byFault: Record<string, number> = {};
  let byRefused: Record<string, number> = {};
  let records: RecordedRequest[] = [];

  const resetStats = (): void => {
    total = 0;
    bySkill = {};
    byOutcome = {};
    byFault = {};
    byRefused = {};
    records = [];
  };

  const count = (rec: RecordedRequest): void => {
    total += 1;
    bySkill[rec.skill] = (bySkill[rec.skill] ?? 0) + 1;
    byOutcome[rec.outcome] = (byOutcome[rec.outcome] ?? 0) + 1;
    if (rec.fault !== null) byFault[rec.fault] = (byFault[rec.fault] ?? 0) + 1;
    if (rec.refused !== null) byRefused[rec.refused] = (byRefused[rec.refused] ?? 0) + 1;
    records.push(rec);
    if (records.length > MAX_RECORDED_REQUESTS) records.splice(0, records.length - MAX_RECORDED_REQUESTS);
  };

  const stats = (): ModelSimStats => ({
    total,
    bySkill: { ...bySkill },
    byOutcome: { ...byOutcome },
    byFault: { ...byFault },
    byRefused: { ...byRefused },
    profile: profile.profile,
    requests: records.map((r) => ({ ...r, quirks: [...r.quirks] })),
  });

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

  const completion = (model: string, bodyText: string, answer: Answer, conv: Conversation): WireCompletion => {
    const message = assistantMessage(answer, conv.turn);
    const promptTokens = Math.ceil(bodyText.length / 4);
    const answerText = typeof message.content === 'string' ? message.content : JSON.stringify(message.tool_calls ?? '');
    const completionTokens = Math.max(1, Math.ceil(answerText.length / 4));
    return {
      id: `chatcmpl-sim-${createHash('sha256').update(bodyText).digest('hex').slice(0, 24)}`,
      object: 'chat.completion',
      created: Math.floor(clock() / 1000),
      model,
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices: [{ index: 0, message, logprobs: null, finish_reason: answer.kind === 'tool_calls' ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    };
  };

  const handleChat = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const rec: RecordedRequest = {
      at: clock(),
      skill: '(unread)',
      turn: 0,
      turnKind: null,
      scenario: null,
      rule: null,
      outcome: 'invalid_request',
      fault: null,
      faultId: null,
      status: 400,
      profile: profile.profile,
      refused: null,
      quirks: [],
      prefill: null,
    };
    const refuse = (status: number, body: unknown, outcome: Outcome = 'invalid_request'): void => {
      rec.outcome = outcome;
      rec.status = status;
      count(rec);
      later(res, () => sendJson(res, status, body));
    };
    if (apiKey !== undefined && !bearerMatches(req.headers.authorization, apiKey)) {
      req.resume();
      refuse(401, openAiError('Incorrect or missing API key (tao-model-sim checks Authorization: Bearer <key>).', 'invalid_request_error', null, 'invalid_api_key'), 'unauthorized');
      return;
    }
    const bodyText = await readBody(req, MAX_REQUEST_BYTES);
    if (bodyText === null) {
      refuse(413, openAiError(`request body is larger than ${MAX_REQUEST_BYTES} bytes`, 'invalid_request_error', 'messages', 'request_too_large'));
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(bodyText);
    } catch {
      refuse(400, openAiError('We could not parse the JSON body of your request.', 'invalid_request_error'));
      return;
    }
    const b = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
    if (b['stream'] === true) {
      refuse(400, openAiError('stream: true is not supported: streaming is not simulated by tao-model-sim; send stream: false.', 'invalid_request_error', 'stream', 'unsupported_value'));
      return;
    }
    const model = b['model'];
    if (typeof model !== 'string' || model === '') {
      refuse(400, openAiError('model must be a non-empty string', 'invalid_request_error', 'model', 'missing_required_parameter'));
      return;
    }
    const refusal = checkRequest(profile, body);
    if (refusal !== null) {
      try {
        const read = readConversation(body);
        rec.skill = read.skill ?? '(none)';
        rec.turn = read.turn;
        rec.turnKind = read.turnKind;
      } catch {
        // The record keeps '(unread)': the profile's refusal is what is sent.
      }
      rec.refused = refusal.rule;
      refuse(refusal.status, refusal.body);
      return;
    }
    let conv: Conversation;
    try {
      conv = readConversation(body);
    } catch (err) {
      if (!(err instanceof InvalidRequestError)) throw err;
      refuse(400, openAiError(err.message, 'invalid_request_error', err.param, 'invalid_value'));
      return;
    }
    rec.skill = conv.skill ?? '(none)';
    rec.turn = conv.turn;
    rec.turnKind = conv.turnKind;
    const decision = decide(scenarios, conv, { noTools: b['tool_choice'] === 'none' });
    rec.scenario = decision.scenario;
    rec.rule = decision.rule;
    rec.outcome = decision.rule === null ? 'no_rule' : decision.answer.kind;
    rec.status = 200;

    const requestKey = createHash('sha256').update(bodyText).digest('hex');
    const fault = registry.pick(conv, requestKey);
    const answer = fault === undefined ? decision.answer : faultyAnswer(fault, decision.answer, conv);
    if (fault !== undefined && answer !== null) {
      rec.outcome = 'fault';
      rec.fault = fault.kind;
      rec.faultId = fault.id;
    }
    const quirk = fault !== undefined && answer !== null && isQuirkKind(fault.kind) ? fault.kind : undefined;
    // The profile's shaping is a function of the request, so it is known before the answer is sent.
    const shape = (c: WireCompletion): WireCompletion => {
      const shaped = shapeAnswer(profile, c, { requestKey, body });
      rec.quirks = shaped.quirks;
      rec.prefill = shaped.prefill;
      return quirk === undefined ? shaped.completion : applyQuirk(quirk, shaped.completion, { reasoningKey: reasoningKey(profile.profile) });
    };
    const final = shape(completion(model, bodyText, answer ?? decision.answer, conv));
    const normal = (): void => sendJson(res, 200, { ...final, created: Math.floor(clock() / 1000) });
    switch (fault === undefined || answer === null ? undefined : fault.kind) {
      case 'timeout':
        if (fault?.delayMs === undefined) {
          // Held until the client gives up or the server closes: nothing is ever sent.
          rec.status = null;
          count(rec);
          return;
        }
        count(rec);
        schedule(res, fault.delayMs, () => later(res, normal));
        return;
      case 'rate_limit': {
        rec.status = 429;
        count(rec);
        const seconds = fault?.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
        later(res, () => sendJson(res, 429, openAiError(`Rate limit reached (simulated by tao-model-sim). Please try again in ${seconds}s.`, 'requests', null, 'rate_limit_exceeded'), { 'retry-after': String(seconds) }));
        return;
      }
      case 'server_error': {
        const status = fault?.status ?? 500;
        rec.status = status;
        count(rec);
        const message = status === 503 ? 'The model is overloaded or not ready yet; please try again later (simulated by tao-model-sim).' : 'The server had an error while processing your request (simulated by tao-model-sim).';
        later(res, () => sendJson(res, status, openAiError(message, 'server_error')));
        return;
      }
      case 'model_not_found':
        rec.status = 404;
        count(rec);
        later(res, () => sendJson(res, 404, openAiError(`The model \`${model}\` does not exist or you do not have access to it (simulated by tao-model-sim).`, 'invalid_request_error', null, 'model_not_found')));
        return;
      case 'not_json': {
        count(rec);
        const full = JSON.stringify(completion(model, bodyText, decision.answer, conv));
        later(res, () => sendText(res, 200, full.slice(0, Math.floor(full.length / 2))));
        return;
      }
      default:
        count(rec);
        later(res, normal);
    }
  };

  const handleControl = async (req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> => {
    const method = req.method ?? 'GET';
    const notAllowed = (allow: string): void => sendJson(res, 405, openAiError(`method ${method} not allowed on ${pathname}`, 'invalid_request_error'), { allow });
    if (pathname === '/__control/faults') {
      if (method === 'POST') {
        const text = await readBody(req, 64 * 1024);
        let parsed: unknown;
        try {
          parsed = JSON.parse(text ?? '');
        } catch {
          sendJson(res, 400, openAiError('fault spec is not valid JSON', 'invalid_request_error', 'body', 'invalid_fault_spec'));
          return;
        }
        try {
          sendJson(res, 201, { id: registry.add(parsed) });
        } catch (err) {
          if (!(err instanceof FaultSpecError)) throw err;
          sendJson(res, 400, openAiError(err.message, 'invalid_request_error', err.field, 'invalid_fault_spec'));
        }
        return;
      }
      req.resume();
      if (method === 'DELETE') sendJson(res, 200, { cleared: registry.clear() });
      else if (method === 'GET') sendJson(res, 200, { faults: registry.list() });
      else notAllowed('GET, POST, DELETE');
      return;
    }
    req.resume();
    if (pathname === '/__control/stats') {
      if (method === 'GET') sendJson(res, 200, stats());
      else if (method === 'DELETE') {
        resetStats();
        sendJson(res, 200, { ok: true });
      } else notAllowed('GET, DELETE');
      return;
    }
    sendJson(res, 404, openAiError(`no control route ${pathname}`, 'invalid_request_error', null, 'not_found'));
  };

  const server = http.createServer((req, res) => {
    let pathname: string;
    try {
      pathname = new URL(req.url ?? '/', 'http://model-sim.invalid').pathname;
    } catch {
      req.resume();
      sendJson(res, 400, openAiError('invalid request target', 'invalid_request_error'));
      return;
    }
    const method = req.method ?? 'GET';
    const fail = (err: unknown): void => {
      if (!res.headersSent) sendJson(res, 500, openAiError(`tao-model-sim internal error: ${String(err)}`, 'server_error'));
      else res.destroy();
    };
    const only = (allowed: string, fn: () => void): void => {
      if (method === allowed) fn();
      else {
        req.resume();
        sendJson(res, 405, openAiError(`method ${method} not allowed on ${pathname}`, 'invalid_request_error'), { allow: allowed });
      }
    };
    try {
      if (pathname === '/v1/chat/completions') {
        only('POST', () => handleChat(req, res).catch(fail));
      } else if (pathname === '/v1/models') {
        only('GET', () => {
          req.resume();
          if (apiKey !== undefined && !bearerMatches(req.headers.authorization, apiKey)) {
            sendJson(res, 401, openAiError('Incorrect or missing API key (tao-model-sim checks Authorization: Bearer <key>).', 'invalid_request_error', null, 'invalid_api_key'));
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
    } catch (err) {
      fail(err);
    }
  });
  server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('model sim: unexpected listen address');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
    });
    return closing;
  };

  return {
    url: formatUrl(options.host, address.port),
    port: address.port,
    scenarios: [...scenarios.keys()],
    close,
    stats,
    resetStats,
    setFault: (f: FaultSpec): string => registry.add(f),
    clearFaults: (): void => {
      registry.clear();
    },
    faults: (): FaultState[] => registry.list(),
  };
}

/**
 * The answer a fault turns the normal one into (the normal answer itself for
 * the faults that replace the whole response: timeout, rate_limit,
 * server_error, not_json), or `null` when the fault has nothing to work on
 * (`endless_repeat` before any tool call, `bad_arguments` when the request
 * offers no tool): then the normal answer is sent and no fault is recorded.
 */
function faultyAnswer(fault: ChosenFault, normal: Answer, conv: Conversation): Answer | null {
  if (isQuirkKind(fault.kind)) return quirkApplies(fault.kind, normal) ? normal : null;
  switch (fault.kind) {
    case 'hallucinated_tool':
      return hallucinated(normal);
    case 'bad_arguments':
      return badArguments(normal, conv) ?? null;
    case 'endless_repeat':
      return repeated(conv) ?? null;
    default:
      return normal;
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
