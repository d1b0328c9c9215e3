/**
 * How a model turn is written on the wire, both ways: the vocabulary Thought and Observation share
 * (how tools are named on the wire, the structured answers a turn can ask for — reflection, plan, a
 * constrained turn —, the pseudo-tool that asks the customer, and the verified answer Observation
 * extracts and Thought reads; the chat-completions messages Thought sends), and how a model's text is read the way real servers and models write
 * it, before the gate judges it (the last part of this file):
 *
 * - Reasoning is kept apart from the answer: a `<think>…</think>` block at the start of the content
 *   (reasoning models served without a reasoning parser) and the `reasoning_content` / `reasoning`
 *   field (llama.cpp, vLLM and others with one) are the model's reasoning, recorded, never the answer.
 * - JSON answers (plans, reflections, constrained turns) are accepted inside a Markdown fence.
 * - Tool calls written as text (`<tool_call>{"name": …, "arguments": …}</tool_call>`, the Hermes /
 *   ChatML convention; a whole answer that is such an object; Markdown-fenced JSON calls among prose;
 *   JSON call objects in prose) are read as tool calls, so that the gate verifies them like native
 *   ones instead of taking them as a final answer.
 *
 * Neither stage imports the other; both import this. Pure data and pure functions.
 */
import planSchema from '../schemas/json/plan.schema.json' with { type: 'json' };

/** Token counts as the server reported them (`usage`); zeros when it reported none. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Prompt tokens the server served from its prompt cache (`usage.prompt_tokens_details.cached_tokens`), when it said. */
  cached_tokens?: number;
}

export type DimensionVerdict = { verdict: 'PASS' | 'MISSING' | 'INCONSISTENT'; reason: string };

/** A model-written Reflexion: the four dimensions, each PASS / MISSING / INCONSISTENT, and one action. */
export interface ModelReflection {
  data_completeness: DimensionVerdict;
  logic_consistency: DimensionVerdict;
  policy_compliance: DimensionVerdict;
  uncertainty: DimensionVerdict;
  action: 'retry_with_changed_input' | 'change_plan' | 'ask_person' | 'escalate' | 'fail';
  reason: string;
}

/** A tool call of a verified answer: `id` is the runtime's own (see {@link callId}), `tool` a catalog name. */
export interface AnswerCall {
  id: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/**
 * A verified model answer, as Observation's gate extracts it (processors/observation/model-gate.ts)
 * and Thought reads it (processors/thought/model/answer.ts). `reasoning` is what the model thought before
 * answering (a `<think>` block or the server's reasoning field): recorded, never sent back.
 */
export type ModelAnswer = (
  | { kind: 'tool_calls'; content: string | null; calls: AnswerCall[] }
  /**
   * A final answer. `result`: the structured answer when the skill declares an output schema (the
   * `final_answer` tool's arguments, or a constrained turn's `final_answer` object), which the gate
   * checked against that schema; `content` is then the model's text beside it, or the result as JSON.
   */
  | { kind: 'final'; content: string; result?: Record<string, unknown> }
  /** The model asks the customer (the `ask_customer` tool, or a constrained turn's `ask_customer`). */
  | { kind: 'ask'; question: string }
  /** The server or the model refused to answer (finish_reason `content_filter`, or `message.refusal`). */
  | { kind: 'refusal'; reason: 'content_filter' | 'refusal'; content: string | null }
  | { kind: 'reflection'; reflection: ModelReflection }
  /** A whole plan (a plan turn): `content` is the model's JSON text, `plan` its parsed value (tools by catalog name). */
  | { kind: 'plan'; content: string; plan: { steps: Array<{ id: string; tool: string }>; output: Record<string, string> } }
  /** A routing turn's choice: one of the offered skills, or null for `none`. */
  | { kind: 'route'; skill: string | null; reason: string }
) & {
  usage: Usage;
  reasoning?: string | null;
  /** The completion's `model`: which model answered (null when the server did not say). */ model?: string | null;
};

/** OpenAI function names allow `[a-zA-Z0-9_-]{1,64}`; catalog names have dots. The mapping is reversible. */
export function toWireName(tool: string): string {
  return tool.replaceAll('.', '__');
}

export function fromWireName(wire: string): string {
  return wire.replaceAll('__', '.');
}

/**
 * The runtime's id of call `index` (1-based) of model turn `turn`: `c` + 4-digit turn + `n` + 3-digit
 * index, nine alphanumerics (what the strictest servers accept: Mistral's tokenizer in vLLM wants
 * exactly nine). Answers' own ids are replaced by these, so ids are unique in a run and the same on replay.
 */
export function callId(turn: number, index: number): string {
  return `c${String(turn % 10000).padStart(4, '0')}n${String(index % 1000).padStart(3, '0')}`;
}

/** The pseudo-tool a react turn offers beside the skill's tools: the run waits for the customer's reply. */
export const ASK_CUSTOMER = 'ask_customer';
export const ASK_CUSTOMER_TOOL = {
  name: ASK_CUSTOMER,
  description:
    'Ask the customer for something the ticket lacks and you need (an id, an e-mail address, a detail). The run waits for their reply. Never ask for what the ticket or a tool result already gives.',
  parameters: {
    type: 'object',
    additionalProperties: false,
    required: ['question'],
    properties: { question: { type: 'string', minLength: 1, maxLength: 1000 } },
  },
} as const;

/** The pseudo-tool a native react turn offers when the skill declares an output schema: its arguments are the final answer. */
export const FINAL_ANSWER = 'final_answer';

/** The `final_answer` tool of a skill whose final answer must match `schema` (skills/<name>/output.schema.json). */
export function finalAnswerTool(schema: Record<string, unknown>): { name: string; description: string; parameters: Record<string, unknown> } {
  return {
    name: FINAL_ANSWER,
    description: 'Give the final answer: call this once tool results hold everything it needs, with arguments that match its schema. It ends the run.',
    parameters: schema,
  };
}

/** `response_format.json_schema.name` of each structured turn. */
export const FORMAT = { reflection: 'reflection', plan: 'plan', turn: 'turn', route: 'route' } as const;

/** The JSON Schema of a routing turn's answer: one of the offered skills, or `none`. */
export function routeSchema(skills: readonly string[]): Record<string, unknown> {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['skill'],
    properties: { skill: { enum: [...skills, 'none'] }, reason: { type: 'string' } },
  };
}

/** The skills a routing turn's request offered (its schema's enum without `none`); empty when it is not one. */
export function routeSchemaSkills(schema: unknown): string[] {
  const values = (schema as { properties?: { skill?: { enum?: unknown } } } | undefined)?.properties?.skill?.enum;
  return Array.isArray(values) ? values.filter((v): v is string => typeof v === 'string' && v !== 'none') : [];
}

/** The JSON Schema of a reflection answer (the four dimensions and one action). */
export const REFLECTION_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['data_completeness', 'logic_consistency', 'policy_compliance', 'uncertainty', 'action', 'reason'],
  properties: {
    data_completeness: { $ref: '#/$defs/dimension' },
    logic_consistency: { $ref: '#/$defs/dimension' },
    policy_compliance: { $ref: '#/$defs/dimension' },
    uncertainty: { $ref: '#/$defs/dimension' },
    action: { enum: ['retry_with_changed_input', 'change_plan', 'ask_person', 'escalate', 'fail'] },
    reason: { type: 'string' },
  },
  $defs: {
    dimension: {
      type: 'object',
      additionalProperties: false,
      required: ['verdict', 'reason'],
      properties: { verdict: { enum: ['PASS', 'MISSING', 'INCONSISTENT'] }, reason: { type: 'string' } },
    },
  },
} as const;

/**
 * The JSON Schema of a plan answer: schemas/json/plan.schema.json's plan, except that `flow` may be
 * left out (Thought names the flow after the skill). Not `strict`: a plan's inputs are open objects.
 */
export const PLAN_RESPONSE_SCHEMA: Record<string, unknown> = (() => {
  const { $id: _id, title: _title, ...schema } = planSchema as Record<string, unknown>;
  return { ...schema, required: ['steps', 'output'] };
})();

/** A tool as a constrained turn offers it: wire name and parameter schema. */
export interface TurnTool {
  wire: string;
  parameters: Record<string, unknown>;
}

/**
 * The schema of a constrained turn (`tool-calls: json_schema`): exactly one of a call of an offered
 * tool (`{"tool": <wire name>, "arguments": <its parameters>}`), a final answer (`{"final_answer":
 * text}`, or an object of the skill's output schema when it declares one) or a question to the
 * customer (`{"ask_customer": text}`). `anyOf` rather than `oneOf`:
 * the branches exclude each other by their required keys, and `anyOf` is what OpenAI's structured
 * outputs and llama.cpp's grammar conversion both support. A server that decodes under this schema
 * cannot produce an unknown tool or unparseable arguments; the gate still checks everything.
 * @param answerable false while no tool result could ground a final answer (the skill's grounded-by
 *   tools have none): the schema then has no final-answer branch.
 */
export function turnSchema(tools: readonly TurnTool[], output?: Record<string, unknown>, answerable = true, askable = true): Record<string, unknown> {
  const text = { type: 'string', minLength: 1 };
  return {
    anyOf: [
      ...tools.map((t) => ({
        type: 'object',
        additionalProperties: false,
        required: ['tool', 'arguments'],
        properties: { tool: { const: t.wire }, arguments: t.parameters },
      })),
      // With the skill's output schema, the final answer is an object of that schema, not text.
      // Before any tool result could ground it, no final answer is offered at all.
      ...(answerable ? [{ type: 'object', additionalProperties: false, required: ['final_answer'], properties: { final_answer: output ?? text } }] : []),
      ...(askable ? [{ type: 'object', additionalProperties: false, required: ['ask_customer'], properties: { ask_customer: text } }] : []),
    ],
  };
}

/** The wire names a constrained turn's schema offers (the `const` of each call branch). */
export function turnSchemaTools(schema: unknown): string[] {
  const branches = (schema as { anyOf?: Array<{ properties?: { tool?: { const?: unknown } } }> } | undefined)?.anyOf ?? [];
  return branches.map((b) => b.properties?.tool?.const).filter((c): c is string => typeof c === 'string');
}

/** The final answer's schema a constrained turn's schema carries (its `final_answer` branch), or null when that is text. */
export function turnSchemaOutput(schema: unknown): Record<string, unknown> | null {
  const branches = (schema as { anyOf?: Array<{ required?: unknown; properties?: { final_answer?: { type?: unknown } } }> } | undefined)?.anyOf ?? [];
  const final = branches.find((b) => Array.isArray(b.required) && b.required[0] === 'final_answer')?.properties?.final_answer;
  return final && final.type !== 'string' ? (final as Record<string, unknown>) : null;
}

// The chat-completions request Thought writes (processors/thought/model/prompt.ts builds it).

/**
 * A chat-completions message as sent. The builder keeps the rules the strictest servers and chat
 * templates enforce: one system message, first; then user and assistant turns alternating, where an
 * assistant turn with tool calls is followed by one tool message per call; assistant content is a
 * string, never null (Ollama refuses null); the last message is never an assistant's (llama.cpp
 * would continue it as a prefill, and refuses two at the end).
 */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface WireTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

// Reading a model's text as real servers and models write it.

/** The content without its leading reasoning block, and the reasoning (null when there is none). */
export function splitReasoning(content: string | null, field: unknown): { text: string | null; reasoning: string | null } {
  const parts: string[] = [];
  if (typeof field === 'string' && field.trim()) parts.push(field.trim());
  let text = content;
  if (text !== null) {
    // An opening tag is optional: some chat templates put `<think>` in the prompt, so the answer starts inside it.
    const m = /^\s*(?:<think>)?([\s\S]*?)<\/think>\s*/.exec(text);
    if (m && (/^\s*<think>/.test(text) || !text.slice(0, m.index + m[0].length).includes('<think>'))) {
      if (m[1]!.trim()) parts.push(m[1]!.trim());
      text = text.slice(m[0].length);
    } else if (/^\s*<think>/.test(text)) {
      // Opened and never closed: all of it is reasoning (the answer was cut off inside it).
      parts.push(text.replace(/^\s*<think>/, '').trim());
      text = '';
    }
  }
  return { text, reasoning: parts.length ? parts.join('\n\n') : null };
}

/** The JSON inside a Markdown fence (```json … ```), or the text itself, trimmed. */
export function unfence(text: string): string {
  const m = /^\s*```[a-zA-Z]*\s*\n?([\s\S]*?)\n?```\s*$/.exec(text);
  return (m ? m[1]! : text).trim();
}

/** A tool call read from text: the wire name and its arguments as written. */
export interface TextToolCall {
  name: string;
  arguments: unknown;
}

/**
 * How calls written as text were found, recorded in the gate's evidence so replay shows how the
 * answer was read: `<tool_call>` tags (Hermes / ChatML), the whole answer as JSON (fenced or not),
 * Markdown fences holding JSON calls among prose (how Qwen2.5-Coder writes them when the template's
 * tags are not followed), JSON call objects in prose without a fence, or a sentence naming the tool
 * and its arguments (`Call orders.get with {order_id: 'O-1'}`).
 */
export type CallForm = 'tool_call tags' | 'JSON' | 'fenced JSON' | 'JSON in prose' | 'call described in prose';

/**
 * Tool calls written in the answer's text instead of `tool_calls`.
 * @returns `calls` (and the form they were written in) when the text holds one or more calls;
 *   `broken` when it has a `<tool_call>` block that is not a JSON call (the gate rejects it, naming
 *   what was written); null when the text holds no call at all (prose: a candidate final answer).
 *   A call is an object with a string `name` and `arguments` (or `parameters`), or OpenAI's
 *   `{function: {name, arguments}}`; a list of them is several calls.
 */
export function toolCallsInText(text: string): { calls: TextToolCall[]; form: CallForm } | { broken: string } | null {
  const blocks = [...text.matchAll(/<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g)].map((m) => m[1]!.trim());
  if (blocks.length) {
    const calls: TextToolCall[] = [];
    for (const block of blocks) {
      const call = asCall(parseJson(unfence(block)));
      if (!call) return { broken: block.slice(0, 200) };
      calls.push(call);
    }
    return { calls, form: 'tool_call tags' };
  }
  const whole = asCalls(parseJson(unfence(text)));
  if (whole) return { calls: whole, form: 'JSON' };
  const fenced = [...text.matchAll(/```[a-zA-Z]*[ \t]*\n?([\s\S]*?)```/g)].flatMap((m) => asCalls(parseJson(m[1]!.trim())) ?? []);
  if (fenced.length) return { calls: fenced, form: 'fenced JSON' };
  const inProse = jsonObjectsIn(text).flatMap((o) => asCalls(o) ?? []);
  if (inProse.length) return { calls: inProse, form: 'JSON in prose' };
  const described = [...text.matchAll(DESCRIBED_CALL)].flatMap((m) => {
    const args = parseJson(m[2]!) ?? parseJson(looseToJson(m[2]!));
    return args && typeof args === 'object' && !Array.isArray(args) ? [{ name: m[1]!, arguments: args }] : [];
  });
  return described.length ? { calls: described, form: 'call described in prose' } : null;
}

/**
 * "Call `orders.get` with `{order_id: 'O-12345678'}`": a call described in a sentence, its arguments
 * an object literal (keys unquoted, strings in single quotes allowed), as Qwen2.5-Coder-1.5B writes
 * one after being told to call the tool.
 */
const DESCRIBED_CALL =
  /\b(?:call|use|invoke)\s+(?:the\s+)?(?:tool\s+)?`?([A-Za-z][\w.-]*)`?\s+(?:tool\s+)?with\s+(?:the\s+)?(?:arguments?\s+)?`?(\{[^`{}]*\})`?/gi;

/** An object literal as small models write one (`{order_id: 'O-1'}`) as JSON: keys quoted, single quotes double. */
function looseToJson(text: string): string {
  return text.replace(/'([^'\\]*)'/g, (_, v: string) => JSON.stringify(v)).replace(/([{,]\s*)([A-Za-z_]\w*)\s*:/g, '$1"$2":');
}

/** One call or a non-empty list of calls, else null. */
function asCalls(v: unknown): TextToolCall[] | null {
  const list = Array.isArray(v) ? v : [v];
  const calls = list.map(asCall);
  return calls.length && calls.every((c): c is TextToolCall => c !== null) ? calls : null;
}

function asCall(v: unknown): TextToolCall | null {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const fn = o.function && typeof o.function === 'object' ? (o.function as Record<string, unknown>) : o;
  if (typeof fn.name !== 'string' || !('arguments' in fn || 'parameters' in fn)) return null;
  return { name: fn.name, arguments: 'arguments' in fn ? fn.arguments : fn.parameters };
}

/** The outermost JSON objects written in a text, in order (braces inside strings are skipped). */
function jsonObjectsIn(text: string): unknown[] {
  const found: unknown[] = [];
  for (let start = text.indexOf('{'); start >= 0;) {
    let depth = 0;
    let inString = false;
    let end = -1;
    for (let i = start; i < text.length && end < 0; i++) {
      const c = text[i];
      if (inString) {
        if (c === '\\') i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) end = i;
    }
    if (end < 0) break;
    const value = parseJson(text.slice(start, end + 1));
    if (value !== undefined) found.push(value);
    start = text.indexOf('{', value !== undefined ? end + 1 : start + 1);
  }
  return found;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
