/**
 * Reading a model's text the way real servers and models write it, before the gate judges it. Pure.
 *
 * - Reasoning is kept apart from the answer: a `<think>…</think>` block at the start of the content
 *   (reasoning models served without a reasoning parser) and the `reasoning_content` / `reasoning`
 *   field (llama.cpp, vLLM and others with one) are the model's reasoning, recorded, never the answer.
 * - JSON answers (plans, reflections, constrained turns) are accepted inside a Markdown fence.
 * - Tool calls written as text (`<tool_call>{"name": …, "arguments": …}</tool_call>`, the Hermes /
 *   ChatML convention; a whole answer that is such an object; Markdown-fenced JSON calls among prose;
 *   JSON call objects in prose) are read as tool calls, so that the gate verifies them like native
 *   ones instead of taking them as a final answer.
 */

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
