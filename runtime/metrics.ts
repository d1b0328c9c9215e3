import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Declares metrics on `registry`: each declaration gives its name, help and labels (and a histogram its buckets). */
function metricsOn(registry: Registry) {
  const registers = [registry];
  return {
    counter: <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Counter<L>({ name, help, labelNames, registers }),
    gauge: <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Gauge<L>({ name, help, labelNames, registers }),
    histogram: <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers }),
    /** A gauge set from `value` at every scrape. */
    readAtScrape: (name: string, help: string, value: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(value());
        },
      }),
  };
}

/** The metrics every stage process exports on /metrics. One instance per process, no global registry. */
export class StageMetrics {
  readonly registry = new Registry();
  private readonly declare = metricsOn(this.registry);
  readonly recordsIn = this.declare.counter('tao_records_in_total', 'Records consumed', ['stage', 'topic']);
  readonly recordsOut = this.declare.counter('tao_records_out_total', 'Records produced (committed)', ['stage', 'topic']);
  readonly deadLetters = this.declare.counter('tao_dead_letters_total', 'Records sent to a dead-letter topic (committed), by source topic and error code', [
    'stage',
    'topic',
    'reason',
  ]);
  readonly transactions = this.declare.counter('tao_transactions_total', 'Kafka transactions by result', ['stage', 'result']);
  readonly handleSeconds = this.declare.histogram(
    'tao_record_handle_seconds',
    'Time to decode, decide and encode one record (tool calls included for action)',
    ['stage'],
    [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  readonly batchSeconds = this.declare.histogram(
    'tao_batch_seconds',
    'Time to process and commit one transactional batch',
    ['stage'],
    [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  readonly consumerLag = this.declare.gauge(
    'tao_consumer_lag',
    'Offsets between the partition high watermark and the next offset to process, as of the last committed batch',
    ['group', 'topic', 'partition'],
  );

  readonly toolCallSeconds = this.declare.histogram(
    'tao_tool_call_seconds',
    'Tool call time (retries included) by tool and outcome',
    ['tool', 'status'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  readonly toolRetries = this.declare.counter('tao_tool_retries_total', 'Tool call attempts beyond the first', ['tool']);
  readonly fallbacks = this.declare.counter('tao_fallbacks_total', 'Steps served by a fallback tool', ['tool', 'fallback']);
  readonly breakerState = this.declare.gauge('tao_breaker_state', 'Circuit breaker state per tool: 0 closed, 1 half-open, 2 open', ['tool']);

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
    this.declare.readAtScrape(
      'tao_thought_store_runs',
      "Runs in Thought's state store as this instance mirrors it (every partition of thought.runs): running, awaiting input, and ended within the retention",
      () => count(),
    );
  }

  /** Exports `tao_runs_in_flight`, read from `count` at every scrape (so it is as right after a restart as the state it reads). */
  trackInFlight(count: () => number): void {
    this.declare.readAtScrape('tao_runs_in_flight', 'Runs whose latest snapshot says running, in the partitions this instance owns', () => count());
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
    const declare = metricsOn(registry);
    this.ended = declare.counter(
      'tao_runs_ended_total',
      'Outcome records by status and reason_code (awaiting_input and awaiting_approval included: they park a run, the others end it)',
      ['status', 'reason_code'],
    );
    this.modelTurns = declare.counter(
      'tao_model_turns_total',
      'Verified model answers Thought acted on, by model, skill and kind (tool_calls, final, reflection)',
      ['model', 'skill', 'kind'],
    );
    this.modelTokens = declare.counter(
      'tao_model_tokens_total',
      'Tokens of verified model answers (their usage), by model, skill and type (prompt, completion)',
      ['model', 'skill', 'type'],
    );
    this.modelLatency = declare.histogram(
      'tao_model_latency_seconds',
      'Time of a model call as Action measured it (retries included), by model and skill',
      ['model', 'skill'],
      [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    );
    this.modelCost = declare.counter(
      'tao_model_cost_total',
      'What model answers cost by the price table (TAO_LLM_PRICES, in its currency), rejected answers included, by the model that answered and skill; cost per run: divide by tao_model_turns_per_run_count',
      ['model', 'skill'],
    );
    this.modelTurnsPerRun = declare.histogram(
      'tao_model_turns_per_run',
      'Model turns of each ended model-driven run, by skill',
      ['skill'],
      [1, 2, 3, 4, 6, 8, 12, 16, 24],
    );
    this.withFailure = declare.counter(
      'tao_runs_with_failure_total',
      'Ended runs that hit a failure (a step failed, was retried or served by a fallback), by whether they completed without a person',
      ['recovered'],
    );
    declare.readAtScrape('tao_task_completion_rate', 'Runs completed / runs ended, since this process started', () =>
      ratio(this.completedRuns, this.endedRuns),
    );
    declare.readAtScrape(
      'tao_self_recovery_rate',
      'Runs that hit a failure and completed without a person / runs that hit a failure, since this process started',
      () => ratio(this.recoveredRuns, this.failedRuns),
    );
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
    const declare = metricsOn(registry);
    this.observed = declare.counter(
      'tao_steps_observed_total',
      'Tool steps judged by Observation, by whether their evidence is complete (id, input, response or error, duration, result code)',
      ['complete'],
    );
    declare.readAtScrape('tao_traceability_index', 'Steps with complete evidence / all steps observed, since this process started', () =>
      ratio(this.complete, this.all),
    );
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
  private readonly declare = metricsOn(this.registry);
  readonly requests = this.declare.counter('tao_ingress_requests_total', 'HTTP requests answered, by route and status', ['route', 'status']);
  /** `POST /v1/tasks` with API keys: one per request, by key id (`none` for no or an unknown key) and outcome. */
  readonly apiKeys = this.declare.counter(
    'tao_ingress_api_key_requests_total',
    'POST /v1/tasks requests by API key id (none: no key or an unknown one) and outcome: allowed, unauthorized, forbidden, rate_limited',
    ['key_id', 'outcome'],
  );
  readonly requestSeconds = this.declare.histogram(
    'tao_ingress_request_seconds',
    'Time to answer a request (a 202 includes the wait for Kafka to acknowledge the task)',
    ['route'],
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );

  constructor(processName = 'tao-ingress') {
    this.registry.setDefaultLabels({ process: processName });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Exports `tao_ingress_runs_in_flight`, read from `count` at every scrape. */
  trackInFlight(count: () => number): void {
    this.declare.readAtScrape('tao_ingress_runs_in_flight', 'Runs this ingress accepted whose outcome it has not seen yet (the 429 limit counts these)', () =>
      count(),
    );
  }
}
