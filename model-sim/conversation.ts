/**
 * Reading an OpenAI chat-completions request the way the simulator needs it:
 * which skill and turn kind it is for, what the user said, which tools were
 * called with which arguments, and what they returned.
 *
 * Pure: no I/O. Everything here is a function of the request body.
 *
 * @module
 */

/** One tool call the assistant made earlier in the conversation. */
export interface PastCall {
  /** `tool_call_id` as sent by the assistant. */
  id: string;
  /** Catalog tool name (`orders.get`), i.e. the wire name with `__` turned back into `.`. */
  tool: string;
  /** The wire name as sent (`orders__get`). */
  wireName: string;
  /** The `arguments` string as sent. */
  arguments: string;
}

/** A tool result (`role: "tool"` message) matched to the call it answers. */
export interface PastResult {
  /** Catalog tool name of the call it answers; `null` when no earlier call has its `tool_call_id`. */
  tool: string | null;
  /** The `tool_call_id` it answers; `null` when no earlier call has it. */
  callId: string | null;
  /** The content parsed as JSON, or the raw text when it is not JSON. */
  value: unknown;
  /**
   * The result is an error: its content is not a JSON object, or is an object
   * with a non-null `error` field.
   */
  error: boolean;
}

/** What the simulator reads from a request. */
export interface Conversation {
  /** `<name>` of the first system message's first line `Skill: <name>@<version>`; `null` without one. */
  skill: string | null;
  /** `<version>` of that line; `null` without one. */
  skillVersion: string | null;
  /** `<kind>` of the first system message's second line `Turn: <kind>` (e.g. `reflection`); `null` without one. */
  turnKind: string | null;
  /** The first system message's text (the skill's prompt, the run's rules); `''` without one. */
  system: string;
  /** Model turn this request asks for: 1 + the number of assistant messages so far, and of refused turns told in a user message. */
  turn: number;
  /** Every user message's text, in order, joined with newlines. */
  userText: string;
  /** Every tool call made so far, in order. */
  calls: PastCall[];
  /** Every tool result so far, in order. */
  results: PastResult[];
  /** The `tool_calls` of the most recent assistant message that has any (for `endless_repeat`). */
  lastToolCalls: PastCall[];
  /** Catalog names of the tools the request offers (its `tools` list), in order. */
  offeredTools: string[];
  /** Parameter JSON Schema of each offered tool, by catalog name (`{}` when the request gives none). */
  toolParameters: Map<string, Record<string, unknown>>;
}

/** A request the simulator refuses; `param` names the offending field (OpenAI's `param`). */
export class InvalidRequestError extends Error {
  readonly param: string | null;

  constructor(param: string | null, message: string) {
    super(message);
    this.name = 'InvalidRequestError';
    this.param = param;
  }
}

// The wire names are the prompt builder's reversible mapping (`orders.get` ↔ `orders__get`).
export { fromWireName, toWireName } from '../processors/model-wire.ts';
import { fromWireName } from '../processors/model-wire.ts';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Text of a message's `content`: a string, or an array of `{type: "text", text}` parts. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (isRecord(part) && typeof part['text'] === 'string' ? part['text'] : '')).join('');
  }
  return '';
}

const SKILL_LINE = /^Skill:\s*([^@\s]+)@(\S+)\s*$/;
const TURN_LINE = /^Turn:\s*(\S+)\s*$/;
/** How tao tells the model its last answer was refused (processors/thought/model/prompt.ts). */
const REFUSED_NOTICE = /Your last answer was rejected before anything ran/g;

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/**
 * Reads a chat-completions request body.
 *
 * @param body - the parsed request body.
 * @throws {@link InvalidRequestError} naming the field when the body is not a
 *   chat-completions request the simulator can read.
 */
export function readConversation(body: unknown): Conversation {
  if (!isRecord(body)) throw new InvalidRequestError(null, 'request body must be a JSON object');
  const { messages, tools } = body;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new InvalidRequestError('messages', 'messages must be a non-empty array');
  }
  const offeredTools: string[] = [];
  const toolParameters = new Map<string, Record<string, unknown>>();
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw new InvalidRequestError('tools', 'tools must be an array');
    tools.forEach((t, i) => {
      const fn = isRecord(t) ? t['function'] : undefined;
      if (!isRecord(t) || t['type'] !== 'function' || !isRecord(fn) || typeof fn['name'] !== 'string') {
        throw new InvalidRequestError(`tools[${i}]`, `tools[${i}] must be {type: "function", function: {name, parameters}}`);
      }
      const name = fromWireName(fn['name']);
      offeredTools.push(name);
      toolParameters.set(name, isRecord(fn['parameters']) ? fn['parameters'] : {});
    });
  }

  let skill: string | null = null;
  let skillVersion: string | null = null;
  let turnKind: string | null = null;
  let system = '';
  let sawSystem = false;
  let assistants = 0;
  const users: string[] = [];
  const calls: PastCall[] = [];
  const callsById = new Map<string, PastCall>();
  const results: PastResult[] = [];
  let lastToolCalls: PastCall[] = [];

  messages.forEach((m, i) => {
    if (!isRecord(m) || typeof m['role'] !== 'string' || !ROLES.has(m['role'])) {
      throw new InvalidRequestError(`messages[${i}].role`, `messages[${i}].role must be one of ${[...ROLES].join(', ')}`);
    }
    const role = m['role'];
    const text = contentText(m['content']);
    if (role === 'system' && !sawSystem) {
      sawSystem = true;
      system = text;
      const [first = '', second = ''] = text.split(/\r?\n/);
      const s = SKILL_LINE.exec(first.trim());
      if (s) [, skill = null, skillVersion = null] = s;
      const t = TURN_LINE.exec(second.trim());
      if (t) turnKind = t[1] ?? null;
    } else if (role === 'user') {
      users.push(text);
      // A turn the runtime refused is told in the user's turn, and the refused answer is not shown
      // again (tao's prompt builder): each notice is a turn all the same.
      assistants += text.match(REFUSED_NOTICE)?.length ?? 0;
    } else if (role === 'assistant') {
      assistants += 1;
      const tc = m['tool_calls'];
      if (tc === undefined || tc === null) return;
      if (!Array.isArray(tc)) throw new InvalidRequestError(`messages[${i}].tool_calls`, `messages[${i}].tool_calls must be an array`);
      const made: PastCall[] = tc.map((c, j) => {
        const fn = isRecord(c) ? c['function'] : undefined;
        if (!isRecord(c) || typeof c['id'] !== 'string' || !isRecord(fn) || typeof fn['name'] !== 'string') {
          throw new InvalidRequestError(
            `messages[${i}].tool_calls[${j}]`,
            `messages[${i}].tool_calls[${j}] must be {id, type: "function", function: {name, arguments}}`,
          );
        }
        const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : JSON.stringify(fn['arguments'] ?? {});
        return { id: c['id'], tool: fromWireName(fn['name']), wireName: fn['name'], arguments: args };
      });
      for (const c of made) {
        calls.push(c);
        callsById.set(c.id, c);
      }
      if (made.length > 0) lastToolCalls = made;
    } else if (role === 'tool') {
      const id = m['tool_call_id'];
      if (typeof id !== 'string') throw new InvalidRequestError(`messages[${i}].tool_call_id`, `messages[${i}].tool_call_id must be a string`);
      let value: unknown = text;
      try {
        value = JSON.parse(text);
      } catch {
        // Not JSON: kept as text, and counted as an error result (see PastResult.error).
      }
      const error = !isRecord(value) || (value['error'] !== undefined && value['error'] !== null);
      const call = callsById.get(id);
      results.push({ tool: call?.tool ?? null, callId: call ? id : null, value, error });
    }
  });

  return {
    skill,
    skillVersion,
    turnKind,
    system,
    turn: assistants + 1,
    userText: users.join('\n'),
    calls,
    results,
    lastToolCalls,
    offeredTools,
    toolParameters,
  };
}

/** The most recent result of a tool, or `undefined` when it has none. */
export function lastResultOf(conv: Conversation, tool: string): PastResult | undefined {
  for (let i = conv.results.length - 1; i >= 0; i -= 1) {
    const r = conv.results[i];
    if (r !== undefined && r.tool === tool) return r;
  }
  return undefined;
}
