/**
 * The deterministic choice of a scenario's answer for a conversation (the files' format and
 * loading: scenario-files.ts; the answer templates: templates.ts).
 *
 * A scenario (`<skill-name>.json`) is a list of rules tried in order; the
 * first rule whose conditions hold and whose templates can all be filled
 * gives the answer. model-sim/README.md documents the format with examples.
 *
 * @module
 */

import { lastResultOf, type Conversation } from './conversation.ts';
import { DEFAULT_SCENARIO, type Rule, type ScenarioSet, type When } from './scenario-files.ts';
import { fill, UNFILLED, valueAt } from './templates.ts';

export * from './scenario-files.ts';

/** A filled answer. */
export type Answer =
  | { kind: 'tool_calls'; calls: Array<{ tool: string; arguments: Record<string, unknown> }> }
  | { kind: 'content'; content: string }
  | { kind: 'json'; value: Record<string, unknown> };

/** What {@link decide} chose. */
export interface Decision {
  /** Scenario whose rules were tried. */
  scenario: string;
  /** Name of the rule that answered; `null` when none applied. */
  rule: string | null;
  answer: Answer;
}

/** Options of {@link decide}. */
export interface DecideOptions {
  /** `tool_choice: "none"`: rules answering with tool calls are skipped. */
  noTools?: boolean;
}

const regexCache = new Map<string, RegExp>();
function regex(source: string): RegExp {
  let r = regexCache.get(source);
  if (r === undefined) {
    r = new RegExp(source);
    regexCache.set(source, r);
  }
  return r;
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function holds(when: When | undefined, conv: Conversation): boolean {
  if (when === undefined) return true;
  if (when.turn !== undefined && conv.turn !== when.turn) return false;
  const called = new Set(conv.calls.map((c) => c.tool));
  if (when.called && !when.called.every((t) => called.has(t))) return false;
  if (when.notCalled?.some((t) => called.has(t))) return false;
  if (when.user !== undefined && !regex(when.user).test(conv.userText)) return false;
  if (when.notUser !== undefined && regex(when.notUser).test(conv.userText)) return false;
  if (when.system !== undefined && !regex(when.system).test(conv.system)) return false;
  if (when.notSystem !== undefined && regex(when.notSystem).test(conv.system)) return false;
  if (when.result) {
    const { tool, path, equals, in: among, notIn, exists, matches } = when.result;
    const r = lastResultOf(conv, tool);
    if (r === undefined) return false;
    const v = valueAt(r.value, path.split('.'));
    const present = v !== undefined && v !== null;
    if (exists !== undefined && exists !== present) return false;
    if (equals !== undefined && !deepEqual(v, equals)) return false;
    if (among && !among.some((x) => deepEqual(v, x))) return false;
    if (notIn && (!present || notIn.some((x) => deepEqual(v, x)))) return false;
    if (matches !== undefined && !(typeof v === 'string' && regex(matches).test(v))) return false;
  }
  if (when.error !== undefined) {
    const r = when.error === '*' ? conv.results.at(-1) : lastResultOf(conv, when.error);
    if (r === undefined || !r.error) return false;
  }
  return true;
}

function tryRule(rule: Rule, conv: Conversation, opts: DecideOptions): Answer | undefined {
  if (!holds(rule.when, conv)) return undefined;
  const a = rule.answer;
  if ('tool_calls' in a) {
    // A question to the customer where the request offers no `ask_customer` tool (a client without
    // it, a constrained turn): asked in text, as a model would.
    const question =
      a.tool_calls.length === 1 && a.tool_calls[0]!.tool === 'ask_customer' && (opts.noTools || !conv.offeredTools.includes('ask_customer'))
        ? fill(a.tool_calls[0]!.arguments.question, conv)
        : undefined;
    if (question !== undefined && question !== UNFILLED) return { kind: 'content', content: String(question) };
    if (opts.noTools) return undefined;
    // A scenario never calls a tool the request does not offer (that is the hallucinated_tool fault's job).
    if (!a.tool_calls.every((c) => conv.offeredTools.includes(c.tool))) return undefined;
    const calls: Array<{ tool: string; arguments: Record<string, unknown> }> = [];
    for (const c of a.tool_calls) {
      const args = fill(c.arguments, conv);
      if (args === UNFILLED) return undefined;
      calls.push({ tool: c.tool, arguments: args as Record<string, unknown> });
    }
    return { kind: 'tool_calls', calls };
  }
  if ('content' in a) {
    const content = fill(a.content, conv);
    if (content === UNFILLED) return undefined;
    return { kind: 'content', content: typeof content === 'string' ? content : JSON.stringify(content) };
  }
  const value = fill(a.json, conv);
  return value === UNFILLED ? undefined : { kind: 'json', value: value as Record<string, unknown> };
}

/**
 * Chooses the answer for a conversation: the scenario of its skill (or the
 * default one), the `reflection` rules on a reflection turn (the default
 * scenario's when the skill's has none), and the first rule that holds and
 * whose templates can all be filled.
 *
 * Deterministic: a function of the scenarios and the conversation only.
 */
export function decide(scenarios: ScenarioSet, conv: Conversation, opts: DecideOptions = {}): Decision {
  const own = conv.skill === null ? undefined : scenarios.get(conv.skill);
  const fallback = scenarios.get(DEFAULT_SCENARIO);
  const list = conv.turnKind === 'reflection' ? 'reflection' : conv.turnKind === 'plan' ? 'plan' : 'rules';
  const scenario = list === 'rules' ? (own ?? fallback) : own?.[list] ? own : fallback?.[list] ? fallback : (own ?? fallback);
  const name = scenario?.name ?? DEFAULT_SCENARIO;
  const rules = scenario?.[list] ?? [];
  for (const rule of rules) {
    const answer = tryRule(rule, conv, opts);
    if (answer !== undefined) return { scenario: name, rule: rule.name, answer };
  }
  const skill = conv.skill ?? '(no Skill: line)';
  const content =
    scenario === undefined
      ? `tao-model-sim (a simulator, not a model) has no scenario for skill "${skill}" and no default scenario.`
      : `tao-model-sim (a simulator, not a model): no rule of scenario "${name}" matched this conversation.`;
  return { scenario: name, rule: null, answer: { kind: 'content', content } };
}
