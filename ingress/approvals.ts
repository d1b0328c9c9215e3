/**
 * A person's say on a run, over HTTP (docs/INGRESS.md, "Approvals"), each written to `tao.tasks` as
 * the record the CLI writes too (client/tasks.ts), naming the API key's id as who and the ingress's
 * clock as when:
 *
 * - `POST /v1/runs/{thought_id}/approve|deny`, body `{"interrupt"?, "arguments"?, "step"?, "reason"?}`:
 *   a DECISION task (processors/thought/approval.ts). `interrupt` names one parked call (the
 *   outcome's `approval.calls[].interrupt_id`); `arguments` (approve with `interrupt` only) runs that
 *   call with these arguments instead of the proposed ones.
 * - `POST /v1/runs/{thought_id}/cancel`, body `{"reason"?}`: a CANCEL task; Thought ends the run `cancelled`.
 *
 * Before writing, the route reads the run as the log has it now (ingress/run-streams.ts
 * `readRunState`) and refuses at once what Thought would refuse: a decision naming an interrupt
 * that is not pending answers 409 `stale_decision` (with the calls still pending), edited arguments
 * that the tool's input contract or a policy of the run's skill refuses answer 422 `edit_refused`
 * (naming the policy), a cancel of a run that has ended answers 409 `run_ended`, and a run the log
 * has no record of 404 `unknown_run`. Thought checks again when it applies the record (a race
 * between two approvers): a refused decision arriving by topic is dead-lettered `DECISION_REFUSED`.
 * An ingress started without a Kafka client to read runs writes without these checks.
 *
 * Other answers: 202 once Kafka acknowledged the record; 401 without a valid key; 403 for a key
 * without the `approve` scope, and always when the ingress runs without keys (a decision on side
 * effects needs to say who made it); 429 over the key's rate; 400 for a body of another shape; 413
 * above the body limit; 503 when Kafka does not take it or the run cannot be read.
 */
import type { IncomingMessage } from 'node:http';
import { Ajv } from 'ajv';
import type { Producer } from 'kafkajs';
import { cancelTask, decisionTask, submitTasks } from '../client/tasks.ts';
import type { EditChecks } from '../processors/thought/approval-rules.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import { errorMessage } from '../runtime/errors.ts';
import type { Logger } from '../runtime/log.ts';
import { endsRun } from '../runtime/run-stream/order.ts';
import type { RunState as RunView } from '../runtime/run-stream/state.ts';
import type { ApprovalRequest, RunSnapshot, Task } from '../schemas/types.gen.ts';
import type { ApiKeyGuard } from './auth.ts';
import { decisionBodyProblem, refusedEdit, staleDecision, type DecisionBody } from './decision-checks.ts';
import { writeWithin, type Reply as ApprovalReply } from './http-body.ts';

const REASON = { type: 'string', maxLength: 2000 } as const;

/** The JSON Schema of a decision's body (also in the OpenAPI document, ingress/routes.ts). */
export const decisionBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    interrupt: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,128}$', description: "the parked call decided: its outcome's `approval.calls[].interrupt_id`" },
    arguments: { type: 'object', description: 'approve only, with `interrupt`: run the call with these arguments instead of the proposed ones' },
    step: { type: 'string', pattern: '^[A-Za-z0-9_]{1,64}$', description: 'decide only this step (without `interrupt`)' },
    reason: REASON,
  },
} as const;

/** The JSON Schema of a cancel's body. */
export const cancelBodySchema = { type: 'object', additionalProperties: false, properties: { reason: REASON } } as const;

/** The body of a decision, checked (here and by the console, console/server.ts). */
export const validDecisionBody = new Ajv({ allErrors: true }).compile<DecisionBody>(decisionBodySchema);
const validCancelBody = new Ajv({ allErrors: true }).compile<{ reason?: string }>(cancelBodySchema);

/** What the routes read of a run before they write (null: an ingress without a Kafka client to read runs). */
export interface RunReads {
  /** The run's current state (ingress/run-streams.ts `readRunState`), null when the log has no record of it. */
  state(thoughtId: string): Promise<RunView | null>;
  /** Thought's latest snapshot of the run (runtime/run-stream/snapshot.ts), null when there is none. */
  snapshot(thoughtId: string): Promise<RunSnapshot | null>;
}

export interface ApprovalRouteDeps {
  /** The ingress's keys; null when it runs open (then every decision is refused 403). */
  guard: ApiKeyGuard | null;
  producer: Producer;
  codec: AvroCodec;
  logger: Logger;
  now: () => number;
  sendTimeoutMs: number;
  reads: RunReads | null;
  /** The tools' contracts and the skills' policies an edit is checked against; null: Thought alone checks. */
  edits: EditChecks | null;
  /** Reads the request's JSON body (or the answer for one too large or not JSON). */
  readJson(req: IncomingMessage): Promise<{ value: unknown } | { error: ApprovalReply }>;
}

const invalid = (message: string, errors?: Array<{ instancePath: string; message?: string }> | null): ApprovalReply => ({
  status: 400,
  body: { error: 'invalid_decision', message, fields: (errors ?? []).map((e) => ({ field: e.instancePath || '/', message: e.message ?? 'invalid' })) },
});
const unavailable = (what: string, err: unknown): ApprovalReply => ({
  status: 503,
  headers: { 'retry-after': '5' },
  body: { error: 'unavailable', message: `${what}; retry later (${errorMessage(err)})` },
});
const unknownRun = (thoughtId: string): ApprovalReply => ({
  status: 404,
  body: { error: 'unknown_run', message: `the log has no record of run ${thoughtId}` },
});

/** The handlers of `POST /v1/runs/{thought_id}/approve|deny` and `/cancel` (ingress/routes.ts; the dispatch answers other methods 405). */
export function approvalRoutes(deps: ApprovalRouteDeps) {
  const { guard, logger } = deps;

  /** The key check: the key's id, or the answer. */
  const authorize = (req: IncomingMessage, thoughtId: string): { keyId: string } | ApprovalReply => {
    if (!guard) {
      req.resume();
      return {
        status: 403,
        body: { error: 'forbidden', message: 'decisions need an API key with the approve scope: configure TAO_INGRESS_KEYS_FILE or TAO_INGRESS_API_KEYS' },
      };
    }
    const admission = guard.admit(req.headers.authorization);
    if (!admission.ok) {
      req.resume();
      logger.warn('decision refused', {
        thought_id: thoughtId,
        reason: admission.status === 429 ? 'rate_limited' : admission.reason,
        ...(admission.keyId ? { key_id: admission.keyId } : {}),
      });
      if (admission.status === 429) return { status: 429, headers: { 'retry-after': String(admission.retryAfterSeconds) }, body: { error: 'rate_limited' } };
      return { status: 401, headers: { 'www-authenticate': 'Bearer' }, body: { error: 'unauthorized' } };
    }
    if (!guard.has(admission.keyId, 'approve')) {
      req.resume();
      logger.warn('decision refused: key without the approve scope', { thought_id: thoughtId, key_id: admission.keyId });
      return { status: 403, body: { error: 'forbidden', message: 'this key has no approve scope' } };
    }
    return { keyId: admission.keyId };
  };

  /** Writes `task`: 503 when Kafka does not take it, else null. */
  const write = async (task: Task, keyId: string): Promise<ApprovalReply | null> => {
    try {
      await writeWithin(deps.sendTimeoutMs, submitTasks(deps.producer, deps.codec, [task]));
      return null;
    } catch (err) {
      logger.warn('decision not written', { thought_id: task.thought_id, key_id: keyId, error: err });
      return unavailable('the record could not be written to Kafka', err);
    }
  };

  /** The run's state, or the answer when it cannot be read (503) or is unknown (404); null without reads. */
  const readState = async (thoughtId: string): Promise<{ view: RunView } | ApprovalReply | null> => {
    if (!deps.reads) return null;
    let view: RunView | null;
    try {
      view = await deps.reads.state(thoughtId);
    } catch (err) {
      logger.warn('run not read before a decision', { thought_id: thoughtId, error: err });
      return unavailable(`run ${thoughtId} could not be read`, err);
    }
    return view ? { view } : unknownRun(thoughtId);
  };

  const decide = async (req: IncomingMessage, thoughtId: string, verdict: 'approve' | 'deny'): Promise<ApprovalReply> => {
    const who = authorize(req, thoughtId);
    if ('status' in who) return who;
    const parsed = await deps.readJson(req);
    if ('error' in parsed) return parsed.error;
    if (!validDecisionBody(parsed.value))
      return invalid('the body must be {"interrupt"?: interrupt id, "arguments"?: object, "step"?: step id, "reason"?: text}', validDecisionBody.errors);
    const body = parsed.value;
    const problem = decisionBodyProblem(body, verdict);
    if (problem) return invalid(problem);
    if (body.interrupt !== undefined) {
      const read = await readState(thoughtId);
      if (read && 'status' in read) return read;
      if (read) {
        const approval = (read.view.outcome?.approval ?? null) as ApprovalRequest | null;
        const stale = staleDecision(thoughtId, body.interrupt, read.view.status, approval);
        if ('status' in stale) {
          logger.info('decision refused: interrupt not pending', { thought_id: thoughtId, interrupt: body.interrupt, key_id: who.keyId });
          return stale;
        }
        if (body.arguments !== undefined && deps.edits) {
          let snapshot: RunSnapshot | null;
          try {
            snapshot = await deps.reads!.snapshot(thoughtId);
          } catch (err) {
            return unavailable(`run ${thoughtId} could not be read`, err);
          }
          const refused = refusedEdit(stale.call, body.arguments, snapshot?.run ?? null, deps.edits);
          if (refused) {
            logger.info('decision refused: edit refused', {
              thought_id: thoughtId,
              interrupt: body.interrupt,
              key_id: who.keyId,
              policy: refused.body.policy ?? null,
            });
            return refused;
          }
        }
      }
    }
    const { step, reason, interrupt } = body;
    const task = decisionTask(
      thoughtId,
      verdict,
      `key:${who.keyId}`,
      { step, interrupt, arguments: body.arguments ?? null, reason, source: 'ingress' },
      deps.now(),
    );
    const failed = await write(task, who.keyId);
    if (failed) return failed;
    logger.info('decision accepted', {
      thought_id: thoughtId,
      task_id: task.task_id,
      verdict,
      step: step ?? null,
      interrupt: interrupt ?? null,
      edited: body.arguments !== undefined,
      key_id: who.keyId,
    });
    return { status: 202, body: { thought_id: thoughtId, task_id: task.task_id, verdict, ...(interrupt ? { interrupt } : {}) } };
  };

  const cancel = async (req: IncomingMessage, thoughtId: string): Promise<ApprovalReply> => {
    const who = authorize(req, thoughtId);
    if ('status' in who) return who;
    const parsed = await deps.readJson(req);
    if ('error' in parsed) return parsed.error;
    if (!validCancelBody(parsed.value)) return invalid('the body must be {"reason"?: text}', validCancelBody.errors);
    const read = await readState(thoughtId);
    if (read && 'status' in read) return read;
    if (read && read.view.outcome && endsRun(read.view.status))
      return { status: 409, body: { error: 'run_ended', message: `run ${thoughtId} has ended already: ${read.view.status}`, status: read.view.status } };
    const task = cancelTask(thoughtId, `key:${who.keyId}`, { reason: parsed.value.reason ?? null, source: 'ingress' }, deps.now());
    const failed = await write(task, who.keyId);
    if (failed) return failed;
    logger.info('cancel accepted', { thought_id: thoughtId, task_id: task.task_id, key_id: who.keyId });
    return { status: 202, body: { thought_id: thoughtId, task_id: task.task_id, verdict: 'cancel' } };
  };

  return { decide, cancel };
}
