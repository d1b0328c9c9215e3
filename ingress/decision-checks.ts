/**
 * What a decision on a parked run must satisfy before it is written, checked where a person makes it
 * (the ingress, ingress/approvals.ts; the console, console/server.ts) so the refusal answers at once.
 * Thought applies the same rules to the record (processors/thought/approval.ts) and dead-letters a
 * refused one; these are the courtesy that spares the round trip. Pure.
 */
import { parkedEditRefusal, type EditChecks } from '../processors/thought/approval-rules.ts';
import type { ApprovalCall, ApprovalRequest, RunState } from '../schemas/types.gen.ts';

/** A decision's body: which parked call (`interrupt`, or the older `step`), edited arguments, why. */
export interface DecisionBody {
  interrupt?: string;
  arguments?: Record<string, unknown>;
  step?: string;
  reason?: string;
}

/** A refusal, as the HTTP answer it is. */
export interface DecisionRefusal {
  status: 409 | 422;
  body: { error: 'stale_decision' | 'edit_refused'; message: string; pending?: PendingCall[]; policy?: string };
}

/** A parked call still awaiting a decision, as a refusal lists it. */
export interface PendingCall {
  interrupt_id: string | null;
  step_id: string;
  tool: string;
  arguments: unknown;
  rule: string;
  why: string;
}

/** What is wrong with a well-formed body for `verdict` (null: nothing). */
export function decisionBodyProblem(body: DecisionBody, verdict: 'approve' | 'deny'): string | null {
  if (body.arguments !== undefined && (verdict !== 'approve' || body.interrupt === undefined))
    return 'arguments edit one parked call: they go with approve and an interrupt';
  if (body.interrupt !== undefined && body.step !== undefined) return 'interrupt and step both name the call: give one';
  return null;
}

/** The calls of a run's latest parking (`approval`, from its last outcome) still pending; none unless the run awaits approval. */
export function pendingCalls(status: string, approval: ApprovalRequest | null | undefined): PendingCall[] {
  if (status !== 'awaiting_approval' || !approval) return [];
  return approval.calls
    .filter((c) => c.decision === null)
    .map((c) => ({ interrupt_id: c.interrupt_id, step_id: c.step_id, tool: c.tool, arguments: parsed(c.input_json), rule: c.rule, why: c.why }));
}

/**
 * The parked call `interrupt` names when it is pending in the run (status and latest approval),
 * else the 409 `stale_decision` that says why and lists the calls still pending.
 */
export function staleDecision(
  thoughtId: string,
  interrupt: string,
  status: string,
  approval: ApprovalRequest | null | undefined,
): { call: ApprovalCall } | DecisionRefusal {
  const call = approval?.calls.find((c) => c.interrupt_id === interrupt);
  if (status === 'awaiting_approval' && call && call.decision === null) return { call };
  const why = call?.decision
    ? `it was decided already (${call.decision} by ${call.decided_by ?? 'unknown'})`
    : status === 'awaiting_approval'
      ? 'the run awaits other calls'
      : `the run is ${status.replace('_', ' ')}`;
  return {
    status: 409,
    body: { error: 'stale_decision', message: `interrupt ${interrupt} of run ${thoughtId} is not pending: ${why}`, pending: pendingCalls(status, approval) },
  };
}

/**
 * The 422 `edit_refused` for `args` as `call`'s new arguments (null when they may replace them):
 * the tool's input contract, and the policies of the run's skill judged on `run`'s recorded steps
 * (Thought's latest snapshot of the run; without it, the contract only).
 */
export function refusedEdit(call: ApprovalCall, args: Record<string, unknown>, run: RunState | null, checks: EditChecks): DecisionRefusal | null {
  const why = parkedEditRefusal(call, JSON.stringify(args), run, checks);
  return why && { status: 422, body: { error: 'edit_refused', message: why.reason, ...(why.policy ? { policy: why.policy } : {}) } };
}

function parsed(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}
