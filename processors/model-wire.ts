/**
 * The vocabulary Thought and Observation share about a model turn: how tools are named on the wire,
 * the structured answers a turn can ask for (reflection, plan, a constrained turn), the pseudo-tool
 * that asks the customer, and the verified answer Observation extracts and Thought reads. Neither
 * stage imports the other; both import this. Pure data and pure functions.
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
 * and Thought reads it (processors/thought/react.ts). `reasoning` is what the model thought before
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
export const FORMAT = { reflection: 'reflection', plan: 'plan', turn: 'turn' } as const;

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
 */
export function turnSchema(tools: readonly TurnTool[], output?: Record<string, unknown>): Record<string, unknown> {
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
      { type: 'object', additionalProperties: false, required: ['final_answer'], properties: { final_answer: output ?? text } },
      { type: 'object', additionalProperties: false, required: ['ask_customer'], properties: { ask_customer: text } },
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
