/**
 * The control API under `/__control/` (never authenticated, never counted): `POST|GET|DELETE
 * /__control/faults` sets, lists and clears faults; `GET|DELETE /__control/stats` reads and resets
 * the request stats.
 */
import type http from 'node:http';
import { FaultSpecError, type FaultRegistry } from './faults.ts';
import { openAiError, readBody, sendJson } from './http.ts';
import type { ModelSimStats } from './stats.ts';

/** What the control API acts on. */
export interface ControlContext {
  registry: FaultRegistry;
  stats(): ModelSimStats;
  resetStats(): void;
}

/** The handler of every `/__control` path for one simulator. */
export function controlHandler(ctx: ControlContext): (req: http.IncomingMessage, res: http.ServerResponse, pathname: string) => Promise<void> {
  const { registry, stats, resetStats } = ctx;
  return async (req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> => {
    const method = req.method ?? 'GET';
    const notAllowed = (allow: string): void =>
      sendJson(res, 405, openAiError(`method ${method} not allowed on ${pathname}`, 'invalid_request_error'), { allow });
    if (pathname === '/__control/faults') {
      if (method === 'POST') {
        const text = await readBody(req, 64 * 1024);
        let parsed: unknown;
        try {
          parsed = JSON.parse(text ?? '');
        } catch {
          sendJson(res, 400, openAiError('fault spec is not valid JSON', 'invalid_request_error', 'body', 'invalid_fault_spec'));
          return;
        }
        try {
          sendJson(res, 201, { id: registry.add(parsed) });
        } catch (err) {
          if (!(err instanceof FaultSpecError)) throw err;
          sendJson(res, 400, openAiError(err.message, 'invalid_request_error', err.field, 'invalid_fault_spec'));
        }
        return;
      }
      req.resume();
      if (method === 'DELETE') sendJson(res, 200, { cleared: registry.clear() });
      else if (method === 'GET') sendJson(res, 200, { faults: registry.list() });
      else notAllowed('GET, POST, DELETE');
      return;
    }
    req.resume();
    if (pathname === '/__control/stats') {
      if (method === 'GET') sendJson(res, 200, stats());
      else if (method === 'DELETE') {
        resetStats();
        sendJson(res, 200, { ok: true });
      } else notAllowed('GET, DELETE');
      return;
    }
    sendJson(res, 404, openAiError(`no control route ${pathname}`, 'invalid_request_error', null, 'not_found'));
  };
}
