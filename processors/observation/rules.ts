import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Ajv } from 'ajv';
import { ConfigError } from '../../runtime/errors.ts';
import { canonicalJson } from '../../runtime/json-field.ts';
import { packagePath } from '../../runtime/paths.ts';

/** A value that must never appear at a JSON pointer of a tool's data. */
export interface ForbiddenRule {
  path: string;
  values: unknown[];
  reason: string;
}

/** Observation's versioned configuration (`rules/observation.json`, or TAO_OBSERVATION_RULES). */
export interface ObservationRules {
  version: number;
  /**
   * Not in the file: set by {@link loadObservationRules}, and written with every verdict record as
   * `rules_version`: `<version>#<first 12 hex of the sha256 of the file's canonical JSON>`. The hash
   * changes with any edit, so rules changed without a new `version` still show in `replay --verify`
   * as configuration drift, not code drift.
   */
  fingerprint: string;
  /** A result whose total response time exceeds this multiple of the tool's timeout fails the latency check. */
  latencyFactor: number;
  /** Weights of the check groups in the confidence score; they sum to 1. */
  weights: { hard: number; semantic: number; consistency: number };
  /** The classifier's label replaces the rules' error type only at or above this confidence. */
  semanticAdoptThreshold: number;
  defaults: { forbidden: ForbiddenRule[] };
  tools: Record<string, { forbidden: ForbiddenRule[] }>;
}

const forbidden = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['path', 'values', 'reason'],
    properties: { path: { type: 'string', pattern: '^(/[^/]*)+$' }, values: { type: 'array', minItems: 1 }, reason: { type: 'string', minLength: 1 } },
  },
} as const;

const rulesSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'latencyFactor', 'weights', 'semanticAdoptThreshold', 'defaults', 'tools'],
  properties: {
    version: { type: 'integer', minimum: 1 },
    latencyFactor: { type: 'number', exclusiveMinimum: 0 },
    weights: {
      type: 'object',
      additionalProperties: false,
      required: ['hard', 'semantic', 'consistency'],
      properties: { hard: { type: 'number', minimum: 0 }, semantic: { type: 'number', minimum: 0 }, consistency: { type: 'number', minimum: 0 } },
    },
    semanticAdoptThreshold: { type: 'number', minimum: 0, maximum: 1 },
    defaults: { type: 'object', additionalProperties: false, required: ['forbidden'], properties: { forbidden } },
    tools: { type: 'object', additionalProperties: { type: 'object', additionalProperties: false, required: ['forbidden'], properties: { forbidden } } },
  },
} as const;

export const DEFAULT_RULES_FILE = packagePath('rules', 'observation.json');

/**
 * Reads and validates the rules; checks that the weights sum to 1 and that every tool named exists.
 * @throws ConfigError naming the file and each problem.
 */
export function loadObservationRules(path: string, ajv: Ajv, knownTools: (name: string) => boolean): ObservationRules {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${path}: ${(err as Error).message}`);
  }
  const validate = ajv.compile<Omit<ObservationRules, 'fingerprint'>>(rulesSchema);
  if (!validate(raw)) throw new ConfigError(`${path}: ${ajv.errorsText(validate.errors)}`);
  const { hard, semantic, consistency } = raw.weights;
  if (Math.abs(hard + semantic + consistency - 1) > 1e-9) throw new ConfigError(`${path}: weights must sum to 1 (got ${hard + semantic + consistency})`);
  const unknown = Object.keys(raw.tools).filter((t) => !knownTools(t));
  if (unknown.length) throw new ConfigError(`${path}: rules for tools that are not in the catalog: ${unknown.join(', ')}`);
  return { ...raw, fingerprint: `${raw.version}#${createHash('sha256').update(canonicalJson(raw)).digest('hex').slice(0, 12)}` };
}
