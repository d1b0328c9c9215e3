/**
 * A planner that asks a language model for the plan, through any OpenAI-compatible
 * chat-completions endpoint (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM, ...).
 *
 * The model is asked once per task, in `gather`; its answer is recorded verbatim with the run, and
 * `plan` turns the recorded answer into a plan without any I/O, so a replay re-decides from the
 * record and never asks the model again. Whatever the model answers (nothing, garbage, a plan that
 * breaks the rules) ends in a plan that Thought can run: the model's when it is valid, else the
 * fallback planner's.
 */
import type { Dispatcher } from 'undici';
import { ConfigError, errorMessage } from '../../../runtime/errors.ts';
import planSchema from '../../../schemas/json/plan.schema.json' with { type: 'json' };
import type { ToolCatalog } from '../../../tools/catalog.ts';
import type { PlanValidator, ToolContracts } from '../../plan.ts';
import type { Planner, PlannerTask, PlanningResult } from './planner.ts';

/** undici is loaded on the first model call: a stage whose planner never calls a model does not pay for it at start-up. */
let undiciModule: Promise<typeof import('undici')> | undefined;
const undici = () => (undiciModule ??= import('undici'));

/** Options of {@link LlmPlanner}. */
export interface LlmPlannerOptions {
  /** Base URL of the API, up to and including its version segment (`http://host:8000/v1`); requests go to `${baseUrl}/chat/completions`. */
  baseUrl: string;
  /** Model name sent as `model`. */
  model: string;
  /** The API key, sent as `Authorization: Bearer <key>`; omitted (no header) when undefined or empty. Never logged nor recorded. */
  apiKey?: string;
  /** Budget of one request, connect to last body byte. Default 20000. */
  timeoutMs?: number;
  /** `max_tokens` of the request. Default 2048. */
  maxTokens?: number;
  /** Largest response body read; a larger one is recorded as `bad_response`. Default 262144. */
  maxResponseBytes?: number;
  /** Step limit stated in the prompt; use the validator's limit (TAO_MAX_PLAN_STEPS). */
  maxSteps: number;
  /** The planner used when the model gives no valid plan. Must be pure: it is called without a record. */
  fallback: Planner;
  /** Validates the model's plan exactly as Thought will. */
  validator: PlanValidator;
  tools: ToolContracts;
  /** Tools described to the model (every tool of the catalog). */
  catalog: ToolCatalog;
  /** undici dispatcher for the requests; default undici's global one. */
  dispatcher?: Dispatcher;
}

/** What `gather` records: the model's answer verbatim, or what went wrong asking for it. */
export type LlmRecord =
  { ok: true; model: string; content: string; finish_reason: string | null; usage: LlmUsage } | { ok: false; error: LlmErrorKind; message: string };

/** How a request for a plan failed: no answer in time, an HTTP error status, no connection, or a 2xx body that is no chat completion. */
export type LlmErrorKind = 'timeout' | `http_${number}` | 'network' | 'bad_response';

export interface LlmUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** Flow id given to plans made by the model (the model is told to use it; `plan` fills it in when the model leaves it out). */
export const LLM_FLOW = { id: 'llm', version: 1 } as const;

/** Longest planner name written to the run (it carries the fallback reason, see {@link LlmPlanner.plan}). */
export const MAX_PLANNER_NAME = 200;

/**
 * Plans with a chat-completions model, falling back to another planner (the graph planner) when the
 * model does not give a valid plan.
 */
export class LlmPlanner implements Planner {
  readonly name = 'llm';
  /** The system prompt, fixed at construction: the same configuration always asks the same question. */
  readonly systemPrompt: string;
  // An ES private field, so that the key does not show when the planner is inspected or logged.
  readonly #apiKey: string | undefined;
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly maxTokens: number;
  private readonly maxResponseBytes: number;
  private readonly options: Omit<LlmPlannerOptions, 'apiKey'>;

  /** @throws ConfigError when the base URL is not http(s), a number option is out of range, or the fallback needs I/O. */
  constructor({ apiKey, ...options }: LlmPlannerOptions) {
    this.options = options;
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new ConfigError(`LLM base URL "${options.baseUrl}" is not a URL`);
    }
    if (!/^https?:$/.test(base.protocol)) throw new ConfigError(`LLM base URL must be http(s), got ${base.protocol}`);
    if (!options.model) throw new ConfigError('LLM model name is empty');
    if (options.fallback.gather) throw new ConfigError(`fallback planner ${options.fallback.name} does I/O (gather); a fallback must plan from the task alone`);
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.timeoutMs = positive('timeoutMs', options.timeoutMs ?? 20000);
    this.maxTokens = positive('maxTokens', options.maxTokens ?? 2048);
    this.maxResponseBytes = positive('maxResponseBytes', options.maxResponseBytes ?? 262144);
    this.#apiKey = apiKey || undefined;
    this.systemPrompt = buildSystemPrompt(options.catalog, options.tools, positive('maxSteps', options.maxSteps));
  }

  /** The fallback's configuration: the model's answers are in the log, the fallback plans from configuration. */
  get config(): string {
    return this.options.fallback.config;
  }

  /** The chat-completions request body for a task (what `gather` sends). */
  requestBody(task: PlannerTask): Record<string, unknown> {
    return {
      model: this.options.model,
      messages: [
        { role: 'system', content: this.systemPrompt },
        { role: 'user', content: task.text },
      ],
      temperature: 0,
      max_tokens: this.maxTokens,
      stream: false,
    };
  }

  /**
   * Asks the model for a plan. Never throws for anything the endpoint does: timeouts, refused
   * connections, error statuses and malformed bodies become an `ok: false` record.
   * @returns the JSON of an {@link LlmRecord}.
   */
  async gather(task: PlannerTask): Promise<string> {
    const record = await this.ask(task);
    return JSON.stringify(this.scrub(record));
  }

  private async ask(task: PlannerTask): Promise<LlmRecord> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    let status: number;
    let text: string;
    try {
      const { request } = await undici();
      const res = await request(this.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(this.requestBody(task)),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: AbortSignal.timeout(this.timeoutMs),
        ...(this.options.dispatcher ? { dispatcher: this.options.dispatcher } : {}),
      });
      status = res.statusCode;
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > this.maxResponseBytes) {
          res.body.destroy();
          return {
            ok: false,
            error: status >= 200 && status < 300 ? 'bad_response' : `http_${status}`,
            message: `response body exceeds ${this.maxResponseBytes} bytes`,
          };
        }
        chunks.push(chunk as Buffer);
      }
      text = Buffer.concat(chunks).toString('utf8');
    } catch (err) {
      if (await isTimeout(err)) return { ok: false, error: 'timeout', message: `no complete answer within ${this.timeoutMs} ms` };
      const code = (err as { code?: unknown } | null)?.code;
      return { ok: false, error: 'network', message: `${typeof code === 'string' ? code : err instanceof Error ? err.name : 'Error'}: ${errorMessage(err)}` };
    }
    if (status < 200 || status >= 300) return { ok: false, error: `http_${status}`, message: `HTTP ${status}: ${excerpt(text)}` };
    return parseCompletion(text, this.options.model);
  }

  /** Removes the API key from everything recorded, should the endpoint echo it back (in an error body, say). */
  private scrub(record: LlmRecord): LlmRecord {
    const key = this.#apiKey;
    if (!key) return record;
    const clean = (s: string) => s.split(key).join('[redacted]');
    return record.ok ? { ...record, model: clean(record.model), content: clean(record.content) } : { ...record, message: clean(record.message) };
  }

  /**
   * Decides from the recorded answer, without I/O. The plan is taken from the answer's content (a
   * ```json fence, a plain fence, or the first JSON object in prose) and validated exactly as
   * Thought validates it. With no record, a failed request, no JSON object, or an invalid plan, the
   * fallback planner's result is returned instead, named `llm-><fallback>(<reason>)` (at most
   * {@link MAX_PLANNER_NAME} characters) so that the reason shows in the run's outcome.
   */
  plan(task: PlannerTask, record: string | null): PlanningResult {
    const chosen = this.choose(record);
    if ('plan' in chosen) return { kind: 'plan', planner: this.name, plan: chosen.plan };
    return { ...this.options.fallback.plan(task, null), planner: fallbackName(this.name, this.options.fallback.name, chosen.reason) };
  }

  private choose(record: string | null): { plan: unknown } | { reason: string } {
    if (record === null) return { reason: 'no LLM answer recorded' };
    const answer = readRecord(record);
    if (answer === null) return { reason: 'unreadable LLM record' };
    if (!answer.ok) return { reason: `${answer.error}: ${answer.message}` };
    const candidate = extractJsonObject(answer.content);
    if (candidate === null) return { reason: `no JSON object in the answer${answer.finish_reason === 'length' ? ' (cut at max_tokens)' : ''}` };
    if (!('flow' in candidate)) candidate.flow = { ...LLM_FLOW };
    const problems = this.options.validator.validate(candidate, this.options.tools);
    if (problems.length) return { reason: `invalid plan: ${problems.join('; ')}` };
    return { plan: candidate };
  }
}

/** `llm->graph(reason)`, the reason shortened so that the whole name fits {@link MAX_PLANNER_NAME}. */
function fallbackName(name: string, fallback: string, reason: string): string {
  const prefix = `${name}->${fallback}(`;
  const room = MAX_PLANNER_NAME - prefix.length - 1;
  const short = reason.length > room ? `${reason.slice(0, room - 1)}…` : reason;
  return `${prefix}${short})`;
}

function readRecord(record: string): LlmRecord | null {
  let value: unknown;
  try {
    value = JSON.parse(record);
  } catch {
    return null;
  }
  if (!isObject(value) || typeof value.ok !== 'boolean') return null;
  if (value.ok) return typeof value.content === 'string' ? (value as unknown as LlmRecord) : null;
  return typeof value.error === 'string' && typeof value.message === 'string' ? (value as unknown as LlmRecord) : null;
}

/** Reads a chat-completions body: the first choice's message content, model and usage. */
function parseCompletion(text: string, requestedModel: string): LlmRecord {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: 'bad_response', message: `body is not JSON (${(err as Error).message}): ${excerpt(text)}` };
  }
  const choice = isObject(body) && Array.isArray(body.choices) ? (body.choices[0] as unknown) : undefined;
  const message = isObject(choice) ? choice.message : undefined;
  const content = isObject(message) ? message.content : undefined;
  if (typeof content !== 'string') return { ok: false, error: 'bad_response', message: `no choices[0].message.content string in: ${excerpt(text)}` };
  const b = body as Record<string, unknown>;
  const usage: LlmUsage = {};
  if (isObject(b.usage))
    for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const) if (typeof b.usage[k] === 'number') usage[k] = b.usage[k];
  const finish = (choice as Record<string, unknown>).finish_reason;
  return { ok: true, model: typeof b.model === 'string' ? b.model : requestedModel, content, finish_reason: typeof finish === 'string' ? finish : null, usage };
}

/**
 * The plan object in a model's answer, found leniently: reasoning blocks (`<think>...</think>`) are
 * dropped, then the first ```json fence, any other fence, the whole text, and the balanced `{...}`
 * spans of the text are tried in that order; the first that parses as a JSON object wins.
 * @returns the object, or null when there is none.
 */
export function extractJsonObject(content: string): Record<string, unknown> | null {
  const text = content.replace(/<think>[\s\S]*?<\/think>/gi, '');
  const fences = [...text.matchAll(/```[ \t]*([A-Za-z0-9_-]*)[^\n]*\n([\s\S]*?)```/g)];
  const candidates = [
    ...fences.filter((m) => m[1]!.toLowerCase() === 'json').map((m) => m[2]!),
    ...fences.filter((m) => m[1]!.toLowerCase() !== 'json').map((m) => m[2]!),
    text,
    ...balancedObjects(text),
  ];
  for (const candidate of candidates) {
    try {
      const value: unknown = JSON.parse(candidate.trim());
      if (isObject(value)) return value;
    } catch {
      // not this one
    }
  }
  return null;
}

/** Top-level balanced `{...}` spans of a text, in order; braces inside JSON strings are skipped. */
function balancedObjects(text: string): string[] {
  const spans: string[] = [];
  let from = text.indexOf('{');
  while (from !== -1) {
    const end = matchingBrace(text, from);
    if (end === -1) {
      from = text.indexOf('{', from + 1);
      continue;
    }
    spans.push(text.slice(from, end + 1));
    from = text.indexOf('{', end + 1);
  }
  return spans;
}

function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

/** The system prompt: the plan's JSON Schema, the rules Thought enforces, and every tool's contract. */
export function buildSystemPrompt(catalog: ToolCatalog, tools: ToolContracts, maxSteps: number): string {
  const { $id: _, ...schema } = planSchema;
  const toolLines = catalog
    .names()
    .sort()
    .map((name) => {
      const spec = catalog.get(name)!.spec;
      const fields = tools.responseFields(name);
      return [
        `- ${name}: ${spec.description}`,
        `  parameters (JSON Schema): ${JSON.stringify(spec.parameters)}`,
        `  returns fields: ${fields ? fields.join(', ') : '(not listed: do not reference its fields)'}`,
      ].join('\n');
    });
  return [
    'You plan the work of a tool-calling agent. Answer with one JSON object, a plan, and nothing else: no prose, no comments.',
    'A plan is a DAG of tool calls that the runtime executes; steps whose dependencies are done run in parallel.',
    '',
    'The plan must satisfy this JSON Schema:',
    JSON.stringify(schema),
    '',
    'Rules (a plan that breaks one is rejected):',
    `1. "flow" is ${JSON.stringify(LLM_FLOW)}.`,
    '2. Each step calls one tool from the list below; its "input" must satisfy that tool\'s parameter schema.',
    '3. Step ids are unique and match ^[A-Za-z][A-Za-z0-9_]{0,31}$; use S1, S2, S3, ...',
    '4. "depends_on" lists the ids of the steps that must finish before the step starts. The steps must not form a cycle.',
    '5. An input value may use an output field of another step as "{{S1.field}}" only when that step is an ancestor (reachable through depends_on) and the field is one its tool returns. A string that is exactly one reference takes the value with its type.',
    '6. "output" maps each result name to exactly one reference "{{Sx.field}}", following rule 5 for the field.',
    `7. At most ${maxSteps} steps.`,
    '8. Take values such as e-mail addresses and ids from the task; never invent them.',
    '9. The optional step fields (expect, when, until, fallback, max_calls) are described in the schema; leave them out unless the task needs them.',
    '',
    'Tools:',
    ...toolLines,
    '',
    'Example of the shape (tools and fields here are placeholders):',
    '{"flow":{"id":"llm","version":1},"steps":[{"id":"S1","tool":"a.lookup","input":{"email":"x@example.com"},"depends_on":[]},{"id":"S2","tool":"b.details","input":{"id":"{{S1.id}}"},"depends_on":["S1"]}],"output":{"id":"{{S1.id}}","state":"{{S2.state}}"}}',
  ].join('\n');
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new ConfigError(`LLM planner option ${name} must be a positive integer, got ${value}`);
  return value;
}

async function isTimeout(err: unknown): Promise<boolean> {
  const { errors: undiciErrors } = await undici();
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError || err instanceof undiciErrors.ConnectTimeoutError)
    return true;
  const name = (err as { name?: unknown } | null)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function excerpt(text: string, max = 300): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
