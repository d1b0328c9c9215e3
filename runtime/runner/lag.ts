/**
 * `tao_consumer_lag` of one stage instance: per input topic-partition, the offsets between the high
 * watermark and the next offset to process, as of the last committed chunk. A partition the
 * instance lost leaves the gauge with its next assignment (its new owner reports it).
 */
import type { StageMetrics } from '../metrics.ts';

export class LagGauge {
  /** Label sets this instance has set, so a revoked partition's series can be removed. */
  private readonly series = new Map<string, { group: string; topic: string; partition: string }>();

  constructor(
    private readonly gauge: StageMetrics['consumerLag'],
    private readonly group: string,
  ) {}

  /** The partition's lag now (a negative one, from a stale high watermark, reads as 0). */
  set(topic: string, partition: number, lag: bigint): void {
    const labels = { group: this.group, topic, partition: String(partition) };
    this.series.set(`${topic}:${partition}`, labels);
    this.gauge.set(labels, Number(lag > 0n ? lag : 0n));
  }

  /** Removes the series of every partition not in `assignment`. */
  forgetRevoked(assignment: Record<string, number[]>): void {
    for (const [key, labels] of this.series) {
      if (assignment[labels.topic]?.includes(Number(labels.partition))) continue;
      this.gauge.remove(labels);
      this.series.delete(key);
    }
  }
}
