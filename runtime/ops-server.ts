import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { listen, type Listening } from './listen.ts';

export interface HealthReport {
  ok: boolean;
  [detail: string]: unknown;
}

/**
 * Serves `GET /health` (200 when healthy, 503 otherwise, JSON body) and `GET /metrics`
 * (Prometheus text) for one process on `host` (TAO_BIND_HOST for processes). Port 0 picks a free
 * port; the bound port is returned.
 */
export async function startOpsServer(port: number, metrics: Registry, health: () => HealthReport, host = '127.0.0.1'): Promise<Listening> {
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      const report = health();
      res.writeHead(report.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(report));
    } else if (req.method === 'GET' && req.url === '/metrics') {
      metrics.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}`),
      );
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not_found', message: 'try GET /health or GET /metrics' }));
    }
  });
  return listen(server, host, port);
}
