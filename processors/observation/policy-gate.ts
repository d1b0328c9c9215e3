/**
 * The policy check of Observation's gate: the calls a verified model answer proposes, judged against
 * the policies of the run's skill (processors/guardrails/policies.ts) on the run's recorded data —
 * the plan's steps, their verified outputs and which were dispatched, all carried by the record.
 * Pure.
 */
import type { Check, RunState } from '../../schemas/types.gen.ts';
import type { AnswerCall } from '../model-wire.ts';
import { jsonObjectField } from '../../runtime/json-field.ts';
import { planOfRun } from '../plan.ts';
import { isModelStep, modelDriven } from '../run-driver.ts';
import { firstViolation, policyDocuments, type CompiledPolicy, type RecordedStep } from '../guardrails/policies.ts';

/**
 * The `policies` check of an answer's calls, or null when the run's skill has no policy (or the run
 * is not a model's). A failed check's evidence names the policy and the call it refuses.
 */
export function policyCheck(calls: readonly AnswerCall[], run: RunState, policiesOf: (skill: string) => readonly CompiledPolicy[]): Check | null {
  if (!modelDriven(run) || run.model_state_json === null) return null;
  const skill = String((jsonObjectField(run.model_state_json, 'run.model_state_json') as { skill?: unknown }).skill ?? '').split('@')[0]!;
  const policies = policiesOf(skill);
  if (!policies.length) return null;
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json');
  const steps: RecordedStep[] = planOfRun(run.plan_json)
    .steps.filter((s) => !isModelStep(s.id))
    .map((s) => ({ id: s.id, tool: s.tool, dispatched: (run.step_attempts[s.id] ?? 0) > 0, output: outputs[s.id] }));
  const violation = firstViolation(policies, policyDocuments(steps, calls));
  if (violation) return { name: 'policies', passed: false, evidence: violation.evidence };
  return {
    name: 'policies',
    passed: true,
    evidence: `${policies.length} polic${policies.length === 1 ? 'y' : 'ies'} of ${skill} hold for ${calls.map((c) => c.tool).join(', ')}`,
  };
}
