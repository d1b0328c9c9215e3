/**
 * What the replay views show of a model turn (a `model.chat` step): the request Thought built, the
 * raw answer Action got, the tokens and model of the answer, and what Thought made of it (the next
 * wave's calls, the final answer, the plan, the reflection, or why the answer was rejected). A pure
 * function of the {@link Timeline}: no I/O.
 *
 * Secrets: the recorded request holds no API key (Action resolves it when sending), and only the
 * request's known chat-completions fields are shown; any other top-level key is named, not shown.
 * Text that looks like a bearer token or an `api_key` field is masked all the same, in case an
 * endpoint echoed one back.
 */
import { modelTurnOf } from '../processors/run-driver.ts';
import type { StepView, Timeline } from './timeline.ts';

/** One message of the request, as shown. */
export interface ModelMessageView {
  role: string;
  content: string | null;
  tool_calls: Array<{ id: string; name: string; arguments: string }>;
  tool_call_id: string | null;
}

/** What Thought did with the answer. */
export type ModelDecisionView =
  | { kind: 'tool_calls'; calls: Array<{ step_id: string | null; tool: string; arguments: unknown; status: string | null }> }
  | { kind: 'final'; answer: string }
  | { kind: 'plan'; steps: Array<{ id: string; tool: string; depends_on: string[] }>; output: unknown }
  | { kind: 'reflection'; action: string; reason: string }
  | { kind: 'rejected'; error_type: string; evidence: string }
  | { kind: 'pending' };

/** A model turn as the HTML report shows it. */
export interface ModelTurnView {
  step_id: string;
  iteration: number;
  /** The model that answered (the answer's `model`), else the one asked for. */
  model: string | null;
  request: {
    messages: ModelMessageView[];
    /** The tools offered, by wire name. */
    tools: Array<{ name: string; description: string }>;
    /** temperature, max_tokens, tool_choice, response_format, ... as sent. */
    parameters: Record<string, unknown>;
    /** Other top-level keys of the request: named, never shown. */
    hidden: string[];
  };
  /** The raw answer (cut at 2,000 characters, as in the timeline), masked. */
  raw_answer: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  /**
   * The prompt builder's estimate of each section of this turn (the run state's
   * `model_state_json.turn_tokens`), with its share of the tokens sent (prompt + generation); null
   * when the run state does not record it.
   */
  sections: { window: number | null; rows: Array<{ section: string; tokens: number; share: number }> } | null;
  decision: ModelDecisionView;
}

/** The chat-completions request fields shown as parameters. */
const PARAMETERS = [
  'model',
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'stream',
  'seed',
  'stop',
  'n',
  'presence_penalty',
  'frequency_penalty',
];
const SHOWN = new Set(['messages', 'tools', ...PARAMETERS]);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** Masks bearer tokens and `api_key`-like JSON fields in a text. */
export function mask(text: string): string {
  return text
    .replace(/(Bearer\s+)[A-Za-z0-9._~+/=-]+/gi, '$1[masked]')
    .replace(/("(?:api[_-]?key|authorization|x-api-key|password|secret)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi, '$1"[masked]"');
}

/** True for a step whose input is a chat-completions request (a model turn). */
export function isModelTurn(s: StepView): boolean {
  return /^model\./.test(s.tool) && isRecord(s.input) && Array.isArray(s.input['messages']);
}

/** The view of model turn `s` of timeline `t`; null when `s` is not a model turn. */
export function modelTurnView(s: StepView, t: Timeline): ModelTurnView | null {
  if (!isModelTurn(s)) return null;
  const input = s.input as Record<string, unknown>;
  const messages = (input['messages'] as unknown[]).filter(isRecord).map((m): ModelMessageView => ({
    role: str(m['role']) ?? '?',
    content:
      typeof m['content'] === 'string' ? mask(m['content']) : m['content'] === null || m['content'] === undefined ? null : mask(JSON.stringify(m['content'])),
    tool_calls: (Array.isArray(m['tool_calls']) ? m['tool_calls'] : []).filter(isRecord).map((c) => {
      const fn = isRecord(c['function']) ? c['function'] : {};
      return { id: str(c['id']) ?? '', name: str(fn['name']) ?? '?', arguments: mask(str(fn['arguments']) ?? '') };
    }),
    tool_call_id: str(m['tool_call_id']),
  }));
  const tools = (Array.isArray(input['tools']) ? input['tools'] : []).filter(isRecord).map((tool) => {
    const fn = isRecord(tool['function']) ? tool['function'] : {};
    return { name: str(fn['name']) ?? '?', description: str(fn['description']) ?? '' };
  });
  const parameters: Record<string, unknown> = {};
  for (const k of PARAMETERS) if (k in input) parameters[k] = input[k];
  const answer = isRecord(s.verdict?.extracted) ? (s.verdict.extracted as Record<string, unknown>) : null;
  const usage = answer && isRecord(answer['usage']) ? (answer['usage'] as ModelTurnView['usage']) : null;
  return {
    step_id: s.step_id,
    iteration: s.iteration,
    model: str(answer?.['model']) ?? str(input['model']),
    request: { messages, tools, parameters, hidden: Object.keys(input).filter((k) => !SHOWN.has(k)) },
    raw_answer: s.result?.response == null ? null : mask(s.result.response),
    usage,
    sections: sectionsOf(s, t),
    decision: decisionOf(s, answer, t),
  };
}

const SECTIONS = ['system', 'skill', 'results', 'history', 'generation'] as const;

/** Turn n's section estimates, for a step `M<n>` (the model loop names its turns so). */
function sectionsOf(s: StepView, t: Timeline): ModelTurnView['sections'] {
  const turn = modelTurnOf(s.step_id);
  const raw = t.state?.['model_state_json'];
  if (turn === null || typeof raw !== 'string') return null;
  let state: unknown;
  try {
    state = JSON.parse(raw);
  } catch {
    return null; // a run state whose model state does not parse shows the turn without its sections
  }
  const entry = isRecord(state) && Array.isArray(state['turn_tokens']) ? state['turn_tokens'].filter(isRecord).find((x) => x['turn'] === turn) : undefined;
  if (!entry) return null;
  const tokens = SECTIONS.map((section) => ({ section, tokens: typeof entry[section] === 'number' ? entry[section] : 0 }));
  const total = tokens.reduce((n, x) => n + x.tokens, 0);
  return { window: typeof entry['window'] === 'number' ? entry['window'] : null, rows: tokens.map((x) => ({ ...x, share: total ? x.tokens / total : 0 })) };
}

function decisionOf(s: StepView, answer: Record<string, unknown> | null, t: Timeline): ModelDecisionView {
  if (s.verdict && !s.verdict.valid) {
    const failed = s.verdict.checks.filter((c) => !c.passed).map((c) => `${c.name}: ${c.evidence}`);
    return { kind: 'rejected', error_type: s.verdict.error_type, evidence: mask(failed.join('; ') || s.result?.error?.message || '') };
  }
  if (!answer) return { kind: 'pending' };
  // The steps Thought made of this turn are named after it: M<n>_1, M<n>_2 (react), M<n>_S1 (a plan).
  const made = t.iterations
    .filter((w) => w.iteration > s.iteration)
    .flatMap((w) => w.steps)
    .filter((x) => x.step_id.startsWith(`${s.step_id}_`));
  switch (answer['kind']) {
    case 'tool_calls': {
      const calls = Array.isArray(answer['calls']) ? answer['calls'].filter(isRecord) : [];
      return {
        kind: 'tool_calls',
        calls: calls.map((c, i) => {
          const step = made.find((x) => x.step_id === `${s.step_id}_${i + 1}`) ?? null;
          return { step_id: step?.step_id ?? null, tool: str(c['tool']) ?? '?', arguments: c['arguments'], status: step?.status ?? null };
        }),
      };
    }
    case 'final':
      return { kind: 'final', answer: mask(str(answer['content']) ?? '') };
    case 'plan': {
      const plan = isRecord(answer['plan']) ? answer['plan'] : {};
      const steps = (Array.isArray(plan['steps']) ? plan['steps'] : []).filter(isRecord);
      return {
        kind: 'plan',
        steps: steps.map((x) => ({
          id: str(x['id']) ?? '?',
          tool: str(x['tool']) ?? '?',
          depends_on: Array.isArray(x['depends_on']) ? x['depends_on'].map(String) : [],
        })),
        output: plan['output'] ?? null,
      };
    }
    case 'reflection': {
      const r = isRecord(answer['reflection']) ? answer['reflection'] : {};
      return { kind: 'reflection', action: str(r['action']) ?? '?', reason: mask(str(r['reason']) ?? '') };
    }
    default:
      return { kind: 'pending' };
  }
}
