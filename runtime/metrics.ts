import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The metrics every stage process exports on /metrics. One instance per process, no global registry. */
export class StageMetrics {
  readonly registry = new Registry();
  readonly recordsIn = new Counter({ name: 'tao_records_in_total', help: 'Records consumed', labelNames: ['stage', 'topic'], registers: [this.registry] });
  readonly recordsOut = new Counter({
    name: 'tao_records_out_total',
    help: 'Records produced (committed)',
    labelNames: ['stage', 'topic'],
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: 'tao_dead_letters_total',
    help: 'Records sent to a dead-letter topic (committed), by source topic and error code',
    labelNames: ['stage', 'topic', 'reason'],
    registers: [this.registry],
  });
  readonly transactions = new Counter({
    name: 'tao_transactions_total',
    help: 'Kafka transactions by result',
    labelNames: ['stage', 'result'],
    registers: [this.registry],
  });
  readonly handleSeconds = new Histogram({
    name: 'tao_record_handle_seconds',
    help: 'Time to decode, decide and encode one record (tool calls included for action)',
    labelNames: ['stage'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly batchSeconds = new Histogram({
    name: 'tao_batch_seconds',
    help: 'Time to process and commit one transactional batch',
    labelNames: ['stage'],
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly consumerLag = new Gauge({
    name: 'tao_consumer_lag',
    help: 'Offsets between the partition high watermark and the next offset to process, as of the last committed batch',
    labelNames: ['group', 'topic', 'partition'],
    registers: [this.registry],
  });

  readonly toolCallSeconds = new Histogram({
    name: 'tao_tool_call_seconds',
    help: 'Tool call time (retries included) by tool and outcome',
    labelNames: ['tool', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly toolRetries = new Counter({
    name: 'tao_tool_retries_total',
    help: 'Tool call attempts beyond the first',
    labelNames: ['tool'],
    registers: [this.registry],
  });
  readonly fallbacks = new Counter({
    name: 'tao_fallbacks_total',
    help: 'Steps served by a fallback tool',
    labelNames: ['tool', 'fallback'],
    registers: [this.registry],
  });
  readonly breakerState = new Gauge({
    name: 'tao_breaker_state',
    help: 'Circuit breaker state per tool: 0 closed, 1 half-open, 2 open',
    labelNames: ['tool'],
    registers: [this.registry],
  });

  private runs: RunMetrics | null = null;
  private steps: StepMetrics | null = null;

  constructor(processName: string) {
    this.registry.setDefaultLabels({ process: processName });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Run outcomes and the run-level rates (Thought registers them on first use; other processes do not export them). */
  runMetrics(): RunMetrics {
    return (this.runs ??= new RunMetrics(this.registry));
  }

  /** Step evidence and the traceability index (Observation registers them on first use). */
  stepMetrics(): StepMetrics {
    return (this.steps ??= new StepMetrics(this.registry));
  }

  /** Exports `tao_thought_store_runs`: the entries of the stage's state store (Thought's runs), read from `count` at every scrape. */
  trackStoreSize(count: () => number): void {
    new Gauge({
      name: 'tao_thought_store_runs',
      help: "Runs in Thought's state store as this instance mirrors it (every partition of thought.runs): running, awaiting input, and ended within the retention",
      registers: [this.registry],
      collect() {
        this.set(count());
      },
    });
  }

  /** Exports `tao_runs_in_flight`, read from `count` at every scrape (so it is as right after a restart as the state it reads). */
  trackInFlight(count: () => number): void {
    new Gauge({
      name: 'tao_runs_in_flight',
      help: 'Runs whose latest snapshot says running, in the partitions this instance owns',
      registers: [this.registry],
      collect() {
        this.set(count());
      },
    });
  }
}

/**
 * What the end of one run contributes to the rates; `classifyRunEnd` (processors/rates.ts)
 * decides it from the run's outcome and state.
 */
export interface RunEnd {
  completed: boolean;
  /** The run met at least one failure (`failures_seen > 0` at its end). */
  hitFailure: boolean;
  /** It hit a failure and still completed without a person (`human_involved` false). */
  recovered: boolean;
}

/** numerator / denominator, or NaN when nothing was counted (a rate of nothing is unknown, not 0 or 1). */
export function ratio(numerator: number, denominator: number): number {
  return denominator > 0 ? numerator / denominator : Number.NaN;
}

/**
 * How runs end, counted by Thought once each outcome is committed. The rate gauges are cumulative
 * since this process started; across instances and restarts use the PromQL over the counters
 * (docs/OBSERVABILITY.md). A rate with nothing counted yet is NaN.
 */
export class RunMetrics {
  readonly ended: Counter<'status' | 'reason_code'>;
  readonly withFailure: Counter<'recovered'>;
  /** Model turns Thought received a verified answer for, and their tokens and latency, by model and skill. */
  readonly modelTurns: Counter<'model' | 'skill' | 'kind'>;
  readonly modelTokens: Counter<'model' | 'skill' | 'type'>;
  readonly modelLatency: Histogram<'model' | 'skill'>;
  /** Model turns per ended model-driven run, by skill. */
  readonly modelTurnsPerRun: Histogram<'skill'>;
  /** What model answers cost by the price table (TAO_LLM_PRICES), by the model that answered and skill. */
  readonly modelCost: Counter<'model' | 'skill'>;
  private endedRuns = 0;
  private completedRuns = 0;
  /** Ended runs that hit a failure, and those of them that recovered without a person. */
  private failedRuns = 0;
  private recoveredRuns = 0;

  constructor(registry: Registry) {
    this.ended = new Counter({
      name: 'tao_runs_ended_total',
      help: 'Outcome records by status and reason_code (awaiting_input and awaiting_approval included: they park a run, the others end it)',
      labelNames: ['status', 'reason_code'],
      registers: [registry],
    });
    this.modelTurns = new Counter({
      name: 'tao_model_turns_total',
      help: 'Verified model answers Thought acted on, by model, skill and kind (tool_calls, final, reflection)',
      labelNames: ['model', 'skill', 'kind'],
      registers: [registry],
    });
    this.modelTokens = new Counter({
      name: 'tao_model_tokens_total',
      help: 'Tokens of verified model answers (their usage), by model, skill and type (prompt, completion)',
      labelNames: ['model', 'skill', 'type'],
      registers: [registry],
    });
    this.modelLatency = new Histogram({
      name: 'tao_model_latency_seconds',
      help: 'Time of a model call as Action measured it (retries included), by model and skill',
      labelNames: ['model', 'skill'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
      registers: [registry],
    });
    this.modelCost = new Counter({
      name: 'tao_model_cost_total',
      help: 'What model answers cost by the price table (TAO_LLM_PRICES, in its currency), rejected answers included, by the model that answered and skill; cost per run: divide by tao_model_turns_per_run_count',
      labelNames: ['model', 'skill'],
      registers: [registry],
    });
    this.modelTurnsPerRun = new Histogram({
      name: 'tao_model_turns_per_run',
      help: 'Model turns of each ended model-driven run, by skill',
      labelNames: ['skill'],
      buckets: [1, 2, 3, 4, 6, 8, 12, 16, 24],
      registers: [registry],
    });
    this.withFailure = new Counter({
      name: 'tao_runs_with_failure_total',
      help: 'Ended runs that hit a failure (a step failed, was retried or served by a fallback), by whether they completed without a person',
      labelNames: ['recovered'],
      registers: [registry],
    });
    const self = this;
    new Gauge({
      name: 'tao_task_completion_rate',
      help: 'Runs completed / runs ended, since this process started',
      registers: [registry],
      collect() {
        this.set(ratio(self.completedRuns, self.endedRuns));
      },
    });
    new Gauge({
      name: 'tao_self_recovery_rate',
      help: 'Runs that hit a failure and completed without a person / runs that hit a failure, since this process started',
      registers: [registry],
      collect() {
        this.set(ratio(self.recoveredRuns, self.failedRuns));
      },
    });
  }

  /** Counts one committed outcome. `end` is null for an outcome that parks the run (awaiting_input, awaiting_approval). */
  outcome(status: string, reasonCode: string, end: RunEnd | null): void {
    this.ended.inc({ status, reason_code: reasonCode });
    if (!end) return;
    this.endedRuns++;
    if (end.completed) this.completedRuns++;
    if (end.hitFailure) {
      this.failedRuns++;
      if (end.recovered) this.recoveredRuns++;
      this.withFailure.inc({ recovered: String(end.recovered) });
    }
  }
}

/** Steps by completeness of their evidence, counted by Observation once its verdicts are committed. */
export class StepMetrics {
  readonly observed: Counter<'complete'>;
  private all = 0;
  private complete = 0;

  constructor(registry: Registry) {
    this.observed = new Counter({
      name: 'tao_steps_observed_total',
      help: 'Tool steps judged by Observation, by whether their evidence is complete (id, input, response or error, duration, result code)',
      labelNames: ['complete'],
      registers: [registry],
    });
    const self = this;
    new Gauge({
      name: 'tao_traceability_index',
      help: 'Steps with complete evidence / all steps observed, since this process started',
      registers: [registry],
      collect() {
        this.set(ratio(self.complete, self.all));
      },
    });
  }

  /** Counts one committed step; `complete` as decided by `evidenceComplete` (processors/rates.ts). */
  step(complete: boolean): void {
    this.all++;
    if (complete) this.complete++;
    this.observed.inc({ complete: String(complete) });
  }
}

/** The metrics the HTTP ingress exports on its /metrics. One instance per process. */
export class IngressMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'tao_ingress_requests_total',
    help: 'HTTP requests answered, by route and status',
    labelNames: ['route', 'status'],
    registers: [this.registry],
  });
  /** `POST /v1/tasks` with API keys: one per request, by key id (`none` for no or an unknown key) and outcome. */
  readonly apiKeys = new Counter({
    name: 'tao_ingress_api_key_requests_total',
    help: 'POST /v1/tasks requests by API key id (none: no key or an unknown one) and outcome: allowed, unauthorized, forbidden, rate_limited',
    labelNames: ['key_id', 'outcome'],
    registers: [this.registry],
  });
  readonly requestSeconds = new Histogram({
    name: 'tao_ingress_request_seconds',
    help: 'Time to answer a request (a 202 includes the wait for Kafka to acknowledge the task)',
    labelNames: ['route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  constructor(processName = 'tao-ingress') {
    this.registry.setDefaultLabels({ process: processName });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Exports `tao_ingress_runs_in_flight`, read from `count` at every scrape. */
  trackInFlight(count: () => number): void {
    new Gauge({
      name: 'tao_ingress_runs_in_flight',
      help: 'Runs this ingress accepted whose outcome it has not seen yet (the 429 limit counts these)',
      registers: [this.registry],
      collect() {
        this.set(count());
      },
    });
  }
}
