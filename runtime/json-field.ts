import { ContractViolation, errorMessage } from './errors.ts';

/**
 * Parses a JSON document carried in a string field of a loop record (`run.plan_json`,
 * `data_json`, ...). The stage that wrote the field wrote JSON, so text that does not parse breaks
 * the record's contract: the record is dead-lettered as CONTRACT_VIOLATION, naming the field.
 */
export function jsonField(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ContractViolation(`${field} is not valid JSON: ${errorMessage(err)}`);
  }
}

/** {@link jsonField} for a field that must hold a JSON object. */
export function jsonObjectField(text: string, field: string): Record<string, unknown> {
  const value = jsonField(text, field);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ContractViolation(`${field} is not a JSON object: ${text.slice(0, 80)}`);
  return value as Record<string, unknown>;
}

/** JSON text with every object's keys sorted: equal for equal values, whatever order the keys were written in. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
}
