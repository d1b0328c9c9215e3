import { randomUUID } from 'node:crypto';
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { ContractViolation, TaoError, TransientError, RetriesExhausted } from '../../runtime/errors.ts';
import { retry, realRetryDeps, type RetryDeps } from '../../runtime/retry.ts';
import { chatAnswerAttributes, chatSpan } from '../../runtime/tracing/gen-ai.ts';
import { genAiSpans, startToolAttempt, type SemconvSpan } from '../../runtime/tracing/spans.ts';
import type { StepResult, ToolError } from '../../schemas/types.gen.ts';
import { RETRY_CLASSES, type RetryClass, type Tool } from '../../tools/catalog.ts';
import { redact, type SecretResolver } from '../../tools/secrets.ts';
import { wireAnswerData, wireHeaders, wireRequestBody } from '../../tools/wires/index.ts';
import type { McpClients } from './mcp.ts';
import type { Attempt } from './attempt.ts';

export interface InvokeContext {
  idempotencyKey: string;
  /** The W3C header of the Action span calling: sent as is, or, when tracing is on, as the parent of each attempt's span. */
  traceparent: string;
  /** Resolves the tool's `${NAME}` header references. */
  secrets: SecretResolver;
  /** The run, for the attempt spans' attributes. */
  thoughtId?: string;
}

/** The HTTP side of Action: one undici Agent (a keep-alive pool per origin) shared by all calls. */
export interface HttpDeps {
  dispatcher: Agent;
  retry: RetryDeps;
  now: () => number;
  /** The MCP sessions (processors/action/mcp.ts), when the catalog has MCP tools. */
  mcp?: McpClients;
}

/**
 * Keep-alive shorter than the demo tool server's 5 s, so the client never reuses a socket the
 * server is about to close (the classic ECONNRESET on the first request after an idle period).
 */
export function createToolDispatcher(): Agent {
  return new Agent({ keepAliveTimeout: 4000, keepAliveMaxTimeout: 4000, connections: 64, connect: { timeout: 2000 } });
}

export function realHttpDeps(): HttpDeps {
  return { dispatcher: createToolDispatcher(), retry: realRetryDeps, now: () => Date.now() };
}

/** Builds the request URL and body: path parameters are URL-encoded into their segment, so no input can change host, scheme or path. */
export function buildRequest(tool: Tool, input: Record<string, unknown>): { url: URL; body: string | null } {
  const rest = { ...input };
  const path = tool.spec.path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const value = rest[name];
    delete rest[name];
    if (value === undefined || value === null) throw new ContractViolation(`${tool.spec.name}: path parameter ${name} is missing`);
    const encoded = encodeURIComponent(String(value));
    // URL resolves "." and ".." segments (encoded or not) away, which would change the path.
    if (encoded === '.' || encoded === '..') throw new ContractViolation(`${tool.spec.name}: path parameter ${name} may not be "${encoded}"`);
    return encoded;
  });
  const url = new URL(path, tool.origin);
  if (url.origin !== tool.origin.origin || url.pathname !== path)
    throw new ContractViolation(`${tool.spec.name}: input would change the request target to ${url.origin}${url.pathname}`);
  const bodyless = tool.spec.method === 'GET' || tool.spec.method === 'DELETE';
  for (const [k, v] of Object.entries(rest)) {
    if (!bodyless && !tool.spec.query?.includes(k)) continue;
    if (v !== undefined) url.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    delete rest[k];
  }
  return { url, body: bodyless ? null : JSON.stringify({ ...tool.spec.defaultBody, ...rest, ...tool.spec.fixedBody }) };
}

/**
 * Calls one tool for one step and returns its normalized result. Never throws for anything the tool
 * does (timeouts, status codes, garbage): those are results for Observation to judge. Input that
 * fails the tool's parameter schema is an `invalid_input` result and no request is sent.
 */
export async function invokeTool(tool: Tool, stepId: string, input: unknown, ctx: InvokeContext, deps: HttpDeps): Promise<StepResult> {
  const base = { step_id: stepId, tool: tool.spec.name, input_json: JSON.stringify(input), idempotency_key: ctx.idempotencyKey };
  if (!tool.validateInput(input)) {
    const problems = (tool.validateInput.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
    return invalidInput(base, `input breaks the ${tool.spec.name} contract: ${problems}`);
  }
  // One attempt, given the attempt's traceparent: an HTTP exchange, or an MCP tools/call (processors/action/mcp.ts).
  let send: (traceparent: string) => Promise<Attempt>;
  let server: string;
  // A model call with GenAI spans on (runtime/tracing/gen-ai.ts): its attempts' name and attributes, and which API answers.
  let semconv: { span: SemconvSpan; wire: 'chat' | 'responses' | 'messages' } | null = null;
  if (tool.spec.transport === 'mcp') {
    const mcp = deps.mcp;
    if (!mcp) throw new Error(`tool ${tool.spec.name} is an MCP tool, but this Action has no MCP client`);
    const retries = (cls: RetryClass) => retriesOn(tool, cls);
    send = (traceparent) => mcp.attempt(tool, input, { idempotencyKey: ctx.idempotencyKey, traceparent, secrets: ctx.secrets, retries });
    server = tool.mcpUrl!.host;
  } else {
    // A model endpoint on another wire than chat completions (tools/wires/): the recorded chat request
    // is sent as that API's request, and its answer is read back as the chat completion the gate reads.
    const wire = tool.spec.kind === 'model' && tool.spec.wire && tool.spec.wire !== 'chat' ? tool.spec.wire : null;
    let built: { url: URL; body: string | null };
    let chatBody: string | null;
    try {
      built = buildRequest(tool, input as Record<string, unknown>);
      chatBody = built.body;
      if (wire && built.body !== null) built = { ...built, body: wireRequestBody(wire, built.body, tool.spec.name) };
    } catch (err) {
      if (!(err instanceof ContractViolation)) throw err;
      return invalidInput(base, err.message);
    }
    const { url, body } = built;
    if (tool.spec.kind === 'model' && chatBody !== null && genAiSpans()) {
      semconv = { span: chatSpan(chatBody, wire ?? 'chat', url, ctx.thoughtId ?? null), wire: wire ?? 'chat' };
    }
    const headers: Record<string, string> = {
      accept: 'application/json',
      'idempotency-key': ctx.idempotencyKey,
      'x-request-id': randomUUID(),
      traceparent: ctx.traceparent,
      ...(wire ? wireHeaders(wire) : {}),
    };
    if (body !== null) headers['content-type'] = 'application/json';
    for (const [name, value] of Object.entries(tool.spec.headers ?? {}))
      headers[name.toLowerCase()] = ctx.secrets.resolve(value, `tool ${tool.spec.name} header ${name}`);
    send = (traceparent) =>
      attemptOnce(tool, url, body, { ...headers, traceparent }, deps).then((a) => (wire && body !== null ? readWireAnswer(wire, a, body) : a));
    server = url.host;
  }

  const started = deps.now();
  let attempts = 0;
  let attemptStarted = started;
  let last: Attempt = { status: null, body: null, error: null };
  const { maxAttempts, baseDelayMs, maxDelayMs } = tool.spec.retry;
  try {
    last = await retry(
      async () => {
        attempts++;
        attemptStarted = deps.now();
        const span = startToolAttempt(
          ctx.traceparent,
          { tool: tool.spec.name, step: stepId, thoughtId: ctx.thoughtId ?? null, attempt: attempts, method: tool.spec.method, server },
          semconv?.span,
        );
        last = await send(span.traceparent);
        const answer = semconv && last.error === null ? chatAnswerAttributes(last.data ?? last.body, semconv.wire) : undefined;
        span.end({ status: last.status, errorType: last.error?.type ?? null, ...(answer ? { attributes: answer } : {}) });
        if (last.error?.retryable)
          throw new TransientError(last.error.message, { details: last.retryAfterMs === undefined ? {} : { retryAfterMs: last.retryAfterMs } });
        return last;
      },
      {
        maxAttempts,
        baseDelayMs,
        maxDelayMs,
        deadlineMs: started + tool.spec.timeoutMs * maxAttempts + maxDelayMs,
        ...(tool.spec.retry.maxRetryAfterMs ? { maxRetryAfterMs: tool.spec.retry.maxRetryAfterMs } : {}),
      },
      deps.retry,
    );
  } catch (err) {
    // Retries exhausted: `last` holds the final attempt, which is the result to report.
    if (!(err instanceof RetriesExhausted) && !(err instanceof TaoError && err.code === 'TRANSIENT')) throw err;
  }
  let data: string | null = last.error === null && last.data !== undefined ? last.data : null;
  if (last.error === null && last.data === undefined && last.body !== null) {
    try {
      data = JSON.stringify(JSON.parse(last.body));
    } catch (err) {
      last = { ...last, error: { type: 'malformed', message: `response is not JSON: ${(err as Error).message}`, retryable: false } };
    }
  }
  const ended = deps.now();
  // The credentials this tool's headers carry, should the upstream echo them back.
  const secrets = Object.values(tool.spec.headers ?? {}).flatMap((value) => ctx.secrets.valuesIn(value));
  return {
    ...base,
    attempts,
    status_code: last.status,
    response_time_ms: Math.max(0, Math.round(ended - started)),
    response_raw: redact(last.body, secrets),
    data_json: redact(data, secrets),
    error: last.error && { ...last.error, message: redact(last.error.message, secrets) },
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: Math.max(0, Math.round(ended - attemptStarted)),
  };
}

/** A 2xx answer of another wire read as a chat completion (`data`); one that is not that API's answer is `malformed`. */
function readWireAnswer(wire: 'responses' | 'messages', a: Attempt, sent: string): Attempt {
  if (a.error !== null || a.body === null) return a;
  try {
    return { ...a, data: wireAnswerData(wire, a.body, sent) };
  } catch (err) {
    return { ...a, error: { type: 'malformed', message: `not a ${wire} API answer: ${(err as Error).message}`, retryable: false } };
  }
}

function invalidInput(base: Pick<StepResult, 'step_id' | 'tool' | 'input_json' | 'idempotency_key'>, message: string): StepResult {
  return {
    ...base,
    attempts: 0,
    status_code: null,
    response_time_ms: 0,
    response_raw: null,
    data_json: null,
    error: { type: 'invalid_input', message, retryable: false },
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: null,
  };
}

/**
 * One HTTP exchange, through undici's dispatch API: the handler collects the body itself, with no
 * response stream, async iterator or abort signal per call (half the client CPU of undici's
 * `request`, measured by the bench). Redirects are not followed (dispatch has no redirect handler).
 * Never rejects: whatever happens is an {@link Attempt}.
 */
function attemptOnce(tool: Tool, url: URL, body: string | null, headers: Record<string, string>, deps: HttpDeps): Promise<Attempt> {
  const { timeoutMs, maxResponseBytes } = tool.spec;
  return new Promise((resolve) => {
    let settled = false;
    let controller: Dispatcher.DispatchController | null = null;
    let status = 0;
    let retryAfter: string | string[] | undefined;
    let size = 0;
    const chunks: Buffer[] = [];
    const finish = (attempt: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(attempt);
    };
    // One timer per attempt, cleared when it ends: the whole exchange has timeoutMs, however the
    // server trickles its answer (undici's own timeouts watch the gaps, not the total).
    const timer = setTimeout(() => {
      finish({
        status: null,
        body: null,
        error: { type: 'timeout', message: `no complete response within ${timeoutMs} ms`, retryable: retriesOn(tool, 'timeout') },
      });
      controller?.abort(new Error('attempt timed out'));
    }, timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        // Timed out while waiting for a connection: never sent.
        if (settled) c.abort(new Error('attempt timed out'));
      },
      onResponseStart(_c, statusCode, resHeaders) {
        status = statusCode;
        retryAfter = resHeaders['retry-after'];
      },
      onResponseData(c, chunk) {
        size += chunk.length;
        if (size > maxResponseBytes) {
          finish({ status, body: null, error: { type: 'too_large', message: `response exceeds ${maxResponseBytes} bytes`, retryable: false } });
          c.abort(new Error('response too large'));
          return;
        }
        chunks.push(chunk);
      },
      onResponseEnd() {
        finish(answered(tool, status, Buffer.concat(chunks).toString('utf8'), retryAfter));
      },
      onResponseError(_c, err) {
        finish(failed(tool, err, timeoutMs));
      },
    };
    try {
      deps.dispatcher.dispatch(
        {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: tool.spec.method,
          headers,
          body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        handler,
      );
    } catch (err) {
      finish(failed(tool, err as Error, timeoutMs));
    }
  });
}

/** The attempt a complete response makes: ok for 2xx, else an http_status error (retryable per the tool's retry classes). */
function answered(tool: Tool, status: number, text: string, retryAfterHeader: string | string[] | undefined): Attempt {
  if (status >= 200 && status < 300) return { status, body: text, error: null };
  const cls: RetryClass | null = status === 429 ? 'rate_limited' : status >= 500 ? 'server_error' : null;
  const retryable = cls !== null && retriesOn(tool, cls);
  const after = status === 429 ? parseRetryAfter(retryAfterHeader) : null;
  const error: ToolError = { type: 'http_status', message: `HTTP ${status}`, retryable };
  return after === null ? { status, body: text, error } : { status, body: text, error, retryAfterMs: after };
}

/** The attempt an exchange that failed before a complete response makes: timeout or network. */
function failed(tool: Tool, err: Error, timeoutMs: number): Attempt {
  // The whole-answer deadline settles the attempt itself (attemptOnce's timer); these are undici's gap timeouts.
  const timeout = err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError;
  if (timeout)
    return {
      status: null,
      body: null,
      error: { type: 'timeout', message: `no complete response within ${timeoutMs} ms`, retryable: retriesOn(tool, 'timeout') },
    };
  return {
    status: null,
    body: null,
    error: { type: 'network', message: `${(err as { code?: string }).code ?? err.name}: ${err.message}`, retryable: retriesOn(tool, 'network') },
  };
}

function retriesOn(tool: Tool, cls: RetryClass): boolean {
  return (tool.spec.retry.retryOn ?? RETRY_CLASSES).includes(cls);
}

function parseRetryAfter(value: string | string[] | undefined): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  const seconds = Number(v);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(v);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : null;
}
