/**
 * The planners' versioned configuration files: the flows (`flows/<id>.v<version>.json`) and the
 * routing table (`flows/routes.json`), read and checked at start-up (a bad file stops the process,
 * naming it).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Ajv } from 'ajv';
import { ConfigError } from '../../../runtime/errors.ts';
import routesSchema from '../../../schemas/json/routes.schema.json' with { type: 'json' };
import { packagePath } from '../../../runtime/paths.ts';
import type { Condition } from '../../plan.ts';
import { SlotExtractor, slotSpecSchema, type SlotSpec } from '../slots.ts';
import { INTENTS } from './intent-model.ts';

export const DEFAULT_FLOWS_DIR = packagePath('flows');
export const DEFAULT_ROUTES_FILE = packagePath('flows', 'routes.json');

/** A flow: versioned JSON configuration of a graph of tool nodes (see flows/*.json). */
export interface Flow {
  id: string;
  version: number;
  description: string;
  /** How each input is found in the task text (see {@link SlotSpec}); the tools' contracts decide whether a found value is usable. */
  inputs: Record<string, SlotSpec>;
  nodes: Array<{
    id: string;
    tool: string;
    input: Record<string, unknown>;
    expect?: Record<string, unknown>;
    until?: Condition;
    fallback?: string;
    max_calls?: number;
  }>;
  /** Sequential edges (`from` before `to`); several edges into a node make a join; `when` makes an edge conditional. */
  edges: Array<{ from: string; to: string; when?: Omit<Condition, never> }>;
  output: Record<string, string>;
}

const flowSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'version', 'description', 'inputs', 'nodes', 'edges', 'output'],
  properties: {
    id: { type: 'string', pattern: '^[a-z][a-z0-9-]*$' },
    version: { type: 'integer', minimum: 1 },
    description: { type: 'string' },
    inputs: { type: 'object', additionalProperties: slotSpecSchema },
    nodes: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'tool', 'input'],
        properties: {
          id: { type: 'string' },
          tool: { type: 'string' },
          input: { type: 'object' },
          expect: { type: 'object' },
          until: { type: 'object' },
          fallback: { type: 'string' },
          max_calls: { type: 'integer', minimum: 1 },
        },
      },
    },
    edges: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['from', 'to'],
        properties: { from: { type: 'string' }, to: { type: 'string' }, when: { type: 'object' } },
      },
    },
    output: { type: 'object', additionalProperties: { type: 'string' } },
  },
} as const;

/** Loads and validates every `<id>.v<version>.json` flow of `dir`; a file whose name disagrees with its id and version is refused. */
export function loadFlows(dir: string, ajv: Ajv): Map<string, Flow> {
  const validate = ajv.compile<Flow>(flowSchema);
  const flows = new Map<string, Flow>();
  // Flow files are `<id>.v<version>.json`; other files in the folder (the routing table) are not flows.
  for (const file of readdirSync(dir)
    .filter((f) => /\.v\d+\.json$/.test(f))
    .sort()) {
    const flow: unknown = JSON.parse(readFileSync(join(dir, file), 'utf8'));
    if (!validate(flow)) throw new ConfigError(`${join(dir, file)}: ${ajv.errorsText(validate.errors)}`);
    if (file !== `${flow.id}.v${flow.version}.json`)
      throw new ConfigError(`${join(dir, file)}: holds flow ${flow.id} version ${flow.version}; name it ${flow.id}.v${flow.version}.json`);
    new SlotExtractor(flow.inputs, join(dir, file));
    flows.set(`${flow.id}@${flow.version}`, flow);
  }
  return flows;
}

/** The routing table (flows/routes.json; its format: schemas/json/routes.schema.json): for each intent, the flows that serve it, preferred first. */
export interface Routes {
  version: number;
  intents: Record<string, string[]>;
}

/** Reads and checks the routing table: known intents only, every flow loaded. */
export function loadRoutes(path: string, ajv: Ajv, flows: Map<string, Flow>): Routes {
  const raw: unknown = JSON.parse(readFileSync(path, 'utf8'));
  const validate = ajv.compile<Routes>(routesSchema);
  if (!validate(raw)) throw new ConfigError(`${path}: ${ajv.errorsText(validate.errors)}`);
  for (const [intent, keys] of Object.entries(raw.intents)) {
    if (!(INTENTS as readonly string[]).includes(intent) || intent === 'unknown')
      throw new ConfigError(`${path}: "${intent}" is not a routable intent (${INTENTS.filter((i) => i !== 'unknown').join(', ')})`);
    for (const key of keys) if (!flows.has(key)) throw new ConfigError(`${path}: intent ${intent} routes to flow ${key}, which is not loaded`);
  }
  return raw;
}
