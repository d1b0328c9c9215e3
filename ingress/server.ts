import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Ajv } from 'ajv';
import type { Producer } from 'kafkajs';
import { buildTask, submitTasks } from '../client/tasks.ts';
import type { AvroCodec } from '../runtime/codec.ts';
import { errorMessage } from '../runtime/errors.ts';
import type { Logger } from '../runtime/log.ts';

export interface IngressOptions {
  port: number;
  host: string;
  /** Request bodies above this size get 413. */
  maxBodyBytes: number;
}

const taskRequestSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: {
    text: { type: 'string', minLength: 1, maxLength: 20000 },
    source: { type: 'string', pattern: '^[a-z0-9][a-z0-9_.-]{0,63}$' },
    external_id: { type: 'string', minLength: 1, maxLength: 256 },
    metadata: { type: 'object', additionalProperties: { type: 'string', maxLength: 2000 }, maxProperties: 50 },
  },
} as const;

interface TaskRequest {
  text: string;
  source?: string;
  external_id?: string;
  metadata?: Record<string, string>;
}

/**
 * The HTTP ingress. `POST /v1/tasks` with `{text, source?, external_id?, metadata?}` answers:
 * - 202 `{thought_id, task_id}` once the task is durably in `tao.tasks` (same source + external_id → same thought_id);
 * - 400 `{error, message, fields}` for invalid JSON or fields; 413 above `maxBodyBytes`;
 * - 503 when Kafka can't take the record: never a 2xx for a task that was not written.
 */
export async function startIngress(options: IngressOptions, deps: { producer: Producer; codec: AvroCodec; logger: Logger }): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const validate = new Ajv({ allErrors: true }).compile<TaskRequest>(taskRequestSchema);
  const reply = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  const server = createServer(async (req, res) => {
    try {
      if (req.method === 'GET' && req.url === '/health') return reply(res, 200, { ok: true });
      if (req.url !== '/v1/tasks') return reply(res, 404, { error: 'not_found', message: `no route ${req.method} ${req.url}; try POST /v1/tasks` });
      if (req.method !== 'POST') return reply(res, 405, { error: 'method_not_allowed', message: 'use POST' });
      const body = await readBody(req, options.maxBodyBytes);
      if (body === 'too_large') return reply(res, 413, { error: 'payload_too_large', message: `body exceeds ${options.maxBodyBytes} bytes` });
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch (err) {
        return reply(res, 400, { error: 'invalid_json', message: `body is not JSON: ${errorMessage(err)}` });
      }
      if (!validate(parsed)) {
        const fields = (validate.errors ?? []).map((e) => {
          const params = e.params as { missingProperty?: string; additionalProperty?: string };
          return { field: [e.instancePath.replace(/^\//, ''), params.missingProperty ?? params.additionalProperty].filter(Boolean).join('/') || '/', message: e.message };
        });
        return reply(res, 400, { error: 'invalid_task', message: 'the task has invalid fields', fields });
      }
      const task = buildTask({ text: parsed.text, source: parsed.source ?? 'api', external_id: parsed.external_id ?? null, metadata: parsed.metadata ?? {} });
      try {
        await submitTasks(deps.producer, deps.codec, [task]);
      } catch (err) {
        deps.logger.warn('task not written', { thought_id: task.thought_id, error: err });
        return reply(res, 503, { error: 'unavailable', message: `the task could not be written to Kafka; retry later (${errorMessage(err)})` });
      }
      deps.logger.info('task accepted', { thought_id: task.thought_id, task_id: task.task_id, source: task.source });
      return reply(res, 202, { thought_id: task.thought_id, task_id: task.task_id });
    } catch (err) {
      deps.logger.error('ingress request failed', { error: err });
      if (!res.headersSent) reply(res, 500, { error: 'internal', message: errorMessage(err) });
    }
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(options.port, options.host, () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    url: `http://${options.host}:${port}`,
    port,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | 'too_large'> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > max) {
    req.resume();
    return 'too_large';
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return 'too_large';
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
