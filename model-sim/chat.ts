/**
 * `POST /v1/chat/completions`: reads the request, applies the profile's rules, asks the scenarios for
 * the answer, lets a chosen fault or quirk change it, shapes it as the profile's server would, and
 * sends it after the configured latency; every request is counted in the stats.
 */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import { InvalidRequestError, readConversation, toWireName, type Conversation } from './conversation.ts';
import { DEFAULT_RETRY_AFTER_SECONDS, badArguments, hallucinated, isQuirkKind, repeated, type ChosenFault, type FaultRegistry } from './faults.ts';
import { applyQuirk, quirkApplies } from './quirks.ts';
import { bearerMatches, openAiError, readBody, sendJson as sendWireJson, sendText } from './http.ts';
import { checkRequest, reasoningKey, shapeAnswer, type ProfileConfig, type WireCompletion, type WireMessage } from './profiles.ts';
import { decide, type Answer, type ScenarioSet } from './scenarios.ts';
import type { Outcome, RecordedRequest, RequestStats } from './stats.ts';
import type { SimWire } from './wires/types.ts';

/** `system_fingerprint` of every answer. */
export const SYSTEM_FINGERPRINT = 'tao-model-sim';
/** Largest accepted request body; a larger one is answered 413. */
export const MAX_REQUEST_BYTES = 8 * 1024 * 1024;

/** What the chat-completions handler works with: one simulator's configuration and state. */
export interface ChatContext {
  profile: ProfileConfig;
  scenarios: ScenarioSet;
  registry: FaultRegistry;
  stats: RequestStats;
  /** When set, the request needs `Authorization: Bearer <apiKey>`. */
  apiKey: string | undefined;
  clock: () => number;
  /** setTimeout cleared when the response closes or the server stops. */
  schedule(res: http.ServerResponse, ms: number, fn: () => void): void;
  /** Sends after the configured latency. */
  later(res: http.ServerResponse, send: () => void): void;
}

/**
 * The handler of `POST /v1/chat/completions` for one simulator; with a `wire`, of that API's route
 * (`/v1/responses`, `/v1/messages`: model-sim/wires/), which reads the request as the chat request
 * it means and sends answers and errors in the wire's shapes.
 */
export function chatHandler(ctx: ChatContext, wire?: SimWire): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> {
  const { profile, scenarios, registry, apiKey, clock, schedule, later } = ctx;
  const count = (rec: RecordedRequest): void => ctx.stats.count(rec);

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

  return async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    let wireBody: Record<string, unknown> = {};
    // Every body sent goes out in the wire's shape: an answer as its answer, an error as its error.
    const sendJson = (r: http.ServerResponse, status: number, payload: unknown, headers?: Record<string, string>): void =>
      sendWireJson(r, status, !wire ? payload : status >= 400 ? wire.error(status, payload) : wire.answer(payload as WireCompletion, wireBody), headers);
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
    if (apiKey !== undefined && !(wire?.authorized ? wire.authorized(req.headers, apiKey) : bearerMatches(req.headers.authorization, apiKey))) {
      req.resume();
      refuse(
        401,
        openAiError('Incorrect or missing API key (tao-model-sim checks Authorization: Bearer <key>).', 'invalid_request_error', null, 'invalid_api_key'),
        'unauthorized',
      );
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
    if (wire) {
      wireBody = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
      const refused = wire.check(profile, wireBody, req.headers);
      if (refused !== null) {
        // Already in the wire's error shape.
        rec.refused = refused.rule;
        rec.status = refused.status;
        count(rec);
        later(res, () => sendWireJson(res, refused.status, refused.body));
        return;
      }
      body = wire.toChat(wireBody);
    }
    const b = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
    if (b['stream'] === true) {
      refuse(
        400,
        openAiError(
          'stream: true is not supported: streaming is not simulated by tao-model-sim; send stream: false.',
          'invalid_request_error',
          'stream',
          'unsupported_value',
        ),
      );
      return;
    }
    const model = b['model'];
    if (typeof model !== 'string' || model === '') {
      refuse(400, openAiError('model must be a non-empty string', 'invalid_request_error', 'model', 'missing_required_parameter'));
      return;
    }
    // A wire request was checked by its own rules (model-sim/wires/); the chat rules are chat completions'.
    const refusal = wire ? null : checkRequest(profile, body);
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
        later(res, () =>
          sendJson(
            res,
            429,
            openAiError(`Rate limit reached (simulated by tao-model-sim). Please try again in ${seconds}s.`, 'requests', null, 'rate_limit_exceeded'),
            { 'retry-after': String(seconds) },
          ),
        );
        return;
      }
      case 'server_error': {
        const status = fault?.status ?? 500;
        rec.status = status;
        count(rec);
        const message =
          status === 503
            ? 'The model is overloaded or not ready yet; please try again later (simulated by tao-model-sim).'
            : 'The server had an error while processing your request (simulated by tao-model-sim).';
        later(res, () => sendJson(res, status, openAiError(message, 'server_error')));
        return;
      }
      case 'model_not_found':
        rec.status = 404;
        count(rec);
        later(res, () =>
          sendJson(
            res,
            404,
            openAiError(
              `The model \`${model}\` does not exist or you do not have access to it (simulated by tao-model-sim).`,
              'invalid_request_error',
              null,
              'model_not_found',
            ),
          ),
        );
        return;
      case 'not_json': {
        count(rec);
        const whole = completion(model, bodyText, decision.answer, conv);
        const full = JSON.stringify(wire ? wire.answer(whole, wireBody) : whole);
        later(res, () => sendText(res, 200, 'application/json', full.slice(0, Math.floor(full.length / 2))));
        return;
      }
      default:
        count(rec);
        later(res, normal);
    }
  };
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
