/**
 * Scenario files: the format (a JSON Schema, checked with ajv at start-up),
 * loading, and the deterministic choice of an answer for a conversation.
 *
 * A scenario (`<skill-name>.json`) is a list of rules tried in order; the
 * first rule whose conditions hold and whose templates can all be filled
 * gives the answer. model-sim/README.md documents the format with examples.
 *
 * @module
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';

import { lastResultOf, type Conversation } from './conversation.ts';

/** Name of the scenario used for skills that have none (and for requests without a `Skill:` line). */
export const DEFAULT_SCENARIO = 'default';

/** A condition over the conversation; every field given must hold. */
export interface When {
  /** Each of these tools has been called (catalog names). */
  called?: string[];
  /** None of these tools has been called. */
  notCalled?: string[];
  /** The user text matches this regular expression (JavaScript syntax, no flags). */
  user?: string;
  /** The user text does not match this regular expression. */
  notUser?: string;
  /** The last result of `tool` has, at `path` (dot-separated), a value that satisfies every operator given. */
  result?: {
    tool: string;
    path: string;
    equals?: unknown;
    in?: unknown[];
    notIn?: unknown[];
    /** `true`: the field is present (and not null); `false`: it is absent or null. */
    exists?: boolean;
  };
  /** The last result of this tool (`*`: the last tool result of all) is an error. */
  error?: string;
  /** The request asks for this model turn (1 + the assistant messages so far). */
  turn?: number;
}

/** One tool call of an answer; `arguments` is a template (see {@link fill}). */
export interface CallTemplate {
  tool: string;
  arguments: Record<string, unknown>;
}

/** An answer: exactly one of the three. */
export type AnswerTemplate = { tool_calls: CallTemplate[] } | { content: string } | { json: Record<string, unknown> };

export interface Rule {
  /** Shown in stats and errors. */
  name: string;
  when?: When;
  answer: AnswerTemplate;
}

/** A scenario file's content. */
export interface Scenario {
  description?: string;
  /** Rules for ordinary turns. */
  rules: Rule[];
  /** Rules for turns whose system message's second line is `Turn: reflection`; without them, the default scenario's are used. */
  reflection?: Rule[];
  /** Rules for `Turn: plan` (a whole plan, as a `json` answer); without them, the default scenario's are used. */
  plan?: Rule[];
}

/** A loaded scenario: its file's content and where it came from. */
export interface LoadedScenario extends Scenario {
  name: string;
  file: string;
}

/** The scenarios of a folder, by skill name. */
export type ScenarioSet = ReadonlyMap<string, LoadedScenario>;

/** A scenario file is unreadable or breaks the format; the message is one line naming the file and the JSON path. */
export class ScenarioError extends Error {
  readonly file: string;
  readonly path: string;

  constructor(file: string, path: string, message: string) {
    super(`${file}: ${path || '/'}: ${message}`);
    this.name = 'ScenarioError';
    this.file = file;
    this.path = path;
  }
}

const TOOL_NAME = { type: 'string', pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$' } as const;
const RULE = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'answer'],
  properties: {
    name: { type: 'string', minLength: 1 },
    when: {
      type: 'object',
      additionalProperties: false,
      properties: {
        called: { type: 'array', minItems: 1, items: TOOL_NAME },
        notCalled: { type: 'array', minItems: 1, items: TOOL_NAME },
        user: { type: 'string', minLength: 1 },
        notUser: { type: 'string', minLength: 1 },
        result: {
          type: 'object',
          additionalProperties: false,
          required: ['tool', 'path'],
          minProperties: 3,
          properties: {
            tool: TOOL_NAME,
            path: { type: 'string', minLength: 1 },
            equals: {},
            in: { type: 'array', minItems: 1 },
            notIn: { type: 'array', minItems: 1 },
            exists: { type: 'boolean' },
          },
        },
        error: { anyOf: [TOOL_NAME, { const: '*' }] },
        turn: { type: 'integer', minimum: 1 },
      },
    },
    answer: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      maxProperties: 1,
      properties: {
        tool_calls: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['tool', 'arguments'],
            properties: { tool: TOOL_NAME, arguments: { type: 'object' } },
          },
        },
        content: { type: 'string', minLength: 1 },
        json: { type: 'object' },
      },
    },
  },
} as const;

/** The scenario file format, as JSON Schema. */
export const SCENARIO_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['rules'],
  properties: {
    description: { type: 'string' },
    rules: { type: 'array', items: RULE },
    reflection: { type: 'array', items: RULE },
    plan: { type: 'array', items: RULE },
  },
} as const;

const validateScenario = new Ajv({ allErrors: false, strict: true }).compile<Scenario>(SCENARIO_SCHEMA);

const FILE_NAME = /^([a-z0-9][a-z0-9-]*)\.json$/;

function ajvMessage(e: ErrorObject): string {
  if (e.keyword === 'additionalProperties') return `unknown field "${String((e.params as { additionalProperty: string }).additionalProperty)}"`;
  if (e.keyword === 'maxProperties' || (e.keyword === 'minProperties' && e.instancePath.endsWith('/answer'))) {
    return 'an answer has exactly one of tool_calls, content, json';
  }
  if (e.keyword === 'minProperties') return 'needs at least one of equals, in, notIn, exists';
  return e.message ?? e.keyword;
}

/**
 * Checks one scenario beyond its schema: regular expressions compile and
 * templates are well formed.
 *
 * @throws {@link ScenarioError}
 */
function checkScenario(file: string, s: Scenario): void {
  const lists: Array<['rules' | 'reflection' | 'plan', Rule[] | undefined]> = [
    ['rules', s.rules],
    ['reflection', s.reflection],
    ['plan', s.plan],
  ];
  for (const [list, rules] of lists) {
    (rules ?? []).forEach((rule, i) => {
      const at = `/${list}/${i}`;
      for (const key of ['user', 'notUser'] as const) {
        const re = rule.when?.[key];
        if (re !== undefined) compileRegex(file, `${at}/when/${key}`, re, '');
      }
      walkTemplates(rule.answer, `${at}/answer`, (text, path) => parseTemplate(text, file, path));
    });
  }
}

function compileRegex(file: string, path: string, source: string, flags: string): RegExp {
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new ScenarioError(file, path, `invalid regular expression: ${(err as Error).message}`);
  }
}

/** Calls `fn` on every string inside a value (with its JSON pointer). */
function walkTemplates(v: unknown, path: string, fn: (text: string, path: string) => void): void {
  if (typeof v === 'string') fn(v, path);
  else if (Array.isArray(v)) v.forEach((x, i) => walkTemplates(x, `${path}/${i}`, fn));
  else if (typeof v === 'object' && v !== null) {
    for (const [k, x] of Object.entries(v)) walkTemplates(x, `${path}/${k}`, fn);
  }
}

/**
 * Loads every `<skill-name>.json` of a folder (other files are ignored).
 *
 * @throws {@link ScenarioError} on the first unreadable or invalid file, naming it and the JSON path.
 */
export function loadScenarios(dir: string): ScenarioSet {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json')).sort();
  } catch (err) {
    throw new ScenarioError(dir, '', `cannot read the scenarios folder: ${(err as Error).message}`);
  }
  const out = new Map<string, LoadedScenario>();
  for (const n of names) {
    const file = join(dir, n);
    const m = FILE_NAME.exec(n);
    if (!m?.[1]) throw new ScenarioError(file, '', 'a scenario file is named <skill-name>.json: lower-case letters, digits and hyphens');
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new ScenarioError(file, '', `not valid JSON: ${(err as Error).message}`);
    }
    if (!validateScenario(parsed)) {
      const e = validateScenario.errors?.[0];
      throw new ScenarioError(file, e?.instancePath ?? '', e ? ajvMessage(e) : 'invalid');
    }
    checkScenario(file, parsed);
    out.set(m[1], { ...parsed, name: m[1], file });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Templates
// ---------------------------------------------------------------------------

type Token = { kind: 'user'; re: RegExp; number?: boolean } | { kind: 'tool'; ref: string } | { kind: 'skill' } | { kind: 'ref'; ref: string };
type Part = string | Token;

const TOKEN = /\{\{(?:(user|number):\/((?:\\.|[^\\])*?)\/([a-z]*)|tool:([^{}]+)|(skill)|ref:([^{}]+))\}\}/g;
/** A plan's own reference (`{{S1.order_id}}`), kept as text in a plan answer. */
const PLAN_REF = /\{\{[A-Za-z][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\}\}/g;

/**
 * Splits a template string into literal text and tokens:
 * `{{user:/RE/flags}}`, `{{tool:<tool>.<path>}}`, `{{skill}}`.
 *
 * @throws {@link ScenarioError} on a malformed token (any `{{` left over) or a regex that does not compile.
 */
function parseTemplate(text: string, file: string, path: string): Part[] {
  const parts: Part[] = [];
  let last = 0;
  const literal = (s: string): void => {
    if (s.replace(PLAN_REF, '').includes('{{')) throw new ScenarioError(file, path, `malformed template near "${s.slice(s.indexOf('{{'), s.indexOf('{{') + 40)}" (use {{user:/regex/}}, {{tool:<tool>.<field>}} or {{skill}})`);
    if (s !== '') parts.push(s);
  };
  for (const m of text.matchAll(TOKEN)) {
    literal(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] !== undefined) {
      const flags = m[3] ?? '';
      if (flags.includes('g') || flags.includes('y')) throw new ScenarioError(file, path, `the g and y flags are not allowed in {{${m[1]}:/regex/}}`);
      parts.push({ kind: 'user', re: compileRegex(file, path, m[2], flags + 'g'), ...(m[1] === 'number' ? { number: true } : {}) });
    } else if (m[4] !== undefined) {
      parts.push({ kind: 'tool', ref: m[4].trim() });
    } else if (m[6] !== undefined) {
      parts.push({ kind: 'ref', ref: m[6].trim() });
    } else {
      parts.push({ kind: 'skill' });
    }
  }
  literal(text.slice(last));
  return parts;
}

/** Template strings are parsed once; scenarios are validated at load, so parsing here cannot fail. */
const parsed = new Map<string, Part[]>();
function partsOf(text: string): Part[] {
  let p = parsed.get(text);
  if (p === undefined) {
    p = parseTemplate(text, '(template)', '');
    parsed.set(text, p);
  }
  return p;
}

/** Signals a template that cannot be filled from this conversation: the rule does not apply. */
const UNFILLED = Symbol('unfilled');

function valueAt(v: unknown, path: string[]): unknown {
  let cur = v;
  for (const key of path) {
    if (Array.isArray(cur) && /^\d+$/.test(key)) cur = cur[Number(key)];
    else if (typeof cur === 'object' && cur !== null && Object.hasOwn(cur, key)) cur = (cur as Record<string, unknown>)[key];
    else return undefined;
  }
  return cur;
}

/** Tool names a `{{tool:...}}` reference may start with: offered, called or answered ones. */
function knownTools(conv: Conversation): string[] {
  const names = new Set<string>(conv.offeredTools);
  for (const c of conv.calls) names.add(c.tool);
  for (const r of conv.results) if (r.tool !== null) names.add(r.tool);
  // Longest first, so `a.b.c` wins over `a.b` for `{{tool:a.b.c.field}}`.
  return [...names].sort((x, y) => y.length - x.length);
}

function resolveToken(t: Token, conv: Conversation): unknown {
  switch (t.kind) {
    case 'skill':
      return conv.skill ?? DEFAULT_SCENARIO;
    case 'user': {
      // The last match wins, as in the flows (a reply that corrects a value overrides it).
      let found: RegExpExecArray | undefined;
      for (const m of conv.userText.matchAll(t.re)) found = m;
      if (found === undefined) return UNFILLED;
      const text = found[1] ?? found[0];
      // `{{number:/regex/}}`: the match as a JSON number (an amount the customer asked for).
      if (!t.number) return text;
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n) ? n : UNFILLED;
    }
    case 'ref': {
      // `{{ref:<tool>.<field>}}`: a plan reference to that tool's last successful call, by its call id.
      const tool = knownTools(conv).find((n) => t.ref.startsWith(`${n}.`));
      const result = tool === undefined ? undefined : lastResultOf(conv, tool);
      if (result === undefined || result.error || result.callId === null) return UNFILLED;
      return `{{${result.callId}.${t.ref.slice(tool!.length + 1)}}}`;
    }
    case 'tool': {
      const tool = knownTools(conv).find((n) => t.ref === n || t.ref.startsWith(`${n}.`));
      if (tool === undefined) return UNFILLED;
      const result = lastResultOf(conv, tool);
      if (result === undefined) return UNFILLED;
      const rest = t.ref.slice(tool.length + 1);
      const v = rest === '' ? result.value : valueAt(result.value, rest.split('.'));
      return v === undefined || v === null ? UNFILLED : v;
    }
  }
}

/**
 * Fills a template value: every string is a template; a string that is a
 * single token keeps the value's JSON type (`"{{tool:orders.get.total_cents}}"`
 * → `38312`), a token inside text is stringified.
 *
 * @returns the filled value, or {@link UNFILLED} when a token has no value here.
 */
function fill(v: unknown, conv: Conversation): unknown {
  if (typeof v === 'string') {
    const parts = partsOf(v);
    const only = parts.length === 1 ? parts[0] : undefined;
    if (only !== undefined && typeof only !== 'string') return resolveToken(only, conv);
    let out = '';
    for (const p of parts) {
      if (typeof p === 'string') out += p;
      else {
        const x = resolveToken(p, conv);
        if (x === UNFILLED) return UNFILLED;
        out += typeof x === 'string' ? x : JSON.stringify(x);
      }
    }
    return out;
  }
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (const x of v) {
      const f = fill(x, conv);
      if (f === UNFILLED) return UNFILLED;
      out.push(f);
    }
    return out;
  }
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const f = fill(x, conv);
      if (f === UNFILLED) return UNFILLED;
      out[k] = f;
    }
    return out;
  }
  return v;
}

// ---------------------------------------------------------------------------
// Choosing the answer
// ---------------------------------------------------------------------------

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
  if (when.result) {
    const { tool, path, equals, in: among, notIn, exists } = when.result;
    const r = lastResultOf(conv, tool);
    if (r === undefined) return false;
    const v = valueAt(r.value, path.split('.'));
    const present = v !== undefined && v !== null;
    if (exists !== undefined && exists !== present) return false;
    if (equals !== undefined && !deepEqual(v, equals)) return false;
    if (among && !among.some((x) => deepEqual(v, x))) return false;
    if (notIn && (!present || notIn.some((x) => deepEqual(v, x)))) return false;
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
    const question = a.tool_calls.length === 1 && a.tool_calls[0]!.tool === 'ask_customer' && (opts.noTools || !conv.offeredTools.includes('ask_customer')) ? fill(a.tool_calls[0]!.arguments.question, conv) : undefined;
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
