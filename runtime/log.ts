/**
 * JSON-lines logger. Every line carries `ts`, `level`, `msg` and the bound fields (stage,
 * thought_id, iteration, step, tool, status, duration_ms, error_code, ...). Values under keys that
 * look like secrets, and strings that look like credentials whatever their key (`Bearer ...`,
 * `Basic ...`), are replaced before writing, so a secret passed by mistake never reaches a log.
 * This is a safety net, not a licence: callers never log tool inputs, headers or bodies.
 *
 * Lines to stdout are written in batches: a write to a pipe or a file is a synchronous system call
 * in Node, and a loaded stage logs a line per step, so the lines of one turn of the event loop go
 * out in one write at the end of it (and at process exit), in the order they were logged. A
 * SIGKILL loses at most the lines of the turn it interrupts.
 */

export type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const SECRET_KEY = /secret|password|passwd|token|authorization|api[-_]?key|cookie|signature/i;
/** `Bearer <token>` (any case), and `Basic <base64>` whose token looks encoded (a digit, base64 punctuation or a lower-upper case change), so prose like "Basic checks" stays. */
const CREDENTIAL_VALUE = /\b(?:[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9._~+/=-]{3,}|Basic\s+(?=[A-Za-z0-9+/]*(?:[0-9+/=]|[a-z][A-Z]))[A-Za-z0-9+/]{6,}={0,2})/g;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

/** Whether a key names a secret, remembered per key (a logger sees the same few dozen keys again and again). */
const secretKeys = new Map<string, boolean>();
function isSecretKey(key: string): boolean {
  let secret = secretKeys.get(key);
  if (secret === undefined) {
    secret = SECRET_KEY.test(key);
    if (secretKeys.size < 4096) secretKeys.set(key, secret);
  }
  return secret;
}

export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replace(CREDENTIAL_VALUE, (m) => `${m.split(/\s+/)[0]} [redacted]`);
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return { name: value.name, message: redact(value.message, depth + 1), code: (value as { code?: unknown }).code };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    const v = (value as Record<string, unknown>)[k];
    out[k] = isSecretKey(k) ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

/** Lines logged in this turn of the event loop, not yet written to stdout. */
let pending: string[] = [];
let flushScheduled = false;
let exitHooked = false;
/** A bound on the lines held back, so that a burst of logging cannot hold much memory. */
const MAX_PENDING_LINES = 512;

function flushStdout(): void {
  flushScheduled = false;
  if (pending.length === 0) return;
  const text = pending.join('\n') + '\n';
  pending = [];
  process.stdout.write(text);
}

/** Queues `line` for stdout; the queue is written at the end of this event-loop turn, or at once when full. */
function writeStdoutBatched(line: string): void {
  pending.push(line);
  if (pending.length >= MAX_PENDING_LINES) return flushStdout();
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flushStdout);
  if (!exitHooked) {
    exitHooked = true;
    // process.exit() runs no more immediates: whatever is queued goes out with the exit.
    process.once('exit', flushStdout);
  }
}

/** Writes out the lines the default logger still holds (it also does so by itself at the end of each event-loop turn and at exit). */
export function flushLogs(): void {
  flushStdout();
}

export function createLogger(bound: Record<string, unknown> = {}, options: { level?: Level; write?: (line: string) => void } = {}): Logger {
  const min = ORDER[options.level ?? 'info'];
  const write = options.write ?? writeStdoutBatched;
  // The bound fields, redacted and serialized once: `,"stage":"action",...` (empty without any).
  const boundJson = JSON.stringify(redact(bound)).slice(1, -1);
  const boundPart = boundJson === '' ? '' : `,${boundJson}`;
  const lineKey = (k: string) => k === 'ts' || k === 'level' || k === 'msg';
  const reserved = (k: string) => lineKey(k) || Object.hasOwn(bound, k);
  const splice = !Object.keys(bound).some(lineKey);
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    // A field that rebinds ts, level, msg or a bound key replaces it in place, as the object spread
    // does; otherwise the line is spliced from its parts, the bound ones serialized once.
    if (!splice || (fields !== undefined && Object.keys(fields).some(reserved))) {
      return write(JSON.stringify({ ts: new Date().toISOString(), level, msg, ...(redact({ ...bound, ...fields }) as object) }));
    }
    const head = `{"ts":"${new Date().toISOString()}","level":"${level}","msg":${JSON.stringify(msg)}${boundPart}`;
    if (fields === undefined) return write(`${head}}`);
    const fieldsJson = JSON.stringify(redact(fields)).slice(1, -1);
    write(fieldsJson === '' ? `${head}}` : `${head},${fieldsJson}}`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ ...bound, ...fields }, options),
  };
}
