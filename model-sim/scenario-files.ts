/**
 * Scenario files: the format (a JSON Schema, checked with ajv at start-up) and loading a folder of
 * them. model-sim/README.md documents the format with examples.
 *
 * @module
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { parseTemplate } from './templates.ts';
import { ScenarioError, compileRegex } from './scenario-error.ts';

export { DEFAULT_SCENARIO, ScenarioError, compileRegex } from './scenario-error.ts';

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
  /** The first system message (the skill's prompt) matches this regular expression: a rule that obeys an instruction of the prompt. */
  system?: string;
  /** The first system message does not match this regular expression. */
  notSystem?: string;
  /** The last result of `tool` has, at `path` (dot-separated), a value that satisfies every operator given. */
  result?: {
    tool: string;
    path: string;
    equals?: unknown;
    in?: unknown[];
    notIn?: unknown[];
    /** `true`: the field is present (and not null); `false`: it is absent or null. */
    exists?: boolean;
    /** The value is a string this regular expression matches (an error's text: `^timeout`). */
    matches?: string;
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
        system: { type: 'string', minLength: 1 },
        notSystem: { type: 'string', minLength: 1 },
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
            matches: { type: 'string', minLength: 1 },
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
  if (e.keyword === 'minProperties') return 'needs at least one of equals, in, notIn, exists, matches';
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
      for (const key of ['user', 'notUser', 'system', 'notSystem'] as const) {
        const re = rule.when?.[key];
        if (re !== undefined) compileRegex(file, `${at}/when/${key}`, re, '');
      }
      walkTemplates(rule.answer, `${at}/answer`, (text, path) => parseTemplate(text, file, path));
    });
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
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort();
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
