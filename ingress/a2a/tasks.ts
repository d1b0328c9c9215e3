/**
 * A run as an A2A task, from its stream's events (runtime/run-stream/events.ts). Pure.
 *
 * - The task id and context id are the run's thought_id.
 * - State: `submitted` (only the task), `working` (a wave, or a reply or decision after a parking
 *   outcome), `input-required` (`awaiting_input`, `awaiting_approval`), then by the ending outcome:
 *   `completed`; `failed` (failed, budget_exhausted, expired); `canceled` (cancelled); `rejected`
 *   (escalated: handed to people, not done by the agent).
 * - The status message says what is needed (for an approval: each pending call's interrupt_id, tool
 *   and arguments, also as a data part) or why the run ended.
 * - A completed run has one artifact `answer`: the answer text (the output's `answer`, else the
 *   outcome's reason) and a data part `{output, result}`.
 * - History: the task, each reply, decision and cancel as user messages; each outcome's status
 *   message as an agent message. Message ids are stable (an A2A-started run's first message keeps the
 *   client's message id).
 * - Metadata: `thought_id`, `status` (ours), `reason_code`, `cursor` (the run stream's cursor after
 *   the last event: `Last-Event-ID` for `GET /v1/runs/{id}/events`).
 */
import type { AgentExecutionEvent } from '@a2a-js/sdk/server';
import { Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import type { RunEvent } from '../../runtime/run-stream/events.ts';

/** The task source of runs started over A2A (their external_id is the A2A message id). */
export const A2A_SOURCE = 'a2a';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const STATES: Record<string, string> = {
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  budget_exhausted: 'TASK_STATE_FAILED',
  expired: 'TASK_STATE_FAILED',
  cancelled: 'TASK_STATE_CANCELED',
  escalated: 'TASK_STATE_REJECTED',
  awaiting_input: 'TASK_STATE_INPUT_REQUIRED',
  awaiting_approval: 'TASK_STATE_INPUT_REQUIRED',
};

/** A pending approval call, as the status message lists it. */
export interface PendingCall {
  interrupt_id: string;
  step_id: string;
  tool: string;
  arguments: unknown;
  rule: string;
  why: string;
}

/** The calls of an `awaiting_approval` outcome's data that no decision has answered yet. */
export function pendingCalls(outcome: Json | null | undefined): PendingCall[] {
  const calls: Json[] = outcome?.approval?.calls ?? [];
  return calls
    .filter((c) => c.decision === null || c.decision === undefined)
    .map((c) => ({ interrupt_id: c.interrupt_id ?? '', step_id: c.step_id, tool: c.tool, arguments: parse(c.input_json), rule: c.rule, why: c.why }));
}

const text = (value: string) => ({ text: value });
const data = (value: unknown) => ({ data: value, mediaType: 'application/json' });
const messageId = (e: RunEvent) => `${e.data.thought_id}:${(e.data.record as Json).topic}:${(e.data.record as Json).offset}`;
const at = (e: RunEvent) => new Date(Number((e.data.record as Json).timestamp)).toISOString();

/** The agent's message for an outcome: what it waits for, or why it ended. */
function outcomeMessage(e: RunEvent): Json {
  const d = e.data as Json;
  const parts: Json[] = [];
  if (d.status === 'awaiting_approval') {
    const calls = pendingCalls(d);
    const listed = calls.map((c) => `${c.tool} with ${JSON.stringify(c.arguments)} (interrupt_id ${c.interrupt_id}; ${c.why})`).join('; ');
    parts.push(
      text(
        `Waiting for approval of ${listed}. Answer with a message on this task: a data part {"decision": "approve"|"deny", "interrupt_id": "...", "arguments"?: {...}, "reason"?: "..."}` +
          (calls.length === 1 ? ', or the text approve or deny.' : '.'),
      ),
      data({ awaiting: 'approval', calls }),
    );
  } else if (d.status === 'awaiting_input') {
    parts.push(text(`${d.reason} Answer with a message on this task.`), data({ awaiting: 'input', missing_fields: d.missing_fields ?? [] }));
  } else parts.push(text(String(d.reason ?? d.status)), data({ status: d.status, reason_code: d.reason_code }));
  return { messageId: messageId(e), contextId: d.thought_id, taskId: d.thought_id, role: 'ROLE_AGENT', parts };
}

/** A person's (or a client's) task record as a user message. */
function userMessage(e: RunEvent): Json {
  const d = e.data as Json;
  const id = d.kind === 'NEW' && d.source === A2A_SOURCE && d.external_id ? d.external_id : d.task_id;
  return { messageId: id, contextId: d.thought_id, taskId: d.thought_id, role: 'ROLE_USER', parts: [text(String(d.text))] };
}

/** The `answer` artifact of a completed outcome. */
function answerArtifact(d: Json): Json {
  const output = d.output && typeof d.output === 'object' ? (d.output as Json) : null;
  const answer = typeof output?.answer === 'string' ? output.answer : String(d.reason ?? 'completed');
  return {
    artifactId: 'answer',
    name: 'answer',
    description: "the run's answer",
    parts: [text(answer), data({ output: d.output ?? null, result: d.result ?? null })],
  };
}

/** The run as an A2A task (JSON form), folded from all its events so far; null when there are none. */
export function taskOf(thoughtId: string, events: readonly RunEvent[]): Task | null {
  if (events.length === 0) return null;
  let state = 'TASK_STATE_SUBMITTED';
  let status = 'accepted';
  let reasonCode: string | null = null;
  let message: Json | undefined;
  let timestamp = at(events[0]!);
  const history: Json[] = [];
  const artifacts: Json[] = [];
  for (const e of events) {
    const d = e.data as Json;
    if (e.event === 'task' || e.event === 'reply' || e.event === 'decision') history.push(userMessage(e));
    // A wave starts the work; a reply or a decision resumes a parked run.
    const starts = e.event === 'wave' && state === 'TASK_STATE_SUBMITTED';
    const resumes = (e.event === 'reply' || e.event === 'decision') && state === 'TASK_STATE_INPUT_REQUIRED';
    if (starts || resumes) {
      state = 'TASK_STATE_WORKING';
      status = 'in_progress';
      message = undefined;
      timestamp = at(e);
    }
    if (e.event === 'outcome' || e.event === 'approval' || e.event === 'input_required') {
      state = STATES[d.status] ?? 'TASK_STATE_FAILED';
      status = d.status;
      reasonCode = d.reason_code ?? null;
      message = outcomeMessage(e);
      timestamp = at(e);
      history.push(message);
      if (d.status === 'completed') artifacts.push(answerArtifact(d));
    }
  }
  return Task.fromJSON({
    id: thoughtId,
    contextId: thoughtId,
    status: { state, message, timestamp },
    artifacts,
    history,
    metadata: { thought_id: thoughtId, status, reason_code: reasonCode, cursor: events.at(-1)!.id },
  });
}

/** The A2A events one run event streams as (after the task itself was sent), in order. */
export function updatesOf(e: RunEvent): AgentExecutionEvent[] {
  const d = e.data as Json;
  const id = String(d.thought_id);
  const status = (state: string, message?: Json, metadata: Json = {}) =>
    ({
      kind: 'statusUpdate',
      data: TaskStatusUpdateEvent.fromJSON({
        taskId: id,
        contextId: id,
        status: { state, message, timestamp: at(e) },
        metadata: { ...metadata, cursor: e.id },
      }),
    }) as const;
  switch (e.event) {
    case 'task':
      return d.kind === 'NEW' ? [] : [status('TASK_STATE_WORKING', undefined, { event: 'cancel' })];
    case 'reply':
    case 'decision':
    case 'timer':
    case 'results':
    case 'verdicts':
      return [status('TASK_STATE_WORKING', undefined, { event: e.event, iteration: d.iteration ?? null })];
    case 'wave':
      return [status('TASK_STATE_WORKING', undefined, { event: 'wave', iteration: d.iteration, tools: (d.steps ?? []).map((s: Json) => s.tool) })];
    case 'approval':
    case 'input_required':
    case 'outcome': {
      const out: AgentExecutionEvent[] = [];
      if (d.status === 'completed')
        out.push({
          kind: 'artifactUpdate',
          data: TaskArtifactUpdateEvent.fromJSON({ taskId: id, contextId: id, artifact: answerArtifact(d), append: false, lastChunk: true }),
        });
      out.push(status(STATES[d.status] ?? 'TASK_STATE_FAILED', outcomeMessage(e), { event: e.event, status: d.status, reason_code: d.reason_code }));
      return out;
    }
    default:
      return [status('TASK_STATE_WORKING', undefined, { event: e.event })];
  }
}

/** A user message's text parts, joined by new lines. */
export function textOf(message: Message | undefined): string {
  return (message?.parts ?? [])
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .filter((t) => t.trim() !== '')
    .join('\n');
}

/** A user message's data parts' values. */
export function dataOf(message: Message | undefined): unknown[] {
  return (message?.parts ?? []).flatMap((p) => (p.content?.$case === 'data' ? [p.content.value] : []));
}

function parse(json: unknown): unknown {
  if (typeof json !== 'string') return null;
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}
