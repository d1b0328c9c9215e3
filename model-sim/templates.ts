/**
 * The templates of scenario answers (`{{user:/re/}}`, `{{number:/re/}}`, `{{tool:...}}`,
 * `{{skill}}`, `{{ref:...}}`): parsed once, and filled from a conversation; a template that cannot
 * be filled makes its rule not apply.
 *
 * @module
 */
import { lastResultOf, type Conversation } from './conversation.ts';
import { DEFAULT_SCENARIO, ScenarioError, compileRegex } from './scenario-error.ts';

type Token = { kind: 'user'; re: RegExp; number?: boolean } | { kind: 'tool'; ref: string } | { kind: 'skill' } | { kind: 'ref'; ref: string };
type Part = string | Token;

const TOKEN = /\{\{(?:(user|number):\/((?:\\.|[^\\])*?)\/([a-z]*)|tool:([^{}]+)|(skill)|ref:([^{}]+))\}\}/g;
/** A plan's own reference (`{{S1.order_id}}`), kept as text in a plan answer. */
const PLAN_REF = /\{\{[A-Za-z][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\}\}/g;

/**
 * Splits a template string into literal text and tokens:
 * `{{user:/RE/flags}}`, `{{tool:<tool>.<path>}}`, `{{skill}}`.
 *
 * @throws {@link ScenarioError} on a malformed token (any `{{` left over) or a regex that does not compile.
 */
export function parseTemplate(text: string, file: string, path: string): Part[] {
  const parts: Part[] = [];
  let last = 0;
  const literal = (s: string): void => {
    if (s.replace(PLAN_REF, '').includes('{{'))
      throw new ScenarioError(
        file,
        path,
        `malformed template near "${s.slice(s.indexOf('{{'), s.indexOf('{{') + 40)}" (use {{user:/regex/}}, {{tool:<tool>.<field>}} or {{skill}})`,
      );
    if (s !== '') parts.push(s);
  };
  for (const m of text.matchAll(TOKEN)) {
    literal(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] !== undefined) {
      const flags = m[3] ?? '';
      if (flags.includes('g') || flags.includes('y')) throw new ScenarioError(file, path, `the g and y flags are not allowed in {{${m[1]}:/regex/}}`);
      parts.push({ kind: 'user', re: compileRegex(file, path, m[2], flags + 'g'), ...(m[1] === 'number' ? { number: true } : {}) });
    } else if (m[4] !== undefined) {
      parts.push({ kind: 'tool', ref: m[4].trim() });
    } else if (m[6] !== undefined) {
      parts.push({ kind: 'ref', ref: m[6].trim() });
    } else {
      parts.push({ kind: 'skill' });
    }
  }
  literal(text.slice(last));
  return parts;
}

/** Template strings are parsed once; scenarios are validated at load, so parsing here cannot fail. */
const parsed = new Map<string, Part[]>();
function partsOf(text: string): Part[] {
  let p = parsed.get(text);
  if (p === undefined) {
    p = parseTemplate(text, '(template)', '');
    parsed.set(text, p);
  }
  return p;
}

/** Signals a template that cannot be filled from this conversation: the rule does not apply. */
export const UNFILLED = Symbol('unfilled');

export function valueAt(v: unknown, path: string[]): unknown {
  let cur = v;
  for (const key of path) {
    if (Array.isArray(cur) && /^\d+$/.test(key)) cur = cur[Number(key)];
    else if (typeof cur === 'object' && cur !== null && Object.hasOwn(cur, key)) cur = (cur as Record<string, unknown>)[key];
    else return undefined;
  }
  return cur;
}

/** Tool names a `{{tool:...}}` reference may start with: offered, called or answered ones. */
function knownTools(conv: Conversation): string[] {
  const names = new Set<string>(conv.offeredTools);
  for (const c of conv.calls) names.add(c.tool);
  for (const r of conv.results) if (r.tool !== null) names.add(r.tool);
  // Longest first, so `a.b.c` wins over `a.b` for `{{tool:a.b.c.field}}`.
  return [...names].sort((x, y) => y.length - x.length);
}

function resolveToken(t: Token, conv: Conversation): unknown {
  switch (t.kind) {
    case 'skill':
      return conv.skill ?? DEFAULT_SCENARIO;
    case 'user': {
      // The last match wins, as in the flows (a reply that corrects a value overrides it).
      let found: RegExpExecArray | undefined;
      for (const m of conv.userText.matchAll(t.re)) found = m;
      if (found === undefined) return UNFILLED;
      const text = found[1] ?? found[0];
      // `{{number:/regex/}}`: the match as a JSON number (an amount the customer asked for).
      if (!t.number) return text;
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n) ? n : UNFILLED;
    }
    case 'ref': {
      // `{{ref:<tool>.<field>}}`: a plan reference to that tool's last successful call, by its call id.
      const tool = knownTools(conv).find((n) => t.ref.startsWith(`${n}.`));
      const result = tool === undefined ? undefined : lastResultOf(conv, tool);
      if (result === undefined || result.error || result.callId === null) return UNFILLED;
      return `{{${result.callId}.${t.ref.slice(tool!.length + 1)}}}`;
    }
    case 'tool': {
      const tool = knownTools(conv).find((n) => t.ref === n || t.ref.startsWith(`${n}.`));
      if (tool === undefined) return UNFILLED;
      const result = lastResultOf(conv, tool);
      if (result === undefined) return UNFILLED;
      const rest = t.ref.slice(tool.length + 1);
      const v = rest === '' ? result.value : valueAt(result.value, rest.split('.'));
      return v === undefined || v === null ? UNFILLED : v;
    }
  }
}

/**
 * Fills a template value: every string is a template; a string that is a
 * single token keeps the value's JSON type (`"{{tool:orders.get.total_cents}}"`
 * → `38312`), a token inside text is stringified.
 *
 * @returns the filled value, or {@link UNFILLED} when a token has no value here.
 */
export function fill(v: unknown, conv: Conversation): unknown {
  if (typeof v === 'string') {
    const parts = partsOf(v);
    const only = parts.length === 1 ? parts[0] : undefined;
    if (only !== undefined && typeof only !== 'string') return resolveToken(only, conv);
    let out = '';
    for (const p of parts) {
      if (typeof p === 'string') out += p;
      else {
        const x = resolveToken(p, conv);
        if (x === UNFILLED) return UNFILLED;
        out += typeof x === 'string' ? x : JSON.stringify(x);
      }
    }
    return out;
  }
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (const x of v) {
      const f = fill(x, conv);
      if (f === UNFILLED) return UNFILLED;
      out.push(f);
    }
    return out;
  }
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const f = fill(x, conv);
      if (f === UNFILLED) return UNFILLED;
      out[k] = f;
    }
    return out;
  }
  return v;
}

// ---------------------------------------------------------------------------
// Choosing the answer
// ---------------------------------------------------------------------------
