/**
 * Outcome callbacks: POSTs each run's outcome to the `metadata.callback_url` its task carried.
 *
 * Delivery is at-least-once: the consumer group `<ns.>tao-callbacks` reads `tao.outcomes`
 * (read_committed) and commits an outcome's offset only after its callback was delivered, refused,
 * or given up on; a crash in between delivers it again. Receivers de-duplicate on the
 * `Idempotency-Key` ({@link callbackIdempotencyKey}) and verify `X-Tao-Signature` (runtime/signature.ts).
 * A run awaiting approval is announced too (status `awaiting_approval`, the calls in `approval`), so
 * the ticketing system can ask a person.
 * Outcomes of one partition are delivered in order, so a slow receiver delays the others of that
 * partition for at most `maxAttempts` attempts.
 */
import type { Consumer, Kafka } from 'kafkajs';
import type { AvroCodec } from '../runtime/codec.ts';

import { ConfigError, TaoError, errorMessage, toTaoError } from '../runtime/errors.ts';
import type { Logger } from '../runtime/log.ts';
import { retry, realRetryDeps, type RetryDeps } from '../runtime/retry.ts';
import type { Outcome } from '../schemas/types.gen.ts';
import { checkCallbackUrl, parseAllowedHosts, postCallback } from './deliver.ts';
import { CallbackUrlIndex } from './task-index.ts';

export interface CallbackDispatcherOptions {
  /** HMAC key of `X-Tao-Signature`. Required: callbacks are never sent unsigned. */
  secret: string;
  /** Hosts that may be called (`host` or `host:port`); any other URL is logged, counted, never called. */
  allowedHosts: readonly string[];
  /** Attempts per callback, the first included. Default 6. */
  maxAttempts?: number;
  /** Backoff base and cap (full jitter, doubling). Defaults 500 ms and 30 s. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Per-attempt timeout. Default 10 s. */
  requestTimeoutMs?: number;
  /**
   * Where a new consumer group starts: false (default) only outcomes written after it first joins,
   * so a first deployment does not call back the whole retained history; true from the beginning.
   */
  fromBeginning?: boolean;
  /** Longest wait for the task index to catch up on an outcome it has no URL for. Default 15 s. */
  catchUpTimeoutMs?: number;
  /**
   * Where an outcome's callback goes (null: none). Default: the `callback_url` of the run's task,
   * from an index of `tao.tasks` (see callbacks/task-index.ts), which is then started.
   */
  callbackUrlFor?: (outcome: Outcome) => string | null | undefined | Promise<string | null | undefined>;
}

export interface CallbackDispatcherDeps {
  kafka: Kafka;
  /** Decodes outcomes and tasks; no schema needs registering (nothing is written). */
  codec: AvroCodec;
  logger: Logger;
  /** Consumer group session timeout. Default 10000 ms. */
  sessionTimeoutMs?: number;
  /** Sleep/clock/jitter of the retries (tests make them deterministic). */
  retryDeps?: RetryDeps;
}

/** Counters since start (a process-local stand-in for metrics). */
export interface CallbackStats {
  /** Callbacks answered with 2xx. */
  delivered: number;
  /** Callbacks given up: refused by the receiver (non-retriable status) or failing on every attempt. */
  abandoned: number;
  /** Callback URLs not called: host not allow-listed or URL invalid. */
  rejected: number;
  /** Outcomes whose run has no callback URL. */
  noCallback: number;
  /** Attempts retried after a transient failure. */
  retries: number;
  /** Outcome records that did not decode (skipped). */
  undecodable: number;
}

export interface CallbackDispatcher {
  stats(): CallbackStats;
  /** Leaves the group; a callback in progress is aborted and its outcome left uncommitted (delivered again later). */
  stop(): Promise<void>;
}

/**
 * Starts the callback dispatcher; resolves once the task index has read `tao.tasks` up to its
 * end at start (or the catch-up timeout passed) and the consumer runs.
 * @throws ConfigError when `secret` is empty; Kafka errors when the group can't be joined.
 */
export async function startCallbackDispatcher(options: CallbackDispatcherOptions, deps: CallbackDispatcherDeps): Promise<CallbackDispatcher> {
  if (!options.secret) throw new ConfigError('the callback dispatcher needs a secret (TAO_CALLBACK_SECRET): callbacks are always signed');
  const { kafka, codec, logger } = deps;
  const allowedHosts = parseAllowedHosts(options.allowedHosts);
  if (allowedHosts.length === 0) logger.warn('no callback host is allow-listed (TAO_CALLBACK_ALLOWED_HOSTS): every callback will be rejected');
  const policy = { maxAttempts: options.maxAttempts ?? 6, baseDelayMs: options.baseDelayMs ?? 500, maxDelayMs: options.maxDelayMs ?? 30_000 };
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const catchUpTimeoutMs = options.catchUpTimeoutMs ?? 15_000;
  const counters: CallbackStats = { delivered: 0, abandoned: 0, rejected: 0, noCallback: 0, retries: 0, undecodable: 0 };
  const stopping = new AbortController();
  // Backoff sleeps end early on stop, so stopping never waits out a retry delay.
  const sleep = (ms: number) =>
    new Promise<void>((resolve, reject) => {
      if (stopping.signal.aborted) return reject(new TaoError('INTERNAL', 'the dispatcher is stopping'));
      const done = () => {
        clearTimeout(timer);
        reject(new TaoError('INTERNAL', 'the dispatcher is stopping'));
      };
      const timer = setTimeout(() => {
        stopping.signal.removeEventListener('abort', done);
        resolve();
      }, ms);
      stopping.signal.addEventListener('abort', done, { once: true });
    });
  const retryDeps: RetryDeps = deps.retryDeps ?? { ...realRetryDeps, sleep };

  const index = options.callbackUrlFor ? null : await CallbackUrlIndex.start(kafka, codec, logger);
  if (index && !(await index.caughtUp(Math.max(catchUpTimeoutMs, 60_000)))) logger.warn('callback index still replaying tao.tasks; starting anyway');
  const urlFor = options.callbackUrlFor ?? ((outcome: Outcome) => index!.lookup(outcome.thought_id, catchUpTimeoutMs));

  const group = codec.topics.group('callbacks');
  const sessionTimeout = deps.sessionTimeoutMs ?? 10_000;
  const consumer: Consumer = kafka.consumer({
    groupId: group,
    readUncommitted: false,
    sessionTimeout,
    heartbeatInterval: Math.max(500, Math.floor(sessionTimeout / 5)),
    rebalanceTimeout: Math.max(30_000, sessionTimeout * 2),
  });

  const handle = async (outcome: Outcome, heartbeat: () => Promise<void>): Promise<void> => {
    const raw = await urlFor(outcome);
    const fields = { thought_id: outcome.thought_id, task_id: outcome.task_id, status: outcome.status };
    if (!raw) {
      counters.noCallback++;
      return;
    }
    const checked = checkCallbackUrl(raw, allowedHosts);
    if (!checked.ok) {
      counters.rejected++;
      logger.warn('callback rejected: not called', { ...fields, reason: checked.reason, host: checked.host });
      return;
    }
    const body = JSON.stringify(outcome);
    const idempotencyKey = callbackIdempotencyKey(outcome);
    const beat = () => heartbeat().catch((err: unknown) => logger.debug('heartbeat failed during a callback', { error: err }));
    try {
      const { status } = await retry(
        async () => {
          await beat();
          return postCallback(checked.url, body, { secret: options.secret, idempotencyKey, timeoutMs: requestTimeoutMs, signal: stopping.signal });
        },
        policy,
        retryDeps,
        (err, attempt, delayMs) => {
          counters.retries++;
          logger.info('callback failed; retrying', {
            ...fields,
            host: checked.url.host,
            attempt,
            delay_ms: Math.round(delayMs),
            error_code: err.code,
            status: err.details.status,
          });
        },
      );
      counters.delivered++;
      logger.info('callback delivered', { ...fields, host: checked.url.host, http_status: status });
    } catch (raw) {
      if (stopping.signal.aborted) throw raw; // leave the offset uncommitted: delivered after restart
      const err = toTaoError(raw);
      counters.abandoned++;
      const last = err.cause instanceof TaoError ? err.cause : err;
      logger.error('callback abandoned', {
        ...fields,
        host: checked.url.host,
        error_code: err.code,
        http_status: last.details.status,
        error: errorMessage(err),
      });
    }
  };

  try {
    await consumer.connect();
    await consumer.subscribe({ topic: codec.topics.name('outcomes'), fromBeginning: options.fromBeginning ?? false });
    await consumer.run({
      partitionsConsumedConcurrently: 3,
      eachMessage: async ({ partition, message, heartbeat }) => {
        let outcome: Outcome;
        try {
          outcome = await codec.decode<Outcome>('outcomes', message.value);
        } catch (err) {
          const e = toTaoError(err);
          if (e.retriable) throw e; // registry unreachable: retried by the consumer, not skipped
          counters.undecodable++;
          logger.warn('outcome not decoded; skipped', { partition, offset: message.offset, error_code: e.code, error: errorMessage(e) });
          return;
        }
        await handle(outcome, heartbeat);
      },
    });
  } catch (err) {
    await consumer.disconnect().catch(() => undefined);
    await index?.stop();
    throw err;
  }
  logger.info('callback dispatcher started', { group, allowed_hosts: allowedHosts, tracked_runs: index?.size ?? null });

  return {
    stats: () => ({ ...counters }),
    stop: async () => {
      stopping.abort();
      await consumer.disconnect();
      await index?.stop();
    },
  };
}

/**
 * The callback's `Idempotency-Key`: `<thought_id>:<task_id>`, the same for every delivery of one
 * outcome. A run awaiting approval shares its task id with the outcome that ends it (a decision
 * starts no new task), so its outcomes get `:approval:<wave>:<calls decided>` added: the
 * announcement, each partial decision and the end are three different messages. So does a parked
 * run that expires (`:expired`: its task is the parking's), and a run a dead letter ended
 * (`:dead_letter:<wave>`: a re-drive may resume it, and its next end has the same task).
 */
export function callbackIdempotencyKey(outcome: Outcome): string {
  const key = `${outcome.thought_id}:${outcome.task_id}`;
  if (outcome.status === 'expired') return `${key}:expired`;
  if (outcome.reason_code === 'dead_letter') return `${key}:dead_letter:${outcome.iterations}`;
  if (outcome.status !== 'awaiting_approval' || !outcome.approval) return key;
  return `${key}:approval:${outcome.approval.wave}:${outcome.approval.calls.filter((c) => c.decision !== null).length}`;
}
