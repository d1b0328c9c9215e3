/**
 * OpenTelemetry spans under the runs' deterministic trace ids (./ids.ts).
 *
 * Off unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set: then no
 * SDK is loaded, the stage wrappers call the handler directly and tool calls send the record's
 * `traceparent` as before. On, {@link startTracing} loads the SDK and an OTLP/HTTP (JSON) exporter
 * behind a batch processor and registers them as the API's global tracer provider.
 *
 * The parent chain is carried by the record headers, not by in-process context: a record's
 * `traceparent` names its writer (`traceparentFor(thought_id, span)`), and the span of the stage
 * handling that wrote it is given exactly that id. The next stage's span is a child of the header,
 * so a run's spans form one tree in one trace, while the headers stay what they were (deterministic,
 * byte for byte). A record span is exported once its transaction committed: a chunk that aborts
 * and is retried exports its records once. Tool calls are side effects whatever the transaction
 * does, so their spans (one per HTTP attempt) are exported when the attempt ends.
 *
 * No auto-instrumentation is installed (kafkajs, undici, http): it would rewrite record and request
 * headers with random span ids.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Link, type SpanContext, type Tracer } from '@opentelemetry/api';
import type { IdGenerator, ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { randomBytes } from 'node:crypto';
import { ConfigError, toTaoError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { InputRecord, OutputRecord, StageDefinition } from '../processor.ts';
import { spanIdFor, traceIdFor } from './ids.ts';

const TRACER_NAME = 'tao-kafka';
let exporting = false;
/** OTEL_SEMCONV_STABILITY_OPT_IN has `gen_ai_latest_experimental` (./gen-ai.ts). */
let genAi = false;

/** Whether spans are exported with the GenAI semantic conventions (./gen-ai.ts): tracing is on and opted in. */
export function genAiSpans(): boolean {
  return exporting && genAi;
}

/** The `traceparent` header as an OpenTelemetry span context (remote), or null when it is absent or not W3C. */
export function spanContextOf(traceparent: string | undefined): SpanContext | null {
  if (traceparent === undefined) return null;
  // Version 00 is exactly four fields; a later version may append fields after the flags.
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(traceparent.trim());
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
}

/** A span context as a version-00 `traceparent` header. */
export function traceparentOf(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** What {@link startTracing} reads from the environment; null when tracing is off. */
export interface TracingSettings {
  /** The full URL spans are POSTed to (`.../v1/traces`). */
  url: string;
  serviceName: string;
  /** Delay between two exports of the batch processor (`OTEL_BSP_SCHEDULE_DELAY`, default 5000). */
  scheduleDelayMs: number;
  /** `OTEL_SEMCONV_STABILITY_OPT_IN` lists `gen_ai_latest_experimental`: GenAI spans (./gen-ai.ts). */
  genAi: boolean;
}

/**
 * Reads the OTel settings: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended), `OTEL_SERVICE_NAME` (default
 * `defaultService`), `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_SEMCONV_STABILITY_OPT_IN` (a comma-separated list: with
 * `gen_ai_latest_experimental`, GenAI spans; other values are other instrumentations' and ignored) and
 * `OTEL_SDK_DISABLED=true` (off whatever the rest).
 * @throws ConfigError naming the variable for a malformed value, or a protocol other than http/json.
 */
export function tracingSettings(env: NodeJS.ProcessEnv, defaultService: string): TracingSettings | null {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return null;
  const specific = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const general = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (specific === undefined && general === undefined) return null;
  const protocol = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL);
  if (protocol !== undefined && protocol !== 'http/json') {
    const name = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
    throw new ConfigError(`${name} must be http/json (the only protocol tao exports), got "${protocol}"`);
  }
  const url =
    specific !== undefined
      ? httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', specific)
      : httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', `${general!.replace(/\/+$/, '')}/v1/traces`, general!);
  const delay = nonEmpty(env.OTEL_BSP_SCHEDULE_DELAY);
  const scheduleDelayMs = delay === undefined ? 5000 : Number(delay);
  if (!Number.isInteger(scheduleDelayMs) || scheduleDelayMs < 0 || scheduleDelayMs > 3_600_000)
    throw new ConfigError(`OTEL_BSP_SCHEDULE_DELAY must be an integer number of milliseconds from 0 to 3600000, got "${delay}"`);
  const genAi = (env.OTEL_SEMCONV_STABILITY_OPT_IN ?? '').split(',').some((v) => v.trim() === 'gen_ai_latest_experimental');
  return { url, serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? defaultService, scheduleDelayMs, genAi };
}

/** Tracing as a process runs it. */
export interface Tracing {
  /** Whether spans are exported. */
  readonly enabled: boolean;
  /** Exports the spans still queued, waiting at most `timeoutMs`; never throws. Called once at shutdown. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/**
 * Starts exporting spans when the environment names an endpoint (see {@link tracingSettings});
 * otherwise loads nothing and returns a disabled {@link Tracing}. Call once per process, before the
 * stage handles records. An unreachable endpoint never blocks or fails the stage: spans queue up to
 * the batch processor's limit and are then dropped; the first failed export logs one warning, the
 * next success one info line.
 * @throws ConfigError for a malformed OTEL_* value.
 */
export async function startTracing(env: NodeJS.ProcessEnv, defaultService: string, logger: Logger): Promise<Tracing> {
  const settings = tracingSettings(env, defaultService);
  if (settings === null) return { enabled: false, shutdown: async () => undefined };
  // Loaded only here, so a process without an endpoint pays nothing for the SDK.
  const [{ BatchSpanProcessor, TracerProvider }, { resourceFromAttributes }, { OTLPTraceExporter }] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  const where = new URL(settings.url).origin; // no user info or path in a log line
  const exporter = new WarnOnceExporter(new OTLPTraceExporter({ url: settings.url }), logger, where);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.instance.id': `${process.pid}`, 'service.namespace': 'tao' }),
    idGenerator: PINNED_IDS,
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: settings.scheduleDelayMs })],
  });
  if (!trace.setGlobalTracerProvider(provider)) throw new ConfigError('an OpenTelemetry tracer provider is already registered in this process');
  exporting = true;
  genAi = settings.genAi;
  logger.info('exporting trace spans', { endpoint: where, service: settings.serviceName, ...(genAi ? { semconv: 'gen_ai_latest_experimental' } : {}) });
  return {
    enabled: true,
    async shutdown(timeoutMs = 3000) {
      exporting = false;
      genAi = false;
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
      const done = provider.shutdown().then(
        () => 'flushed' as const,
        () => 'failed' as const,
      );
      const result = await Promise.race([done, gaveUp]);
      clearTimeout(timer);
      if (result !== 'flushed') logger.warn('trace spans not all exported at shutdown', { endpoint: where, reason: result });
    },
  };
}

/**
 * Adds a span per handled record to a stage: `process <input topic>` (kind consumer), a child of the
 * record's `traceparent`, with the id its outputs' headers name as their writer when they all name
 * one (a handling with no outputs, or a failed one, gets a random id). `describe` adds the stage's
 * attributes (iteration, steps, decision); never payloads or secrets. The span is made once the
 * record's transaction commits, with the handling's start and end times; a handling that throws
 * (a dead letter, or a retriable failure) gets an error span at once. With tracing off the handler
 * runs as is.
 */
export function traceStage<D extends StageDefinition>(def: D, describe: (record: InputRecord, outputs: readonly OutputRecord[]) => Attributes): D {
  const timings = new WeakMap<InputRecord, { start: number; end: number }>();
  const traced: D = {
    ...def,
    async handle(record, state) {
      if (!exporting) return def.handle(record, state);
      const start = nowMs();
      try {
        const outputs = await def.handle(record, state);
        timings.set(record, { start, end: nowMs() });
        return outputs;
      } catch (err) {
        const failure = toTaoError(err);
        emitRecordSpan(
          def.stage,
          record,
          [],
          { start, end: nowMs() },
          { ...safeDescribe(describe, record, []), 'error.type': failure.code, 'tao.retriable': failure.retriable },
          true,
        );
        throw err;
      }
    },
    committed(records) {
      for (const { input, outputs } of records) {
        const timing = timings.get(input);
        if (!timing) continue;
        timings.delete(input);
        emitRecordSpan(def.stage, input, outputs, timing, safeDescribe(describe, input, outputs), false);
      }
      def.committed?.(records);
    },
  };
  return traced;
}

/** An HTTP attempt of a tool call, as a span; see {@link startToolAttempt}. */
export interface ToolAttempt {
  /** The header to send: this attempt's span when tracing is on, the given one otherwise. */
  traceparent: string;
  /** Ends the span with the attempt's outcome (HTTP status, or the error type) and, for a GenAI span, the answer's attributes. */
  end(outcome: { status: number | null; errorType: string | null; attributes?: Attributes }): void;
}

/** What makes an attempt span a GenAI one (./gen-ai.ts): its name, its attributes, the conventions' schema URL. */
export interface SemconvSpan {
  name: string;
  attributes: Attributes;
  schemaUrl: string;
}

/**
 * Starts the span of one HTTP attempt of a tool call (`tool <name>`, kind client), a child of the
 * Action span that `parentTraceparent` names. Attributes: tool, step, thought_id, attempt, method,
 * server address; never the URL's path or query (they carry step input), headers or bodies. A model
 * call's attempt with GenAI spans on (`semconv`, from ./gen-ai.ts) takes that name and adds those
 * attributes.
 */
export function startToolAttempt(
  parentTraceparent: string,
  attributes: { tool: string; step: string; thoughtId: string | null; attempt: number; method: string; server: string },
  semconv?: SemconvSpan,
): ToolAttempt {
  const parent = exporting ? spanContextOf(parentTraceparent) : null;
  if (parent === null) return { traceparent: parentTraceparent, end: () => undefined };
  const span = tracer(semconv?.schemaUrl).startSpan(
    semconv?.name ?? `tool ${attributes.tool}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'tao.tool': attributes.tool,
        'tao.step': attributes.step,
        ...(attributes.thoughtId === null ? {} : { 'tao.thought_id': attributes.thoughtId }),
        'tao.attempt': attributes.attempt,
        'http.request.method': attributes.method,
        'server.address': attributes.server,
        ...semconv?.attributes,
      },
    },
    trace.setSpanContext(ROOT_CONTEXT, parent),
  );
  return {
    traceparent: traceparentOf(span.spanContext()),
    end({ status, errorType, attributes: answer }) {
      if (answer) span.setAttributes(answer);
      if (status !== null) span.setAttribute('http.response.status_code', status);
      span.setAttribute('tao.status', errorType ?? 'ok');
      if (errorType !== null) {
        span.setAttribute('error.type', errorType);
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
      }
      span.end();
    },
  };
}

function emitRecordSpan(
  stage: string,
  record: InputRecord,
  outputs: readonly OutputRecord[],
  timing: { start: number; end: number },
  attributes: Attributes,
  failed: boolean,
): void {
  const runTrace = traceIdFor(record.key);
  const parent = spanContextOf(record.headers.traceparent);
  const writers = new Set(outputs.map((o) => spanIdFor(o.key, o.span)));
  const own = writers.size === 1 && outputs.every((o) => o.key === record.key) ? [...writers][0]! : undefined;
  // A header from another trace (or none) can't be the parent of a span in the run's trace: the
  // span starts the run's trace and links to it instead.
  const child = parent !== null && parent.traceId === runTrace;
  const links: Link[] = parent !== null && !child ? [{ context: parent }] : [];
  const options = {
    kind: SpanKind.CONSUMER,
    startTime: timing.start,
    links,
    attributes: {
      'tao.stage': stage,
      'tao.thought_id': record.key,
      'messaging.system': 'kafka',
      'messaging.operation.type': 'process',
      'messaging.destination.name': record.topic,
      'messaging.destination.partition.id': String(record.partition),
      'messaging.kafka.offset': Number(record.offset),
      'tao.outputs': outputs.map((o) => o.topic),
      ...attributes,
    },
  };
  const span = withPinnedIds({ traceId: runTrace, spanId: own }, () =>
    child
      ? tracer().startSpan(`process ${record.topic}`, options, trace.setSpanContext(ROOT_CONTEXT, parent))
      : tracer().startSpan(`process ${record.topic}`, { ...options, root: true }, ROOT_CONTEXT),
  );
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: String(attributes['error.type'] ?? 'failed') });
  span.end(timing.end);
}

function safeDescribe(
  describe: (record: InputRecord, outputs: readonly OutputRecord[]) => Attributes,
  record: InputRecord,
  outputs: readonly OutputRecord[],
): Attributes {
  try {
    return describe(record, outputs);
  } catch {
    // A record the handler rejected may not have the shape describe expects: no stage attributes.
    return {};
  }
}

/**
 * The SDK asks its id generator for ids inside `startSpan`, which is synchronous: an id pinned just
 * before the call is the one the span gets, and nothing else can start a span in between.
 */
let pinned: { traceId: string; spanId: string | undefined } | null = null;
const PINNED_IDS: IdGenerator = {
  generateTraceId: () => pinned?.traceId ?? randomBytes(16).toString('hex'),
  generateSpanId: () => pinned?.spanId ?? randomBytes(8).toString('hex'),
};

function withPinnedIds<T>(ids: { traceId: string; spanId: string | undefined }, start: () => T): T {
  pinned = ids;
  try {
    return start();
  } finally {
    pinned = null;
  }
}

function tracer(schemaUrl?: string): Tracer {
  return schemaUrl === undefined ? trace.getTracer(TRACER_NAME) : trace.getTracerProvider().getTracer(TRACER_NAME, undefined, { schemaUrl });
}

function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v === undefined || v === '' ? undefined : v;
}

function httpUrl(name: string, url: string, raw = url): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return parsed.toString();
}

/** Passes batches through; the first failure logs one warning and later ones nothing, until an export succeeds again. */
class WarnOnceExporter implements SpanExporter {
  private failing = false;
  constructor(
    private readonly inner: SpanExporter,
    private readonly logger: Logger,
    private readonly endpoint: string,
  ) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.inner.export(spans, (result) => {
      // ExportResultCode.SUCCESS is 0 (@opentelemetry/core).
      if (result.code !== 0) {
        if (!this.failing)
          this.logger.warn('trace export failed; spans are dropped until the endpoint answers (logged once)', {
            endpoint: this.endpoint,
            error: result.error?.message ?? 'unknown',
          });
        this.failing = true;
      } else if (this.failing) {
        this.failing = false;
        this.logger.info('trace export works again', { endpoint: this.endpoint });
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
