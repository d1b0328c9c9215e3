/**
 * A skill's SKILL.md frontmatter: its schema (the Agent Skills format's keys and our `metadata`
 * keys, processors/thought/skills.ts tells them), and the messages that name a broken rule, a
 * misspelled key and the value found.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

export const SKILL_PLANNERS = ['plan', 'react', 'plan-replan'] as const;
export type SkillPlanner = (typeof SKILL_PLANNERS)[number];

const POSITIVE_INT = '^[1-9][0-9]{0,9}$';
// The format's name rule. Unicode lowercase letters are allowed, as in the reference validator (skills-ref).
const NAME_PATTERN = '^(?!-)(?!.*--)[\\p{Ll}\\p{Lo}\\p{Nd}-]+(?<!-)$';
const INTENT = '[a-z][a-z0-9_]*';

/** Our metadata keys that hold integers, with their property names and ranges. */
export const INTEGER_KEYS = {
  'max-model-turns': { field: 'maxModelTurns', min: 1, max: 100 },
  'token-budget': { field: 'tokenBudget', min: 1, max: 100_000_000 },
  'context-window': { field: 'contextWindow', min: 256, max: 10_000_000 },
  'max-tokens': { field: 'maxTokens', min: 1, max: 1_000_000 },
  'max-replans': { field: 'maxReplans', min: 1, max: 20 },
} as const;

export const FORMAT_KEYS = ['name', 'description', 'license', 'compatibility', 'allowed-tools', 'metadata'] as const;
// `approval`, `approval-timeout` and `parked-ttl` are read by processors/wiring (approvalSettings, processors/thought/approval-rules.ts; parkingSettings, processors/thought/forced-end.ts).
export const OUR_METADATA_KEYS = [
  'version',
  'intents',
  'planner',
  'model',
  'grounded-by',
  'answer-states',
  'answer-after',
  'tool-calls',
  'approval',
  'approval-timeout',
  'parked-ttl',
  ...Object.keys(INTEGER_KEYS),
];
export const TOOL_CALL_MODES = ['native', 'json_schema'] as const;

/** The one schema for a skill's frontmatter, our metadata keys included. */
const frontmatterSchema = {
  type: 'object',
  required: ['name', 'description'],
  // Keys of other products are ignored (see the module comment), so no `additionalProperties: false`.
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 64, pattern: NAME_PATTERN },
    description: { type: 'string', minLength: 1, maxLength: 1024, pattern: '\\S' },
    license: { type: 'string', minLength: 1 },
    compatibility: { type: 'string', minLength: 1, maxLength: 500 },
    'allowed-tools': { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string', minLength: 1 } }] },
    metadata: {
      type: 'object',
      additionalProperties: { type: 'string' },
      properties: {
        version: { type: 'string', pattern: POSITIVE_INT },
        intents: { type: 'string', pattern: `^\\s*${INTENT}(\\s*,\\s*${INTENT})*\\s*$` },
        planner: { type: 'string', enum: SKILL_PLANNERS },
        model: { type: 'string', minLength: 1, maxLength: 200 },
        'grounded-by': { type: 'string', pattern: '\\S' },
        'answer-states': { type: 'string', pattern: '^\\s*[a-z][\\w.-]*\\.[a-z_][a-z0-9_]*(\\s+[a-z][\\w.-]*\\.[a-z_][a-z0-9_]*)*\\s*$' },
        'tool-calls': { type: 'string', enum: TOOL_CALL_MODES },
        ...Object.fromEntries(Object.keys(INTEGER_KEYS).map((k) => [k, { type: 'string', pattern: POSITIVE_INT }])),
      },
    },
  },
} as const;

export interface Frontmatter {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  'allowed-tools'?: string | string[];
  metadata?: Record<string, string>;
  [other: string]: unknown;
}

/** What each rule says when broken, by field: the message names the field and the rule. */
export const RULES: Record<string, string> = {
  name: 'must be 1-64 lowercase letters, digits and hyphens, not starting or ending with a hyphen, without "--"',
  description: 'must be 1-1024 characters and not blank',
  license: 'must be a non-empty string',
  compatibility: 'must be 1-500 characters',
  'allowed-tools': 'must be a space-delimited string or a list of tool names',
  metadata: 'must be a map of string keys to string values',
  'metadata.version': 'must be a positive integer written as a string, e.g. "1"',
  'metadata.intents': 'must be comma-separated intent names (lowercase letters, digits, underscores)',
  'metadata.planner': `must be one of ${SKILL_PLANNERS.join(', ')}`,
  'metadata.model': 'must be a model name of 1-200 characters',
  'metadata.grounded-by': 'must name one or more tools of allowed-tools, separated by spaces',
  'metadata.answer-states': 'must name one or more <tool>.<field> of allowed-tools, separated by spaces',
  'metadata.tool-calls': `must be one of ${TOOL_CALL_MODES.join(', ')}`,
  ...Object.fromEntries(
    Object.entries(INTEGER_KEYS).map(([k, r]) => [`metadata.${k}`, `must be an integer from ${r.min} to ${r.max} written as a string, e.g. "${r.min}"`]),
  ),
};

let validateFrontmatter: ValidateFunction<Frontmatter> | undefined;

export function frontmatterValidator(): ValidateFunction<Frontmatter> {
  validateFrontmatter ??= new Ajv({ allErrors: true, strict: true }).compile<Frontmatter>(frontmatterSchema);
  return validateFrontmatter;
}

/** Splits `---\n<yaml>\n---\n<body>`; null when the file does not open with frontmatter. */
export function splitFrontmatter(text: string): { yamlText: string; body: string } | null {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (lines[0]?.trimEnd() !== '---') return null;
  const close = lines.findIndex((line, i) => i > 0 && line.trimEnd() === '---');
  if (close < 0) return null;
  return {
    yamlText: lines.slice(1, close).join('\n'),
    body: lines
      .slice(close + 1)
      .join('\n')
      .trim(),
  };
}

/** A key that is a known key spelled another way (`allowed_tools`, `maxTokens`) is refused rather than ignored. */
export function misspelled(keys: string[], known: readonly string[], prefix: string): string | undefined {
  const norm = (k: string) =>
    k
      .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
      .replace(/_/g, '-')
      .toLowerCase();
  for (const key of keys) {
    if (known.includes(key)) continue;
    const meant = known.find((k) => norm(k) === norm(key));
    if (meant) return `unknown key "${prefix}${key}" (did you mean "${prefix}${meant}"?)`;
  }
  return undefined;
}

/** One line: each broken rule, naming the field, the rule and the value found. */
export function describeErrors(errors: ErrorObject[], front: Record<string, unknown>): string {
  const lines = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'required') {
      lines.add(`missing required field "${(e.params as { missingProperty: string }).missingProperty}"`);
      continue;
    }
    const parts = e.instancePath
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (parts[0] === 'allowed-tools') {
      lines.add(`allowed-tools ${RULES['allowed-tools']}`);
      continue;
    }
    if (parts.length === 0) {
      lines.add('frontmatter must be a YAML mapping');
      continue;
    }
    const field = parts.slice(0, 2).join('.');
    const value = parts.reduce<unknown>((v, p) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[p] : undefined), front);
    const rule = RULES[field] ?? (parts[0] === 'metadata' ? 'must be a string (quote it in YAML)' : e.message);
    const got =
      typeof value === 'string'
        ? value.length > 60
          ? `${value.length} characters`
          : `"${value}"`
        : value === null
          ? 'null'
          : Array.isArray(value)
            ? 'a list'
            : typeof value;
    lines.add(`${field} ${rule} (got ${got})`);
  }
  return [...lines].join('; ');
}
