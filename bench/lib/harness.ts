/**
 * The bench harness: a fresh namespace (own topics, subjects and groups) on the broker named by
 * KAFKA_BROKERS / SCHEMA_REGISTRY_URL, and a fleet of real processes (stage instances, relay hops,
 * the demo tool server, the ingress) that can be started, SIGKILLed, restarted and scraped.
 * Nothing here runs at import time.
 */
import type { TopicId } from '../../topics/catalog.ts';
import { Fleet, TAO_ENTRY, type Instance } from '../../eval/fleet.ts';

// The namespace and the fleet are the product's (eval/: `tao eval` runs its sets on them).
export { freshNamespace, type LoopNamespace as BenchNamespace } from '../../eval/namespace.ts';
export {
  Fleet,
  progress,
  stageSpec,
  startIngressProcess,
  startToolServerProcess,
  type Instance,
  type ProcessSpec,
  type ToolServerProcess,
} from '../../eval/fleet.ts';

/** The repository root (where `node_modules` and `bin/tao.js` live). */
export const REPO_ROOT = new URL('../../', import.meta.url).pathname;

/** The loop topics a run's steps are written to (the read_committed duplicate scan reads these). */
export const LOOP_TOPICS: TopicId[] = ['tasks', 'thoughtRequests', 'actionResults', 'observationResults', 'outcomes'];

/** GET a JSON document from a local ops port; null when the process does not answer. */
export async function getJson<T>(port: number, path: string, timeoutMs = 2000): Promise<{ status: number; body: T } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, body: (await res.json()) as T };
  } catch {
    return null; // not answering is the answer: the caller treats it as unhealthy
  }
}

/**
 * Waits until the live instances named `name` together own every partition of each of `topics`
 * exactly once (per their /health `assigned`), i.e. the group has settled after starts and kills.
 */
export async function waitBalanced(fleet: Fleet, name: string, topics: string[], partitions: number, timeoutMs = 90000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const reports = await Promise.all(fleet.alive(name).map((i) => getJson<{ assigned?: Record<string, number[]> }>(i.opsPort, '/health')));
    const owned = new Map<string, number[]>();
    for (const r of reports) for (const [topic, ps] of Object.entries(r?.body.assigned ?? {})) owned.set(topic, [...(owned.get(topic) ?? []), ...ps]);
    const ok =
      reports.every((r) => r !== null) &&
      topics.every((t) => {
        const ps = (owned.get(t) ?? []).sort((a, b) => a - b);
        return ps.length === partitions && ps.every((p, i) => p === i);
      });
    if (ok) return;
    last = JSON.stringify(Object.fromEntries(owned));
    await sleep(250);
  }
  throw new Error(`${name}: partitions of ${topics.join(', ')} not settled within ${timeoutMs} ms (owned: ${last})`);
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Keeps this process's own JSON log lines (topics apply, kafkajs retries) off stdout, where the
 * bench prints its tables; child processes get their level from {@link freshNamespace}.
 */
export function quietOwnLogs(): void {
  process.env.TAO_LOG_LEVEL = 'error';
}

/** The scripted model SIMULATOR (model-sim/, not a model) as its own process, every answer `latencyMs` late. */
export interface ModelSimProcess {
  /** Base URL with its version segment, as TAO_LLM_BASE_URL takes it: `http://127.0.0.1:<port>/v1`. */
  url: string;
  latencyMs: number;
  instance: Instance;
  /** Chat-completions requests answered so far (GET /__control/stats). */
  requests(): Promise<number>;
}

/** Starts `tao run model-sim --port 0 --latency-ms <latencyMs>` in `fleet`. */
export async function startModelSimProcess(fleet: Fleet, env: NodeJS.ProcessEnv, latencyMs: number, name = 'model-sim'): Promise<ModelSimProcess> {
  let url = '';
  const instance = await fleet.start({
    name,
    args: [TAO_ENTRY, 'run', 'model-sim', '--port', '0', '--latency-ms', String(latencyMs)],
    env,
    ready: (line) => {
      const m = /listening on (http:\/\/\S+\/v1) /.exec(line);
      if (!m) return null;
      url = m[1]!;
      return 0;
    },
  });
  return {
    url,
    latencyMs,
    instance,
    requests: async () => {
      const res = await fetch(`${url.replace(/\/v1$/, '')}/__control/stats`);
      if (!res.ok) throw new Error(`model-sim GET /__control/stats: HTTP ${res.status}`);
      return ((await res.json()) as { total: number }).total;
    },
  };
}
