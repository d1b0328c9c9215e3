/**
 * What an approver's edit of a parked call must satisfy before the call may run with it: the edited
 * arguments are a JSON object, the tool's input contract accepts them, and the policies of the run's
 * skill (policies.ts) hold for the call with them, judged on the run's recorded steps like any
 * proposed call. Thought applies it to every decision it takes (processors/thought/approval.ts), the
 * ingress to answer a refused edit at once (ingress/approvals.ts). Pure.
 */
import { firstViolation, policyDocuments, type CompiledPolicy, type RecordedStep } from './policies.ts';

/** An edit refused: `policy` names the policy it breaks, when one does. */
export interface EditRefusal {
  reason: string;
  policy?: string;
}

/**
 * Why `editedJson` may not replace the arguments of `tool`'s parked call (null when it may).
 * @param steps the run's recorded steps (processors/run-driver.ts `recordedSteps`)
 * @param contracts the catalog's input contracts (processors/plan.ts `ToolContracts`)
 * @param policies the policies of the run's skill (none for a flow's run)
 */
export function editRefusal(
  tool: string,
  editedJson: string,
  steps: readonly RecordedStep[],
  contracts: { refusesArguments(tool: string, args: Record<string, unknown>): string | null },
  policies: readonly CompiledPolicy[],
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
  if (!policies.length) return null;
  const violation = firstViolation(policies, policyDocuments(steps, [{ tool, arguments: args as Record<string, unknown> }]));
  return violation && { reason: violation.evidence.replace('refuses call 1, ', 'refuses the edited call, '), policy: violation.policy };
}
