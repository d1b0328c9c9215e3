/**
 * The bad-input corpus: one entry per kind of bad input, across the HTTP ingress (`POST /v1/tasks`),
 * the webhooks (`/v1/webhooks/github|jira`) and every topic a stage consumes. Each kind says how
 * it is sent and how it must be accounted for: a 4xx (or an explicit duplicate/ignored answer), a
 * dead letter with its reason, a refusal by the broker, or an outcome of the run it started.
 * Builders only; bench/bad-inputs.ts sends them and checks the log.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { Producer } from 'kafkajs';
import { buildTask } from '../../client/tasks.ts';
import type {
  ActionResult,
  ObservationResult,
  Outcome,
  OutcomeStatus,
  RunState,
  StepCall,
  StepResult,
  Task,
  ThoughtRequest,
  Verdict,
} from '../../schemas/types.gen.ts';
import { outcome, runState } from '../../schemas/records.ts';
import type { TopicId } from '../../topics/catalog.ts';
import type { BenchNamespace } from './harness.ts';

/** What a kind needs to send itself. */
export interface CorpusContext {
  ns: BenchNamespace;
  ingressUrl: string;
  secrets: { github: string; jira: string };
  /** Unique per corpus run: keeps thought_ids, issue numbers and delivery ids apart between runs. */
  tag: string;
  producer: Producer;
}

/** What sending a kind produced. */
export type Sent =
  | { via: 'http'; status: number; body: Record<string, unknown> | null; extra?: { status: number; body: Record<string, unknown> | null } }
  | { via: 'record'; topic: string; partition: number; offset: string; key: string }
  | { via: 'refused'; error: string };

/** How a kind must be accounted for. */
export type Expect =
  /** Answered with one of these HTTP statuses (a 4xx), nothing written. */
  | { http: number[] }
  /** Accepted (202 with a thought_id) and the run ended with one of these outcome statuses. */
  | { accepted: OutcomeStatus[] }
  /** The second, replayed delivery answered 200 `{duplicate: true}` with the first delivery's thought_id. */
  | { duplicate: true }
  /** Answered 202 `{ignored: true, reason}`: nothing written. */
  | { ignored: true }
  /** This very record (by source topic, partition and offset) was dead-lettered with one of these codes. */
  | { deadLetter: string[] }
  /** A later record of the run (same key) was dead-lettered on `<topic>.dlq` with one of these codes. */
  | { laterDeadLetter: { topic: TopicId; codes: string[] } }
  /** The run (the record's key) ended with one of these statuses (and reason codes, when given). */
  | { outcome: OutcomeStatus[]; reasons?: string[] }
  /** The broker refused the record with this error type; nothing entered the loop. */
  | { refused: string };

/** One kind of bad input. */
export interface BadInputKind {
  id: string;
  /** `ingress`, `webhook`, or the topic the record is written to. */
  surface: 'ingress' | 'webhook' | TopicId;
  description: string;
  expect: Expect;
  /** The partition topic-level kinds are written to (bad ones first, then the sentinel). */
  partition?: number;
  /**
   * Sent in a second round, after every other kind is accounted for: kinds that (today) take a
   * stage down, so they cannot hide what the others do.
   */
  last?: boolean;
  /** The defect this kind once found (fixed in commit 9f1b575): a failure of it is a regression of that fix. */
  knownIssue?: string;
  send(ctx: CorpusContext): Promise<Sent>;
}

// ------------------------------------------------------------------------------------------------
// Record builders

const FIXTURES = new URL('../data/bad-inputs/', import.meta.url);
const fixture = (name: string) => JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as Record<string, unknown>;

/** A complete RunState for hand-written records of the corpus. */
export function runStateFor(plan: unknown, overrides: Partial<RunState> = {}): RunState {
  return runState({
    task_id: `corpus-${randomUUID()}`,
    task_text: 'bad-input corpus',
    planner: 'corpus',
    flow_id: 'corpus',
    plan_json: typeof plan === 'string' ? plan : JSON.stringify(plan),
    step_attempts: { S1: 1 },
    cost_spent: 1,
    ...overrides,
  });
}

type Step = { id: string; tool: string; input: Record<string, unknown>; depends_on: string[]; expect?: Record<string, unknown> };
const plan = (steps: Step[], output: Record<string, unknown> = {}) => ({ flow: { id: 'corpus', version: 1 }, steps, output });
const findCustomer = (email: string): Step => ({ id: 'S1', tool: 'crm.find_customer', input: { email }, depends_on: [] });
/** A one-step plan: find the customer, output nothing else. */
const onePlan = () => plan([findCustomer('corpus@example.com')]);

function call(key: string, step: string, tool: string, input: unknown, iteration = 1): StepCall {
  return {
    step_id: step,
    tool,
    input_json: typeof input === 'string' ? input : JSON.stringify(input),
    idempotency_key: `${key}:${iteration}:${step}`,
    attempt: 1,
  };
}

/** A thought.requests value for `key`: the wave `steps` of plan `p` (an object, or raw plan_json text). */
export function request(key: string, p: unknown, steps: StepCall[], iteration = 1, run: Partial<RunState> = {}): ThoughtRequest {
  return { thought_id: key, iteration, run: runStateFor(p, run), steps };
}

const CUSTOMER = { customer_id: 'C-000001', email: 'corpus@example.com', name: 'Corpus Customer' };

function okResult(key: string, overrides: Partial<StepResult> = {}): StepResult {
  const body = JSON.stringify(CUSTOMER);
  return {
    step_id: 'S1',
    tool: 'crm.find_customer',
    input_json: JSON.stringify({ email: CUSTOMER.email }),
    idempotency_key: `${key}:1:S1`,
    attempts: 1,
    status_code: 200,
    response_time_ms: 4,
    response_raw: body,
    data_json: body,
    error: null,
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: null,
    ...overrides,
  };
}

/** An action.results value for `key` with `results`, carrying plan `p`. */
export function actionResult(key: string, p: unknown, results: StepResult[], run: Partial<RunState> = {}): ActionResult {
  return { thought_id: key, iteration: 1, run: runStateFor(p, run), results, dead_letter: null };
}

function okVerdict(overrides: Partial<Verdict> = {}): Verdict {
  return {
    step_id: 'S1',
    tool: 'crm.find_customer',
    valid: true,
    extracted_data_json: JSON.stringify(CUSTOMER),
    confidence_score: 0.9,
    error_type: 'ok',
    audit_trail: [{ name: 'transport', passed: true, evidence: 'HTTP 200' }],
    status_code: 200,
    response_time_ms: 4,
    attempts: 1,
    fallback_from: null,
    ...overrides,
  };
}

/** An observation.results value for `key` with `verdicts`, carrying plan `p`. */
export function observation(key: string, p: unknown, verdicts: Verdict[], run: Partial<RunState> = {}, iteration = 1): ObservationResult {
  return { thought_id: key, iteration, run: runStateFor(p, run), verdicts, rules_version: null, classifier_model: null, dead_letter: null };
}

function outcomeValue(key: string): Outcome {
  return outcome({ thought_id: key, task_id: 't', reason: 'x', planner: 'corpus', flow_id: 'corpus' });
}

function task(key: string, text = 'order status for corpus@example.com'): Task {
  return buildTask({ thought_id: key, kind: 'NEW', text, source: 'corpus' });
}

// ------------------------------------------------------------------------------------------------
// Senders

/** Writes `value` (bytes) to partition `partition` of topic `id` and returns where it landed. */
async function record(ctx: CorpusContext, id: TopicId, key: string | null, value: Buffer | null, partition = 0): Promise<Sent> {
  const topic = ctx.ns.codec.topics.name(id);
  try {
    const [meta] = await ctx.producer.send({ topic, acks: -1, messages: [{ key, value, partition }] });
    return { via: 'record', topic, partition, offset: meta!.baseOffset!, key: key ?? '' };
  } catch (err) {
    const type = (err as { type?: string; cause?: { type?: string } }).type ?? (err as { cause?: { type?: string } }).cause?.type ?? (err as Error).name;
    return { via: 'refused', error: type };
  }
}

const enc = (ctx: CorpusContext, id: TopicId, value: unknown) => ctx.ns.codec.encode(id, value);
const keyOf = (ctx: CorpusContext, kind: string) => `corpus-${kind}-${ctx.tag}`;
const UNKNOWN_SCHEMA = Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0x00]), Buffer.from('whatever')]);

async function post(ctx: CorpusContext, path: string, body: string | Buffer, headers: Record<string, string> = {}, method = 'POST'): Promise<Sent> {
  const res = await fetch(`${ctx.ingressUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: method === 'GET' ? undefined : typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { raw: text.slice(0, 200) };
  }
  return { via: 'http', status: res.status, body: parsed };
}

/** A request whose Content-Length promises far more than the limit; only the headers and a few bytes are sent. */
function postDeclaredHuge(ctx: CorpusContext, path: string): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, ctx.ingressUrl);
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(50 * 1024 * 1024) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          req.destroy();
          let body: Record<string, unknown> | null = null;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
          } catch {
            body = null;
          }
          resolve({ via: 'http', status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('error', reject);
    req.write('{"text":"');
  });
}

function githubHeaders(
  ctx: CorpusContext,
  body: string | Buffer,
  event = 'issues',
  delivery = randomUUID(),
  secret = ctx.secrets.github,
): Record<string, string> {
  return { 'x-github-event': event, 'x-github-delivery': delivery, 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` };
}

let issueCounter = 0;
function githubIssue(ctx: CorpusContext, mutate: (e: Record<string, unknown> & { issue: Record<string, unknown> }) => void = () => undefined): string {
  const e = fixture('github-issue-opened.json') as Record<string, unknown> & { issue: Record<string, unknown>; repository: Record<string, unknown> };
  e.repository = { full_name: `bench/corpus-${ctx.tag}` };
  e.issue.number = ++issueCounter;
  e.issue.created_at = new Date().toISOString();
  mutate(e);
  return JSON.stringify(e);
}

function jiraIssue(ctx: CorpusContext, mutate: (e: Record<string, unknown> & { issue: Record<string, unknown> }) => void = () => undefined): string {
  const e = fixture('jira-issue-created.json') as Record<string, unknown> & { issue: Record<string, unknown> };
  e.issue.key = `BENCH${ctx.tag.replace(/[^A-Za-z0-9]/g, '').toUpperCase()}-${++issueCounter}`;
  e.timestamp = Date.now();
  mutate(e);
  return JSON.stringify(e);
}

function jiraSignature(secret: string, body: string | Buffer, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex')}`;
}

/** `text` with `marker` replaced by invalid UTF-8 bytes, as a Buffer. */
function withInvalidUtf8(text: string, marker: string): Buffer {
  const [before, after] = text.split(marker);
  return Buffer.concat([Buffer.from(before!, 'utf8'), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from(after ?? '', 'utf8')]);
}

/** An Avro value with `marker`'s bytes replaced by invalid UTF-8 (same length, so the framing stays valid). */
function avroWithInvalidUtf8(bytes: Buffer, marker: string): Buffer {
  const at = bytes.indexOf(Buffer.from(marker, 'utf8'));
  const out = Buffer.from(bytes);
  if (at >= 0) out.set([0xff, 0xfe, 0xc3, 0x28].slice(0, marker.length), at);
  return out;
}

// ------------------------------------------------------------------------------------------------
// The corpus

const http4xx = (status: number): Expect => ({ http: [status] });

/**
 * Over a stage's size limit: before 9f1b575 the dead letter (original bytes) was larger
 * than the dead-letter topic accepts and the stage's consumer stopped; sent last so that a
 * regression cannot hide what the other kinds do.
 */
const OVERSIZED = { last: true, knownIssue: 'an oversized record stopped the stage (fixed in 9f1b575)' } as const;
/** Before 9f1b575 the ingress turned invalid UTF-8 into U+FFFD instead of answering 400. */
const LENIENT_UTF8 = 'the ingress replaced invalid UTF-8 with U+FFFD (fixed in 9f1b575)';

/** Every kind of the corpus. */
export function corpus(): BadInputKind[] {
  const kinds: BadInputKind[] = [];
  const add = (k: BadInputKind) => kinds.push(k);

  // --- POST /v1/tasks --------------------------------------------------------------------------
  const tasksPost = (id: string, description: string, body: string | Buffer, expect: Expect, headers: Record<string, string> = {}) =>
    add({ id: `tasks-api.${id}`, surface: 'ingress', description, expect, send: (ctx) => post(ctx, '/v1/tasks', body, headers) });
  tasksPost('malformed-json', 'JSON cut off in the middle', '{"text": "order status for', http4xx(400));
  tasksPost('empty-body', 'an empty body', '', http4xx(400));
  tasksPost('json-array', 'a JSON array instead of an object', '[{"text":"x"}]', http4xx(400));
  tasksPost('json-null', 'the JSON literal null', 'null', http4xx(400));
  tasksPost('missing-text', 'no text field', '{"source":"api"}', http4xx(400));
  tasksPost('empty-text', 'an empty text', '{"text":""}', http4xx(400));
  tasksPost('text-not-string', 'text is a number', '{"text":42}', http4xx(400));
  tasksPost('unknown-field', 'a field the API does not know', '{"text":"order status for a@example.com","priority":"urgent"}', http4xx(400));
  tasksPost('proto-key', 'a __proto__ key (prototype pollution attempt)', '{"text":"order status for a@example.com","__proto__":{"admin":true}}', http4xx(400));
  tasksPost('text-too-long', 'text of 20,001 characters', JSON.stringify({ text: 'x'.repeat(20001) }), http4xx(400));
  tasksPost('metadata-not-strings', 'metadata values that are not strings', '{"text":"order status for a@example.com","metadata":{"n":1}}', http4xx(400));
  tasksPost(
    'callback-url-not-http',
    'a javascript: callback URL',
    '{"text":"order status for a@example.com","metadata":{"callback_url":"javascript:alert(1)"}}',
    http4xx(400),
  );
  tasksPost('source-invalid', 'a source with spaces and capitals', '{"text":"order status for a@example.com","source":"Bad Source!"}', http4xx(400));
  tasksPost(
    'external-id-too-long',
    'an external id of 257 characters',
    JSON.stringify({ text: 'order status for a@example.com', external_id: 'e'.repeat(257) }),
    http4xx(400),
  );
  tasksPost('deep-nesting', '100,000 nested arrays in metadata', `{"text":"a","metadata":${'['.repeat(100000)}${']'.repeat(100000)}}`, http4xx(400));
  tasksPost('form-encoded', 'a form post instead of JSON', 'text=order+status', http4xx(400), { 'content-type': 'application/x-www-form-urlencoded' });
  tasksPost(
    'oversized-body',
    'a 300 KB body (limit 256 KB)',
    JSON.stringify({ text: 'order status', metadata: { pad: 'p'.repeat(300 * 1024) } }),
    http4xx(413),
  );
  add({
    id: 'tasks-api.declared-huge',
    surface: 'ingress',
    description: 'Content-Length of 50 MB, body never completed',
    expect: http4xx(413),
    send: (ctx) => postDeclaredHuge(ctx, '/v1/tasks'),
  });
  add({
    id: 'tasks-api.wrong-method',
    surface: 'ingress',
    description: 'GET instead of POST',
    expect: http4xx(405),
    send: (ctx) => post(ctx, '/v1/tasks', '', {}, 'GET'),
  });
  add({
    id: 'ingress.unknown-route',
    surface: 'ingress',
    description: 'POST to a route that does not exist',
    expect: http4xx(404),
    send: (ctx) => post(ctx, '/v1/nothing-here', '{}'),
  });
  add({
    id: 'tasks-api.invalid-utf8',
    surface: 'ingress',
    description: 'invalid UTF-8 bytes inside the text',
    expect: http4xx(400),
    knownIssue: LENIENT_UTF8,
    send: (ctx) => post(ctx, '/v1/tasks', withInvalidUtf8('{"text":"order status for corpus@example.com MARK"}', 'MARK')),
  });
  tasksPost(
    'u2028-in-text',
    'U+2028 / U+2029 (JS line terminators) in the text',
    JSON.stringify({ text: 'order status\u2028for corpus@example.com\u2029please' }),
    { accepted: ['completed'] },
  );
  tasksPost('control-chars', 'NUL, ESC and DEL in the text', JSON.stringify({ text: 'order\u0000 status\u001b[31m for corpus@example.com\u007f' }), {
    accepted: ['completed'],
  });
  tasksPost('lone-surrogate', 'a lone UTF-16 surrogate escape in the text', '{"text":"order status for corpus@example.com \\ud800"}', {
    accepted: ['completed'],
  });
  tasksPost('no-email', 'a task the planner cannot fill (no e-mail address)', '{"text":"where is my parcel?"}', {
    accepted: ['awaiting_input', 'escalated', 'failed'],
  });

  // --- POST /v1/webhooks/github ----------------------------------------------------------------
  const gh = (id: string, description: string, expect: Expect, send: (ctx: CorpusContext) => Promise<Sent>) =>
    add({ id: `github.${id}`, surface: 'webhook', description, expect, send });
  gh('no-signature', 'no X-Hub-Signature-256', http4xx(401), (ctx) => {
    const body = githubIssue(ctx);
    const { 'x-hub-signature-256': _s, ...headers } = githubHeaders(ctx, body);
    return post(ctx, '/v1/webhooks/github', body, headers);
  });
  gh('wrong-signature', 'a well-formed but wrong signature', http4xx(401), (ctx) => {
    const body = githubIssue(ctx);
    return post(ctx, '/v1/webhooks/github', body, { ...githubHeaders(ctx, body), 'x-hub-signature-256': `sha256=${'ab'.repeat(32)}` });
  });
  gh('malformed-signature', 'a sha1= signature', http4xx(401), (ctx) => {
    const body = githubIssue(ctx);
    return post(ctx, '/v1/webhooks/github', body, { ...githubHeaders(ctx, body), 'x-hub-signature-256': 'sha1=0123456789abcdef' });
  });
  gh('other-secret', 'signed with another secret', http4xx(401), (ctx) => {
    const body = githubIssue(ctx);
    return post(ctx, '/v1/webhooks/github', body, githubHeaders(ctx, body, 'issues', randomUUID(), 'not-the-secret'));
  });
  gh('tampered-body', 'valid signature of another body', http4xx(401), (ctx) => {
    const body = githubIssue(ctx);
    return post(ctx, '/v1/webhooks/github', body.replace('Where is my order?', 'Refund everything now'), githubHeaders(ctx, body));
  });
  gh('replayed-delivery', 'the same signed delivery sent twice', { duplicate: true }, async (ctx) => {
    const body = githubIssue(ctx);
    const headers = githubHeaders(ctx, body);
    const first = await post(ctx, '/v1/webhooks/github', body, headers);
    const second = await post(ctx, '/v1/webhooks/github', body, headers);
    return first.via === 'http' && second.via === 'http' ? { ...second, extra: { status: first.status, body: first.body } } : second;
  });
  gh('stale-event', 'an issue created 30 days ago, replayed', http4xx(401), (ctx) => {
    const body = githubIssue(ctx, (e) => (e.issue.created_at = new Date(Date.now() - 30 * 86400000).toISOString()));
    return post(ctx, '/v1/webhooks/github', body, githubHeaders(ctx, body));
  });
  gh('missing-event-header', 'no X-GitHub-Event', http4xx(400), (ctx) => {
    const body = githubIssue(ctx);
    const { 'x-github-event': _e, ...headers } = githubHeaders(ctx, body);
    return post(ctx, '/v1/webhooks/github', body, headers);
  });
  gh('missing-delivery-header', 'no X-GitHub-Delivery', http4xx(400), (ctx) => {
    const body = githubIssue(ctx);
    const { 'x-github-delivery': _d, ...headers } = githubHeaders(ctx, body);
    return post(ctx, '/v1/webhooks/github', body, headers);
  });
  gh('missing-title', 'an issues event without issue.title', http4xx(400), (ctx) => {
    const body = githubIssue(ctx, (e) => delete e.issue.title);
    return post(ctx, '/v1/webhooks/github', body, githubHeaders(ctx, body));
  });
  gh('malformed-json', 'a signed body that is not JSON', http4xx(400), (ctx) => {
    const body = '{"action":"opened","issue":';
    return post(ctx, '/v1/webhooks/github', body, githubHeaders(ctx, body));
  });
  gh('unhandled-event', 'a push event', { ignored: true }, (ctx) => {
    const body = JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: `bench/corpus-${ctx.tag}` } });
    return post(ctx, '/v1/webhooks/github', body, githubHeaders(ctx, body, 'push'));
  });
  add({
    id: 'github.invalid-utf8',
    surface: 'webhook',
    description: 'invalid UTF-8 in a signed issue body',
    expect: http4xx(400),
    knownIssue: LENIENT_UTF8,
    send: (ctx) => {
      const body = withInvalidUtf8(
        githubIssue(ctx, (e) => (e.issue.body = 'order for corpus@example.com MARK')),
        'MARK',
      );
      return post(ctx, '/v1/webhooks/github', body, githubHeaders(ctx, body));
    },
  });
  gh('u2028-in-title', 'U+2028 in a signed issue title', { accepted: ['completed'] }, (ctx) => {
    const body = githubIssue(ctx, (e) => (e.issue.title = 'Order\u2028status for corpus@example.com'));
    return post(ctx, '/v1/webhooks/github', body, githubHeaders(ctx, body));
  });
  gh('oversized', 'a signed 300 KB delivery', http4xx(413), (ctx) => {
    const body = githubIssue(ctx, (e) => (e.issue.body = 'x'.repeat(300 * 1024)));
    return post(ctx, '/v1/webhooks/github', body, githubHeaders(ctx, body));
  });

  // --- POST /v1/webhooks/jira ------------------------------------------------------------------
  const jira = (id: string, description: string, expect: Expect, send: (ctx: CorpusContext) => Promise<Sent>) =>
    add({ id: `jira.${id}`, surface: 'webhook', description, expect, send });
  jira('no-signature', 'no X-Tao-Signature', http4xx(401), (ctx) => post(ctx, '/v1/webhooks/jira', jiraIssue(ctx)));
  jira('stale-timestamp', 'signed an hour ago', http4xx(401), (ctx) => {
    const body = jiraIssue(ctx);
    return post(ctx, '/v1/webhooks/jira', body, { 'x-tao-signature': jiraSignature(ctx.secrets.jira, body, Math.floor(Date.now() / 1000) - 3600) });
  });
  jira('future-timestamp', 'signed an hour in the future', http4xx(401), (ctx) => {
    const body = jiraIssue(ctx);
    return post(ctx, '/v1/webhooks/jira', body, { 'x-tao-signature': jiraSignature(ctx.secrets.jira, body, Math.floor(Date.now() / 1000) + 3600) });
  });
  jira('bad-hex', 'a signature that is not hex', http4xx(401), (ctx) =>
    post(ctx, '/v1/webhooks/jira', jiraIssue(ctx), { 'x-tao-signature': `t=${Math.floor(Date.now() / 1000)},v1=zz` }),
  );
  jira('replayed-delivery', 'the same signed delivery sent twice', { duplicate: true }, async (ctx) => {
    const body = jiraIssue(ctx);
    const headers = { 'x-tao-signature': jiraSignature(ctx.secrets.jira, body), 'x-atlassian-webhook-identifier': randomUUID() };
    const first = await post(ctx, '/v1/webhooks/jira', body, headers);
    const second = await post(ctx, '/v1/webhooks/jira', body, headers);
    return first.via === 'http' && second.via === 'http' ? { ...second, extra: { status: first.status, body: first.body } } : second;
  });
  jira('invalid-key', 'an issue key that is not a key', http4xx(400), (ctx) => {
    const body = jiraIssue(ctx, (e) => (e.issue.key = 'not a key'));
    return post(ctx, '/v1/webhooks/jira', body, { 'x-tao-signature': jiraSignature(ctx.secrets.jira, body) });
  });
  jira('missing-summary', 'an issue without fields.summary', http4xx(400), (ctx) => {
    const body = jiraIssue(ctx, (e) => (e.issue.fields = {}));
    return post(ctx, '/v1/webhooks/jira', body, { 'x-tao-signature': jiraSignature(ctx.secrets.jira, body) });
  });
  add({
    id: 'webhook.unknown-source',
    surface: 'webhook',
    description: 'a source the ingress does not serve',
    expect: http4xx(404),
    send: (ctx) => post(ctx, '/v1/webhooks/gitlab', '{}'),
  });

  // --- records on every consumed topic ---------------------------------------------------------
  const rec = (
    surface: TopicId,
    id: string,
    description: string,
    expect: Expect,
    value: (ctx: CorpusContext, key: string) => Promise<Buffer | null> | Buffer | null,
    key?: (ctx: CorpusContext, k: string) => string | null,
    partition = 0,
    extra: Pick<BadInputKind, 'last' | 'knownIssue'> = {},
  ) =>
    add({
      id: `${surface}.${id}`,
      surface,
      description,
      expect,
      partition,
      ...extra,
      send: async (ctx) => {
        const k = keyOf(ctx, `${surface}-${id}`);
        return record(ctx, surface, key ? key(ctx, k) : k, await value(ctx, k), partition);
      },
    });
  const dl = (...codes: string[]): Expect => ({ deadLetter: codes });
  const valid: Record<Exclude<TopicId, 'outcomes' | 'thoughtRuns' | 'manifests'>, (ctx: CorpusContext, key: string) => Promise<Buffer>> = {
    tasks: (ctx, key) => enc(ctx, 'tasks', task(key)),
    thoughtRequests: (ctx, key) =>
      enc(ctx, 'thoughtRequests', request(key, onePlan(), [call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' })])),
    actionResults: (ctx, key) => enc(ctx, 'actionResults', actionResult(key, onePlan(), [okResult(key)])),
    observationResults: (ctx, key) => enc(ctx, 'observationResults', observation(key, onePlan(), [okVerdict()])),
  };
  const other: Record<keyof typeof valid, (ctx: CorpusContext, key: string) => Promise<Buffer>> = {
    tasks: (ctx, key) => enc(ctx, 'outcomes', outcomeValue(key)),
    thoughtRequests: (ctx, key) => enc(ctx, 'tasks', task(key)),
    actionResults: (ctx, key) => valid.thoughtRequests(ctx, key),
    observationResults: (ctx, key) => valid.actionResults(ctx, key),
  };
  for (const t of ['tasks', 'thoughtRequests', 'actionResults', 'observationResults'] as const) {
    rec(t, 'garbage-bytes', 'bytes that are not the Confluent wire format', dl('DECODE_FAILED'), () => Buffer.from('this is not avro at all \u0000\u00ff'));
    rec(t, 'null-value', 'a tombstone (null value)', dl('DECODE_FAILED'), () => null);
    rec(t, 'bad-magic-byte', 'magic byte 1 instead of 0', dl('DECODE_FAILED'), async (ctx, key) => {
      const b = Buffer.from(await valid[t](ctx, key));
      b[0] = 1;
      return b;
    });
    rec(t, 'unknown-schema-id', 'a schema id the registry does not know', dl('UNKNOWN_SCHEMA'), () => UNKNOWN_SCHEMA);
    rec(t, 'wrong-schema', "another topic's schema id and record", dl('DECODE_FAILED'), (ctx, key) => other[t](ctx, key));
    rec(t, 'truncated-avro', 'a valid record cut to 60% of its bytes', dl('DECODE_FAILED'), async (ctx, key) => {
      const b = await valid[t](ctx, key);
      return b.subarray(0, Math.floor(b.length * 0.6));
    });
    rec(t, 'key-mismatch', 'a key that is not the thought_id inside', dl('CONTRACT_VIOLATION'), (ctx, key) => valid[t](ctx, `${key}-inside`));
  }
  rec('tasks', 'empty-value', 'a zero-length value', dl('DECODE_FAILED'), () => Buffer.alloc(0));
  rec(
    'tasks',
    'null-key',
    'no key at all',
    dl('CONTRACT_VIOLATION'),
    (ctx, key) => valid.tasks(ctx, key),
    () => null,
  );
  rec('tasks', 'trailing-bytes', 'a valid record followed by garbage', dl('DECODE_FAILED'), async (ctx, key) =>
    Buffer.concat([await valid.tasks(ctx, key), Buffer.from('TRAILING')]),
  );
  rec('tasks', 'negative-string-length', 'an Avro string whose length is negative', dl('DECODE_FAILED'), async (ctx, key) => {
    const b = Buffer.from(await valid.tasks(ctx, key));
    b[5] = 0x01; // zig-zag -1: the thought_id's length
    return b;
  });
  rec('tasks', 'huge-string-length', 'an Avro string claiming 2^31 bytes', dl('DECODE_FAILED'), async (ctx, key) => {
    const b = await valid.tasks(ctx, key);
    return Buffer.concat([b.subarray(0, 5), Buffer.from([0xfe, 0xff, 0xff, 0xff, 0x0f]), b.subarray(6)]);
  });
  rec('tasks', 'invalid-utf8-avro-string', 'invalid UTF-8 bytes inside an Avro string', { outcome: ['completed'] }, async (ctx, key) =>
    avroWithInvalidUtf8(await enc(ctx, 'tasks', task(key, 'order status for corpus@example.com MARK')), 'MARK'),
  );
  rec('tasks', 'u2028-in-text', 'U+2028 in the task text', { outcome: ['completed'] }, (ctx, key) =>
    enc(ctx, 'tasks', task(key, 'order status\u2028for corpus@example.com')),
  );
  rec('tasks', 'no-email', 'a task the planner cannot fill', { outcome: ['awaiting_input', 'escalated', 'failed'] }, (ctx, key) =>
    enc(ctx, 'tasks', task(key, 'hello, anybody there?')),
  );
  rec(
    'tasks',
    'reply-to-unknown-run',
    'a REPLY for a run that never started',
    { outcome: ['completed', 'awaiting_input', 'escalated', 'failed'] },
    (ctx, key) => enc(ctx, 'tasks', { ...task(key), kind: 'REPLY' }),
  );
  rec('actionResults', 'over-broker-limit', 'a 2 MB record (over the topic max.message.bytes, 1 MB by default)', { refused: 'MESSAGE_TOO_LARGE' }, (ctx, key) =>
    enc(ctx, 'actionResults', actionResult(key, onePlan(), [okResult(key, { response_raw: 'x'.repeat(2 * 1024 * 1024) })])),
  );
  rec(
    'tasks',
    'over-stage-limit',
    'a 5 MB task on a topic whose limit an operator raised (Thought takes 4 MB)',
    dl('RECORD_TOO_LARGE'),
    async (ctx, key) => enc(ctx, 'tasks', task(key, `order status for corpus@example.com ${'x'.repeat(5 * 1024 * 1024)}`)),
    undefined,
    1,
    OVERSIZED,
  );

  // thought.requests (Action): contracts and plans, written as Thought would never write them.
  const req = (
    id: string,
    description: string,
    expect: Expect,
    build: (key: string) => ThoughtRequest,
    partition = 0,
    extra: Pick<BadInputKind, 'last' | 'knownIssue'> = {},
  ) => rec('thoughtRequests', id, description, expect, (ctx, key) => enc(ctx, 'thoughtRequests', build(key)), undefined, partition, extra);
  req('unknown-tool', 'a step naming a tool that is not in the catalog', dl('UNKNOWN_TOOL'), (key) =>
    request(key, onePlan(), [call(key, 'S1', 'billing.refund_everything', {})]),
  );
  req('input-not-json', 'input_json that is not JSON', dl('CONTRACT_VIOLATION'), (key) =>
    request(key, onePlan(), [call(key, 'S1', 'crm.find_customer', '{"email": ')]),
  );
  req('input-breaks-contract', 'an input failing the tool parameter schema', { outcome: ['awaiting_input', 'failed', 'escalated'] }, (key) =>
    request(key, onePlan(), [call(key, 'S1', 'crm.find_customer', { email: 'not-an-email' })]),
  );
  req('path-traversal', 'a path parameter trying ../', { outcome: ['awaiting_input', 'failed', 'escalated'] }, (key) =>
    request(key, plan([{ id: 'S1', tool: 'orders.get', input: { order_id: '../../admin' }, depends_on: [] }]), [
      call(key, 'S1', 'orders.get', { order_id: '../../admin' }),
    ]),
  );
  req('u2028-in-input', 'U+2028 inside a tool input', { outcome: ['awaiting_input', 'failed', 'escalated'] }, (key) =>
    request(key, onePlan(), [call(key, 'S1', 'crm.find_customer', { email: 'corpus\u2028@example.com' })]),
  );
  req('empty-wave', 'a wave with no steps', { outcome: ['failed'], reasons: ['no_ready_step'] }, (key) => request(key, onePlan(), []));
  req('missing-field-reference', 'a later step referencing a field the tool never returns', { outcome: ['failed'], reasons: ['output_unresolved'] }, (key) =>
    request(
      key,
      plan([findCustomer('corpus@example.com'), { id: 'S2', tool: 'crm.tier', input: { customer_id: '{{S1.no_such_field}}' }, depends_on: ['S1'] }]),
      [call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' })],
    ),
  );
  req('plan-unknown-tool', 'a plan whose next step names an unknown tool', { laterDeadLetter: { topic: 'thoughtRequests', codes: ['UNKNOWN_TOOL'] } }, (key) =>
    request(key, plan([findCustomer('corpus@example.com'), { id: 'S2', tool: 'billing.refund_everything', input: {}, depends_on: ['S1'] }]), [
      call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' }),
    ]),
  );
  req('plan-cycle', 'a plan whose remaining steps depend on each other', { outcome: ['failed'], reasons: ['no_ready_step'] }, (key) =>
    request(
      key,
      plan([
        findCustomer('corpus@example.com'),
        { id: 'S2', tool: 'crm.tier', input: { customer_id: 'C-000001' }, depends_on: ['S3'] },
        { id: 'S3', tool: 'crm.tier', input: { customer_id: 'C-000001' }, depends_on: ['S2'] },
      ]),
      [call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' })],
    ),
  );
  req('plan-not-json', 'a run whose plan is not JSON', { laterDeadLetter: { topic: 'actionResults', codes: ['CONTRACT_VIOLATION'] } }, (key) =>
    request(key, '{"flow": ', [call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' })]),
  );
  req('plan-null', 'a run whose plan is the JSON null', { laterDeadLetter: { topic: 'actionResults', codes: ['CONTRACT_VIOLATION'] } }, (key) =>
    request(key, 'null', [call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' })]),
  );
  req('iteration-beyond-limit', 'wave 9,999 of a run allowed 10', { outcome: ['budget_exhausted', 'completed'] }, (key) =>
    request(
      key,
      plan([findCustomer('corpus@example.com'), { id: 'S2', tool: 'crm.tier', input: { customer_id: '{{S1.customer_id}}' }, depends_on: ['S1'] }]),
      [call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' }, 9999)],
      9999,
    ),
  );
  req(
    'over-stage-limit',
    'a 1.5 MB request on a topic whose limit an operator raised (Action takes 1 MiB)',
    dl('RECORD_TOO_LARGE'),
    (key) => request(key, onePlan(), [call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' })], 1, { task_text: 'x'.repeat(1536 * 1024) }),
    1,
    OVERSIZED,
  );

  // action.results (Observation)
  const res = (id: string, description: string, expect: Expect, build: (key: string) => ActionResult) =>
    rec('actionResults', id, description, expect, (ctx, key) => enc(ctx, 'actionResults', build(key)));
  res('data-not-json', 'data_json that is not JSON', { deadLetter: ['CONTRACT_VIOLATION'] }, (key) =>
    actionResult(key, onePlan(), [okResult(key, { data_json: '{"customer_id": ' })]),
  );
  res('unknown-tool-result', 'a result from a tool the catalog does not have', { outcome: ['failed', 'escalated', 'awaiting_input'] }, (key) =>
    actionResult(key, onePlan(), [okResult(key, { tool: 'no.such_tool' })]),
  );
  res('body-u2028-invalid-utf8', 'a response body with U+2028 and U+FFFD', { outcome: ['completed', 'failed', 'escalated', 'awaiting_input'] }, (key) =>
    actionResult(key, onePlan(), [okResult(key, { response_raw: `${JSON.stringify(CUSTOMER)}\u2028\uFFFD` })]),
  );
  res('plan-not-json', 'a run whose plan is not JSON', { deadLetter: ['CONTRACT_VIOLATION'] }, (key) => actionResult(key, '{"flow": ', [okResult(key)]));
  res('negative-latency', 'a negative response time', { outcome: ['completed', 'failed', 'escalated', 'awaiting_input'] }, (key) =>
    actionResult(key, onePlan(), [okResult(key, { response_time_ms: -5 })]),
  );

  // observation.results (Thought)
  const obs = (id: string, description: string, expect: Expect, build: (key: string) => ObservationResult) =>
    rec('observationResults', id, description, expect, (ctx, key) => enc(ctx, 'observationResults', build(key)));
  obs('plan-not-json', 'a run whose plan is not JSON', dl('CONTRACT_VIOLATION'), (key) => observation(key, '{"flow": ', [okVerdict()]));
  obs('outputs-not-json', 'a run whose outputs are not JSON', dl('CONTRACT_VIOLATION'), (key) =>
    observation(key, onePlan(), [okVerdict()], { outputs_json: '{' }),
  );
  obs('plan-null', 'a run whose plan is the JSON null', { deadLetter: ['CONTRACT_VIOLATION'] }, (key) => observation(key, 'null', [okVerdict()]));
  obs('extracted-data-not-json', 'a valid verdict whose extracted data is not JSON', { deadLetter: ['CONTRACT_VIOLATION'] }, (key) =>
    observation(key, onePlan(), [okVerdict({ extracted_data_json: '{"customer_id": ' })]),
  );
  obs('verdict-for-unknown-step', 'a verdict for a step the plan does not have', { outcome: ['failed'], reasons: ['no_ready_step'] }, (key) =>
    observation(key, onePlan(), [okVerdict({ step_id: 'S9' })]),
  );
  obs(
    'plan-unknown-tool',
    'an invalid plan: the next step names an unknown tool',
    { laterDeadLetter: { topic: 'thoughtRequests', codes: ['UNKNOWN_TOOL'] } },
    (key) =>
      observation(key, plan([findCustomer('corpus@example.com'), { id: 'S2', tool: 'billing.refund_everything', input: {}, depends_on: ['S1'] }]), [
        okVerdict(),
      ]),
  );
  obs('output-missing-field', 'a plan output referencing a field no step returned', { outcome: ['failed'], reasons: ['output_unresolved'] }, (key) =>
    observation(key, plan([findCustomer('corpus@example.com')], { tier: '{{S1.tier}}' }), [okVerdict()]),
  );
  obs('input-missing-field', 'a next step whose input references a missing field', { outcome: ['failed'], reasons: ['output_unresolved'] }, (key) =>
    observation(key, plan([findCustomer('corpus@example.com'), { id: 'S2', tool: 'crm.tier', input: { customer_id: '{{S1.nope}}' }, depends_on: ['S1'] }]), [
      okVerdict(),
    ]),
  );
  obs('invalid-verdict-no-fallback', 'a failed verdict with nothing left to try', { outcome: ['failed', 'escalated', 'awaiting_input'] }, (key) =>
    observation(key, onePlan(), [okVerdict({ valid: false, error_type: 'schema_mismatch', extracted_data_json: null })]),
  );
  return kinds;
}

/** The good record written after the bad ones on each partition used: it must be processed (no stall). */
export async function sentinel(ctx: CorpusContext, id: keyof typeof SENTINELS, partition: number): Promise<Sent & { key: string }> {
  const key = keyOf(ctx, `sentinel-${id}-p${partition}`);
  const sent = await record(ctx, id, key, await ctx.ns.codec.encode(id, SENTINELS[id](key)), partition);
  return { ...sent, key };
}

const SENTINELS = {
  tasks: (key: string) => task(key),
  thoughtRequests: (key: string) => request(key, onePlan(), [call(key, 'S1', 'crm.find_customer', { email: 'corpus@example.com' })]),
  actionResults: (key: string) => actionResult(key, onePlan(), [okResult(key)]),
  observationResults: (key: string) => observation(key, onePlan(), [okVerdict()]),
} as const;
