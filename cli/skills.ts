/**
 * `tao skills list|show`: what the loader makes of the skills folder (TAO_SKILLS_DIR), checked against
 * the tool catalog (TAO_TOOL_CATALOG_DIR) exactly as a stage checks them at start-up.
 */
import { parseArgs } from 'node:util';
import { loadSkills, type Skill, type SkillSet } from '../processors/thought/skills.ts';
import { skillsOptionsFromEnv } from '../processors/thought/skills-config.ts';
import { loadSkillGuards, type SkillGuards } from '../processors/guardrails/load.ts';
import { setting } from '../runtime/config.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog } from '../tools/catalog.ts';

const HELP = `usage: tao skills list [--json]      every skill: name@version, planner, intents, tools
       tao skills show <name> [--json]  one skill: frontmatter, policies, output schema, prompt (body) and references

Skills are folders <dir>/<name>/SKILL.md in the Agent Skills format (docs/PLANNERS.md, "Skills").
  TAO_SKILLS_DIR        the skills folder (default: skills/ of the package)
  TAO_TOOL_CATALOG_DIR  the tool catalog allowed-tools is checked against (default: tools/catalog/)
A skill that breaks a rule is reported in one line naming its file, and the command exits 1.`;

/** Runs `tao skills <args>`; resolves with the exit code. ConfigErrors of the loader propagate (bin/tao.js prints them). */
export async function skillsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
  });
  const [sub, name, ...extra] = positionals;
  if (values.help || sub === 'help') {
    console.log(HELP);
    return 0;
  }
  if (sub !== 'list' && sub !== 'show') return fail(`unknown skills command "${sub ?? ''}"`);
  const unexpected = sub === 'list' ? [name, ...extra].filter((a) => a !== undefined) : extra;
  if (unexpected.length) return fail(`unexpected argument "${unexpected[0]}"`);
  const { skills, guards } = load();
  if (sub === 'list') {
    const all = skills.list();
    if (values.json) console.log(JSON.stringify(all.map(summary), null, 2));
    else console.log(table(all));
    return 0;
  }
  if (!name) return fail('skills show needs a skill name: tao skills show refund-request');
  const skill = skills.get(name);
  if (!skill)
    return fail(
      `no skill "${name}" (have: ${
        skills
          .list()
          .map((s) => s.name)
          .join(', ') || 'none'
      })`,
    );
  const guard = guards.get(skill.name);
  if (values.json)
    console.log(
      JSON.stringify(
        {
          ...summary(skill),
          policies: guard?.policies.map(({ name, description, tools, schema }) => ({ name, description, tools, schema })) ?? [],
          output_schema: guard?.outputSchema ?? null,
          prompt: skill.prompt,
        },
        null,
        2,
      ),
    );
  else console.log(show(skill, guard));
  return 0;
}

function load(): { skills: SkillSet; guards: Map<string, SkillGuards> } {
  const catalog = ToolCatalog.load(setting(process.env, 'TAO_TOOL_CATALOG_DIR') ?? DEFAULT_CATALOG_DIR, process.env);
  const dir = skillsOptionsFromEnv(process.env).dir;
  // The guardrail files too (policies.json, output.schema.json), checked as Thought and Observation check them.
  return { skills: loadSkills(dir, catalog), guards: loadSkillGuards(dir, (tool) => catalog.get(tool) !== undefined) };
}

function fail(problem: string): number {
  console.error(`${problem}\n${HELP}`);
  return 2;
}

function summary(s: Skill) {
  return {
    name: s.name,
    version: s.version,
    ref: s.ref,
    runnable: s.runnable,
    description: s.description,
    planner: s.planner ?? null,
    intents: s.intents,
    allowed_tools: s.allowedTools,
    model: s.model ?? null,
    max_model_turns: s.maxModelTurns,
    token_budget: s.tokenBudget,
    context_window: s.contextWindow,
    max_tokens: s.maxTokens,
    license: s.license ?? null,
    compatibility: s.compatibility ?? null,
    metadata: s.metadata,
    ignored_keys: s.ignoredKeys,
    references: s.references(),
    dir: s.dir,
  };
}

function table(skills: Skill[]): string {
  const rows = [
    ['SKILL', 'PLANNER', 'INTENTS', 'TOOLS'],
    ...skills.map((s) => [
      s.runnable ? s.ref : `${s.ref} (not runnable: no metadata.version)`,
      s.planner ?? 'default',
      s.intents.join(',') || '-',
      s.allowedTools.join(' ') || '-',
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

function show(s: Skill, guard?: SkillGuards): string {
  const refs = s.references();
  const lines = [
    `${s.ref}${s.runnable ? '' : '  (not runnable: no metadata.version)'}`,
    `  description     ${s.description}`,
    `  planner         ${s.planner ?? "default (the loop's planner)"}`,
    `  intents         ${s.intents.join(', ') || '-'}`,
    `  allowed-tools   ${s.allowedTools.join(' ') || '-'}`,
    `  model           ${s.model ?? 'default'}`,
    `  budgets         ${s.maxModelTurns} model turns, ${s.tokenBudget} tokens per run, context window ${s.contextWindow}, max_tokens ${s.maxTokens}`,
    ...(s.license ? [`  license         ${s.license}`] : []),
    ...(s.compatibility ? [`  compatibility   ${s.compatibility}`] : []),
    ...(Object.keys(s.metadata).length
      ? [
          `  metadata        ${Object.entries(s.metadata)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ')}`,
        ]
      : []),
    ...(s.ignoredKeys.length ? [`  ignored keys    ${s.ignoredKeys.join(', ')} (not part of the Agent Skills format)`] : []),
    `  references      ${refs.length ? refs.map((r) => `references/${r}`).join(', ') : '-'}`,
    `  policies        ${guard?.policies.length ? guard.policies.map((p) => `${p.name} (${p.tools.join(' ') || 'every call'}): ${p.description}`).join('\n                  ') : '-'}`,
    `  output schema   ${guard?.outputSchema ? JSON.stringify(guard.outputSchema) : '- (the final answer is text)'}`,
    `  folder          ${s.dir}`,
    '',
    s.prompt,
  ];
  return lines.join('\n');
}
