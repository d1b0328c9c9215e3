/**
 * Approval rules: when a proposed call to a tool with side effects (catalog `side_effects: true`)
 * needs a person's approval before Action may run it. Pure: parsing and matching, no I/O.
 *
 * A rule list is written the same way in the deployment (TAO_APPROVAL_RULES) and in a skill
 * (`metadata.approval`): entries separated by spaces or commas, each `TOOL:WHEN` where WHEN is
 *
 * | WHEN | the call needs approval |
 * |---|---|
 * | `always` | every time |
 * | `never` | never (a skill's way to lift the deployment's rule for its runs) |
 * | `ARG>N`, `ARG>=N` | when the top-level argument ARG is above (or at least) the number N; also when ARG is missing or not a number, since the threshold cannot be shown to hold |
 *
 * e.g. `refunds.create:amount_cents>5000 identity.password_reset:always`.
 *
 * Which rule applies to a call: the skill's rule for the tool in that skill's runs, else the
 * deployment's, else none (no approval). Only tools with side effects may be named
 * (docs/decisions/0018-approval-in-thought.md).
 *
 * And what an approver's edit of a parked call must satisfy before the call may run with it
 * ({@link parkedEditRefusal}): the edited arguments are a JSON object, the tool's input contract
 * accepts them, and the policies of the run's skill hold for the call with them, judged on the run's
 * recorded steps like any proposed call. Thought applies it to every decision it takes
 * (approval.ts); the ingress and the console, to answer a refused edit at once.
 */
import type { ApprovalCall, RunState } from '../../schemas/types.gen.ts';
import { firstViolation, policyDocuments, type CompiledPolicy } from '../guardrails/policies.ts';
import type { ToolContracts } from '../plan.ts';
import { modelSkillOf, recordedSteps } from '../run-driver.ts';
import { ConfigError } from '../../runtime/errors.ts';

/** One parsed rule. */
export interface ApprovalRule {
  tool: string;
  when: { kind: 'always' } | { kind: 'never' } | { kind: 'threshold'; arg: string; op: '>' | '>='; value: number };
  /** The entry as written, e.g. `refunds.create:amount_cents>5000`. */
  text: string;
}

/** Thought's approval configuration (ThoughtConfig.approvals). */
export interface ApprovalConfig {
  /** Rules of the deployment (TAO_APPROVAL_RULES). */
  deployment: readonly ApprovalRule[];
  /** A skill's rules (`metadata.approval`) and time-out (`metadata.approval-timeout`), by skill name; undefined: none. */
  skill(name: string): { rules: readonly ApprovalRule[]; timeoutMs?: number } | undefined;
  /** How long an approval may wait before the scheduler times it out (TAO_APPROVAL_TIMEOUT); 0: never. */
  timeoutMs: number;
  /** A skill's policies (skills/<name>/policies.json): an approver's edited arguments must satisfy them. Unset: none. */
  policies?(skill: string): readonly CompiledPolicy[];
}

/** Why a call needs approval: the rule and, for people, how the call met it. */
export interface ApprovalNeed {
  rule: string;
  why: string;
}

const ENTRY = /^([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+):(?:(always|never)|([A-Za-z_][A-Za-z0-9_]*)(>=|>)(-?\d+(?:\.\d+)?))$/;

/**
 * Parses a rule list.
 * @param origin names where the text came from in errors (`TAO_APPROVAL_RULES`, `skill refund-request metadata.approval`)
 * @param sideEffects whether a tool of the catalog has side effects (and exists)
 * @throws ConfigError (one line) naming the origin and the entry that does not parse, names a tool
 *   without side effects, or names a tool twice.
 */
export function parseApprovalRules(text: string, origin: string, sideEffects: (tool: string) => boolean | undefined): ApprovalRule[] {
  const rules: ApprovalRule[] = [];
  for (const entry of text.split(/[\s,]+/).filter(Boolean)) {
    const m = ENTRY.exec(entry);
    if (!m) throw new ConfigError(`${origin}: "${entry}" is not TOOL:always, TOOL:never, TOOL:ARG>N or TOOL:ARG>=N`);
    const tool = m[1]!;
    const effects = sideEffects(tool);
    if (effects === undefined) throw new ConfigError(`${origin}: "${entry}" names ${tool}, which is not a tool of the catalog`);
    if (!effects)
      throw new ConfigError(
        `${origin}: "${entry}" names ${tool}, which has no side effects (catalog side_effects is not true): only calls that change something wait for approval`,
      );
    if (rules.some((r) => r.tool === tool)) throw new ConfigError(`${origin}: ${tool} has two rules; give one`);
    const when: ApprovalRule['when'] = m[2]
      ? { kind: m[2] as 'always' | 'never' }
      : { kind: 'threshold', arg: m[3]!, op: m[4] as '>' | '>=', value: Number(m[5]) };
    rules.push({ tool, when, text: entry });
  }
  return rules;
}

/**
 * Whether a call of `tool` with `args` needs approval, and why; null when it does not.
 * @param skill the run's skill name (react and plan-replan runs), or null for a flow's run
 */
export function approvalNeed(config: ApprovalConfig, skill: string | null, tool: string, args: unknown): ApprovalNeed | null {
  const own = skill === null ? undefined : config.skill(skill)?.rules.find((r) => r.tool === tool);
  const rule = own ?? config.deployment.find((r) => r.tool === tool);
  if (!rule) return null;
  const where = own ? `skill ${skill}` : 'TAO_APPROVAL_RULES';
  const named = `${rule.text} (${where})`;
  switch (rule.when.kind) {
    case 'never':
      return null;
    case 'always':
      return { rule: named, why: `every call of ${tool} needs approval` };
    case 'threshold': {
      const { arg, op, value } = rule.when;
      const actual = args !== null && typeof args === 'object' ? (args as Record<string, unknown>)[arg] : undefined;
      if (typeof actual !== 'number' || !Number.isFinite(actual))
        return {
          rule: named,
          why: `${arg} is ${actual === undefined ? 'missing' : `not a number (${JSON.stringify(actual)})`}, so the threshold ${op} ${value} cannot be checked`,
        };
      const over = op === '>' ? actual > value : actual >= value;
      return over ? { rule: named, why: `${arg} ${actual} ${op} ${value}` } : null;
    }
  }
}

/** The time-out of an approval in a run of `skill` (null: a flow's run): the skill's, else the deployment's; null for never. */
export function approvalTimeoutMs(config: ApprovalConfig, skill: string | null): number | null {
  const ms = (skill === null ? undefined : config.skill(skill)?.timeoutMs) ?? config.timeoutMs;
  return ms > 0 ? ms : null;
}

/** What an edit is checked against: the tools' input contracts and each skill's policies (processors/wiring `editChecks`). */
export interface EditChecks {
  contracts: Pick<ToolContracts, 'refusesArguments'>;
  /** The policies of a skill (none for a flow's run). */
  policiesOf: (skill: string) => readonly CompiledPolicy[];
}

/** An edit refused: `policy` names the policy it breaks, when one does. */
export interface EditRefusal {
  reason: string;
  policy?: string;
}

/**
 * Why `editedJson` may not replace the arguments of `call`, parked in `run` (null when it may). The
 * edited call replaces the proposed one: the proposed call does not count as a call of the run (a
 * policy "at most one refund per run" allows the edited refund). Without `run` (the ingress could
 * not read it), the tool's contract only.
 */
export function parkedEditRefusal(
  call: Pick<ApprovalCall, 'tool' | 'step_id'>,
  editedJson: string,
  run: RunState | null,
  checks: EditChecks,
): EditRefusal | null {
  let args: unknown;
  try {
    args = JSON.parse(editedJson);
  } catch {
    return { reason: 'the edited arguments are not JSON' };
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { reason: 'the edited arguments must be a JSON object' };
  const contract = checks.contracts.refusesArguments(call.tool, args as Record<string, unknown>);
  if (contract) return { reason: `${call.tool}'s input contract refuses the edited arguments: ${contract}` };
  const skill = run && modelSkillOf(run);
  const policies = skill ? checks.policiesOf(skill) : [];
  if (!run || !policies.length) return null;
  const documents = policyDocuments(recordedSteps(run, call.step_id), [{ tool: call.tool, arguments: args as Record<string, unknown> }]);
  const violation = firstViolation(policies, documents);
  return violation && { reason: violation.evidence.replace('refuses call 1, ', 'refuses the edited call, '), policy: violation.policy };
}
