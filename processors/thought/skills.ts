/**
 * Skills: what the model in the loop is told and which tools it may call, one folder per skill in the
 * Agent Skills open format (https://agentskills.io/specification), so that a skill written for
 * another product loads here.
 *
 *     skills/<name>/SKILL.md        YAML frontmatter between `---` lines, then the Markdown prompt
 *     skills/<name>/references/     optional; read on demand by {@link Skill.reference}
 *     skills/<name>/scripts/, assets/   optional; never run or read by the runtime
 *
 * The loader does file I/O at start-up (like the flows loader in planners/flows.ts) and is kept out of
 * Thought's pure core: a run carries the skill's `name@version`, the prompt text and the tool names,
 * never a file path.
 *
 * Frontmatter, as the format defines it (strict where the format is strict):
 *
 * | key | rule |
 * |---|---|
 * | `name` | required; 1-64 lowercase letters (Unicode, as the reference validator allows), digits and hyphens; no leading or trailing hyphen, no `--`; equals the folder name |
 * | `description` | required; 1-1024 characters, not blank |
 * | `license` | optional string |
 * | `compatibility` | optional; 1-500 characters |
 * | `allowed-tools` | optional; a space-delimited string or a list of strings; here each must be a tool of the catalog |
 * | `metadata` | optional; a map of string keys to string values (a number must be quoted) |
 *
 * Other top-level keys (other products add their own, e.g. `argument-hint`, `disable-model-invocation`)
 * are ignored and listed in {@link Skill.ignoredKeys}: the format's reference validator refuses them,
 * but its client guide asks clients to load such skills. A key that only differs from a known key by
 * spelling (`allowed_tools`, `allowedTools`, `metadata.max_tokens`) is refused, not ignored.
 *
 * Our own settings live under `metadata`, all strings:
 *
 * | metadata key | meaning | default |
 * |---|---|---|
 * | `version` | positive integer; required for the skill to run (recorded with every run as `name@version`) | none: not runnable |
 * | `intents` | comma-separated intents the skill serves (the router picks a skill by intent); needs `version` | none |
 * | `planner` | `plan`, `react` or `plan-replan` | the loop's default planner |
 * | `model` | model name for this skill's requests | the configured model |
 * | `max-model-turns` | model turns per run (1-100) | {@link SKILL_DEFAULTS} 8 |
 * | `token-budget` | tokens (prompt + completion) per run (1-100000000) | 20000 |
 * | `context-window` | tokens of the model's context window (256-10000000) | 8192 |
 * | `max-tokens` | `max_tokens` of one request (1-1000000, below `context-window`) | 512 |
 * | `max-replans` | new plans a `plan-replan` run may ask for after its first (1-20) | 2 |
 * | `grounded-by` | space-separated tools of `allowed-tools`: a final answer needs a verified result of one of them first | none: any final answer |
 * | `answer-states` | space-separated `<tool>.<field>` of `allowed-tools`: when the run has a verified result of that tool, a final answer must state that field's value (an id, a number, a date, a word) | none |
 * | `answer-after` | `;`-separated `<tool>` or `<tool> if <tool>.<field>[=<v>\|<v>…]` of `allowed-tools`: a final answer waits until the tool was called (whatever its result), when the last verified result of the condition's tool has that field (with one of those values) | none |
 * | `tool-calls` | `native` (the request offers `tools`) or `json_schema` (a constrained `response_format`: one call, a final answer or a question) | TAO_LLM_TOOL_CALLS |
 *
 * Why a skill without `version` is loaded but not runnable (rather than given version 1): the
 * `name@version` recorded with a run is what replay and the simulator rely on to know which prompt
 * and tools the model saw; defaulting it would let two different prompts record the same ref.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';

import { parseDocument } from 'yaml';

import { ConfigError } from '../../runtime/errors.ts';
import { packagePath } from '../../runtime/paths.ts';
import type { ToolCatalog } from '../../tools/catalog.ts';
import type { AnswerAfter } from './model/state.ts';

import {
  FORMAT_KEYS,
  INTEGER_KEYS,
  OUR_METADATA_KEYS,
  RULES,
  TOOL_CALL_MODES,
  describeErrors,
  frontmatterValidator,
  misspelled,
  splitFrontmatter,
  type Frontmatter,
  type SkillPlanner,
} from './skill-frontmatter.ts';

export { SKILL_PLANNERS, TOOL_CALL_MODES, type SkillPlanner } from './skill-frontmatter.ts';

/** The values a runnable skill gets when its metadata leaves a number out. */
export const SKILL_DEFAULTS = { maxModelTurns: 8, tokenBudget: 20000, contextWindow: 8192, maxTokens: 512, maxReplans: 2 } as const;

/** A loaded, validated skill. */
export interface Skill {
  /** The frontmatter `name` (equal to the folder name). */
  name: string;
  /** `metadata.version`; null when absent, and then the skill is not {@link runnable}. */
  version: number | null;
  /** `name@version` as recorded with a run (just `name` for an unversioned skill). */
  ref: string;
  description: string;
  license?: string;
  compatibility?: string;
  /** Catalog tool names the model may call in a run of this skill, in the order written. */
  allowedTools: string[];
  /** Intents this skill serves (metadata.intents). */
  intents: string[];
  /** The planner mode; undefined: the loop's default. */
  planner?: SkillPlanner;
  /** Model name override for this skill's requests. */
  model?: string;
  /** Tools one of whose verified results a final answer needs (metadata.grounded-by); empty: none. */
  groundedBy: string[];
  /** `<tool>.<field>` a final answer must state when the run has a verified result of the tool (metadata.answer-states). */
  answerStates?: string[];
  /** Tools a final answer waits for, each when its condition holds (metadata.answer-after). */
  answerAfter?: AnswerAfter[];
  /** How react turns ask for tool calls (metadata.tool-calls); unset: TAO_LLM_TOOL_CALLS. */
  toolCalls?: (typeof TOOL_CALL_MODES)[number];
  maxModelTurns: number;
  tokenBudget: number;
  contextWindow: number;
  maxTokens: number;
  /** New plans a `plan-replan` run may ask for after its first (metadata.max-replans). */
  maxReplans: number;
  /** The Markdown body of SKILL.md, trimmed: the skill's prompt. */
  prompt: string;
  /** Absolute path of the skill's folder. */
  dir: string;
  /** The whole `metadata` map as written (ours and other products' keys). */
  metadata: Record<string, string>;
  /** Top-level frontmatter keys the format does not define, ignored here. */
  ignoredKeys: string[];
  /** False without `metadata.version`; {@link SkillSet.runnable} refuses such a skill. */
  runnable: boolean;
  /** File names under `references/` (listed when called; nothing is read). */
  references(): string[];
  /**
   * The text of `references/<name>`, read on first use and kept.
   * @throws ConfigError when the skill has no such reference.
   */
  reference(name: string): string;
}

/** The skills of one directory, by name. Built once at start-up by {@link loadSkills}. */
export class SkillSet {
  private readonly byIntent = new Map<string, Skill>();

  constructor(private readonly skills: ReadonlyMap<string, Skill>) {
    for (const skill of skills.values()) for (const intent of skill.intents) this.byIntent.set(intent, skill);
  }

  get(name: string): Skill | undefined {
    return this.skills.get(name);
  }

  /**
   * The skill a run of this name uses.
   * @throws ConfigError when there is no such skill or it is not runnable (no metadata.version).
   */
  runnable(name: string): Skill {
    const skill = this.skills.get(name);
    if (!skill) throw new ConfigError(`unknown skill "${name}" (known: ${[...this.skills.keys()].join(', ') || 'none'})`);
    if (!skill.runnable) throw new ConfigError(`skill "${name}" is not runnable: its SKILL.md has no metadata.version`);
    return skill;
  }

  /** The runnable skill that serves an intent, if any (the loader ensures at most one does). */
  forIntent(intent: string): Skill | undefined {
    return this.byIntent.get(intent);
  }

  /** Every skill, runnable or not, by name. */
  list(): Skill[] {
    return [...this.skills.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }
}

export const DEFAULT_SKILLS_DIR = packagePath('skills');

/**
 * Loads every `<dir>/<name>/SKILL.md`. Sub-folders without a SKILL.md and files beside the folders
 * are not skills and are skipped.
 * @throws ConfigError with one line naming the file and the broken rule: a missing folder, frontmatter
 *   that is not YAML or breaks the format's rules, a tool not in the catalog, a bad metadata value,
 *   a link to a missing reference, or two skills serving the same intent.
 */
export function loadSkills(dir: string, catalog: Pick<ToolCatalog, 'get' | 'names'>): SkillSet {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new ConfigError(`skills folder ${display(dir)} does not exist (TAO_SKILLS_DIR)`);
  const skills = new Map<string, Skill>();
  const intents = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const skillDir = resolve(dir, entry.name);
    const files = readdirSync(skillDir);
    if (!files.includes('SKILL.md')) {
      const misnamed = files.find((f) => f.toLowerCase() === 'skill.md');
      if (misnamed) throw new ConfigError(`${display(join(skillDir, misnamed))}: name the file SKILL.md (upper case)`);
      continue;
    }
    const skill = parseSkill(skillDir, entry.name, catalog);
    for (const intent of skill.intents) {
      const other = intents.get(intent);
      if (other) throw new ConfigError(`${display(join(skillDir, 'SKILL.md'))}: metadata.intents: intent "${intent}" is already served by skill "${other}"`);
      intents.set(intent, skill.name);
    }
    skills.set(skill.name, skill);
  }
  return new SkillSet(skills);
}

function parseSkill(skillDir: string, folder: string, catalog: Pick<ToolCatalog, 'get' | 'names'>): Skill {
  const file = join(skillDir, 'SKILL.md');
  const fail = (rule: string): never => {
    throw new ConfigError(`${display(file)}: ${rule}`);
  };
  const { yamlText, body } = splitFrontmatter(readFileSync(file, 'utf8')) ?? fail('must start with YAML frontmatter between two "---" lines');
  const doc = parseDocument(yamlText, { uniqueKeys: true, prettyErrors: false });
  const yamlError = doc.errors[0];
  // +1 for the opening `---`: the line number is the file's, where an editor shows it.
  if (yamlError)
    fail(`frontmatter is not valid YAML (line ${yamlText.slice(0, yamlError.pos[0]).split('\n').length + 1}: ${yamlError.message.split('\n')[0]})`);
  const raw: unknown = doc.toJS();
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) fail('frontmatter must be a YAML mapping (key: value lines)');
  const front = raw as Record<string, unknown>;

  const meta = front.metadata && typeof front.metadata === 'object' && !Array.isArray(front.metadata) ? Object.keys(front.metadata) : [];
  const typo = misspelled(Object.keys(front), FORMAT_KEYS, '') ?? misspelled(meta, OUR_METADATA_KEYS, 'metadata.');
  if (typo) fail(typo);
  const validate = frontmatterValidator();
  if (!validate(front)) fail(describeErrors(validate.errors ?? [], front));
  const fm = front as Frontmatter;
  if (fm.name !== folder) fail(`name "${fm.name}" must equal the folder name "${folder}"`);

  const allowedTools = typeof fm['allowed-tools'] === 'string' ? fm['allowed-tools'].split(/\s+/).filter(Boolean) : [...(fm['allowed-tools'] ?? [])];
  const seen = new Set<string>();
  for (const tool of allowedTools) {
    if (seen.has(tool)) fail(`allowed-tools names "${tool}" twice`);
    seen.add(tool);
    if (!catalog.get(tool)) fail(`allowed-tools names unknown tool "${tool}" (known: ${catalog.names().sort().join(', ')})`);
  }

  const metadata = fm.metadata ?? {};
  const version = metadata.version === undefined ? null : Number(metadata.version);
  const intents = metadata.intents === undefined ? [] : metadata.intents.split(',').map((s) => s.trim());
  const dup = intents.find((intent, i) => intents.indexOf(intent) !== i);
  if (dup) fail(`metadata.intents names "${dup}" twice`);
  if (intents.length && version === null) fail('metadata.intents needs metadata.version: a skill the router can pick must be versioned');
  const numbers: Record<keyof typeof SKILL_DEFAULTS, number> = { ...SKILL_DEFAULTS };
  for (const [key, rule] of Object.entries(INTEGER_KEYS)) {
    const text = metadata[key];
    if (text === undefined) continue;
    const value = Number(text);
    if (value < rule.min || value > rule.max) fail(`metadata.${key} ${RULES[`metadata.${key}`]} (got "${text}")`);
    numbers[rule.field] = value;
  }
  const groundedBy = metadata['grounded-by']?.split(/\s+/).filter(Boolean) ?? [];
  const outside = groundedBy.find((t) => !allowedTools.includes(t));
  if (outside) fail(`metadata.grounded-by names "${outside}", which is not in allowed-tools (${allowedTools.join(' ') || 'none'})`);
  const answerStates = metadata['answer-states']?.split(/\s+/).filter(Boolean) ?? [];
  const unknownState = answerStates.find((f) => !allowedTools.includes(f.slice(0, f.lastIndexOf('.'))));
  if (unknownState) fail(`metadata.answer-states names "${unknownState}", whose tool is not in allowed-tools (${allowedTools.join(' ') || 'none'})`);
  const answerAfter = parseAnswerAfter(metadata['answer-after'] ?? '', allowedTools, fail);
  if (numbers.maxTokens >= numbers.contextWindow)
    fail(`metadata.max-tokens (${numbers.maxTokens}) must be below metadata.context-window (${numbers.contextWindow})`);

  for (const link of body.matchAll(/\]\(\s*(?:\.\/)?references\/([^)\s#?]+)/g)) {
    if (!existsSync(join(skillDir, 'references', link[1]!))) fail(`links to references/${link[1]}, which does not exist`);
  }

  const cache = new Map<string, string>();
  const referencesDir = join(skillDir, 'references');
  const references = (): string[] =>
    existsSync(referencesDir)
      ? readdirSync(referencesDir, { withFileTypes: true })
          .filter((e) => e.isFile())
          .map((e) => e.name)
          .sort()
      : [];
  return {
    name: fm.name,
    version,
    ref: version === null ? fm.name : `${fm.name}@${version}`,
    description: fm.description,
    ...(fm.license !== undefined ? { license: fm.license } : {}),
    ...(fm.compatibility !== undefined ? { compatibility: fm.compatibility } : {}),
    allowedTools,
    intents,
    ...(metadata.planner !== undefined ? { planner: metadata.planner as SkillPlanner } : {}),
    ...(metadata.model !== undefined ? { model: metadata.model } : {}),
    groundedBy,
    ...(answerStates.length ? { answerStates } : {}),
    ...(answerAfter.length ? { answerAfter } : {}),
    ...(metadata['tool-calls'] !== undefined ? { toolCalls: metadata['tool-calls'] as (typeof TOOL_CALL_MODES)[number] } : {}),
    ...numbers,
    prompt: body,
    dir: skillDir,
    metadata,
    ignoredKeys: Object.keys(front).filter((k) => !(FORMAT_KEYS as readonly string[]).includes(k)),
    runnable: version !== null,
    references,
    reference(name: string): string {
      const cached = cache.get(name);
      if (cached !== undefined) return cached;
      // Only a listed file name: no path separators, so a name can never leave references/.
      if (!references().includes(name)) throw new ConfigError(`skill "${fm.name}" has no reference "${name}" (it has: ${references().join(', ') || 'none'})`);
      const text = readFileSync(join(referencesDir, name), 'utf8');
      cache.set(name, text);
      return text;
    },
  };
}

/** A path relative to the working directory when it is inside it (as the error examples read). */
function display(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/**
 * `metadata.answer-after`: `shipping.track if orders.get.status=shipped|delivered; billing.get_invoice`.
 * Every tool named must be one of `allowed-tools`; `fail` throws the skill's configuration error.
 */
export function parseAnswerAfter(text: string, allowedTools: readonly string[], fail: (why: string) => never): AnswerAfter[] {
  const known = (tool: string, entry: string) => {
    if (!allowedTools.includes(tool))
      fail(`metadata.answer-after "${entry}" names "${tool}", which is not in allowed-tools (${allowedTools.join(' ') || 'none'})`);
  };
  return text
    .split(';')
    .map((e) => e.trim())
    .filter(Boolean)
    .map((entry) => {
      const m = /^([\w.-]+)(?:\s+if\s+([\w.-]+)\.(\w+)(?:=([^\s=]+))?)?$/.exec(entry);
      if (!m) return fail(`metadata.answer-after "${entry}" is not "<tool>" or "<tool> if <tool>.<field>[=<value>|<value>...]"`);
      known(m[1]!, entry);
      if (!m[2]) return { tool: m[1]! };
      known(m[2], entry);
      return { tool: m[1]!, when: { tool: m[2], field: m[3]!, ...(m[4] ? { values: m[4].split('|').filter(Boolean) } : {}) } };
    });
}
