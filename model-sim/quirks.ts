/**
 * Answer quirks of real servers and models, applied by the simulator to its normal answer: tool calls
 * written as text, prose instead of a call, reasoning blocks and fields, fenced JSON, cut-off answers,
 * refusals, missing usage, missing or repeated tool-call ids, arguments that are not JSON. Which
 * requests get one is decided with the other faults (faults.ts).
 *
 * @module
 */
import { type QuirkKind } from './faults.ts';
import { type WireCompletion } from './profiles.ts';
import { type Answer } from './scenarios.ts';

/** Content of a `prose_instead` answer. */
export const PROSE_INSTEAD = 'Let me check the order status for you.';
/** `message.refusal` of a `refusal` answer. */
export const REFUSAL_TEXT = "I'm sorry, I can't help with that.";
/** The reasoning text of `think_block` and `reasoning_field`. */
export const REASONING_TEXT =
  'Okay, the user wants to know about their request. I should look at what the tools returned and answer with it. (reasoning simulated by tao-model-sim)';

/**
 * Whether a quirk has something to work on in this answer: the tool-call
 * quirks need tool calls, `fenced_json` a `json` answer; the others always
 * apply. When it has not, the normal answer is sent and no fault is recorded.
 */
export function quirkApplies(kind: QuirkKind, answer: Answer): boolean {
  switch (kind) {
    case 'args_not_json':
    case 'tool_call_as_text':
    case 'tool_call_as_fenced_json':
    case 'tool_call_in_prose':
    case 'duplicate_ids':
    case 'missing_ids':
      return answer.kind === 'tool_calls' && answer.calls.length > 0;
    case 'fenced_json':
      return answer.kind === 'json';
    default:
      return true;
  }
}

function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** JSON the way Python's `json.dumps` prints it (`{"a": 1, "b": [1, 2]}`), as Hermes-style models write tool calls. */
export function pythonJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(pythonJson).join(', ')}]`;
  if (typeof v === 'object' && v !== null) {
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${JSON.stringify(k)}: ${pythonJson(x)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** `{order_id: O-12345678}`: keys and string values unquoted, as small models write "JSON". */
function looseObject(args: unknown): string {
  if (typeof args !== 'object' || args === null || Array.isArray(args) || Object.keys(args).length === 0) return '{"';
  return `{${Object.entries(args as Record<string, unknown>)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ')}}`;
}

/** The turn calls no tool: its message says `content` (null: nothing) and it ends for `finish`. */
function answerInstead(choice: WireCompletion['choices'][number], content: string | null, finish: string): void {
  choice.message.content = content;
  delete choice.message.tool_calls;
  choice.finish_reason = finish;
}

/** Options of {@link applyQuirk}. */
export interface QuirkOptions {
  /** Where `reasoning_field` puts the reasoning (Ollama's layer: `reasoning`). */
  reasoningKey: 'reasoning_content' | 'reasoning';
}

/**
 * Applies an answer quirk to a completion (a copy is returned; the argument is
 * not changed). Call only when {@link quirkApplies}.
 */
export function applyQuirk(kind: QuirkKind, completion: WireCompletion, opts: QuirkOptions = { reasoningKey: 'reasoning_content' }): WireCompletion {
  const out = structuredClone(completion);
  const choice = out.choices[0];
  if (choice === undefined) return out;
  const m = choice.message;
  const calls = m.tool_calls ?? [];
  switch (kind) {
    case 'args_not_json': {
      const first = calls[0];
      if (first !== undefined) first.function.arguments = looseObject(parsedArguments(first.function.arguments));
      break;
    }
    case 'tool_call_as_text':
      answerInstead(
        choice,
        calls.map((c) => `<tool_call>\n${pythonJson({ name: c.function.name, arguments: parsedArguments(c.function.arguments) })}\n</tool_call>`).join('\n'),
        'stop',
      );
      break;
    case 'tool_call_as_fenced_json':
      answerInstead(
        choice,
        `I will look that up.\n\n${calls.map((c) => `\`\`\`json\n${JSON.stringify({ name: c.function.name, arguments: parsedArguments(c.function.arguments) }, null, 2)}\n\`\`\``).join('\n\n')}`,
        'stop',
      );
      break;
    case 'tool_call_in_prose':
      answerInstead(
        choice,
        `To answer I call ${calls.map((c) => pythonJson({ name: c.function.name, arguments: parsedArguments(c.function.arguments) })).join(' and ')} first.`,
        'stop',
      );
      break;
    case 'prose_instead':
      answerInstead(choice, PROSE_INSTEAD, 'stop');
      break;
    case 'think_block':
      m.content = `<think>\n${REASONING_TEXT}\n</think>\n\n${m.content ?? ''}`;
      break;
    case 'reasoning_field':
      m[opts.reasoningKey] = REASONING_TEXT;
      break;
    case 'fenced_json':
      m.content = `\`\`\`json\n${m.content ?? ''}\n\`\`\``;
      break;
    case 'length': {
      const first = calls[0];
      if (first !== undefined) {
        const a = first.function.arguments;
        first.function.arguments = a.slice(0, Math.max(1, Math.floor(a.length / 2)));
        m.tool_calls = [first];
      } else if (typeof m.content === 'string' && m.content !== '') {
        m.content = m.content.slice(0, Math.max(1, Math.floor(m.content.length / 2)));
      }
      choice.finish_reason = 'length';
      break;
    }
    case 'content_filter':
      answerInstead(choice, null, 'content_filter');
      break;
    case 'refusal':
      answerInstead(choice, null, 'stop');
      m.refusal = REFUSAL_TEXT;
      break;
    case 'no_usage':
      delete out.usage;
      break;
    case 'duplicate_ids': {
      const id = calls[0]?.id;
      const dup = calls.length === 1 && calls[0] !== undefined ? [calls[0], structuredClone(calls[0])] : calls;
      for (const c of dup) c.id = id;
      m.tool_calls = dup;
      break;
    }
    case 'missing_ids':
      for (const c of calls) delete c.id;
      break;
  }
  return out;
}
