/**
 * JSON Schemas compiled once per ajv instance: the stages check records against schemas that come
 * with them (a tool's response contract, a skill's output schema carried by the model request), and
 * compiling one is far dearer than running it.
 */
import type { Ajv, ValidateFunction } from 'ajv';

/** How many compiled schemas one ajv instance keeps; past it, a new schema is compiled at each use. */
const MAX_CACHED = 1000;

const compiled = new WeakMap<Ajv, Map<string, ValidateFunction>>();

/** `schema` compiled with `ajv`, from the cache when the same schema (by its JSON) was compiled before. */
export function compileCached(ajv: Ajv, schema: Record<string, unknown>): ValidateFunction {
  let cache = compiled.get(ajv);
  if (!cache) compiled.set(ajv, (cache = new Map()));
  const key = JSON.stringify(schema);
  let validate = cache.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    if (cache.size < MAX_CACHED) cache.set(key, validate);
  }
  return validate;
}
