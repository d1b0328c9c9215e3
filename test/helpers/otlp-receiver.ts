/**
 * A local OTLP/HTTP trace receiver for tests: a plain node:http server on an ephemeral port that
 * decodes JSON `ExportTraceServiceRequest` bodies POSTed to /v1/traces and keeps their spans.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value: AnyValue };

/** One received span, its attributes flattened to plain values and its resource's service name. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** The schema URL of the span's instrumentation scope ('' when none). */
  schemaUrl: string;
}

export interface OtlpReceiver {
  /** Base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** The raw JSON bodies received, to check what never leaves a process. */
  bodies: string[];
  /** Export requests answered, including the ones refused. */
  requests: number;
  /** Resolves when `check` holds over the spans received so far (checked at each export), or rejects after `timeoutMs`. */
  waitUntil(check: (spans: ReceivedSpan[]) => boolean, timeoutMs: number, what: string): Promise<void>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const waiters = new Set<() => void>();
  let requests = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(404).end();
        return;
      }
      try {
        const body = Buffer.concat(chunks).toString('utf8');
        bodies.push(body);
        spans.push(...decode(JSON.parse(body)));
      } catch (err) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: (err as Error).message }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      for (const w of [...waiters]) w();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    get requests() {
      return requests;
    },
    waitUntil(check, timeoutMs, what) {
      return new Promise((resolve, reject) => {
        const test = () => {
          if (!check(spans)) return;
          waiters.delete(test);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(test);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${spans.length} spans received)`));
        }, timeoutMs);
        waiters.add(test);
        test();
      });
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function decode(body: {
  resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ schemaUrl?: string; spans?: unknown[] }> }>;
}): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
    for (const ss of rs.scopeSpans ?? []) {
      for (const raw of ss.spans ?? []) {
        const s = raw as {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          startTimeUnixNano: string | number;
          endTimeUnixNano: string | number;
          attributes?: KeyValue[];
          links?: Array<{ traceId: string; spanId: string }>;
          status?: { code?: number };
        };
        out.push({
          service,
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          startNs: BigInt(s.startTimeUnixNano),
          endNs: BigInt(s.endTimeUnixNano),
          attributes: attributes(s.attributes),
          links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          statusCode: s.status?.code ?? 0,
          schemaUrl: ss.schemaUrl ?? '',
        });
      }
    }
  }
  return out;
}

function attributes(list: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) out[key] = plain(value);
  return out;
}

function plain(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(plain);
  return undefined;
}
