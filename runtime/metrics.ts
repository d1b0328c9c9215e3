import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every metric the processes export, by name, with its help text: the one list a metric is declared
 * against (docs/OBSERVABILITY.md lists the same names; test/observability/metrics-docs.test.ts keeps them in step).
 */
export const METRIC_HELP = {
  tao_records_in_total: 'Records consumed',
  tao_records_out_total: 'Records produced (committed)',
  tao_dead_letters_total: 'Records sent to a dead-letter topic (committed), by source topic and error code',
  tao_transactions_total: 'Kafka transactions by result',
  tao_record_handle_seconds: 'Time to decode, decide and encode one record (tool calls included for action)',
  tao_batch_seconds: 'Time to process and commit one transactional batch',
  tao_consumer_lag: 'Offsets between the partition high watermark and the next offset to process, as of the last committed batch',
  tao_tool_call_seconds: 'Tool call time (retries included) by tool and outcome',
  tao_tool_retries_total: 'Tool call attempts beyond the first',
  tao_fallbacks_total: 'Steps served by a fallback tool',
  tao_breaker_state: 'Circuit breaker state per tool: 0 closed, 1 half-open, 2 open',
  tao_thought_store_runs:
    "Runs in Thought's state store as this instance mirrors it (every partition of thought.runs): running, awaiting input, and ended within the retention",
  tao_runs_in_flight: 'Runs whose latest snapshot says running, in the partitions this instance owns',
  tao_runs_ended_total: 'Outcome records by status and reason_code (awaiting_input and awaiting_approval included: they park a run, the others end it)',
  tao_runs_with_failure_total: 'Ended runs that hit a failure (a step failed, was retried or served by a fallback), by whether they completed without a person',
  tao_task_completion_rate: 'Runs completed / runs ended, since this process started',
  tao_self_recovery_rate: 'Runs that hit a failure and completed without a person / runs that hit a failure, since this process started',
  tao_model_turns_total: 'Verified model answers Thought acted on, by model, skill and kind (tool_calls, final, reflection)',
  tao_model_tokens_total: 'Tokens of verified model answers (their usage), by model, skill and type (prompt, completion)',
  tao_model_latency_seconds: 'Time of a model call as Action measured it (retries included), by model and skill',
  tao_model_cost_total:
    'What model answers cost by the price table (TAO_LLM_PRICES, in its currency), rejected answers included, by the model that answered and skill; cost per run: divide by tao_model_turns_per_run_count',
  tao_model_turns_per_run: 'Model turns of each ended model-driven run, by skill',
  tao_steps_observed_total: 'Tool steps judged by Observation, by whether their evidence is complete (id, input, response or error, duration, result code)',
  tao_traceability_index: 'Steps with complete evidence / all steps observed, since this process started',
  tao_ingress_requests_total: 'HTTP requests answered, by route and status',
  tao_ingress_api_key_requests_total:
    'POST /v1/tasks requests by API key id (none: no key or an unknown one) and outcome: allowed, unauthorized, forbidden, rate_limited',
  tao_ingress_request_seconds: 'Time to answer a request (a 202 includes the wait for Kafka to acknowledge the task)',
  tao_ingress_runs_in_flight: 'Runs this ingress accepted whose outcome it has not seen yet (the 429 limit counts these)',
} as const;

type MetricName = keyof typeof METRIC_HELP;

/** Declares metrics on `registry`: each declaration gives its name (its help comes from {@link METRIC_HELP}) and labels, a histogram its buckets. */
function metricsOn(registry: Registry) {
  const registers = [registry];
  /** A gauge set from `value` at every scrape. */
  const readAtScrape = (name: MetricName, value: () => number) =>
    new Gauge({
      name,
      help: METRIC_HELP[name],
      registers,
      collect() {
        this.set(value());
      },
    });
  return {
    counter: <L extends string>(name: MetricName, labelNames: readonly L[]) => new Counter<L>({ name, help: METRIC_HELP[name], labelNames, registers }),
    gauge: <L extends string>(name: MetricName, labelNames: readonly L[]) => new Gauge<L>({ name, help: METRIC_HELP[name], labelNames, registers }),
    histogram: <L extends string>(name: MetricName, labelNames: readonly L[], buckets: number[]) =>
      new Histogram<L>({ name, help: METRIC_HELP[name], labelNames, buckets, registers }),
    readAtScrape,
    /** A gauge read at every scrape as hits / counted since this process started (NaN before the first). */
    rate(name: MetricName): Rate {
      let hits = 0;
      let all = 0;
      readAtScrape(name, () => ratio(hits, all));
      return {
        count(hit: boolean) {
          all++;
          if (hit) hits++;
        },
      };
    },
  };
}

type Declarations = ReturnType<typeof metricsOn>;

/** A cumulative rate: each `count` adds one to the denominator, and one to the numerator when `hit`. */
interface Rate {
  count(hit: boolean): void;
}

/** The metrics every stage process exports on /metrics. One instance per process, no global registry. */
export class StageMetrics {
  readonly registry = new Registry();
  private readonly declare = metricsOn(this.registry);
  readonly recordsIn = this.declare.counter('tao_records_in_total', ['stage', 'topic']);
  readonly recordsOut = this.declare.counter('tao_records_out_total', ['stage', 'topic']);
  readonly deadLetters = this.declare.counter('tao_dead_letters_total', ['stage', 'topic', 'reason']);
  readonly transactions = this.declare.counter('tao_transactions_total', ['stage', 'result']);
  readonly handleSeconds = this.declare.histogram('tao_record_handle_seconds', ['stage'], [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);
  readonly batchSeconds = this.declare.histogram('tao_batch_seconds', ['stage'], [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);
  readonly consumerLag = this.declare.gauge('tao_consumer_lag', ['group', 'topic', 'partition']);

  readonly toolCallSeconds = this.declare.histogram('tao_tool_call_seconds', ['tool', 'status'], [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);
  readonly toolRetries = this.declare.counter('tao_tool_retries_total', ['tool']);
  readonly fallbacks = this.declare.counter('tao_fallbacks_total', ['tool', 'fallback']);
  readonly breakerState = this.declare.gauge('tao_breaker_state', ['tool']);

  private runs: RunMetrics | null = null;
  private steps: StepMetrics | null = null;

  constructor(processName: string) {
    this.registry.setDefaultLabels({ process: processName });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Run outcomes and the run-level rates (Thought registers them on first use; other processes do not export them). */
  runMetrics(): RunMetrics {
    return (this.runs ??= new RunMetrics(this.declare));
  }

  /** Step evidence and the traceability index (Observation registers them on first use). */
  stepMetrics(): StepMetrics {
    return (this.steps ??= new StepMetrics(this.declare));
  }

  /** Exports `tao_thought_store_runs`: the entries of the stage's state store (Thought's runs), read from `count` at every scrape. */
  trackStoreSize(count: () => number): void {
    this.declare.readAtScrape('tao_thought_store_runs', count);
  }

  /** Exports `tao_runs_in_flight`, read from `count` at every scrape (so it is as right after a restart as the state it reads). */
  trackInFlight(count: () => number): void {
    this.declare.readAtScrape('tao_runs_in_flight', count);
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
  private readonly completion: Rate;
  /** Of the ended runs that hit a failure: those that recovered without a person. */
  private readonly selfRecovery: Rate;

  constructor(declare: Declarations) {
    this.ended = declare.counter('tao_runs_ended_total', ['status', 'reason_code']);
    this.modelTurns = declare.counter('tao_model_turns_total', ['model', 'skill', 'kind']);
    this.modelTokens = declare.counter('tao_model_tokens_total', ['model', 'skill', 'type']);
    this.modelLatency = declare.histogram('tao_model_latency_seconds', ['model', 'skill'], [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60]);
    this.modelCost = declare.counter('tao_model_cost_total', ['model', 'skill']);
    this.modelTurnsPerRun = declare.histogram('tao_model_turns_per_run', ['skill'], [1, 2, 3, 4, 6, 8, 12, 16, 24]);
    this.withFailure = declare.counter('tao_runs_with_failure_total', ['recovered']);
    this.completion = declare.rate('tao_task_completion_rate');
    this.selfRecovery = declare.rate('tao_self_recovery_rate');
  }

  /** Counts one committed outcome. `end` is null for an outcome that parks the run (awaiting_input, awaiting_approval). */
  outcome(status: string, reasonCode: string, end: RunEnd | null): void {
    this.ended.inc({ status, reason_code: reasonCode });
    if (!end) return;
    this.completion.count(end.completed);
    if (end.hitFailure) {
      this.selfRecovery.count(end.recovered);
      this.withFailure.inc({ recovered: String(end.recovered) });
    }
  }
}

/** Steps by completeness of their evidence, counted by Observation once its verdicts are committed. */
export class StepMetrics {
  private readonly observed: Counter<'complete'>;
  private readonly traceability: Rate;

  constructor(declare: Declarations) {
    this.observed = declare.counter('tao_steps_observed_total', ['complete']);
    this.traceability = declare.rate('tao_traceability_index');
  }

  /** Counts one committed step; `complete` as decided by `evidenceComplete` (processors/rates.ts). */
  step(complete: boolean): void {
    this.traceability.count(complete);
    this.observed.inc({ complete: String(complete) });
  }
}

/** The metrics the HTTP ingress exports on its /metrics. One instance per process. */
export class IngressMetrics {
  readonly registry = new Registry();
  private readonly declare = metricsOn(this.registry);
  readonly requests = this.declare.counter('tao_ingress_requests_total', ['route', 'status']);
  /** `POST /v1/tasks` with API keys: one per request, by key id (`none` for no or an unknown key) and outcome. */
  readonly apiKeys = this.declare.counter('tao_ingress_api_key_requests_total', ['key_id', 'outcome']);
  readonly requestSeconds = this.declare.histogram('tao_ingress_request_seconds', ['route'], [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

  constructor(processName = 'tao-ingress') {
    this.registry.setDefaultLabels({ process: processName });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Exports `tao_ingress_runs_in_flight`, read from `count` at every scrape. */
  trackInFlight(count: () => number): void {
    this.declare.readAtScrape('tao_ingress_runs_in_flight', count);
  }
}
