/**
 * The drift check between a server and its OpenAPI document: a {@link RouteRecorder} sends the
 * requests a test drives and keeps every (method, path, status) the server answered; {@link driftProblems}
 * then says which answers the document does not declare, and which declared operations never
 * answered anything but the server's 404 fallback.
 */
import { readFileSync } from 'node:fs';

export interface Observation {
  method: string;
  path: string;
  status: number;
  /** The server's answer for a path no route has (its 404 fallback). */
  fallback: boolean;
}

interface Operation {
  responses: Record<string, unknown>;
  parameters?: Array<{ name: string; in: string; schema?: { pattern?: string } }>;
}
export interface OpenApiDoc {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
}

/** A committed document of docs/openapi/. */
export function committedDoc(name: 'ingress' | 'console'): OpenApiDoc {
  return JSON.parse(readFileSync(new URL(`../../docs/openapi/${name}.json`, import.meta.url), 'utf8')) as OpenApiDoc;
}

/** Sends requests to `base` and records their answers; `isFallback` recognises the server's 404 for an unknown path. */
export class RouteRecorder {
  readonly observed: Observation[] = [];

  constructor(private readonly isFallback: (status: number, body: string) => boolean) {}

  /** `fetch(base + path, init)`, recorded; the body is read (but for an event stream, cancelled). */
  async send(base: string, path: string, init: RequestInit = {}): Promise<{ status: number; text: string; headers: Headers }> {
    const res = await fetch(`${base}${path}`, init);
    let text = '';
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) await res.body?.cancel();
    else text = await res.text();
    const method = (init.method ?? 'GET').toUpperCase();
    this.observed.push({ method, path: new URL(path, 'http://x').pathname, status: res.status, fallback: this.isFallback(res.status, text) });
    return { status: res.status, text, headers: res.headers };
  }
}

function templates(doc: OpenApiDoc): Array<{ template: string; regex: RegExp; ops: Record<string, Operation> }> {
  return Object.entries(doc.paths).map(([template, ops]) => {
    const params = Object.values(ops).flatMap((op) => op.parameters ?? []);
    const source = template
      .split(/(\{[a-z_]+\})/)
      .map((part) => {
        const name = /^\{([a-z_]+)\}$/.exec(part)?.[1];
        if (!name) return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
        const pattern = params.find((p) => p.in === 'path' && p.name === name)?.schema?.pattern;
        return `(${pattern ? pattern.replace(/^\^/, '').replace(/\$$/, '') : '[^/]+'})`;
      })
      .join('');
    return { template, regex: new RegExp(`^${source}$`), ops };
  });
}

/**
 * What disagrees between `observed` and `doc`: an answer whose status the path's operation does not
 * declare (another method on a declared path may answer only a status some operation of the path
 * declares, its 405), an answer for a path the document does not have (but the fallback), and a
 * declared operation that never answered anything but the fallback.
 */
export function driftProblems(doc: OpenApiDoc, observed: readonly Observation[]): string[] {
  const paths = templates(doc);
  const problems: string[] = [];
  const answered = new Set<string>();
  for (const o of observed) {
    const at = paths.find((p) => p.regex.test(o.path));
    const op = at?.ops[o.method.toLowerCase()];
    if (o.fallback) {
      if (at && op) problems.push(`${o.method} ${at.template} is declared, but ${o.method} ${o.path} answered the 404 fallback`);
      continue;
    }
    if (!at) {
      problems.push(`${o.method} ${o.path} answered ${o.status}, but the document has no such path`);
      continue;
    }
    if (op) {
      answered.add(`${o.method.toLowerCase()} ${at.template}`);
      if (!(String(o.status) in op.responses)) problems.push(`${o.method} ${at.template} answered ${o.status}, which the document does not declare`);
    } else if (!Object.values(at.ops).some((other) => String(o.status) in other.responses)) {
      problems.push(`${o.method} ${o.path} answered ${o.status}: no operation of ${at.template} declares it`);
    }
  }
  for (const { template, ops } of paths)
    for (const method of Object.keys(ops))
      if (!answered.has(`${method} ${template}`))
        problems.push(`${method.toUpperCase()} ${template} is declared but never answered (or only with the 404 fallback)`);
  return problems;
}
