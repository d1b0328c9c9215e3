/**
 * The policy check of Observation's gate: the calls a verified model answer proposes, judged against
 * the policies of the run's skill (processors/guardrails/policies.ts) on the run's recorded data —
 * the plan's steps, their verified outputs and which were dispatched, all carried by the record.
 * Pure.
 */
import type { Check, RunState } from '../../schemas/types.gen.ts';
import type { AnswerCall } from '../model-wire.ts';
import { firstViolation, policyDocuments, type CompiledPolicy } from '../guardrails/policies.ts';
import { recordedSteps, skillOfRun } from '../guardrails/edits.ts';

/**
 * The `policies` check of an answer's calls, or null when the run's skill has no policy (or the run
 * is not a model's). A failed check's evidence names the policy and the call it refuses.
 */
export function policyCheck(calls: readonly AnswerCall[], run: RunState, policiesOf: (skill: string) => readonly CompiledPolicy[]): Check | null {
  const skill = skillOfRun(run);
  if (skill === null) return null;
  const policies = policiesOf(skill);
  if (!policies.length) return null;
  const violation = firstViolation(policies, policyDocuments(recordedSteps(run), calls));
  if (violation) return { name: 'policies', passed: false, evidence: violation.evidence };
  return {
    name: 'policies',
    passed: true,
    evidence: `${policies.length} polic${policies.length === 1 ? 'y' : 'ies'} of ${skill} hold for ${calls.map((c) => c.tool).join(', ')}`,
  };
}
