/**
 * Approval before side effects, in Thought's pure core (docs/decisions/0018-approval-in-thought.md).
 *
 * - {@link gateWave}: every wave Thought is about to dispatch passes here. A call of a tool with
 *   side effects that an approval rule (approval-rules.ts) catches parks the run instead: an
 *   `awaiting_approval` outcome naming the calls, their arguments, the rule and why, and a snapshot
 *   holding the whole wave. Nothing reaches Action.
 * - Each parked call is an interrupt with its own id ({@link interruptId}: the run, the wave and the
 *   call's idempotency key), shown wherever the parked run is (outcome, callback, console, stream).
 * - {@link onDecision}: a DECISION task (`tao approve|deny`, the ingress, the console, the
 *   scheduler's time-out) decides one interrupt, or (without an id) one step or all pending calls.
 *   An approval may carry edited arguments for its interrupt: they must satisfy the tool's input
 *   contract and the skill's policies (approval-rules.ts `parkedEditRefusal`), and the call then runs with
 *   them (a new idempotency key: another call), the proposed ones kept beside them in the record.
 *   Once every call is decided: all approved, the parked wave is dispatched (same wave number; an
 *   unedited call keeps its idempotency key: one tool call); any denied (or timed out), a react
 *   run's model sees the denial as the failed result of that call and takes its next turn, and any
 *   other run ends `failed` (`approval_denied`, `approval_timeout`) without the call.
 * - A decision naming an interrupt that is not pending (decided already, or the run moved on), or
 *   whose edit is refused, is refused: the stage dead-letters it (`DECISION_REFUSED`) with why. A
 *   decision without an id for a run that is not awaiting approval, for another wave, or for a call
 *   already decided is ignored (logged by the stage), so applying a decision twice does nothing twice.
 *
 * An approval is bound to the call's idempotency key (run-end.ts `callKey`: the run, the step, the
 * tool and its input), kept in `RunState.approved_calls`: a retry of an approved call (a timeout,
 * a 5xx) has the same key and is dispatched without parking again; a changed input, another step
 * or another run is another call and needs its own approval.
 *
 * No clock: when the decision was made is the decision record's own field, and the time-out is
 * itself a record written by the scheduler (scheduler/), so replay re-decides the same way.
 */
import type {
  ApprovalCall,
  ApprovalRequest,
  ObservationResult,
  Outcome,
  RunSnapshot,
  RunState,
  StepCall,
  Task,
  ThoughtRequest,
  Verdict,
} from '../../schemas/types.gen.ts';
import { modelDriven, runDriver } from '../run-driver.ts';
import { approvalNeed, approvalTimeoutMs, parkedEditRefusal, type ApprovalConfig } from './approval-rules.ts';
import type { ThoughtConfig } from './config.ts';
import { onReactObservation } from './model/answer.ts';
import { parseModelState } from './model/state.ts';
import { callKey, digest, end, snapshotOf, type ThoughtDecision, type ThoughtOutput } from './run-end.ts';

/** The run's skill name when a model drives it (react, plan-replan), else null. */
function skillOf(run: RunState): string | null {
  return modelDriven(run) ? parseModelState(run).skill.split('@')[0]! : null;
}

/**
 * Passes `decision` through unchanged unless it dispatches a wave with calls that need approval;
 * then the run parks `awaiting_approval` with that wave instead.
 */
export function gateWave(decision: ThoughtDecision, config: Pick<ThoughtConfig, 'approvals'>): ThoughtDecision {
  const approvals = config.approvals;
  const wave = decision.outputs.find((o): o is Extract<ThoughtOutput, { topic: 'thoughtRequests' }> => o.topic === 'thoughtRequests')?.value;
  if (!approvals || !wave) return decision;
  const skill = skillOf(wave.run);
  const calls: ApprovalCall[] = [];
  const approved = new Set(wave.run.approved_calls);
  for (const step of wave.steps) {
    if (approved.has(step.idempotency_key)) continue;
    const need = approvalNeed(approvals, skill, step.tool, JSON.parse(step.input_json));
    if (need)
      calls.push({
        step_id: step.step_id,
        tool: step.tool,
        input_json: step.input_json,
        rule: need.rule,
        why: need.why,
        decision: null,
        decided_by: null,
        decided_at_ms: null,
        decision_reason: null,
        interrupt_id: interruptId(wave.iteration, step.idempotency_key),
        edited_input_json: null,
      });
  }
  if (!calls.length) return decision;
  return park(wave, { wave: wave.iteration, timeout_ms: approvalTimeoutMs(approvals, skill), calls }, wave.steps);
}

/** The id of a parked call's interrupt: wave `wave`'s call with idempotency key `key` (which names the run and the step). */
export function interruptId(wave: number, key: string): string {
  return `i-${digest(`${key}\u0000${wave}`)}`;
}

/** The run parked (or still parked) for approval of `approval.calls`, the wave `steps` kept for later. */
function park(wave: ThoughtRequest, approval: ApprovalRequest, steps: StepCall[]): ThoughtDecision {
  const pending = approval.calls.filter((c) => c.decision === null);
  const decided = approval.calls.length - pending.length;
  const reason = `${pending.map((c) => `${c.tool} (${c.step_id}) needs approval: ${c.why} [${c.rule}]`).join('; ')}${decided ? `; ${decided} of ${approval.calls.length} call(s) decided` : ''}`;
  // The wave is not dispatched: its steps do not count as executed until it is.
  const run: RunState = { ...wave.run, step_attempts: withoutAttempts(wave.run.step_attempts, steps) };
  const parked = end({ thoughtId: wave.thought_id, iteration: wave.iteration - 1, run: wave.run }, 'awaiting_approval', 'approval_required', reason);
  return {
    outputs: parked.outputs.map((o): ThoughtOutput => {
      if (o.topic === 'outcomes') return { topic: 'outcomes', value: { ...o.value, steps_executed: executed(run), approval } };
      if (o.topic === 'thoughtRuns') return { topic: 'thoughtRuns', value: { ...o.value, approval, parked_steps: steps } };
      return o;
    }),
  };
}

/** Decides a parked run's calls with a DECISION task (see the module's comment). */
export function onDecision(task: Task, config: ThoughtConfig, snapshot?: RunSnapshot): ThoughtDecision {
  const d = task.decision;
  if (!d) return { outputs: [], ignored: `decision task ${task.task_id} carries no decision` };
  const approval = snapshot?.approval;
  const who = `${d.verdict}${d.edited_input_json !== null ? ' with edited arguments' : ''} by ${d.decided_by}`;
  if (d.edited_input_json !== null && (d.verdict !== 'approve' || d.interrupt_id === null))
    return { outputs: [], refused: `${who} for run ${task.thought_id}: only an approval of one interrupt (interrupt_id) may edit arguments` };
  if (d.interrupt_id !== null) {
    const call = approval?.calls.find((c) => c.interrupt_id === d.interrupt_id);
    if (!snapshot || snapshot.status !== 'awaiting_approval' || !approval || !snapshot.run || !call || call.decision !== null)
      return {
        outputs: [],
        refused: `${who} names interrupt ${d.interrupt_id} of run ${task.thought_id}, which is not pending: ${
          call?.decision
            ? `decided ${call.decision} by ${call.decided_by ?? 'unknown'}`
            : `the run is ${snapshot?.status ?? 'unknown'}${approval ? ` (pending: ${pendingIds(approval) || 'none'})` : ''}`
        }`,
      };
    if (d.edited_input_json !== null) {
      const why = parkedEditRefusal(call, d.edited_input_json, snapshot.run, {
        contracts: config.tools,
        policiesOf: (skill) => config.approvals?.policies?.(skill) ?? [],
      });
      if (why) return { outputs: [], refused: `${who} for interrupt ${d.interrupt_id} of run ${task.thought_id}: ${why.reason}` };
    }
  }
  if (!snapshot || snapshot.status !== 'awaiting_approval' || !approval || !snapshot.run) {
    return {
      outputs: [],
      ignored: `${d.verdict} by ${d.decided_by} arrived for run ${task.thought_id}, which is ${snapshot?.status ?? 'unknown'}, not awaiting approval`,
    };
  }
  if (d.wave !== null && d.wave !== approval.wave)
    return {
      outputs: [],
      ignored: `${d.verdict} by ${d.decided_by} is for wave ${d.wave} of run ${task.thought_id}, which awaits approval of wave ${approval.wave}`,
    };
  const targets = approval.calls.filter(
    (c) => c.decision === null && (d.interrupt_id !== null ? c.interrupt_id === d.interrupt_id : d.step_id === null || c.step_id === d.step_id),
  );
  if (!targets.length)
    return {
      outputs: [],
      ignored: `${d.verdict} by ${d.decided_by}: run ${task.thought_id} has no pending call${d.step_id ? ` ${d.step_id}` : ''} (pending: ${
        approval.calls
          .filter((c) => c.decision === null)
          .map((c) => c.step_id)
          .join(', ') || 'none'
      })`,
    };
  const ids = new Set(targets.map((c) => c.step_id));
  const calls = approval.calls.map((c) =>
    ids.has(c.step_id)
      ? {
          ...c,
          decision: d.verdict,
          decided_by: d.decided_by,
          decided_at_ms: d.decided_at_ms,
          decision_reason: d.reason,
          edited_input_json: d.edited_input_json,
        }
      : c,
  );
  const decided: ApprovalRequest = { ...approval, calls };
  // A person's decision (not the scheduler's time-out) involves a person in the run, for the self-recovery rate.
  const run: RunState = d.verdict === 'timeout' ? snapshot.run : { ...snapshot.run, human_involved: true };
  const parkedSteps = snapshot.parked_steps;
  if (calls.some((c) => c.decision === null))
    return park({ thought_id: task.thought_id, iteration: approval.wave, run, steps: parkedSteps }, decided, parkedSteps);
  // Every call is decided: the edited ones run with their edits.
  const { steps, planJson } = withEdits(task.thought_id, parkedSteps, calls, run.plan_json);
  const wave: ThoughtRequest = { thought_id: task.thought_id, iteration: approval.wave, run: { ...run, plan_json: planJson }, steps };

  const denied = calls.filter((c) => c.decision !== 'approve');
  if (!denied.length) return dispatch(approving(wave, calls));
  const deniedIds = new Set(denied.map((c) => c.step_id));
  const remaining = steps.filter((s) => !deniedIds.has(s.step_id));
  const kept: RunState = {
    ...wave.run,
    step_attempts: withoutAttempts(
      run.step_attempts,
      steps.filter((s) => deniedIds.has(s.step_id)),
    ),
  };
  const timedOut = denied.every((c) => c.decision === 'timeout');
  if (runDriver(run) === 'react' && config.model) {
    // The model sees each refused call as a failed result of that call, and decides what next.
    if (remaining.length) {
      const history = { ...kept.error_history };
      for (const c of denied) history[c.step_id] = [...(history[c.step_id] ?? []), `approval_denied: ${refusal(c)}`];
      return dispatch(approving({ ...wave, run: { ...kept, error_history: history }, steps: remaining }, calls));
    }
    const obs: ObservationResult = {
      thought_id: task.thought_id,
      iteration: approval.wave - 1,
      run: kept,
      verdicts: denied.map(deniedVerdict),
      rules_version: null,
      classifier_model: null,
      dead_letter: null,
    };
    return gateWave(onReactObservation(obs, config.model, config), config);
  }
  const reason = `${denied.map((c) => `${c.tool} (${c.step_id}) ${refusal(c)}`).join('; ')}: the run ends without ${denied.length === 1 ? 'the call' : 'those calls'}`;
  return withApproval(
    end({ thoughtId: task.thought_id, iteration: approval.wave - 1, run: kept }, 'failed', timedOut ? 'approval_timeout' : 'approval_denied', reason),
    decided,
  );
}

/** The pending interrupts' ids, for a refusal's message. */
function pendingIds(approval: ApprovalRequest): string {
  return approval.calls
    .filter((c) => c.decision === null)
    .map((c) => c.interrupt_id ?? c.step_id)
    .join(', ');
}

/**
 * The parked steps with the approvers' edits: an edited call's input is the edit, and its
 * idempotency key the edited call's; the run's plan step takes the edit too, so a retry of the step
 * sends the edited arguments again (under the same key, approved once).
 */
function withEdits(thoughtId: string, steps: readonly StepCall[], calls: readonly ApprovalCall[], planJson: string): { steps: StepCall[]; planJson: string } {
  const edits = new Map(calls.filter((c) => c.decision === 'approve' && c.edited_input_json !== null).map((c) => [c.step_id, c.edited_input_json!]));
  if (!edits.size) return { steps: [...steps], planJson };
  const plan = JSON.parse(planJson) as { steps: Array<{ id: string; input: unknown }> };
  for (const s of plan.steps) if (edits.has(s.id)) s.input = JSON.parse(edits.get(s.id)!);
  return {
    steps: steps.map((s) => {
      const edited = edits.get(s.step_id);
      if (edited === undefined) return s;
      return { ...s, input_json: edited, idempotency_key: callKey({ thoughtId }, s.step_id, s.tool, JSON.parse(edited)) };
    }),
    planJson: JSON.stringify(plan),
  };
}

/** The wave dispatched as it was parked: same number, steps and idempotency keys. */
function dispatch(wave: ThoughtRequest): ThoughtDecision {
  return {
    outputs: [
      { topic: 'thoughtRequests', value: wave },
      { topic: 'thoughtRuns', value: snapshotOf({ thoughtId: wave.thought_id, iteration: wave.iteration, run: wave.run }, 'running') },
    ],
  };
}

/** The wave with its approved calls' idempotency keys added to the run's `approved_calls`: their retries are not parked again. */
function approving(wave: ThoughtRequest, calls: readonly ApprovalCall[]): ThoughtRequest {
  const ids = new Set(calls.filter((c) => c.decision === 'approve').map((c) => c.step_id));
  const keys = wave.steps.filter((s) => ids.has(s.step_id)).map((s) => s.idempotency_key);
  const approved = [...new Set([...wave.run.approved_calls, ...keys])];
  return { ...wave, run: { ...wave.run, approved_calls: approved } };
}

/** How a call was refused, for people and for the model. */
function refusal(c: ApprovalCall): string {
  if (c.decision === 'timeout') return `was not approved in time (approval_timeout${c.decided_by ? `, ${c.decided_by}` : ''})`;
  return `was denied by ${c.decided_by ?? 'unknown'}${c.decision_reason ? `: ${c.decision_reason}` : ''}`;
}

/** A refused call as a failed verdict (never written: it is how a react run's model hears of it). */
function deniedVerdict(c: ApprovalCall): Verdict {
  return {
    step_id: c.step_id,
    tool: c.tool,
    valid: false,
    extracted_data_json: null,
    confidence_score: 0,
    error_type: 'approval_denied',
    audit_trail: [{ name: 'approval', passed: false, evidence: `the call ${refusal(c)}; it was not made` }],
    status_code: null,
    response_time_ms: 0,
    attempts: 0,
    fallback_from: null,
  };
}

function withApproval(decision: ThoughtDecision, approval: ApprovalRequest): ThoughtDecision {
  return {
    ...decision,
    outputs: decision.outputs.map((o): ThoughtOutput =>
      o.topic === 'outcomes' ? { topic: 'outcomes', value: { ...o.value, approval } satisfies Outcome } : o,
    ),
  };
}

function withoutAttempts(attempts: Record<string, number>, steps: readonly StepCall[]): Record<string, number> {
  const left = { ...attempts };
  for (const s of steps) {
    const n = (left[s.step_id] ?? 0) - 1;
    if (n > 0) left[s.step_id] = n;
    else delete left[s.step_id];
  }
  return left;
}

function executed(run: RunState): number {
  return Object.values(run.step_attempts).reduce((a, b) => a + b, 0);
}

export type { ApprovalConfig };
