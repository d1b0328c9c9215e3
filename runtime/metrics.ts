import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The metrics every stage process exports on /metrics. One instance per process, no global registry. */
export class StageMetrics {
  readonly registry = new Registry();
  readonly recordsIn = new Counter({ name: 'tao_records_in_total', help: 'Records consumed', labelNames: ['stage', 'topic'], registers: [this.registry] });
  readonly recordsOut = new Counter({ name: 'tao_records_out_total', help: 'Records produced (committed)', labelNames: ['stage', 'topic'], registers: [this.registry] });
  readonly deadLetters = new Counter({ name: 'tao_dead_letters_total', help: 'Records sent to a dead-letter topic', labelNames: ['stage', 'topic', 'reason'], registers: [this.registry] });
  readonly transactions = new Counter({ name: 'tao_transactions_total', help: 'Kafka transactions by result', labelNames: ['stage', 'result'], registers: [this.registry] });
  readonly handleSeconds = new Histogram({ name: 'tao_record_handle_seconds', help: 'Time to decode, decide and encode one record (tool calls included for action)', labelNames: ['stage'], buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry] });
  readonly batchSeconds = new Histogram({ name: 'tao_batch_seconds', help: 'Time to process and commit one transactional batch', labelNames: ['stage'], buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry] });

  readonly toolCallSeconds = new Histogram({ name: 'tao_tool_call_seconds', help: 'Tool call time (retries included) by tool and outcome', labelNames: ['tool', 'status'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry] });
  readonly toolRetries = new Counter({ name: 'tao_tool_retries_total', help: 'Tool call attempts beyond the first', labelNames: ['tool'], registers: [this.registry] });
  readonly fallbacks = new Counter({ name: 'tao_fallbacks_total', help: 'Steps served by a fallback tool', labelNames: ['tool', 'fallback'], registers: [this.registry] });
  readonly breakerState = new Gauge({ name: 'tao_breaker_state', help: 'Circuit breaker state per tool: 0 closed, 1 half-open, 2 open', labelNames: ['tool'], registers: [this.registry] });

  constructor(processName: string) {
    this.registry.setDefaultLabels({ process: processName });
    collectDefaultMetrics({ register: this.registry });
  }
}
