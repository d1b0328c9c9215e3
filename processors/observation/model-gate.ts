/**
 * Observation's gate on a model's answer: where a hallucinated tool or invalid arguments stop,
 * before any tool runs. Pure: the answer, the request that was sent (its `tools` are exactly what
 * the model was offered: the run's skill's tools), and the catalog's contracts.
 *
 * Checks, in order: the completion has a message; a reflection turn (a `json_schema` response
 * format named `reflection`) answers JSON matching the reflection schema; a plan turn (one named
 * `plan`) answers a JSON plan matching the plan schema whose every step names an offered tool
 * (else `hallucinated_tool`; Thought then validates the plan as it validates any); otherwise every tool call
 * names an offered tool (else `hallucinated_tool`), its arguments are a JSON object (else
 * `invalid_arguments`) that satisfies the tool's parameter schema (else `invalid_arguments`); an
 * answer with neither tool calls nor text is `malformed`. A passing answer is extracted in the
 * shape Thought reads (processors/thought/react.ts `ModelAnswer`).
 */
import type { Ajv, ValidateFunction } from 'ajv';
import { PLAN_RESPONSE_SCHEMA, REFLECTION_SCHEMA, fromWireName, toWireName } from '../thought/prompt.ts';
import type { ModelAnswer, Usage } from '../thought/react.ts';

export type GateResult = { ok: true; answer: ModelAnswer & { model: string | null }; evidence: string } | { ok: false; errorType: 'hallucinated_tool' | 'invalid_arguments' | 'malformed'; evidence: string };

interface Completion {
  model?: unknown;
  choices?: Array<{ message?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown }>;
  usage?: Partial<Usage>;
}

const reflectionValidators = new WeakMap<Ajv, ValidateFunction>();
const planValidators = new WeakMap<Ajv, ValidateFunction>();

/**
 * Verifies one model answer.
 * @param data the parsed response body (it already matched the model tool's response schema)
 * @param requestJson the step's input as sent (the chat-completions request)
 * @param validateArguments the parameter contract of a catalog tool, or undefined for a tool not in the catalog
 */
/** A structured answer's content parsed as JSON and checked against its schema (compiled once per Ajv). */
function jsonAnswer(kind: 'plan' | 'reflection', content: string | null, cache: WeakMap<Ajv, ValidateFunction>, schema: object, ajv: Ajv): { ok: true; value: unknown } | Extract<GateResult, { ok: false }> {
  let value: unknown;
  try {
    value = JSON.parse(content ?? '');
  } catch {
    return { ok: false, errorType: 'malformed', evidence: `a ${kind} must be JSON; the answer was: ${(content ?? '(no text)').slice(0, 200)}` };
  }
  let validate = cache.get(ajv);
  if (!validate) cache.set(ajv, (validate = ajv.compile(schema)));
  if (!validate(value)) return { ok: false, errorType: 'malformed', evidence: `the ${kind} breaks its schema: ${ajv.errorsText(validate.errors)}` };
  return { ok: true, value };
}

export function verifyModelAnswer(data: unknown, requestJson: string, validateArguments: (tool: string) => ValidateFunction | undefined, ajv: Ajv): GateResult {
  const completion = data as Completion;
  const message = completion.choices?.[0]?.message;
  if (!message || typeof message !== 'object') return { ok: false, errorType: 'malformed', evidence: 'the completion has no message' };
  const usage: Usage = {
    prompt_tokens: num(completion.usage?.prompt_tokens),
    completion_tokens: num(completion.usage?.completion_tokens),
    total_tokens: num(completion.usage?.total_tokens) || num(completion.usage?.prompt_tokens) + num(completion.usage?.completion_tokens),
  };
  const model = typeof completion.model === 'string' ? completion.model : null;
  let request: { tools?: Array<{ function?: { name?: string } }>; response_format?: { json_schema?: { name?: string } } };
  try {
    request = JSON.parse(requestJson) as typeof request;
  } catch {
    return { ok: false, errorType: 'malformed', evidence: 'the recorded request is not JSON' };
  }
  const content = typeof message.content === 'string' ? message.content : null;

  if (request.response_format?.json_schema?.name === 'reflection') {
    const parsed = jsonAnswer('reflection', content, reflectionValidators, REFLECTION_SCHEMA, ajv);
    if (!parsed.ok) return parsed;
    const reflection = parsed.value;
    return { ok: true, answer: { kind: 'reflection', reflection: reflection as never, usage, model }, evidence: `a reflection with action ${(reflection as { action: string }).action}` };
  }

  const offered = new Set((request.tools ?? []).map((t) => t.function?.name).filter((n): n is string => typeof n === 'string'));

  if (request.response_format?.json_schema?.name === 'plan') {
    const parsed = jsonAnswer('plan', content, planValidators, PLAN_RESPONSE_SCHEMA, ajv);
    if (!parsed.ok) return parsed;
    let plan = parsed.value;
    // A step may name a tool by its catalog name or its wire name; the extracted plan has catalog names.
    const steps = (plan as { steps: Array<{ id: string; tool: string }> }).steps.map((s) => ({ ...s, tool: fromWireName(s.tool) }));
    plan = { ...(plan as object), steps };
    const unknown = steps.find((s) => !offered.has(toWireName(s.tool)));
    if (unknown) return { ok: false, errorType: 'hallucinated_tool', evidence: `plan step ${unknown.id} names "${unknown.tool}", which this skill does not offer (offered: ${[...offered].map(fromWireName).join(', ') || 'none'})` };
    return { ok: true, answer: { kind: 'plan', content: content!, plan: plan as never, usage, model }, evidence: `a plan of ${steps.length} step(s): ${steps.map((s) => s.tool).join(', ')}` };
  }

  const rawCalls = Array.isArray(message.tool_calls) ? (message.tool_calls as Array<{ id?: unknown; function?: { name?: unknown; arguments?: unknown } }>) : [];
  if (rawCalls.length > 0) {
    const calls: Array<{ id: string; tool: string; arguments: Record<string, unknown> }> = [];
    for (const [i, call] of rawCalls.entries()) {
      const wire = typeof call.function?.name === 'string' ? call.function.name : '';
      if (!offered.has(wire)) return { ok: false, errorType: 'hallucinated_tool', evidence: `tool call ${i + 1} names "${wire}", which this skill does not offer (offered: ${[...offered].join(', ') || 'none'})` };
      const tool = fromWireName(wire);
      let args: unknown;
      try {
        args = typeof call.function?.arguments === 'string' ? JSON.parse(call.function.arguments) : call.function?.arguments;
      } catch {
        return { ok: false, errorType: 'invalid_arguments', evidence: `the arguments of ${tool} are not JSON: ${String(call.function?.arguments).slice(0, 200)}` };
      }
      if (typeof args !== 'object' || args === null || Array.isArray(args)) return { ok: false, errorType: 'invalid_arguments', evidence: `the arguments of ${tool} are not a JSON object` };
      const validate = validateArguments(tool);
      if (!validate) return { ok: false, errorType: 'hallucinated_tool', evidence: `${tool} is offered but not in the catalog` };
      if (!validate(args)) return { ok: false, errorType: 'invalid_arguments', evidence: `the arguments of ${tool} break its contract: ${ajv.errorsText(validate.errors)} (got ${JSON.stringify(args).slice(0, 200)})` };
      calls.push({ id: typeof call.id === 'string' && call.id ? call.id : `call_${i + 1}`, tool, arguments: args as Record<string, unknown> });
    }
    return { ok: true, answer: { kind: 'tool_calls', content, calls, usage, model }, evidence: `${calls.length} tool call(s): ${calls.map((c) => c.tool).join(', ')}` };
  }
  if (content && content.trim()) return { ok: true, answer: { kind: 'final', content, usage, model }, evidence: 'a final answer' };
  return { ok: false, errorType: 'malformed', evidence: `no tool call and no text (finish_reason ${String(completion.choices?.[0]?.finish_reason)})` };
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}
