/**
 * Reads a skills folder's guardrail files at start-up (file I/O: kept out of the pure cores):
 *
 *     skills/<name>/policies.json        optional; the policies Observation's gate checks (policies.ts)
 *     skills/<name>/output.schema.json   optional; the JSON Schema of the skill's final answer
 *
 * policies.json is `{"policies": [{"name", "description", "tools"?, "schema"}]}`: `name` 1-64 of
 * `[a-z0-9_]` starting with a letter, unique in the file; `tools` catalog tool names (absent: every
 * call); `schema` a JSON Schema over the policy document, compiled here with ajv's `$data` on.
 * output.schema.json is a JSON Schema of an object (the `final_answer` tool's parameters, or the
 * final branch of a constrained turn), compiled here so a broken one stops start-up.
 *
 * Both Thought (the output schema, for the final turn) and Observation (the policies) load them.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ConfigError } from '../../runtime/errors.ts';
import type { CompiledPolicy } from './policies.ts';

const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv };

/** What a skill folder declares beyond SKILL.md. */
export interface SkillGuards {
  policies: CompiledPolicy[];
  /** The final answer's JSON Schema (output.schema.json), if the skill declares one. */
  outputSchema?: Record<string, unknown>;
}

export const POLICIES_FILE = 'policies.json';
export const OUTPUT_SCHEMA_FILE = 'output.schema.json';

const FILE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['policies'],
  properties: {
    policies: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'description', 'schema'],
        properties: {
          name: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,63}$' },
          description: { type: 'string', minLength: 1, maxLength: 300 },
          tools: { type: 'array', items: { type: 'string', minLength: 1 } },
          schema: { type: 'object' },
        },
      },
    },
  },
} as const;

/** An ajv for policy schemas: `$data` references into the document; an unknown keyword (a typo such as `maximun`) is refused. */
export function createPolicyAjv(): Ajv {
  const ajv = new Ajv({ $data: true, allErrors: true, strictSchema: true, strictRequired: false, strictTypes: false, strictTuples: false });
  addFormats.default(ajv);
  return ajv;
}

/**
 * The guardrails of every skill folder of `dir` that has a SKILL.md, by folder (= skill) name.
 * Skills without either file get no entry.
 * @param knownTool whether a tool is in the catalog (a policy naming another tool is refused)
 * @throws ConfigError with one line naming the file and what is wrong: not JSON, a broken file
 *   schema, a duplicate policy name, an unknown tool, a schema ajv cannot compile
 */
export function loadSkillGuards(dir: string, knownTool: (tool: string) => boolean): Map<string, SkillGuards> {
  const guards = new Map<string, SkillGuards>();
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return guards;
  const ajv = createPolicyAjv();
  const validateFile = ajv.compile(FILE_SCHEMA);
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const skillDir = resolve(dir, entry.name);
    if (!existsSync(join(skillDir, 'SKILL.md'))) continue;
    const policiesFile = join(skillDir, POLICIES_FILE);
    const outputFile = join(skillDir, OUTPUT_SCHEMA_FILE);
    const policies = existsSync(policiesFile) ? loadPolicies(policiesFile, ajv, validateFile, knownTool) : [];
    const outputSchema = existsSync(outputFile) ? loadOutputSchema(outputFile) : undefined;
    if (policies.length || outputSchema) guards.set(entry.name, { policies, ...(outputSchema ? { outputSchema } : {}) });
  }
  return guards;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${display(file)}: not JSON (${(err as Error).message.split('\n')[0]})`);
  }
}

function loadPolicies(file: string, ajv: Ajv, validateFile: ReturnType<Ajv['compile']>, knownTool: (tool: string) => boolean): CompiledPolicy[] {
  const raw = readJson(file);
  if (!validateFile(raw)) throw new ConfigError(`${display(file)}: ${ajv.errorsText(validateFile.errors, { dataVar: 'file' })}`);
  const policies: CompiledPolicy[] = [];
  for (const p of (raw as { policies: Array<{ name: string; description: string; tools?: string[]; schema: Record<string, unknown> }> }).policies) {
    if (policies.some((q) => q.name === p.name)) throw new ConfigError(`${display(file)}: policy "${p.name}" is declared twice`);
    const unknown = (p.tools ?? []).find((t) => !knownTool(t));
    if (unknown) throw new ConfigError(`${display(file)}: policy "${p.name}" names tool "${unknown}", which is not in the catalog`);
    let validate;
    try {
      validate = ajv.compile(p.schema);
    } catch (err) {
      throw new ConfigError(`${display(file)}: policy "${p.name}": its schema does not compile (${(err as Error).message.split('\n')[0]})`);
    }
    policies.push({ name: p.name, description: p.description, tools: p.tools ?? [], schema: p.schema, validate });
  }
  return policies;
}

function loadOutputSchema(file: string): Record<string, unknown> {
  const schema = readJson(file);
  if (!schema || typeof schema !== 'object' || Array.isArray(schema) || (schema as { type?: unknown }).type !== 'object') {
    throw new ConfigError(`${display(file)}: the output schema must be a JSON Schema with "type": "object" (it is the final_answer tool's parameters)`);
  }
  try {
    // Compiled once here only to refuse a broken schema at start-up; the gate compiles what the request carried.
    new Ajv({ allErrors: true, strict: false }).compile(schema);
  } catch (err) {
    throw new ConfigError(`${display(file)}: the output schema does not compile (${(err as Error).message.split('\n')[0]})`);
  }
  return schema as Record<string, unknown>;
}

function display(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
}
