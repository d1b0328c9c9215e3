/**
 * Observation's gate on a model's answer: where a hallucinated tool or invalid arguments stop,
 * before any tool runs. Pure: the answer, the request that was sent (its `tools`, or a constrained
 * turn's schema, are exactly what the model was offered), and the catalog's contracts.
 *
 * Checks, in order:
 * 1. the completion has a message;
 * 2. a refusal (`finish_reason: "content_filter"`, or OpenAI's `message.refusal`) is extracted as
 *    such: Thought ends the run on it, never as an answer;
 * 3. reasoning (a leading `<think>` block, `reasoning_content`) is split off and recorded apart;
 * 4. an answer cut off at the token limit (`finish_reason: "length"`) is `malformed`, whatever it holds;
 * 5. by the turn asked for: a reflection (`response_format` named `reflection`) or a plan (`plan`) is
 *    JSON, fenced or not, matching its schema, a plan naming offered tools only; a constrained turn
 *    (`turn`) is one of a call, a final answer or a question to the customer;
 * 6. tool calls (native, or written as text: `<tool_call>{…}</tool_call>`, an answer that is a JSON
 *    call, fenced JSON calls among prose, JSON call objects in prose: model-wire.ts) each name an offered tool (else `hallucinated_tool`), with arguments that are a JSON object
 *    (else `invalid_arguments`) satisfying the tool's parameter schema (else `invalid_arguments`); a
 *    call of `ask_customer` is a question to the customer, alone in its turn;
 * 7. other non-empty text is a candidate final answer (Thought still checks the skill's grounding);
 *    no tool call and no text is `malformed`;
 * 8. a skill with an output schema (the request offers `final_answer`, or a constrained turn's
 *    `final_answer` branch is an object schema): the final answer is a `final_answer` call (alone in
 *    its turn) or object matching that schema, else `schema_mismatch`; text is then `malformed`.
 * A passing answer is extracted as {@link ModelAnswer}, its calls renamed with the runtime's ids
 * ({@link callId}): the model's own may be missing or repeated.
 */
import type { Ajv, ValidateFunction } from 'ajv';
import {
  ASK_CUSTOMER,
  FINAL_ANSWER,
  FORMAT,
  PLAN_RESPONSE_SCHEMA,
  REFLECTION_SCHEMA,
  callId,
  fromWireName,
  splitReasoning,
  toWireName,
  toolCallsInText,
  turnSchemaOutput,
  turnSchemaTools,
  unfence,
  type AnswerCall,
  type ModelAnswer,
  type Usage,
} from '../model-wire.ts';
import { recordSchemas } from '../compiled-schemas.ts';

type Rejection = { ok: false; errorType: 'hallucinated_tool' | 'invalid_arguments' | 'malformed' | 'schema_mismatch'; evidence: string };
export type GateResult = { ok: true; answer: ModelAnswer & { model: string | null }; evidence: string } | Rejection;

interface Completion {
  model?: unknown;
  choices?: Array<{
    message?: { content?: unknown; tool_calls?: unknown; refusal?: unknown; reasoning_content?: unknown; reasoning?: unknown };
    finish_reason?: unknown;
  }>;
  usage?: Partial<Usage> & { prompt_tokens_details?: { cached_tokens?: unknown } };
}

/**
 * The token counts and model a completion reports (`usage`, `model`): what the answer cost, whether
 * the gate accepts it or not. Null when `data` reports no usage.
 */
export function usageOf(data: unknown): { usage: Usage; model: string | null } | null {
  const completion = (data ?? {}) as Completion;
  if (!completion.usage || typeof completion.usage !== 'object') return null;
  const cached = num(completion.usage.prompt_tokens_details?.cached_tokens);
  const usage: Usage = {
    prompt_tokens: num(completion.usage.prompt_tokens),
    completion_tokens: num(completion.usage.completion_tokens),
    total_tokens: num(completion.usage.total_tokens) || num(completion.usage.prompt_tokens) + num(completion.usage.completion_tokens),
    ...(cached > 0 ? { cached_tokens: cached } : {}),
  };
  return { usage, model: typeof completion.model === 'string' ? completion.model : null };
}

interface SentRequest {
  tools?: Array<{ function?: { name?: string; parameters?: unknown } }>;
  response_format?: { json_schema?: { name?: string; schema?: unknown } };
}

const reflectionValidators = new WeakMap<Ajv, ValidateFunction>();

/**
 * A structured final answer checked against the skill's output schema as the request carried it (the
 * `final_answer` tool's parameters, or a constrained turn's `final_answer` branch), so replay checks
 * it against exactly what the model was asked for.
 */
function structuredFinal(value: unknown, schema: Record<string, unknown>, content: string | null, extra: Extra, ajv: Ajv): GateResult {
  const compiled = recordSchemas(ajv).compile(schema);
  if (!compiled.ok)
    return { ok: false, errorType: 'schema_mismatch', evidence: `the skill's output schema as the request carried it does not compile: ${compiled.error}` };
  const validate = compiled.validate;
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !validate(value)) {
    return {
      ok: false,
      errorType: 'schema_mismatch',
      evidence: `the final answer breaks the skill's output schema: ${typeof value === 'object' && value !== null && !Array.isArray(value) ? ajv.errorsText(validate.errors) : 'it is not an object'} (got ${JSON.stringify(value)?.slice(0, 200)})`,
    };
  }
  const result = value as Record<string, unknown>;
  return {
    ok: true,
    answer: { kind: 'final', content: content && content.trim() ? content.trim() : JSON.stringify(result), result, ...extra },
    evidence: "a final answer matching the skill's output schema",
  };
}
const planValidators = new WeakMap<Ajv, ValidateFunction>();

/** A structured answer's text parsed as JSON (a Markdown fence around it is accepted) and checked against its schema. */
function jsonAnswer(
  kind: string,
  text: string | null,
  cache: WeakMap<Ajv, ValidateFunction> | null,
  schema: object | null,
  ajv: Ajv,
): { ok: true; value: unknown } | Rejection {
  let value: unknown;
  try {
    value = JSON.parse(unfence(text ?? ''));
  } catch {
    return { ok: false, errorType: 'malformed', evidence: `a ${kind} must be JSON; the answer was: ${(text || '(no text)').slice(0, 200)}` };
  }
  if (!cache || !schema) return { ok: true, value };
  let validate = cache.get(ajv);
  if (!validate) cache.set(ajv, (validate = ajv.compile(schema)));
  if (!validate(value)) return { ok: false, errorType: 'malformed', evidence: `the ${kind} breaks its schema: ${ajv.errorsText(validate.errors)}` };
  return { ok: true, value };
}

/**
 * Verifies one model answer.
 * @param data the parsed response body (it already matched the model tool's response schema)
 * @param requestJson the step's input as sent (the chat-completions request)
 * @param validateArguments the parameter contract of a catalog tool, or undefined for a tool not in the catalog
 * @param turn the model turn this answers (its calls get the ids {@link callId}(turn, i))
 */
export function verifyModelAnswer(
  data: unknown,
  requestJson: string,
  validateArguments: (tool: string) => ValidateFunction | undefined,
  ajv: Ajv,
  turn = 0,
): GateResult {
  const completion = data as Completion;
  const choice = completion.choices?.[0];
  const message = choice?.message;
  if (!message || typeof message !== 'object') return { ok: false, errorType: 'malformed', evidence: 'the completion has no message' };
  const usage: Usage = usageOf(completion)?.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const model = typeof completion.model === 'string' ? completion.model : null;
  let request: SentRequest;
  try {
    request = JSON.parse(requestJson) as SentRequest;
  } catch {
    return { ok: false, errorType: 'malformed', evidence: 'the recorded request is not JSON' };
  }
  const finish = typeof choice?.finish_reason === 'string' ? choice.finish_reason : null;
  const { text, reasoning } = splitReasoning(typeof message.content === 'string' ? message.content : null, message.reasoning_content ?? message.reasoning);
  const extra = { usage, model, reasoning };

  const refusal = typeof message.refusal === 'string' && message.refusal.trim() ? message.refusal.trim() : null;
  if (finish === 'content_filter' || refusal !== null) {
    const reason = refusal !== null ? 'refusal' : 'content_filter';
    return {
      ok: true,
      answer: { kind: 'refusal', reason, content: refusal ?? text, ...extra },
      evidence: refusal !== null ? `the model refused: ${refusal.slice(0, 200)}` : 'the server withheld the answer (finish_reason content_filter)',
    };
  }
  if (finish === 'length') {
    return {
      ok: false,
      errorType: 'malformed',
      evidence: `the answer was cut off at the token limit (finish_reason length); it read: ${(text || JSON.stringify(message.tool_calls ?? null)).slice(0, 200)}`,
    };
  }

  const format = request.response_format?.json_schema?.name;
  if (format === FORMAT.reflection) {
    const parsed = jsonAnswer('reflection', text, reflectionValidators, REFLECTION_SCHEMA, ajv);
    if (!parsed.ok) return parsed;
    const reflection = parsed.value as Extract<ModelAnswer, { kind: 'reflection' }>['reflection'];
    return { ok: true, answer: { kind: 'reflection', reflection, ...extra }, evidence: `a reflection with action ${reflection.action}` };
  }

  const offered = new Set((request.tools ?? []).map((t) => t.function?.name).filter((n): n is string => typeof n === 'string'));
  if (format === FORMAT.plan) {
    const parsed = jsonAnswer('plan', text, planValidators, PLAN_RESPONSE_SCHEMA, ajv);
    if (!parsed.ok) return parsed;
    const value = parsed.value as Extract<ModelAnswer, { kind: 'plan' }>['plan'];
    // A step may name a tool by its catalog name or its wire name; the extracted plan has catalog names.
    const steps = value.steps.map((s) => ({ ...s, tool: fromWireName(s.tool) }));
    const unknown = steps.find((s) => !offered.has(toWireName(s.tool)));
    if (unknown)
      return {
        ok: false,
        errorType: 'hallucinated_tool',
        evidence: `plan step ${unknown.id} names "${unknown.tool}", which this skill does not offer (offered: ${[...offered].map(fromWireName).join(', ') || 'none'})`,
      };
    return {
      ok: true,
      answer: { kind: 'plan', content: unfence(text!), plan: { ...value, steps }, ...extra },
      evidence: `a plan of ${steps.length} step(s): ${steps.map((s) => s.tool).join(', ')}`,
    };
  }

  if (format === FORMAT.turn) {
    const parsed = jsonAnswer('constrained turn', text, null, null, ajv);
    if (!parsed.ok) return parsed;
    const v = parsed.value as Record<string, unknown> | null;
    const choices = new Set(turnSchemaTools(request.response_format?.json_schema?.schema));
    const output = turnSchemaOutput(request.response_format?.json_schema?.schema);
    if (output && v && typeof v === 'object' && 'final_answer' in v && Object.keys(v).length === 1)
      return structuredFinal(v.final_answer, output, null, extra, ajv);
    if (!output && v && typeof v === 'object' && typeof v.final_answer === 'string' && v.final_answer.trim() && Object.keys(v).length === 1)
      return final(v.final_answer, extra);
    if (v && typeof v === 'object' && typeof v.ask_customer === 'string' && v.ask_customer.trim() && Object.keys(v).length === 1)
      return ask(v.ask_customer, extra);
    if (v && typeof v === 'object' && typeof v.tool === 'string' && 'arguments' in v)
      return checkCalls([{ name: v.tool, arguments: v.arguments }], choices, validateArguments, ajv, turn, null, extra, 'the constrained answer');
    return {
      ok: false,
      errorType: 'malformed',
      evidence: `a constrained turn answers {"tool", "arguments"}, {"final_answer"} or {"ask_customer"}; got ${(text ?? '').slice(0, 200)}`,
    };
  }

  // The skill's output schema, when the request offered the `final_answer` tool.
  const finalTool = (request.tools ?? []).find((t) => t.function?.name === FINAL_ANSWER)?.function?.parameters;
  const outputSchema = finalTool && typeof finalTool === 'object' ? (finalTool as Record<string, unknown>) : null;
  const native = Array.isArray(message.tool_calls) ? (message.tool_calls as Array<{ function?: { name?: unknown; arguments?: unknown } }>) : [];
  if (native.length > 0) {
    const calls = native.map((c) => ({ name: typeof c.function?.name === 'string' ? c.function.name : '', arguments: c.function?.arguments }));
    return checkCalls(calls, offered, validateArguments, ajv, turn, text, extra, null, outputSchema);
  }
  if (text && text.trim()) {
    const written = toolCallsInText(text);
    if (written && 'broken' in written)
      return { ok: false, errorType: 'malformed', evidence: `a tool call written as text that is not a JSON call: ${written.broken}` };
    if (written) {
      // Small models write the catalog's name (`orders.get`) as often as the wire name they were offered (`orders__get`).
      const calls = written.calls.map((c) => (offered.has(c.name) || !offered.has(toWireName(c.name)) ? c : { ...c, name: toWireName(c.name) }));
      return checkCalls(calls, offered, validateArguments, ajv, turn, null, extra, `written as text: ${written.form}`, outputSchema);
    }
    // The skill's final answer has a schema: text is not an answer of it.
    if (outputSchema)
      return {
        ok: false,
        errorType: 'malformed',
        evidence: `this skill's final answer is a call of ${FINAL_ANSWER} with arguments matching its output schema; the answer was text: ${text.slice(0, 200)}`,
      };
    return final(text, extra);
  }
  return { ok: false, errorType: 'malformed', evidence: `no tool call and no text (finish_reason ${String(finish)})` };
}

type Extra = { usage: Usage; model: string | null; reasoning: string | null };

function final(content: string, extra: Extra): GateResult {
  return { ok: true, answer: { kind: 'final', content: content.trim(), ...extra }, evidence: 'a final answer' };
}

function ask(question: string, extra: Extra): GateResult {
  return { ok: true, answer: { kind: 'ask', question: question.trim(), ...extra }, evidence: `a question to the customer: ${question.slice(0, 200)}` };
}

/** The calls of an answer, each checked against what was offered and its tool's contract. */
function checkCalls(
  raw: Array<{ name: string; arguments: unknown }>,
  offered: ReadonlySet<string>,
  validateArguments: (tool: string) => ValidateFunction | undefined,
  ajv: Ajv,
  turn: number,
  content: string | null,
  extra: Extra,
  how: string | null,
  outputSchema: Record<string, unknown> | null = null,
): GateResult {
  const calls: AnswerCall[] = [];
  const source = how ? ` (${how})` : '';
  for (const [i, call] of raw.entries()) {
    if (!offered.has(call.name))
      return {
        ok: false,
        errorType: 'hallucinated_tool',
        evidence: `tool call ${i + 1}${source} names "${call.name}", which this skill does not offer (offered: ${[...offered].join(', ') || 'none'})`,
      };
    const tool = fromWireName(call.name);
    let args: unknown;
    try {
      args = typeof call.arguments === 'string' ? JSON.parse(call.arguments) : call.arguments;
    } catch {
      return { ok: false, errorType: 'invalid_arguments', evidence: `the arguments of ${tool}${source} are not JSON: ${String(call.arguments).slice(0, 200)}` };
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      return { ok: false, errorType: 'invalid_arguments', evidence: `the arguments of ${tool}${source} are not a JSON object` };
    if (tool === ASK_CUSTOMER) {
      const question = (args as { question?: unknown }).question;
      if (typeof question !== 'string' || !question.trim())
        return { ok: false, errorType: 'invalid_arguments', evidence: `${ASK_CUSTOMER} needs {"question": text}; got ${JSON.stringify(args).slice(0, 200)}` };
      if (raw.length > 1)
        return {
          ok: false,
          errorType: 'invalid_arguments',
          evidence: `${ASK_CUSTOMER} must be the only call of its turn (the run waits for the reply); this turn made ${raw.length}`,
        };
      return ask(question, extra);
    }
    if (tool === FINAL_ANSWER && outputSchema) {
      if (raw.length > 1)
        return {
          ok: false,
          errorType: 'invalid_arguments',
          evidence: `${FINAL_ANSWER} must be the only call of its turn (it ends the run); this turn made ${raw.length}`,
        };
      return structuredFinal(args, outputSchema, content, extra, ajv);
    }
    const validate = validateArguments(tool);
    if (!validate) return { ok: false, errorType: 'hallucinated_tool', evidence: `${tool} is offered but not in the catalog` };
    if (!validate(args))
      return {
        ok: false,
        errorType: 'invalid_arguments',
        evidence: `the arguments of ${tool}${source} break its contract: ${ajv.errorsText(validate.errors)} (got ${JSON.stringify(args).slice(0, 200)})`,
      };
    calls.push({ id: callId(turn, i + 1), tool, arguments: args as Record<string, unknown> });
  }
  return {
    ok: true,
    answer: { kind: 'tool_calls', content: content && content.trim() ? content : null, calls, ...extra },
    evidence: `${calls.length} tool call(s)${source}: ${calls.map((c) => c.tool).join(', ')}`,
  };
}

/**
 * What a model endpoint's error answer says, as data: its HTTP status and the `code` / `type` of
 * OpenAI's (and llama.cpp's, vLLM's) error body. `context_length` when the prompt did not fit the
 * model's window (OpenAI and vLLM `code: context_length_exceeded`, llama.cpp `type:
 * exceed_context_size_error`): Thought answers it with a smaller prompt instead of the same one.
 */
export function modelErrorOf(
  status: number | null,
  body: string | null,
): { status: number | null; code: string | null; type: string | null; kind: 'context_length' | 'other'; message: string } | null {
  if (status === null || status < 400 || status >= 500 || status === 408 || status === 429) return null;
  let error: { code?: unknown; type?: unknown; message?: unknown } = {};
  try {
    const parsed = JSON.parse(body ?? '') as { error?: unknown };
    if (parsed && typeof parsed.error === 'object' && parsed.error !== null) error = parsed.error as typeof error;
    else if (typeof parsed.error === 'string') error = { message: parsed.error };
  } catch {
    // Not JSON: the status alone says what happened.
  }
  const code = typeof error.code === 'string' ? error.code : null;
  const type = typeof error.type === 'string' ? error.type : null;
  const kind = code === 'context_length_exceeded' || type === 'exceed_context_size_error' ? 'context_length' : 'other';
  return { status, code, type, kind, message: (typeof error.message === 'string' ? error.message : (body ?? '')).slice(0, 300) };
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}
