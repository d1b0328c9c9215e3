/** Concurrency helpers of the stage runner (runtime/processor.ts); nothing here knows Kafka. */

/**
 * Maps with at most `limit` calls in flight, keeping input order in the result. After a call fails
 * no new call starts, and the first error is thrown only once every call in flight has settled
 * (so nothing of a failed map still runs when the caller cleans up after it).
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async () => {
    while (next < items.length && !failure) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw (failure as { error: unknown }).error;
  return results;
}

/**
 * Awaits `work` while calling `heartbeat` every `intervalMs` (kafkajs sends no heartbeat of its own
 * while a batch is handled), so a long claim or chunk (a store catching up, slow tool calls) does
 * not get the member evicted. A failed heartbeat is ignored here: the caller's next heartbeat after
 * the work surfaces a rebalance. Settles as `work` does, and stops heartbeating when it does.
 */
export async function whileHeartbeating<T>(work: Promise<T>, heartbeat: () => Promise<void>, intervalMs: number): Promise<T> {
  const timer = setInterval(() => void heartbeat().catch(() => undefined), intervalMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/**
 * At most `limit` calls of {@link run} in progress at once, shared by every caller (a stage
 * instance's partitions); the others wait in arrival order, so a chunk's last records are not
 * starved by chunks that came later. A call that throws frees its place like one that returns.
 */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  }

  /** Calls in progress now. */
  get inProgress(): number {
    return this.active;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      // The place passes straight to the next waiter (active stays the same), or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
