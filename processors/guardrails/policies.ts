/**
 * Policies: rules a skill declares about the tool calls its model proposes
 * (`skills/<name>/policies.json`), checked by Observation's gate after the answer passed its other
 * checks and before any call of it reaches Action. A violation makes the answer a rejected verdict
 * (`policy_violation`) whose evidence names the policy; the model hears it in its next turn. No call
 * of that answer runs.
 *
 * A policy is a JSON Schema over one document per proposed call, built from recorded data only (the
 * run state the record carries and the call itself), so a replay judges it the same way:
 *
 *     { "call":    { "tool": "refunds.create", "args": { ... } },
 *       "results": { "<tool>": <the latest verified output of that tool in this run> },
 *       "steps":   { "<step id>": <that step's verified output> },
 *       "calls":   { "<tool>": <calls of that tool in this run, this one and the answer's earlier ones included> } }
 *
 * Earlier values are referenced with ajv's `$data` (absolute JSON pointers into the document), e.g.
 * `"amount_cents": { "maximum": { "$data": "/results/orders.get/total_cents" } }`. A `$data` pointer
 * with no value there is ignored by ajv, so a policy that needs an earlier result says so with
 * `required` (docs/decisions/0016-policies-as-json-schema.md says why JSON Schema).
 *
 * Pure: no I/O (the files are read by load.ts at start-up).
 */
import type { ValidateFunction } from 'ajv';
import { valueAt } from '../../runtime/json-pointer.ts';

/** One policy as written in a skill's policies.json. */
export interface Policy {
  /** Unique in its skill; shown to the model and in the audit trail. */
  name: string;
  /** What the policy protects, in words: shown to the model beside the name. */
  description: string;
  /** Catalog tools whose calls it judges; empty: every proposed call. */
  tools: string[];
  /** A JSON Schema over the {@link PolicyDocument}. */
  schema: Record<string, unknown>;
}

/** A policy with its schema compiled (by an ajv with `$data: true`). */
export interface CompiledPolicy extends Policy {
  validate: ValidateFunction;
}

/** What a policy judges: one proposed call and what the run has recorded before it. */
export interface PolicyDocument {
  call: { tool: string; args: Record<string, unknown> };
  results: Record<string, unknown>;
  steps: Record<string, unknown>;
  calls: Record<string, number>;
}

/** A step of the run so far, as the document is built from it (in the order the plan lists them). */
export interface RecordedStep {
  id: string;
  tool: string;
  /** The step was sent to Action at least once (it counts as a call, whatever its result). */
  dispatched: boolean;
  /** Its verified output; undefined when it has none (not run yet, or invalid). */
  output?: unknown;
}

/** A broken policy: which one, which call, and what the schema found (with the actual values). */
export interface PolicyViolation {
  policy: string;
  call: number;
  evidence: string;
}

/**
 * The documents of an answer's proposed calls, in order. `calls` counts the run's dispatched calls
 * of each tool plus the answer's calls up to and including the one judged, so "at most one refund
 * per run" is `"calls": {"properties": {"refunds.create": {"maximum": 1}}}` and also catches two
 * refunds proposed in one turn.
 */
export function policyDocuments(
  steps: readonly RecordedStep[],
  proposed: ReadonlyArray<{ tool: string; arguments: Record<string, unknown> }>,
): PolicyDocument[] {
  const results: Record<string, unknown> = {};
  const byStep: Record<string, unknown> = {};
  const counts: Record<string, number> = {};
  for (const s of steps) {
    if (s.dispatched) counts[s.tool] = (counts[s.tool] ?? 0) + 1;
    if (s.output !== undefined) {
      results[s.tool] = s.output;
      byStep[s.id] = s.output;
    }
  }
  return proposed.map((c) => {
    counts[c.tool] = (counts[c.tool] ?? 0) + 1;
    return { call: { tool: c.tool, args: c.arguments }, results: { ...results }, steps: { ...byStep }, calls: { ...counts } };
  });
}

/** The first policy an answer's calls break (policies in the order written, calls in order), or null. */
export function firstViolation(policies: readonly CompiledPolicy[], documents: readonly PolicyDocument[]): PolicyViolation | null {
  for (const [i, doc] of documents.entries()) {
    for (const p of policies) {
      if (p.tools.length && !p.tools.includes(doc.call.tool)) continue;
      const passes: (data: unknown) => boolean = p.validate;
      if (passes(doc)) continue;
      return {
        policy: p.name,
        call: i + 1,
        evidence: `policy "${p.name}" (${p.description}) refuses call ${i + 1}, ${doc.call.tool} ${JSON.stringify(doc.call.args).slice(0, 200)}: ${describe(p.validate, doc)}`,
      };
    }
  }
  return null;
}

/** Each schema error with the value it was about (and the referenced limit, which ajv puts in params). */
function describe(validate: ValidateFunction, doc: PolicyDocument): string {
  return (validate.errors ?? [])
    .map((e) => {
      const expected = e.params && 'allowedValue' in e.params ? `expected: ${JSON.stringify(e.params.allowedValue)?.slice(0, 120)}, ` : '';
      return `${e.instancePath || '/'} ${e.message} (${expected}actual: ${JSON.stringify(valueAt(doc, e.instancePath))?.slice(0, 120) ?? 'undefined'})`;
    })
    .join('; ');
}
