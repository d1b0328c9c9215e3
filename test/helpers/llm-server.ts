/**
 * A real HTTP server (node:http) that speaks the OpenAI chat-completions protocol with scripted
 * answers, for testing the LLM planner without a model. It records every request it receives.
 *
 * Answers are chosen per request: first from the queue of the first marker (see
 * {@link LlmServer.when}) that the request's last user message contains, else from the general
 * queue ({@link LlmServer.enqueue}). A request with no scripted answer gets a 500, so a missing
 * script shows as a fallback, never as a hang.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { Socket } from 'node:net';

/** One scripted answer. */
export type ScriptedAnswer =
  /** A 200 chat completion whose first choice's message content is `content`. */
  | { content: string; model?: string; finishReason?: string }
  /** This status with this body verbatim (a 200 with a body that is no completion tests `bad_response`). */
  | { status: number; body?: string; contentType?: string }
  /** Never answers; the request is held until the client gives up or the server closes. */
  | { hang: true };

/** A request as the server received it. */
export interface ReceivedRequest {
  method: string;
  path: string;
  /** Header names in lower case. */
  headers: http.IncomingHttpHeaders;
  /** The body as text, and parsed when it is JSON (else null). */
  raw: string;
  body: ChatRequestBody | null;
  at: number;
  /** What it was answered with (null for an unknown route). */
  answer: ScriptedAnswer | null;
}

/** The parts of a chat-completions request body the tests look at. */
export interface ChatRequestBody {
  model?: string;
  messages?: Array<{ role: string; content: string }>;
  temperature?: number;
  max_tokens?: number;
  [key: string]: unknown;
}

export interface LlmServer {
  /** Base URL to configure as TAO_LLM_BASE_URL, e.g. `http://127.0.0.1:43123/v1`. */
  baseUrl: string;
  port: number;
  /** Every request received, in arrival order. */
  readonly requests: ReceivedRequest[];
  /** Number of requests received (any route). */
  readonly count: number;
  /** Adds answers to the general queue, used in order by requests no marker claims. */
  enqueue(...answers: ScriptedAnswer[]): void;
  /** Adds answers for requests whose last user message contains `marker`, used in order. */
  when(marker: string, ...answers: ScriptedAnswer[]): void;
  /** Resolves once `n` requests have been received. */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Stops listening and destroys every socket, held (`hang`) requests included. Idempotent. */
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1 and an ephemeral port (unless `port` is given). */
export async function startLlmServer(options: { port?: number; answers?: ScriptedAnswer[] } = {}): Promise<LlmServer> {
  const queue: ScriptedAnswer[] = [...(options.answers ?? [])];
  const byMarker = new Map<string, ScriptedAnswer[]>();
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  const arrivals = new EventEmitter();
  let completions = 0;

  const pick = (body: ChatRequestBody | null): ScriptedAnswer | null => {
    const user = [...(body?.messages ?? [])].reverse().find((m) => m.role === 'user')?.content ?? '';
    for (const [marker, answers] of byMarker) if (typeof user === 'string' && user.includes(marker) && answers.length) return answers.shift()!;
    return queue.shift() ?? null;
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: ChatRequestBody | null = null;
      try {
        body = JSON.parse(raw) as ChatRequestBody;
      } catch {
        body = null;
      }
      const route = req.method === 'POST' && (req.url ?? '').split('?')[0] === '/v1/chat/completions';
      const answer = route ? (pick(body) ?? { status: 500, body: JSON.stringify({ error: { message: 'llm-server: no scripted answer left' } }) }) : null;
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, body, at: Date.now(), answer });
      arrivals.emit('request');
      if (answer === null) return send(res, 404, JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      if ('hang' in answer) return;
      if ('status' in answer) return send(res, answer.status, answer.body ?? '', answer.contentType);
      completions++;
      const promptTokens = Math.ceil(raw.length / 4);
      const completionTokens = Math.ceil(answer.content.length / 4);
      send(
        res,
        200,
        JSON.stringify({
          id: `chatcmpl-${completions}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: answer.model ?? body?.model ?? 'scripted',
          choices: [{ index: 0, message: { role: 'assistant', content: answer.content }, finish_reason: answer.finishReason ?? 'stop' }],
          usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
        }),
      );
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  let closed: Promise<void> | null = null;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    get count() {
      return requests.length;
    },
    enqueue: (...answers) => void queue.push(...answers),
    when: (marker, ...answers) => void byMarker.set(marker, [...(byMarker.get(marker) ?? []), ...answers]),
    waitForRequests: (n, timeoutMs = 10000) =>
      new Promise<void>((resolve, reject) => {
        if (requests.length >= n) return resolve();
        const onRequest = () => {
          if (requests.length < n) return;
          clearTimeout(timer);
          arrivals.off('request', onRequest);
          resolve();
        };
        const timer = setTimeout(() => {
          arrivals.off('request', onRequest);
          reject(new Error(`llm-server got ${requests.length} of ${n} requests within ${timeoutMs} ms`));
        }, timeoutMs);
        arrivals.on('request', onRequest);
      }),
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closed;
    },
  };
}

function send(res: http.ServerResponse, status: number, body: string, contentType = 'application/json'): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
