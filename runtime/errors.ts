/**
 * The one error taxonomy of the runtime. Every error that crosses a module boundary is a
 * {@link TaoError} with a code from {@link ERROR_CODES}; behaviour is decided from the data on the
 * error, never from its message. What the stage runner does with an error a record's handling
 * throws (runtime/runner/record-processor.ts): a `retriable` one aborts the chunk, which is read
 * again; any other, whatever its code, sends the record to its topic's dead-letter topic with the
 * code in the `tao.error.code` header, so a bad record or a bug it triggers never blocks the
 * partition.
 */

export const ERROR_CODES = [
  /** The bytes are not a Confluent-framed Avro record we can read. */
  'DECODE_FAILED',
  /** The record names a schema id the registry does not know. */
  'UNKNOWN_SCHEMA',
  /** The record decodes but breaks a contract (plan, tool input, JSON payload). */
  'CONTRACT_VIOLATION',
  /** The record names a tool that is not in the catalog. */
  'UNKNOWN_TOOL',
  /** The record is larger than the stage accepts. */
  'RECORD_TOO_LARGE',
  /** A dependency (broker, registry, tool) failed in a way that may pass on retry (retriable). */
  'TRANSIENT',
  /** A retried operation failed on every attempt; `cause` is the last failure. */
  'RETRIES_EXHAUSTED',
  /** Replayed code decided differently from the recorded decision. */
  'DETERMINISM_VIOLATION',
  /** A decision on a parked call that cannot be applied: its interrupt is not pending, or its edit breaks the tool's contract or a policy. */
  'DECISION_REFUSED',
  /** Configuration is invalid; the process must not start. */
  'CONFIG_INVALID',
  /** A programming error or an unexpected failure. Never retried. */
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface TaoErrorOptions {
  retriable?: boolean;
  cause?: unknown;
  /** Structured details safe to log and to put in dead-letter headers (never secrets). */
  details?: Record<string, string | number | boolean>;
}

/** Base error: `code` says what happened, `retriable` whether trying again may help. */
export class TaoError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly details: Record<string, string | number | boolean>;

  constructor(code: ErrorCode, message: string, options: TaoErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options.retriable ?? code === 'TRANSIENT';
    this.details = options.details ?? {};
  }
}

/** The input bytes can't be decoded (bad framing, unknown schema id, truncated Avro). */
export class DecodeError extends TaoError {
  constructor(message: string, options: TaoErrorOptions & { unknownSchema?: boolean } = {}) {
    super(options.unknownSchema ? 'UNKNOWN_SCHEMA' : 'DECODE_FAILED', message, options);
  }
}

/** A decoded record or payload breaks its contract. `field` and `rule` say where and how. */
export class ContractViolation extends TaoError {
  constructor(message: string, options: TaoErrorOptions & { code?: 'CONTRACT_VIOLATION' | 'UNKNOWN_TOOL' | 'RECORD_TOO_LARGE' } = {}) {
    super(options.code ?? 'CONTRACT_VIOLATION', message, options);
  }
}

/** A dependency failed in a way that may pass on retry. */
export class TransientError extends TaoError {
  constructor(message: string, options: TaoErrorOptions = {}) {
    super('TRANSIENT', message, { ...options, retriable: true });
  }
}

/** Every attempt of a retried operation failed; `cause` holds the last failure. */
export class RetriesExhausted extends TaoError {
  readonly attempts: number;
  constructor(attempts: number, cause: unknown) {
    super('RETRIES_EXHAUSTED', `gave up after ${attempts} attempts: ${errorMessage(cause)}`, { cause, retriable: false });
    this.attempts = attempts;
  }
}

/** Configuration failed validation; the message lists every problem. */
export class ConfigError extends TaoError {
  constructor(message: string) {
    super('CONFIG_INVALID', message);
  }
}

/** Normalizes anything thrown into a {@link TaoError} (unknown throws become INTERNAL, not retriable). */
export function toTaoError(err: unknown): TaoError {
  if (err instanceof TaoError) return err;
  return new TaoError('INTERNAL', errorMessage(err), { cause: err });
}

/** What /health shows of an error: a code to alert on (the TaoError's, kafkajs's error type, or the error's class) and its message. */
export interface ErrorReport {
  code: string;
  message: string;
}

export function errorReport(err: unknown): ErrorReport {
  const type = (err as { type?: unknown } | null)?.type;
  const code = err instanceof TaoError ? err.code : typeof type === 'string' ? type : err instanceof Error ? err.name : 'INTERNAL';
  return { code, message: errorMessage(err) };
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
