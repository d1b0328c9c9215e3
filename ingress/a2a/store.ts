/**
 * The A2A task store, backed by the log: a task is its run, read from the run's committed records
 * (runtime/run-stream/read.ts) and folded by ./tasks.ts. Nothing is kept across requests: what the
 * SDK saves while one request runs (its view of the events the executor published, themselves read
 * from the log) is kept for that request only, so its own re-reads do not each open a consumer.
 * `tasks/get` on any ingress, after any restart, reads the log.
 */
import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { AgentExecutionEvent, ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import type { Positions } from '../../runtime/run-stream/order.ts';
import { openRunStream, type RunStreamDeps } from '../../runtime/run-stream/read.ts';
import { decodeCursor } from '../../runtime/run-stream/cursor.ts';
import { taskOf, updatesOf } from './tasks.ts';

/** What a run id looks like (ingress/routes.ts); anything else is no task of ours. */
const RUN_ID = /^[A-Za-z0-9:_.-]{1,200}$/;

/** The run `thoughtId` as a task, read from the log now; null when the log has nothing of it. */
export async function readTask(deps: RunStreamDeps, thoughtId: string): Promise<Task | null> {
  if (!RUN_ID.test(thoughtId)) return null;
  const events = await openRunStream(deps, thoughtId, null, { untilEnd: true });
  const seen = [];
  for await (const e of events) seen.push(e);
  return taskOf(thoughtId, seen);
}

/** The positions a task's `metadata.cursor` names (null: from the run's first record). */
export function cursorOf(task: Task | undefined): Positions | null {
  const cursor = task?.metadata?.cursor;
  return typeof cursor === 'string' ? decodeCursor(cursor) : null;
}

/**
 * The run's A2A events after `after`, read live from the log, until its next outcome (`untilEnd`:
 * its ending outcome, parking ones passed over); stops early when `signal` aborts.
 */
export async function* followRun(
  deps: RunStreamDeps,
  thoughtId: string,
  after: Positions | null,
  options: { untilEnd?: boolean; signal?: AbortSignal } = {},
): AsyncGenerator<AgentExecutionEvent> {
  const stream = await openRunStream(deps, thoughtId, after);
  const stop = () => void stream.close();
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    if (options.signal?.aborted) return;
    for await (const e of stream) {
      yield* updatesOf(e);
      // `outcome` is an ending outcome (the stream ends there too); `approval` and `input_required` park the run.
      if (e.event === 'outcome' || ((e.event === 'approval' || e.event === 'input_required') && !options.untilEnd)) return;
    }
  } finally {
    options.signal?.removeEventListener('abort', stop);
    await stream.close();
  }
}

/** {@link TaskStore} over the log; see the module comment. `list` is not served. */
export class RunTaskStore implements TaskStore {
  private readonly seen = new WeakMap<ServerCallContext, Map<string, Task>>();

  constructor(private readonly deps: RunStreamDeps) {}

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const kept = this.seen.get(context)?.get(taskId);
    if (kept) return structuredClone(kept);
    const task = await readTask(this.deps, taskId);
    if (!task) return undefined;
    await this.save(task, context);
    return task;
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    let kept = this.seen.get(context);
    if (!kept) this.seen.set(context, (kept = new Map()));
    kept.set(task.id, structuredClone(task));
  }

  async list(_params: ListTasksRequest, _context: ServerCallContext): Promise<ListTasksResponse> {
    throw new UnsupportedOperationError('ListTasks is not served here: get a task by its id (its run id), or follow runs with GET /v1/runs/events');
  }
}
