/**
 * Faults of the model simulator: the spec posted to `POST /__control/faults`,
 * the `[sim:<kind>]` markers a user text can carry, the registry that decides
 * (deterministically) which request gets which fault, and the faulty answers
 * built from the normal one.
 *
 * @module
 */
import { Ajv } from 'ajv';

import { type Conversation } from './conversation.ts';
import { type Answer } from './scenarios.ts';

/**
 * Fault kinds that reshape the normal answer the way real servers and models
 * answer badly (see {@link applyQuirk}).
 */
const QUIRK_KINDS_LIST = [
  'args_not_json',
  'tool_call_as_text',
  'tool_call_as_fenced_json',
  'tool_call_in_prose',
  'prose_instead',
  'think_block',
  'reasoning_field',
  'fenced_json',
  'length',
  'content_filter',
  'refusal',
  'no_usage',
  'duplicate_ids',
  'missing_ids',
] as const;

/** Kinds of fault the simulator can inject. */
export const FAULT_KINDS = [
  'timeout',
  'rate_limit',
  'server_error',
  'model_not_found',
  'not_json',
  'hallucinated_tool',
  'bad_arguments',
  'endless_repeat',
  ...QUIRK_KINDS_LIST,
] as const;

/**
 * A fault kind:
 * - `timeout` — no answer: the request is held until the client gives up (or
 *   the server closes); with `delayMs`, held that long and then answered normally;
 * - `rate_limit` — 429 with `Retry-After: retryAfterSeconds` (default 1) and an OpenAI error body;
 * - `server_error` — 500 (or `status`, 500-599: 503 for an overloaded model) with an OpenAI error body;
 * - `model_not_found` — 404 with OpenAI's `model_not_found` error (the requested model is not served);
 * - `not_json` — 200 `application/json` whose body is the normal answer cut in half;
 * - `hallucinated_tool` — a tool call of {@link HALLUCINATED_TOOL}, which no request offers;
 * - `bad_arguments` — the normal tool call with arguments that break the tool's parameter schema;
 * - `endless_repeat` — the previous assistant tool calls again, same tools and arguments.
 *
 * Answer quirks, each applied to the normal answer ({@link applyQuirk}):
 * - `args_not_json` — the first tool call's `arguments` is not JSON (`{order_id: O-12345678}`);
 * - `tool_call_as_text` — no `tool_calls`: the content holds them as Hermes text, `<tool_call>{"name": …, "arguments": …}</tool_call>`;
 * - `tool_call_as_fenced_json` — no `tool_calls`: a sentence, then each call in a ```json fence (Qwen2.5-Coder's habit);
 * - `tool_call_in_prose` — no `tool_calls`: the calls as JSON objects inside a sentence, no fence;
 * - `prose_instead` — content {@link PROSE_INSTEAD}, no tool calls, `finish_reason: "stop"`;
 * - `think_block` — the content prefixed by `<think>…</think>` (a reasoning model without a reasoning parser);
 * - `reasoning_field` — the reasoning in `message.reasoning_content` (Ollama: `message.reasoning`) beside the normal content;
 * - `fenced_json` — a `json` answer wrapped in a ```json fence;
 * - `length` — the content (or the first call's arguments) cut in the middle, `finish_reason: "length"`;
 * - `content_filter` — `finish_reason: "content_filter"`, content null, no tool calls;
 * - `refusal` — `message.refusal` = {@link REFUSAL_TEXT}, content null, no tool calls;
 * - `no_usage` — no `usage` field;
 * - `duplicate_ids` — every tool call with the first call's id (a single call is sent twice);
 * - `missing_ids` — tool calls without `id`.
 */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The answer-quirk kinds (a subset of {@link FAULT_KINDS}). */
export const QUIRK_KINDS: readonly FaultKind[] = QUIRK_KINDS_LIST;
export type QuirkKind = (typeof QUIRK_KINDS_LIST)[number];

/** Whether a fault kind is an answer quirk. */
export function isQuirkKind(kind: FaultKind): kind is QuirkKind {
  return (QUIRK_KINDS_LIST as readonly string[]).includes(kind);
}

/** Wire name of the tool a `hallucinated_tool` answer calls. */
export const HALLUCINATED_TOOL = 'sim__nonexistent_tool';
/** Default `Retry-After` of `rate_limit`, in seconds. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;
/** Largest `delayMs` of `timeout` (10 minutes). */
export const MAX_DELAY_MS = 600_000;

/** A fault, as posted to `POST /__control/faults`. */
export interface FaultSpec {
  kind: FaultKind;
  /** Apply to the next N matching requests only; default unlimited. */
  times?: number;
  /** Only requests matching all of these. */
  match?: {
    /** The skill named by the `Skill:` line. */
    skill?: string;
    /** A substring of the user text. */
    userText?: string;
    /** The model turn (1 + assistant messages so far). */
    turn?: number;
  };
  /** `timeout` only: hold this many ms, then answer normally (default: hold until the client gives up). */
  delayMs?: number;
  /** `rate_limit` only: the `Retry-After` seconds. */
  retryAfterSeconds?: number;
  /** `server_error` only: the HTTP status, 500-599 (default 500). */
  status?: number;
}

/** A registered fault and its counters. */
export interface FaultState {
  id: string;
  spec: FaultSpec;
  /** Requests it was applied to. */
  applied: number;
  exhausted: boolean;
}

/** A fault chosen for one request. */
export interface ChosenFault {
  kind: FaultKind;
  /** The control fault's id, or `marker` for a `[sim:...]` marker. */
  id: string;
  delayMs?: number;
  retryAfterSeconds?: number;
  status?: number;
}

/** A fault spec was rejected; `field` is its JSON path. */
export class FaultSpecError extends Error {
  readonly field: string;

  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = 'FaultSpecError';
    this.field = field;
  }
}

const FAULT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['kind'],
  properties: {
    kind: { enum: FAULT_KINDS },
    times: { type: 'integer', minimum: 1 },
    match: {
      type: 'object',
      additionalProperties: false,
      properties: {
        skill: { type: 'string', minLength: 1 },
        userText: { type: 'string', minLength: 1, maxLength: 2048 },
        turn: { type: 'integer', minimum: 1 },
      },
    },
    delayMs: { type: 'integer', minimum: 0, maximum: MAX_DELAY_MS },
    retryAfterSeconds: { type: 'integer', minimum: 0 },
    status: { type: 'integer', minimum: 500, maximum: 599 },
  },
} as const;

const validateSpec = new Ajv({ allErrors: false, strict: true }).compile<FaultSpec>(FAULT_SCHEMA);

/**
 * Validates an untrusted fault spec.
 *
 * @throws {@link FaultSpecError} naming the first offending field.
 */
export function validateFaultSpec(input: unknown): FaultSpec {
  if (!validateSpec(input)) {
    const e = validateSpec.errors?.[0];
    const params = (e?.params ?? {}) as { additionalProperty?: string; missingProperty?: string };
    const extra =
      params.additionalProperty !== undefined ? `/${params.additionalProperty}` : params.missingProperty !== undefined ? `/${params.missingProperty}` : '';
    const field = `${e?.instancePath ?? ''}${extra}`.replace(/^\//, '').replaceAll('/', '.') || 'body';
    const message =
      e?.keyword === 'enum'
        ? `must be one of ${FAULT_KINDS.join(', ')}`
        : params.additionalProperty !== undefined
          ? 'unknown field'
          : params.missingProperty !== undefined
            ? 'is required'
            : (e?.message ?? 'invalid');
    throw new FaultSpecError(field, message);
  }
  if (input.delayMs !== undefined && input.kind !== 'timeout') throw new FaultSpecError('delayMs', 'applies only to kind timeout');
  if (input.retryAfterSeconds !== undefined && input.kind !== 'rate_limit') {
    throw new FaultSpecError('retryAfterSeconds', 'applies only to kind rate_limit');
  }
  if (input.status !== undefined && input.kind !== 'server_error') throw new FaultSpecError('status', 'applies only to kind server_error');
  return structuredClone(input);
}

/** `[sim:<kind>]`, `[sim:<kind>@<turn>]`, `[sim:<kind>*<times>]`, `[sim:<kind>@<turn>*<times>]`. */
const MARKER = new RegExp(`\\[sim:(${FAULT_KINDS.join('|')})(?:@(\\d+))?(?:\\*(\\d+))?\\]`, 'g');

/** A `[sim:...]` marker found in a user text. */
export interface Marker {
  kind: FaultKind;
  /** Only this model turn; `null`: every turn. */
  turn: number | null;
  /** Attempts of each distinct request that are faulted (default 1). */
  times: number;
}

/** The markers of a user text, in order. */
export function markersIn(userText: string): Marker[] {
  return [...userText.matchAll(MARKER)].map((m) => ({
    kind: m[1] as FaultKind,
    turn: m[2] === undefined ? null : Number(m[2]),
    times: m[3] === undefined ? 1 : Math.max(1, Number(m[3])),
  }));
}

/** Distinct request bodies remembered for markers before the memory starts afresh. */
const MAX_REMEMBERED_REQUESTS = 100_000;

/**
 * Active faults. Control faults are considered in registration order, then
 * the user text's markers; the first that fires wins.
 */
export class FaultRegistry {
  #faults: FaultState[] = [];
  #nextId = 1;
  /** Attempts seen per distinct request body (by hash), for markers. */
  #attempts = new Map<string, number>();

  /** @throws {@link FaultSpecError} */
  add(input: unknown): string {
    const spec = validateFaultSpec(input);
    const id = `fault-${this.#nextId++}`;
    this.#faults.push({ id, spec, applied: 0, exhausted: false });
    return id;
  }

  /** Removes every control fault and forgets the requests markers have seen. @returns how many faults were removed. */
  clear(): number {
    const n = this.#faults.length;
    this.#faults = [];
    this.#attempts.clear();
    return n;
  }

  list(): FaultState[] {
    return this.#faults.map((f) => ({ ...f, spec: structuredClone(f.spec) }));
  }

  /**
   * Chooses the fault for a request and updates counters.
   *
   * @param conv - the request's conversation.
   * @param requestKey - a hash of the request body: a retry sends the same body,
   *   so a marker faults only the first `times` attempts of each distinct request.
   */
  pick(conv: Conversation, requestKey: string): ChosenFault | undefined {
    for (const f of this.#faults) {
      if (f.exhausted) continue;
      const { match } = f.spec;
      if (match?.skill !== undefined && match.skill !== conv.skill) continue;
      if (match?.userText !== undefined && !conv.userText.includes(match.userText)) continue;
      if (match?.turn !== undefined && match.turn !== conv.turn) continue;
      f.applied += 1;
      if (f.spec.times !== undefined && f.applied >= f.spec.times) f.exhausted = true;
      return { kind: f.spec.kind, id: f.id, delayMs: f.spec.delayMs, retryAfterSeconds: f.spec.retryAfterSeconds, status: f.spec.status };
    }
    const markers = markersIn(conv.userText).filter((m) => m.turn === null || m.turn === conv.turn);
    const first = markers[0];
    if (first === undefined) return undefined;
    if (this.#attempts.size >= MAX_REMEMBERED_REQUESTS) this.#attempts.clear();
    const attempt = (this.#attempts.get(requestKey) ?? 0) + 1;
    this.#attempts.set(requestKey, attempt);
    return attempt <= first.times ? { kind: first.kind, id: 'marker' } : undefined;
  }
}

// ---------------------------------------------------------------------------
// Faulty answers
// ---------------------------------------------------------------------------

/** A `hallucinated_tool` answer: one call of a tool the request does not offer. */
export function hallucinated(normal: Answer): Answer {
  const args = normal.kind === 'tool_calls' ? (normal.calls[0]?.arguments ?? {}) : {};
  return { kind: 'tool_calls', calls: [{ tool: HALLUCINATED_TOOL.replaceAll('__', '.'), arguments: args }] };
}

function wrongTypeFor(schema: unknown): unknown {
  const s = (typeof schema === 'object' && schema !== null ? schema : {}) as Record<string, unknown>;
  const t = s['type'];
  if (t === 'integer' || t === 'number' || t === 'boolean' || t === 'object' || t === 'array') return 'not-a-' + String(t);
  // Strings, enums of strings and untyped fields: a number breaks a string type, a pattern-less enum, ...
  return 12345;
}

/**
 * A `bad_arguments` answer: the normal answer's first tool call (or, when the
 * normal answer calls no tool, the request's first tool with `{}`) whose first
 * required argument gets a value of the wrong type; a tool with no required
 * argument gets an unknown argument `sim_unexpected_argument` instead.
 *
 * @returns `undefined` when the request offers no tool.
 */
export function badArguments(normal: Answer, conv: Conversation): Answer | undefined {
  const call =
    normal.kind === 'tool_calls' && normal.calls[0] !== undefined
      ? normal.calls[0]
      : conv.offeredTools[0] !== undefined
        ? { tool: conv.offeredTools[0], arguments: {} }
        : undefined;
  if (call === undefined) return undefined;
  const schema = conv.toolParameters.get(call.tool) ?? {};
  const required = Array.isArray(schema['required']) ? (schema['required'] as unknown[]).filter((r): r is string => typeof r === 'string') : [];
  const props = (typeof schema['properties'] === 'object' && schema['properties'] !== null ? schema['properties'] : {}) as Record<string, unknown>;
  const args = { ...call.arguments };
  const field = required[0];
  if (field !== undefined) args[field] = wrongTypeFor(props[field]);
  else args['sim_unexpected_argument'] = true;
  return { kind: 'tool_calls', calls: [{ tool: call.tool, arguments: args }] };
}

/**
 * An `endless_repeat` answer: the previous assistant tool calls with the same
 * tools and arguments.
 *
 * @returns `undefined` on the first tool-calling turn (nothing to repeat yet).
 */
export function repeated(conv: Conversation): Answer | undefined {
  if (conv.lastToolCalls.length === 0) return undefined;
  return {
    kind: 'tool_calls',
    calls: conv.lastToolCalls.map((c) => {
      let args: Record<string, unknown> = {};
      try {
        const v: unknown = JSON.parse(c.arguments);
        if (typeof v === 'object' && v !== null && !Array.isArray(v)) args = v as Record<string, unknown>;
      } catch {
        // Unparseable arguments are repeated as {} (the repetition is of the call, not of its bytes).
      }
      return { tool: c.tool, arguments: args };
    }),
  };
}

// ---------------------------------------------------------------------------
// Answer quirks
// ---------------------------------------------------------------------------

export { PROSE_INSTEAD, REFUSAL_TEXT, REASONING_TEXT, quirkApplies, pythonJson, applyQuirk, type QuirkOptions } from './quirks.ts';
