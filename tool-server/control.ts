/**
 * The control API under `/__control/` (never counted): `POST|GET|DELETE /__control/faults` sets,
 * lists and clears faults; `GET|DELETE /__control/stats` reads and resets the request stats.
 */
import type http from 'node:http';
import { FaultSpecError, type FaultRegistry } from './faults.ts';
import { readBody, sendJson } from './http.ts';
import type { Stats } from './stats.ts';

const MAX_CONTROL_BODY_BYTES = 64 * 1024;

/** What the control API acts on. */
export interface ControlContext {
  registry: FaultRegistry;
  stats(): Stats;
  resetStats(): void;
}

/** The handler of every `/__control` path for one server. */
export function controlHandler(ctx: ControlContext): (req: http.IncomingMessage, res: http.ServerResponse, pathname: string) => Promise<void> {
  const { registry, stats, resetStats } = ctx;
  return async (req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> => {
    const method = req.method ?? 'GET';
    if (pathname === '/__control/faults') {
      if (method === 'POST') {
        const text = await readBody(req, MAX_CONTROL_BODY_BYTES);
        if (text === null) {
          sendJson(res, 413, { error: 'body_too_large' });
          return;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          sendJson(res, 400, { error: 'invalid_json', message: 'request body is not valid JSON' });
          return;
        }
        try {
          sendJson(res, 201, { id: registry.add(parsed) });
        } catch (err) {
          if (!(err instanceof FaultSpecError)) throw err;
          sendJson(res, 400, { error: 'invalid_fault_spec', field: err.field, message: err.message });
        }
        return;
      }
      req.resume();
      if (method === 'DELETE') {
        sendJson(res, 200, { cleared: registry.clear() });
        return;
      }
      if (method === 'GET') {
        sendJson(res, 200, { faults: registry.list() });
        return;
      }
      sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET, POST, DELETE' });
      return;
    }
    req.resume();
    if (pathname === '/__control/stats') {
      if (method === 'GET') {
        sendJson(res, 200, stats());
        return;
      }
      if (method === 'DELETE') {
        resetStats();
        sendJson(res, 200, { ok: true });
        return;
      }
      sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET, DELETE' });
      return;
    }
    sendJson(res, 404, { error: 'not_found' });
  };
}
