import { createHash, randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';
import { traceparentFor } from '../runtime/tracing/ids.ts';
import type { ApprovalDecision, Task, TaskKind, RunTimer } from '../schemas/types.gen.ts';

/** The run id for an external item: the same (source, external id) always gives the same thought_id. */
export function thoughtIdFor(source: string, externalId: string): string {
  const h = createHash('sha256').update(`tao:thought:${source}\u0000${externalId}`).digest('hex');
  // Formatted as a UUID (version nibble 8: custom, RFC 9562) so it reads like the random ids.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface NewTask {
  text: string;
  source?: string;
  external_id?: string | null;
  metadata?: Record<string, string>;
  kind?: TaskKind;
  /** Reply to (resume) this run instead of starting one. */
  thought_id?: string;
  /** A decision on a run awaiting approval (kind DECISION; `thought_id` names the run). */
  decision?: ApprovalDecision;
  /** A deadline of the run that passed (kind TIMER, the scheduler's; `thought_id` names the run). */
  timer?: RunTimer;
}

export function buildTask(input: NewTask, now: number = Date.now()): Task {
  const source = input.source ?? 'api';
  const externalId = input.external_id ?? null;
  return {
    thought_id: input.thought_id ?? (externalId ? thoughtIdFor(source, externalId) : randomUUID()),
    task_id: randomUUID(),
    kind: input.kind ?? (input.timer ? 'TIMER' : input.decision ? 'DECISION' : input.thought_id ? 'REPLY' : 'NEW'),
    text: input.text,
    source,
    external_id: externalId,
    metadata: input.metadata ?? {},
    submitted_at_ms: now,
    decision: input.decision ?? null,
    timer: input.timer ?? null,
  };
}

/**
 * Writes tasks to `tao.tasks`. Resolves only once the broker has acknowledged every record (acks
 * from all in-sync replicas, idempotent producer), so a caller may report them as accepted.
 */
export async function submitTasks(producer: Producer, codec: AvroCodec, tasks: Task[]): Promise<void> {
  const messages = [];
  for (const task of tasks)
    messages.push({
      key: task.thought_id,
      value: await codec.encode('tasks', task),
      headers: { traceparent: traceparentFor(task.thought_id, `task:${task.task_id}`) },
    });
  await producer.send({ topic: codec.topics.name('tasks'), acks: -1, messages });
}

/**
 * A person's decision on a run awaiting approval, as the DECISION task that records it: `who`
 * decided (`user:<os user>`, `key:<api key id>`), `verdict`, optionally for one `step` and with a
 * `reason`, at `now`. The CLI (`tao approve|deny`), the ingress route and the console write it.
 */
export function decisionTask(
  thoughtId: string,
  verdict: 'approve' | 'deny',
  who: string,
  options: { step?: string | null; interrupt?: string | null; arguments?: Record<string, unknown> | null; reason?: string | null; source: string },
  now: number = Date.now(),
): Task {
  const step = options.step ?? null;
  const interrupt = options.interrupt ?? null;
  const reason = options.reason ?? null;
  const edited = options.arguments ? JSON.stringify(options.arguments) : null;
  const decision: ApprovalDecision = {
    verdict,
    step_id: step,
    wave: null,
    reason,
    decided_by: who,
    decided_at_ms: now,
    interrupt_id: interrupt,
    edited_input_json: edited,
  };
  const what = interrupt ?? step;
  return buildTask(
    {
      text: `${verdict}${edited ? ' with edited arguments' : ''}${what ? ` ${what}` : ''} by ${who}${reason ? `: ${reason}` : ''}`,
      source: options.source,
      thought_id: thoughtId,
      decision,
    },
    now,
  );
}

/**
 * A CANCEL task: `who` ends run `thoughtId` (`tao cancel`, `POST /v1/runs/{id}/cancel`, A2A
 * `tasks/cancel`); Thought ends it `cancelled` unless it has ended already.
 */
export function cancelTask(thoughtId: string, who: string, options: { reason?: string | null; source: string }, now: number = Date.now()): Task {
  return buildTask(
    { kind: 'CANCEL', text: `cancelled by ${who}${options.reason ? `: ${options.reason}` : ''}`, source: options.source, thought_id: thoughtId },
    now,
  );
}
