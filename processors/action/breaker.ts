import type { BreakerSpec } from '../../tools/catalog.ts';

export type BreakerState = 'closed' | 'open' | 'half_open';

/**
 * A per-tool circuit breaker: opens after `failureThreshold` consecutive failed calls, refuses
 * calls for `coolDownMs`, then lets exactly one probe through (half-open); the probe's success
 * closes it, its failure opens it for another cool-down. State lives in the Action process only:
 * it protects the tool from this instance and is rebuilt by observing the tool again after a restart.
 */
export class CircuitBreaker {
  private state: BreakerState = 'closed';
  private failures = 0;
  private openedAt = 0;
  private probeInFlight = false;

  constructor(
    private readonly spec: BreakerSpec,
    private readonly now: () => number,
    private readonly onChange: (state: BreakerState) => void = () => undefined,
  ) {}

  /** Asks to make a call: true if it may go ahead (closed, or the one half-open probe). */
  tryAcquire(): boolean {
    if (this.state === 'closed') return true;
    if (this.state === 'open' && this.now() - this.openedAt >= this.spec.coolDownMs) this.transition('half_open');
    if (this.state === 'half_open' && !this.probeInFlight) {
      this.probeInFlight = true;
      return true;
    }
    return false;
  }

  /** Reports the outcome of a call that {@link tryAcquire} let through. */
  record(success: boolean): void {
    if (this.state === 'half_open') this.probeInFlight = false;
    if (success) {
      this.failures = 0;
      if (this.state !== 'closed') this.transition('closed');
      return;
    }
    this.failures++;
    if (this.state === 'half_open' || (this.state === 'closed' && this.failures >= this.spec.failureThreshold)) {
      this.openedAt = this.now();
      this.transition('open');
    }
  }

  /** When an open breaker lets the next probe through (ms since epoch), or null when not open. */
  reopensAt(): number | null {
    return this.state === 'open' ? this.openedAt + this.spec.coolDownMs : null;
  }

  get current(): BreakerState {
    return this.state;
  }

  private transition(state: BreakerState): void {
    this.state = state;
    this.onChange(state);
  }
}
