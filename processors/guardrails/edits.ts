/**
 * What an approver's edit of a parked call must satisfy before the call may run with it: the edited
 * arguments are a JSON object, the tool's input contract accepts them, and the policies of the run's
 * skill (policies.ts) hold for the call with them, judged on the run's recorded steps like any
 * proposed call. Thought applies it to every decision it takes (processors/thought/approval.ts), the
 * ingress to answer a refused edit at once (ingress/approvals.ts). Pure.
 */
import type { RunState } from '../../schemas/types.gen.ts';
import { jsonObjectField } from '../../runtime/json-field.ts';
import { planOfRun, type ToolContracts } from '../plan.ts';
import { isModelStep, modelDriven } from '../run-driver.ts';
import { firstViolation, policyDocuments, type CompiledPolicy, type RecordedStep } from './policies.ts';

/**
 * The steps a run has recorded, as a policy document is built from them (what ran, what each verified
 * output is). `parked`: the step of the parked call being judged, whose dispatch the parked run
 * counts already (the wave is kept as it was proposed) but which has not run: it is not counted.
 */
export function recordedSteps(run: RunState, parked: string | null = null): RecordedStep[] {
  const outputs = jsonObjectField(run.outputs_json, 'run.outputs_json');
  return planOfRun(run.plan_json)
    .steps.filter((s) => !isModelStep(s.id))
    .map((s) => ({ id: s.id, tool: s.tool, dispatched: (run.step_attempts[s.id] ?? 0) - (s.id === parked ? 1 : 0) > 0, output: outputs[s.id] }));
}

/** The run's skill when a model drives it, else null (a flow's run has no policies). */
export function skillOfRun(run: RunState): string | null {
  if (!modelDriven(run) || run.model_state_json === null) return null;
  return String((jsonObjectField(run.model_state_json, 'run.model_state_json') as { skill?: unknown }).skill ?? '').split('@')[0]! || null;
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
 * Why `editedJson` may not replace the arguments of `tool`'s parked call (step `stepId`) in `run`,
 * the parked run (null when it may). The edited call replaces the proposed one: the proposed call
 * does not count as a call of the run (a policy "at most one refund per run" allows the edited refund).
 * @param policiesOf the policies of a skill (none for a flow's run)
 */
export function editRefusal(
  tool: string,
  editedJson: string,
  run: RunState,
  contracts: Pick<ToolContracts, 'refusesArguments'>,
  policiesOf: (skill: string) => readonly CompiledPolicy[],
  stepId: string,
): EditRefusal | null {
  let args: unknown;
  try {
    args = JSON.parse(editedJson);
  } catch {
    return { reason: 'the edited arguments are not JSON' };
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { reason: 'the edited arguments must be a JSON object' };
  const contract = contracts.refusesArguments(tool, args as Record<string, unknown>);
  if (contract) return { reason: `${tool}'s input contract refuses the edited arguments: ${contract}` };
  const skill = skillOfRun(run);
  const policies = skill ? policiesOf(skill) : [];
  if (!policies.length) return null;
  const violation = firstViolation(policies, policyDocuments(recordedSteps(run, stepId), [{ tool, arguments: args as Record<string, unknown> }]));
  return violation && { reason: violation.evidence.replace('refuses call 1, ', 'refuses the edited call, '), policy: violation.policy };
}
