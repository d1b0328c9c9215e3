/**
 * JSON Schemas that come with records, compiled on an ajv of their own: the `expect` of a plan's step
 * (written by a model in plan-replan runs) and a skill's output schema carried by the model request.
 * Compiling one is far dearer than running it, so compiled schemas are kept, but within bounds:
 *
 * - ajv keeps every schema it compiled for its own life (its cache, and the compiled code's scope,
 *   which `removeSchema` does not clear), so an instance that compiles whatever records bring grows
 *   for ever. These schemas are compiled on an ajv made for them (same options and formats as the
 *   contracts' one), which is dropped, with its cache, after `RECYCLE_AFTER` compilations: at most
 *   that many compiled record schemas are held.
 * - A record's schema is not a registered schema: its `$id`s (at any depth) are removed before it
 *   is compiled, so two schemas with the same `$id` and different content both compile (ajv refuses
 *   the second: "schema with key or id ... already exists"), and nothing a record brings can shadow
 *   or be resolved as a contract's schema. A `$ref` to such an `$id` then does not resolve: the
 *   schema is reported as unusable, like any other schema ajv refuses.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { canonicalJson } from '../runtime/json-field.ts';

/** How many record schemas one ajv instance compiles before it is replaced, cache and all. */
export const RECYCLE_AFTER = 1000;

/** A record's schema compiled, or why it could not be (ajv's message). */
export type CompiledSchema = { ok: true; validate: ValidateFunction } | { ok: false; error: string };

interface Generation {
  ajv: Ajv;
  /** Compiled (or refused) schemas of this instance by canonical JSON. */
  compiled: Map<string, CompiledSchema>;
}

/** Schemas brought by records, compiled on recycled ajv instances like `base` (see the module comment). */
export class RecordSchemas {
  private generation: Generation;
  private generations = 1;

  constructor(
    private readonly base: Ajv,
    private readonly recycleAfter = RECYCLE_AFTER,
  ) {
    this.generation = this.fresh();
  }

  /** `schema` compiled (from the cache when the same schema, keys in any order, was compiled before). */
  compile(schema: Record<string, unknown>): CompiledSchema {
    // Looked up as written: a record's schema seen before costs one serialisation, not a copy too.
    const key = canonicalJson(schema);
    const known = this.generation.compiled.get(key);
    if (known) return known;
    const stripped = withoutIds(schema) as Record<string, unknown>;
    if (this.generation.compiled.size >= this.recycleAfter) {
      this.generation = this.fresh();
      this.generations++;
    }
    let result: CompiledSchema;
    try {
      result = { ok: true, validate: this.generation.ajv.compile(stripped) };
    } catch (err) {
      result = { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    this.generation.compiled.set(key, result);
    return result;
  }

  /** What is held now: compiled schemas of the current instance, its ajv's own cache size, instances made so far. */
  stats(): { cached: number; ajvCached: number; generations: number } {
    const ajvCache = (this.generation.ajv as unknown as { _cache?: Map<unknown, unknown> })._cache;
    return { cached: this.generation.compiled.size, ajvCached: ajvCache?.size ?? -1, generations: this.generations };
  }

  private fresh(): Generation {
    // The same options and formats as the contracts' ajv: a record's schema is checked as a contract is.
    return { ajv: new Ajv({ ...this.base.opts, formats: { ...this.base.formats } } as ConstructorParameters<typeof Ajv>[0]), compiled: new Map() };
  }
}

const perAjv = new WeakMap<Ajv, RecordSchemas>();

/** The record schemas compiled alongside `ajv` (one set per contracts' ajv, so per stage). */
export function recordSchemas(ajv: Ajv): RecordSchemas {
  let schemas = perAjv.get(ajv);
  if (!schemas) perAjv.set(ajv, (schemas = new RecordSchemas(ajv)));
  return schemas;
}

/** Keywords whose value is data, not a schema: an `$id` inside is left as it is. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/** `value` without string `$id` keywords at any depth (a record's schema registers nothing); a property named `$id` stays. */
function withoutIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutIds);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
      k === '$id' && typeof v === 'string' ? [] : [[k, DATA_KEYWORDS.has(k) ? v : withoutIds(v)]],
    ),
  );
}
