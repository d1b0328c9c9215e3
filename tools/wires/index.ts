/**
 * The model wires (TAO_LLM_API=chat|responses|messages): where Action translates a model call at
 * the wire boundary. Thought emits, and Action records as the step's input, a chat-completions
 * request; Action sends it as the endpoint's API wants it and records the answer twice: as received
 * (`response_raw`) and as the chat completion Observation's gate reads (`data_json`, with `wire`
 * naming the API), so the gate, grounding, budgets and replay are the same for every wire and replay
 * reads exactly what was recorded. `chat` translates nothing. Pure.
 */
import { ContractViolation } from '../../runtime/errors.ts';
import { WIRE_PATHS, type ChatRequest, type ModelWire } from './chat-shape.ts';
import { ANTHROPIC_VERSION, fromMessagesAnswer, toMessagesRequest } from './messages.ts';
import { fromResponsesAnswer, toResponsesRequest } from './responses.ts';

export { MODEL_WIRES, WIRE_PATHS, WireAnswerError, type ChatCompletion, type ModelWire } from './chat-shape.ts';
export { ANTHROPIC_VERSION } from './messages.ts';

/** The request path of `wire` under a base URL's path (`/v1` → `/v1/responses`). */
export function wirePath(basePath: string, wire: ModelWire): string {
  return `${basePath.replace(/\/+$/, '')}${WIRE_PATHS[wire]}`;
}

/** Headers the wire needs besides the key: the Messages API's version. */
export function wireHeaders(wire: ModelWire): Record<string, string> {
  return wire === 'messages' ? { 'anthropic-version': ANTHROPIC_VERSION } : {};
}

/** The header carrying the endpoint's key on `wire`, given the variable that holds it. */
export function keyHeader(wire: ModelWire, keyEnv: string): Record<string, string> {
  return wire === 'messages' ? { 'x-api-key': `\${${keyEnv}}` } : { authorization: `Bearer \${${keyEnv}}` };
}

/**
 * The body to send for a recorded chat request body.
 * @throws ContractViolation when the request cannot be said on this wire (then nothing is sent).
 */
export function wireRequestBody(wire: ModelWire, chatBody: string, tool: string): string {
  if (wire === 'chat') return chatBody;
  let chat: ChatRequest;
  try {
    chat = JSON.parse(chatBody) as ChatRequest;
  } catch {
    throw new ContractViolation(`${tool}: the request body is not JSON`);
  }
  if (!Array.isArray(chat.messages)) throw new ContractViolation(`${tool}: the request has no messages`);
  return JSON.stringify(wire === 'responses' ? toResponsesRequest(chat) : toMessagesRequest(chat));
}

/**
 * The chat completion (JSON text) for a 2xx answer of `wire` to `sentBody`.
 * @throws WireAnswerError (or a SyntaxError for a body that is not JSON) when it is not that API's answer.
 */
export function wireAnswerData(wire: Exclude<ModelWire, 'chat'>, answerBody: string, sentBody: string): string {
  const answer: unknown = JSON.parse(answerBody);
  const sent = JSON.parse(sentBody) as Record<string, unknown>;
  return JSON.stringify(wire === 'responses' ? fromResponsesAnswer(answer, sent) : fromMessagesAnswer(answer));
}
