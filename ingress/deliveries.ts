/**
 * In-memory memory of webhook deliveries recently written, so that a redelivery (or a replay) of
 * the same delivery id inside the window writes nothing and answers with the first write's ids.
 *
 * Bounded twice: entries expire after `windowMs`, and beyond `maxEntries` the oldest are dropped
 * (under a flood of distinct ids the effective window shrinks; it never grows memory). It is per
 * process and lost on restart: it narrows duplicates, it does not make them impossible — a
 * redelivery after the window, or to another ingress instance, maps to the same thought_id anyway.
 */
export interface DeliveryResult {
  thought_id: string;
  task_id: string;
}

interface Entry {
  expiresAt: number;
  /** Resolves with the ids once written, or null when the write failed (the id is then free again). */
  result: Promise<DeliveryResult | null>;
}

export type DeliveryClaim = { state: 'duplicate'; result: DeliveryResult } | { state: 'claimed'; settle(result: DeliveryResult | null): void };

export class DeliveryLedger {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * Claims `key` for writing, or reports it as a duplicate of a write done inside the window. A
   * claim made while another request holds the same key waits for that request: if it wrote, this
   * one is a duplicate; if it failed, this one may try. The claimant must `settle` the claim.
   */
  async claim(key: string): Promise<DeliveryClaim> {
    for (;;) {
      this.evict();
      const existing = this.entries.get(key);
      if (!existing) break;
      const result = await existing.result;
      if (result) return { state: 'duplicate', result };
      // The holder failed and removed its entry; loop to claim (or to wait on a newer holder).
    }
    let resolve!: (r: DeliveryResult | null) => void;
    const entry: Entry = { expiresAt: this.now() + this.windowMs, result: new Promise((r) => (resolve = r)) };
    this.entries.set(key, entry);
    return {
      state: 'claimed',
      settle: (result) => {
        if (!result && this.entries.get(key) === entry) this.entries.delete(key);
        else if (result) entry.expiresAt = this.now() + this.windowMs;
        resolve(result);
      },
    };
  }

  private evict(): void {
    const now = this.now();
    // Insertion order is (nearly) expiry order: stop at the first live entry once there is room.
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt > now && this.entries.size < this.maxEntries) break;
      this.entries.delete(key);
    }
  }
}
