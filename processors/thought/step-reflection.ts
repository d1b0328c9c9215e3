/**
 * The rule-based Reflexion of a plan step that keeps failing (no model writes it; `author` `rules`):
 * four dimensions judged from the error type, and the one action Thought takes (a fallback tool, a
 * changed plan or a new one from the model, asking a person, escalating, failing). Pure.
 */
import type { PlanStep } from '../plan.ts';
import type { Reflection, ReflectionAction, ReflectionDimension, Verdict } from '../../schemas/types.gen.ts';

/**
 * The Reflexion record for a step that keeps failing: four dimensions, each PASS, MISSING or
 * INCONSISTENT with evidence and a recommendation, and the one action Thought takes.
 */
export function reflect(step: PlanStep, verdict: Verdict, errors: string[], iteration: number, replanning = false): Reflection {
  const streak = errors.length;
  const e = verdict.error_type;
  const failed = failedEvidence(verdict).slice(0, 500);
  const missing = e === 'not_found' || e === 'invalid_input' || e === 'client_error';
  const inconsistent = e === 'schema_mismatch' || e === 'inconsistent' || e === 'malformed' || e === 'data_corrupted' || e === 'response_too_large';
  const refused = e === 'auth_failed';
  const uncertain = !missing && !inconsistent && !refused;
  const canSwitch = step.fallback !== undefined;
  // In a plan-replan run the model can write a new plan where no other tool is declared.
  const otherwise = replanning ? 'ask the model for a new plan' : null;
  const dimensions: ReflectionDimension[] = [
    missing
      ? {
          name: 'data_completeness',
          result: 'MISSING',
          evidence: `${step.tool} found nothing for ${JSON.stringify(step.input)}: ${failed}`,
          recommendation: 'ask a person for the missing or corrected input',
        }
      : { name: 'data_completeness', result: 'PASS', evidence: 'the step had every input it references', recommendation: 'none' },
    inconsistent
      ? {
          name: 'logic_consistency',
          result: 'INCONSISTENT',
          evidence: `the answer does not fit the contract or the plan: ${failed}`,
          recommendation: canSwitch ? `switch to ${step.fallback}` : (otherwise ?? 'stop: no alternative tool is declared'),
        }
      : { name: 'logic_consistency', result: 'PASS', evidence: 'no contradiction between the answer and the plan', recommendation: 'none' },
    refused
      ? {
          name: 'policy_compliance',
          result: 'INCONSISTENT',
          evidence: `the tool refused the call: ${failed}`,
          recommendation: 'escalate: credentials or permissions need a person',
        }
      : { name: 'policy_compliance', result: 'PASS', evidence: 'no refusal or policy error', recommendation: 'none' },
    uncertain
      ? {
          name: 'uncertainty',
          result: 'MISSING',
          evidence: `no usable answer after ${streak} consecutive failure(s) (${e}): ${failed}`,
          recommendation: canSwitch ? `fall back to ${step.fallback}` : (otherwise ?? 'stop: the tool keeps failing and has no fallback'),
        }
      : { name: 'uncertainty', result: 'PASS', evidence: 'the failure is understood', recommendation: 'none' },
  ];
  const stuck: ReflectionAction = replanning ? 'change_plan' : 'fail';
  const action: ReflectionAction = refused
    ? 'escalate'
    : missing
      ? 'ask_human'
      : inconsistent
        ? canSwitch
          ? 'change_plan'
          : stuck
        : canSwitch
          ? 'fallback'
          : stuck;
  return { step_id: step.id, tool: verdict.tool, iteration, error_types: errors, dimensions, action, author: 'rules', summary: '' };
}

/** What failed in a verdict, for people and the model: its failed checks with their evidence, or its error type. */
export function failedEvidence(v: Verdict): string {
  return (
    v.audit_trail
      .filter((c) => !c.passed)
      .map((c) => `${c.name}: ${c.evidence}`)
      .join(' | ') || v.error_type
  );
}
