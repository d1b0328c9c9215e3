/**
 * A follow-up message on a task awaiting approval, read as a decision: a data part
 * `{"decision": "approve"|"deny", "interrupt_id"?: "...", "arguments"?: {...}, "reason"?: "..."}`,
 * or, when exactly one call is pending, the text `approve` or `deny`. The interrupt must be one of
 * the task's pending calls (its status message lists them); without `interrupt_id`, exactly one
 * call must be pending. Pure; throws the SDK's RequestMalformedError (JSON-RPC -32602) with what
 * is wrong.
 */
import type { Message, Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { dataOf, textOf, type PendingCall } from './tasks.ts';

export interface A2aDecision {
  verdict: 'approve' | 'deny';
  interrupt: string;
  arguments: Record<string, unknown> | null;
  reason: string | null;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The calls the task's status message says are pending. */
export function pendingOf(task: Task): PendingCall[] {
  const awaiting = dataOf(task.status?.message).find((d) => isObject(d) && d.awaiting === 'approval');
  return isObject(awaiting) && Array.isArray(awaiting.calls) ? (awaiting.calls as PendingCall[]) : [];
}

export function decisionOf(task: Task, message: Message): A2aDecision {
  const pending = pendingOf(task);
  const listed = pending.map((c) => `${c.interrupt_id} (${c.tool})`).join(', ') || 'none';
  const bad = (why: string) => new RequestMalformedError(`task ${task.id} waits for approval (pending: ${listed}): ${why}`);
  const part = dataOf(message).find((d) => isObject(d) && 'decision' in d);
  let body: Record<string, unknown>;
  if (isObject(part)) body = part;
  else {
    const word = textOf(message).trim().toLowerCase();
    if (word !== 'approve' && word !== 'deny')
      throw bad('answer with a data part {"decision": "approve"|"deny", "interrupt_id": "...", "arguments"?: {...}, "reason"?: "..."}');
    body = { decision: word };
  }
  const unknown = Object.keys(body).filter((k) => !['decision', 'interrupt_id', 'arguments', 'reason'].includes(k));
  if (unknown.length) throw bad(`unknown field(s) ${unknown.join(', ')}`);
  const verdict = body.decision;
  if (verdict !== 'approve' && verdict !== 'deny') throw bad('"decision" must be "approve" or "deny"');
  if (body.interrupt_id !== undefined && typeof body.interrupt_id !== 'string') throw bad('"interrupt_id" must be a string');
  if (body.arguments !== undefined && !isObject(body.arguments)) throw bad('"arguments" must be an object');
  if (body.arguments !== undefined && verdict !== 'approve') throw bad('"arguments" go with "approve" only');
  if (body.reason !== undefined && (typeof body.reason !== 'string' || body.reason.length > 2000))
    throw bad('"reason" must be a string of up to 2000 characters');
  let call: PendingCall | undefined;
  if (body.interrupt_id === undefined) {
    if (pending.length !== 1) throw bad('name the call: "interrupt_id"');
    call = pending[0];
  } else {
    call = pending.find((c) => c.interrupt_id === body.interrupt_id);
    if (!call) throw bad(`interrupt ${body.interrupt_id} is not pending`);
  }
  return {
    verdict,
    interrupt: call!.interrupt_id,
    arguments: (body.arguments as Record<string, unknown> | undefined) ?? null,
    reason: (body.reason as string | undefined) ?? null,
  };
}
