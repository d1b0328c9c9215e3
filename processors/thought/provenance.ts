/**
 * Argument provenance: the one rule for where a value that selects a customer's data may come from.
 *
 * A tool's catalog entry names its identity parameters (`identity_parameters`: an order, claim or
 * invoice id, an e-mail address, a customer id). A model's call may carry such a value only when the
 * value was given to the run: it appears in the ticket, in a customer's reply, or in a verified
 * result of an earlier tool call of the run (never in a model's own answer). Anything else is a value
 * the model made up or copied from an example, and calling with it would fetch (or change) somebody
 * else's data, so the call is refused before any tool runs and the model is told to ask the customer.
 *
 * Pure, and decided on recorded data only (the run's task text, replies and verified outputs), so
 * `tao replay --verify` re-decides it. Matching is exact up to case and surrounding whitespace; in
 * free text the value must not run into ASCII letters or digits (`O-12345678` does not match inside
 * `O-123456789`; it does inside `订单O-12345678到哪了`).
 */

/** One identity argument that nothing the run was given supports. */
export interface UnsupportedIdentity {
  tool: string;
  parameter: string;
  value: string;
}

/** What a run was given, that identity arguments may come from. */
export interface GivenValues {
  /** The ticket's text, and each customer reply (free text: values are found as whole tokens). */
  texts: readonly string[];
  /** Verified results of the run's tool calls (values are collected from every string and number in them). */
  results: readonly unknown[];
}

/**
 * The identity arguments of `calls` that appear in none of `given`, in call order (empty when every
 * one is supported).
 * @param identityParameters a tool's identity parameters (its catalog entry's `identity_parameters`; none for an unknown tool)
 */
export function unsupportedIdentities(
  calls: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>,
  given: GivenValues,
  identityParameters: (tool: string) => readonly string[],
): UnsupportedIdentity[] {
  const known = new Set<string>();
  for (const result of given.results) collectValues(result, known);
  const texts = given.texts.map((t) => t.toLowerCase());
  const out: UnsupportedIdentity[] = [];
  for (const call of calls) {
    for (const parameter of identityParameters(call.tool)) {
      const raw = call.arguments[parameter];
      if (raw === undefined || raw === null) continue;
      const value = String(raw).trim().toLowerCase();
      if (value && (known.has(value) || texts.some((t) => containsToken(t, value)))) continue;
      out.push({ tool: call.tool, parameter, value: String(raw) });
    }
  }
  return out;
}

/** What the model is told (and the run records) about refused identity arguments. */
export function provenanceEvidence(unsupported: readonly UnsupportedIdentity[]): string {
  const list = unsupported.map((u) => `${u.tool}'s ${u.parameter} ${JSON.stringify(u.value)}`).join(', ');
  return `${list}: not in the ticket, a customer's reply or a verified tool result. Do not guess or copy an example id: ask the customer for it.`;
}

function collectValues(value: unknown, into: Set<string>): void {
  if (typeof value === 'string') into.add(value.trim().toLowerCase());
  else if (typeof value === 'number' && Number.isFinite(value)) into.add(String(value));
  else if (Array.isArray(value)) for (const v of value) collectValues(v, into);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) collectValues(v, into);
}

// ASCII only: CJK text writes ids right against its characters (`订单O-12345678到哪了`).
const WORD = /[A-Za-z0-9_]/;

/** `text` holds `value` not run into ASCII letters or digits on either side. */
export function containsToken(text: string, value: string): boolean {
  for (let at = text.indexOf(value); at >= 0; at = text.indexOf(value, at + 1)) {
    const before = at > 0 ? text[at - 1]! : '';
    const after = text[at + value.length] ?? '';
    if (!(before && WORD.test(before) && WORD.test(value[0]!)) && !(after && WORD.test(after) && WORD.test(value.at(-1)!))) return true;
  }
  return false;
}
