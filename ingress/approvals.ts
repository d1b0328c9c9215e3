/**
 * `POST /v1/runs/{thought_id}/approve` and `POST /v1/runs/{thought_id}/deny`, body
 * `{"step"?: "S2", "reason"?: "..."}`: a person's decision on a run awaiting approval, written to
 * `tao.tasks` as a DECISION task (processors/thought/approval.ts) that names the API key's id as who
 * decided and the ingress's clock as when.
 *
 * Answers: 202 `{thought_id, task_id, verdict}` once Kafka acknowledged the decision (Thought applies
 * it once; a decision for a run that is not awaiting approval is ignored by Thought with a log line);
 * 401 without a valid key; 403 for a key without the `approve` scope, and always when the ingress runs
 * without keys (a decision on side effects needs to say who made it); 429 over the key's rate; 400
 * for a body that is not `{step?, reason?}`; 413 above the body limit; 503 when Kafka does not take it.
 */
import type { IncomingMessage } from 'node:http';
import { Ajv } from 'ajv';
import type { Producer } from 'kafkajs';
import { decisionTask, submitTasks } from '../client/tasks.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import { errorMessage } from '../runtime/errors.ts';
import type { Logger } from '../runtime/log.ts';
import type { ApiKeyGuard } from './auth.ts';
import { writeWithin, type Reply as ApprovalReply } from './http-body.ts';

/** The JSON Schema of a decision's body (also in the OpenAPI document, ingress/routes.ts). */
export const decisionBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { step: { type: 'string', pattern: '^[A-Za-z0-9_]{1,64}$' }, reason: { type: 'string', maxLength: 2000 } },
} as const;

/** The body of a decision, `{"step"?: step id, "reason"?: text up to 2000 characters}`, checked (here and by the console, console/server.ts). */
export const validDecisionBody = new Ajv({ allErrors: true }).compile<{ step?: string; reason?: string }>(decisionBodySchema);

export interface ApprovalRouteDeps {
  /** The ingress's keys; null when it runs open (then every decision is refused 403). */
  guard: ApiKeyGuard | null;
  producer: Producer;
  codec: AvroCodec;
  logger: Logger;
  now: () => number;
  sendTimeoutMs: number;
  /** Reads the request's JSON body (or the answer for one too large or not JSON). */
  readJson(req: IncomingMessage): Promise<{ value: unknown } | { error: ApprovalReply }>;
}

/** The handler of `POST /v1/runs/{thought_id}/approve|deny` (ingress/routes.ts; the dispatch answers other methods 405). */
export function approvalRoute(deps: ApprovalRouteDeps): (req: IncomingMessage, thoughtId: string, verdict: 'approve' | 'deny') => Promise<ApprovalReply> {
  const validate = validDecisionBody;
  const { guard, logger } = deps;
  return async (req, thoughtId, verdict) => {
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
    const parsed = await deps.readJson(req);
    if ('error' in parsed) return parsed.error;
    if (!validate(parsed.value))
      return {
        status: 400,
        body: {
          error: 'invalid_decision',
          message: 'the body must be {"step"?: step id, "reason"?: text}',
          fields: (validate.errors ?? []).map((e) => ({ field: e.instancePath || '/', message: e.message ?? 'invalid' })),
        },
      };
    const { step, reason } = parsed.value;
    const at = deps.now();
    const task = decisionTask(thoughtId, verdict, `key:${admission.keyId}`, { step, reason, source: 'ingress' }, at);
    try {
      await writeWithin(deps.sendTimeoutMs, submitTasks(deps.producer, deps.codec, [task]));
    } catch (err) {
      logger.warn('decision not written', { thought_id: thoughtId, key_id: admission.keyId, error: err });
      return {
        status: 503,
        headers: { 'retry-after': '5' },
        body: { error: 'unavailable', message: `the decision could not be written to Kafka; retry later (${errorMessage(err)})` },
      };
    }
    logger.info('decision accepted', { thought_id: thoughtId, task_id: task.task_id, verdict, step: step ?? null, key_id: admission.keyId });
    return { status: 202, body: { thought_id: thoughtId, task_id: task.task_id, verdict } };
  };
}
