import { RetriesExhausted, TaoError, toTaoError } from './errors.ts';

export interface RetryPolicy {
  /** Total attempts including the first (>= 1). */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Give up instead of sleeping past this absolute time (ms, from `now`). */
  deadlineMs?: number;
  /**
   * A delay the error asks for (`retryAfterMs`, a 429's Retry-After) up to this long is waited even
   * past `deadlineMs`: the server said when it will answer, and giving up earlier would fail a call
   * that a little patience saves. Longer asks give up at the deadline as before. Default 0.
   */
  maxRetryAfterMs?: number;
}

export interface RetryDeps {
  sleep: (ms: number) => Promise<void>;
  now: () => number;
  /** Uniform in [0, 1); injected so tests and replays are deterministic. */
  random: () => number;
}

export const realRetryDeps: RetryDeps = {
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  now: () => Date.now(),
  random: Math.random,
};

/**
 * Runs `fn` until it succeeds, retrying only errors whose `retriable` flag is set, with full-jitter
 * exponential backoff (or the delay the error asks for via `retryAfterMs`). Programming errors
 * (non-TaoErrors) are never retried. The final failure is a {@link RetriesExhausted} wrapping the
 * last error, or the non-retriable error itself.
 */
export async function retry<T>(
  fn: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  deps: RetryDeps = realRetryDeps,
  onRetry?: (err: TaoError, attempt: number, delayMs: number) => void,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (raw) {
      const err = toTaoError(raw);
      if (!err.retriable) throw err;
      if (attempt >= policy.maxAttempts) throw new RetriesExhausted(attempt, err);
      const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1)) * deps.random();
      const asked = typeof err.details.retryAfterMs === 'number' ? err.details.retryAfterMs : 0;
      const delay = Math.max(backoff, asked);
      const honoured = asked > 0 && asked <= (policy.maxRetryAfterMs ?? 0);
      if (policy.deadlineMs !== undefined && !honoured && deps.now() + delay >= policy.deadlineMs) throw new RetriesExhausted(attempt, err);
      onRetry?.(err, attempt, delay);
      await deps.sleep(delay);
    }
  }
}
