/**
 * The A2A request handler: the SDK's {@link DefaultRequestHandler}, with an executor and a task
 * store over the log (./store.ts), so every answer is read from the run's committed records:
 *
 * - `SendMessage` / `SendStreamingMessage` without a task id write a NEW task (source `a2a`,
 *   external_id the message id: a resent message is the same run, written once) and follow the run;
 *   with the task id of an input-required task, they write its answer first: a REPLY for
 *   `awaiting_input`, a DECISION (client/tasks.ts `decisionTask`, as the CLI and the HTTP route
 *   write it) for `awaiting_approval`. Anything else is refused before anything is written.
 * - `SubscribeToTask` follows the run from where it stands to its next outcome.
 * - `CancelTask` writes a CANCEL task and waits (up to 30 s) for the run's ending outcome.
 *
 * Records are written before the SDK runs the executor, so a refusal or a write that Kafka did not
 * take is a JSON-RPC error, never a task that looks failed.
 */
import {
  Task,
  TaskState,
  type AgentCard,
  type CancelTaskRequest,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
} from '@a2a-js/sdk';
import { JsonRpcTransportError, RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { AgentEvent, DefaultRequestHandler, type AgentExecutor, type ExecutionEventBus, type RequestContext, type ServerCallContext } from '@a2a-js/sdk/server';
import type { Producer } from 'kafkajs';
import { buildTask, cancelTask, decisionTask, submitTasks, thoughtIdFor } from '../../client/tasks.ts';
import type { RunStreamDeps } from '../../runtime/run-stream/read.ts';
import { errorMessage } from '../../runtime/errors.ts';
import type { Task as TaoTask } from '../../schemas/types.gen.ts';
import type { ApiKeyScope } from '../api-keys.ts';
import { writeWithin } from '../http-body.ts';
import { decisionOf } from './decision.ts';
import { RunTaskStore, cursorOf, followRun, readTask } from './store.ts';
import { A2A_SOURCE, textOf } from './tasks.ts';

/** Who calls, set by the route in the call context's state under {@link CALLER}. */
export interface Caller {
  /** The API key's id; null when the ingress runs open. */
  keyId: string | null;
  may(scope: ApiKeyScope): boolean;
  /** Aborted when the client goes away: what follows the log for it stops. */
  signal: AbortSignal;
}
export const CALLER = 'tao.caller';
const PLAN = 'tao.plan';

interface Plan {
  thoughtId: string;
  /** Set for a new run: the task as it starts. */
  fresh?: Task;
  /** A resent message: the run as it stands is the answer. */
  resent?: boolean;
}

export interface A2aDeps extends RunStreamDeps {
  producer: Producer;
  now: () => number;
  sendTimeoutMs: number;
}

/** JSON-RPC error codes of our own (docs/A2A.md). */
export const A2A_ERRORS = { unauthorized: -32040, forbidden: -32043, rateLimited: -32029, unavailable: -32050 } as const;

export function rpcError(code: number, message: string): JsonRpcTransportError {
  return new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code, message } });
}

const TERMINAL = [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED];
const MAX_TEXT = 20000;

function callerOf(context: ServerCallContext): Caller {
  const caller = context.state.get(CALLER) as Caller | undefined;
  if (!caller) throw new Error('A2A call without a caller (the route sets it)');
  return caller;
}

const statusOf = (task: Task) => String(task.metadata?.status ?? 'accepted');

/** Follows the log for one request: publishes the run's events until its next outcome. */
class RunExecutor implements AgentExecutor {
  constructor(
    private readonly deps: A2aDeps,
    private readonly store: RunTaskStore,
  ) {}

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const plan = request.context.state.get(PLAN) as Plan;
    const task = plan.fresh ?? (await this.store.load(plan.thoughtId, request.context));
    if (!task) throw new Error(`task ${plan.thoughtId} vanished from the log`);
    const interrupted = task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    if (request.task) task.status = { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date(this.deps.now()).toISOString() };
    bus.publish(AgentEvent.task(task));
    if (plan.resent && task.status && (interrupted || TERMINAL.includes(task.status.state))) {
      bus.publish(AgentEvent.statusUpdate({ taskId: task.id, contextId: task.contextId, status: task.status, metadata: {} }));
      return;
    }
    for await (const event of followRun(this.deps, plan.thoughtId, plan.fresh ? null : cursorOf(task), { signal: callerOf(request.context).signal }))
      bus.publish(event);
  }

  async cancelTask(taskId: string): Promise<void> {
    throw new UnsupportedOperationError(`task ${taskId}: cancel goes through CancelTask`);
  }
}

/** The SDK's handler with the log as its source of truth; see the module comment. */
export class RunRequestHandler extends DefaultRequestHandler {
  private readonly deps: A2aDeps;
  private readonly store: RunTaskStore;

  constructor(card: AgentCard, deps: A2aDeps) {
    const store = new RunTaskStore(deps);
    // No bus is kept alive after the executor returns: a follow-up is a new request that reads the log.
    super(card, store, new RunExecutor(deps, store), undefined, undefined, undefined, undefined, undefined, { keepBusAliveStates: [] });
    this.deps = deps;
    this.store = store;
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    await this.prepare(params, context);
    return super.sendMessage(params, context);
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    await this.prepare(params, context);
    yield* super.sendMessageStream(params, context);
  }

  override async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const task = await this.store.load(params.id, context);
    if (!task) throw new TaskNotFoundError(`no task ${params.id}: the log has no run of that id`);
    if (task.status && TERMINAL.includes(task.status.state))
      throw new UnsupportedOperationError(`task ${params.id} has ended (${statusOf(task)}): read it with GetTask`);
    yield { payload: { $case: 'task', value: task } };
    for await (const event of followRun(this.deps, task.id, cursorOf(task), { signal: callerOf(context).signal }))
      yield { payload: { $case: event.kind, value: event.data } } as StreamResponse;
  }

  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const caller = callerOf(context);
    const task = await readTask(this.deps, params.id);
    if (!task) throw new TaskNotFoundError(`no task ${params.id}: the log has no run of that id`);
    if (task.status?.state === TaskState.TASK_STATE_CANCELED) return task;
    if (task.status && TERMINAL.includes(task.status.state)) throw new TaskNotCancelableError(`task ${params.id} has ended (${statusOf(task)})`);
    await this.write(cancelTask(task.id, caller.keyId ? `key:${caller.keyId}` : A2A_SOURCE, { source: A2A_SOURCE }, this.deps.now()));
    const signal = AbortSignal.any([caller.signal, AbortSignal.timeout(30000)]);
    for await (const _ of followRun(this.deps, task.id, cursorOf(task), { untilEnd: true, signal }));
    const now = (await readTask(this.deps, task.id)) ?? task;
    if (now.status && TERMINAL.includes(now.status.state) && now.status.state !== TaskState.TASK_STATE_CANCELED)
      throw new TaskNotCancelableError(`task ${params.id} ended ${statusOf(now)} before the cancel took effect`);
    return now;
  }

  /** Checks a message and writes what it asks for; the plan it leaves tells the executor what to follow. */
  private async prepare(params: SendMessageRequest, context: ServerCallContext): Promise<void> {
    const message = params.message;
    if (!message?.messageId) throw new RequestMalformedError('message.messageId is required');
    const caller = callerOf(context);
    const who = caller.keyId ? `key:${caller.keyId}` : A2A_SOURCE;
    const metadata: Record<string, string> = caller.keyId ? { api_key_id: caller.keyId } : {}; // API_KEY_ID_METADATA (ingress/server.ts)
    const text = textOf(message);
    if (text.length > MAX_TEXT) throw new RequestMalformedError(`the message's text is over ${MAX_TEXT} characters`);
    if (!message.taskId) {
      const thoughtId = thoughtIdFor(A2A_SOURCE, message.messageId);
      if (await this.store.load(thoughtId, context)) return void context.state.set(PLAN, { thoughtId, resent: true } satisfies Plan);
      if (!text) throw new RequestMalformedError('a message that starts a task needs a text part: the ticket');
      const record = buildTask({ text, source: A2A_SOURCE, external_id: message.messageId, metadata }, this.deps.now());
      await this.write(record);
      const fresh = Task.fromJSON({
        id: thoughtId,
        contextId: thoughtId,
        status: { state: 'TASK_STATE_SUBMITTED', timestamp: new Date(record.submitted_at_ms).toISOString() },
        metadata: { thought_id: thoughtId, status: 'accepted', reason_code: null, cursor: null },
      });
      return void context.state.set(PLAN, { thoughtId, fresh } satisfies Plan);
    }
    const task = await this.store.load(message.taskId, context);
    if (!task) throw new TaskNotFoundError(`no task ${message.taskId}: the log has no run of that id`);
    const status = statusOf(task);
    let record: TaoTask;
    if (status === 'awaiting_input') {
      if (!text) throw new RequestMalformedError(`task ${task.id} waits for input: answer with a text part`);
      record = buildTask({ text, source: A2A_SOURCE, thought_id: task.id, metadata }, this.deps.now());
    } else if (status === 'awaiting_approval') {
      if (!caller.may('approve'))
        throw rpcError(
          A2A_ERRORS.forbidden,
          caller.keyId
            ? `task ${task.id} waits for approval: this key has no approve scope`
            : 'a decision needs an API key with the approve scope: configure TAO_INGRESS_KEYS_FILE or TAO_INGRESS_API_KEYS',
        );
      const d = decisionOf(task, message);
      record = decisionTask(task.id, d.verdict, who, { interrupt: d.interrupt, arguments: d.arguments, reason: d.reason, source: A2A_SOURCE }, this.deps.now());
    } else if (task.status && TERMINAL.includes(task.status.state)) throw new UnsupportedOperationError(`task ${task.id} has ended (${status})`);
    else throw new UnsupportedOperationError(`task ${task.id} is ${status}: a message on a task is taken only while it is input-required`);
    await this.write(record);
    context.state.set(PLAN, { thoughtId: task.id } satisfies Plan);
  }

  private async write(task: TaoTask): Promise<void> {
    try {
      await writeWithin(this.deps.sendTimeoutMs, submitTasks(this.deps.producer, this.deps.codec, [task]));
    } catch (err) {
      this.deps.logger.warn('a2a: task not written', { thought_id: task.thought_id, kind: task.kind, error: err });
      throw rpcError(A2A_ERRORS.unavailable, `the ${task.kind} task could not be written to Kafka; retry later (${errorMessage(err)})`);
    }
    this.deps.logger.info('a2a: task accepted', { thought_id: task.thought_id, task_id: task.task_id, kind: task.kind });
  }
}
