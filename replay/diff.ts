/**
 * Field-level differences between a recorded value and today's. Fields that hold JSON text (plan,
 * outputs, inputs, extracted data) are compared as parsed JSON, so a difference names the field
 * inside them rather than the whole string.
 */

/** One field whose recorded and today's values differ (`undefined` where the field is absent). */
export interface FieldDiff {
  /** Dotted path, `[i]` for array items, `<json>` where a JSON text was parsed. */
  path: string;
  recorded: unknown;
  today: unknown;
}

const MISSING = Symbol('missing');

/** The differences between `recorded` and `today`, in field order, at most `limit` of them. */
export function diffValues(recorded: unknown, today: unknown, limit = 50): FieldDiff[] {
  const out: FieldDiff[] = [];
  walk(recorded, today, '', out, limit);
  return out;
}

/** True when the two values are the same record content (JSON texts compared as parsed JSON). */
export function sameValue(a: unknown, b: unknown): boolean {
  return diffValues(a, b, 1).length === 0;
}

function walk(a: unknown, b: unknown, path: string, out: FieldDiff[], limit: number): void {
  if (out.length >= limit) return;
  if (typeof a === 'string' && typeof b === 'string' && a !== b) {
    const pa = asJson(a);
    const pb = asJson(b);
    if (pa !== MISSING && pb !== MISSING && typeof pa === 'object' && typeof pb === 'object') return walk(pa, pb, `${path}<json>`, out, limit);
  }
  if (isObject(a) && isObject(b)) {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])]) {
      const sub = path ? `${path}.${key}` : key;
      if (!(key in a)) out.push({ path: sub, recorded: undefined, today: b[key] });
      else if (!(key in b)) out.push({ path: sub, recorded: a[key], today: undefined });
      else walk(a[key], b[key], sub, out, limit);
      if (out.length >= limit) return;
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const sub = `${path}[${i}]`;
      if (i >= a.length) out.push({ path: sub, recorded: undefined, today: b[i] });
      else if (i >= b.length) out.push({ path: sub, recorded: a[i], today: undefined });
      else walk(a[i], b[i], sub, out, limit);
      if (out.length >= limit) return;
    }
    return;
  }
  if (!Object.is(a, b) && JSON.stringify(a) !== JSON.stringify(b)) out.push({ path: path || '(value)', recorded: a, today: b });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v);
}

function asJson(text: string): unknown {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return MISSING;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Not JSON after all: compared as plain text.
    return MISSING;
  }
}
