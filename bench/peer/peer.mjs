/**
 * The bench's peer (`npm run bench -- --peer`): LangGraph.js with its SQLite checkpointer running
 * the loop's shape, so that loop ÷ peer is a ratio measured in the same run.
 *
 *   node bench/peer/peer.mjs --tools <url> --runs 1000 --warmup 100 --concurrency 256 --db <file>
 *
 * One run is the order-status flow of the loop's bench: a graph thought → action → observation →
 * thought ..., three iterations (waves): the customer by e-mail; their latest order and loyalty tier
 * in parallel; the order's shipment. Action calls the same demo tool server over HTTP, Observation
 * checks each answer's status and parses its JSON, Thought picks the next wave from what was
 * observed and ends the run after the third. Every step is checkpointed by SqliteSaver (a file
 * database, WAL, as `fromConnString` sets it up) under the run's thread id. A closed loop keeps
 * `concurrency` runs in flight in this one process, as the bench's driver does for the loop.
 *
 * Plain JavaScript, not TypeScript: its dependencies live in bench/peer/node_modules (installed on
 * first use by bench/lib/peer.ts), outside the project's tree and its type check.
 * Prints one JSON line: runs/s (10th-90th percentile of end times, as the loop's phases), run
 * latency percentiles, iterations per run, CPU ms per run and peak RSS of this process.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';

const { values } = parseArgs({
  options: {
    tools: { type: 'string' },
    runs: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '256' },
    db: { type: 'string' },
  },
});
const int = (name) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: expected a non-negative integer, got "${values[name]}"`);
  return n;
};
if (!values.tools) throw new Error('--tools: the demo tool server URL is required');
if (!values.db) throw new Error('--db: the SQLite file is required');
const origin = values.tools.replace(/\/$/, '');

const State = Annotation.Root({
  email: Annotation(),
  iteration: Annotation({ reducer: (_, b) => b, default: () => 0 }),
  /** Tool calls of the wave Thought planned: { step, path }. */
  wave: Annotation({ reducer: (_, b) => b, default: () => [] }),
  /** Answers of the last wave, as Action got them. */
  results: Annotation({ reducer: (_, b) => b, default: () => [] }),
  /** Every verdict so far, keyed by step. */
  facts: Annotation({ reducer: (a, b) => ({ ...a, ...b }), default: () => ({}) }),
  done: Annotation({ reducer: (_, b) => b, default: () => false }),
});

/** Thought: the next wave from what was observed (the order-status flow's three waves). */
function thought(state) {
  const f = state.facts;
  const enc = encodeURIComponent;
  if (state.iteration === 0) return { iteration: 1, wave: [{ step: 'S1', path: `/crm/customers/by-email/${enc(state.email)}` }] };
  if (state.iteration === 1 && f.S1?.customer_id) {
    return {
      iteration: 2,
      wave: [
        { step: 'S2', path: `/orders/customers/${enc(f.S1.customer_id)}/latest` },
        { step: 'S3', path: `/crm/customers/${enc(f.S1.customer_id)}/tier` },
      ],
    };
  }
  if (state.iteration === 2 && f.S2?.order_id) return { iteration: 3, wave: [{ step: 'S4', path: `/shipping/orders/${enc(f.S2.order_id)}/tracking` }] };
  return { done: true, wave: [] };
}

/** Action: the wave's calls over HTTP, concurrently. */
async function action(state) {
  const results = await Promise.all(
    state.wave.map(async ({ step, path }) => {
      const t0 = performance.now();
      try {
        const res = await fetch(`${origin}${path}`, { signal: AbortSignal.timeout(10000) });
        return { step, status: res.status, body: await res.text(), ms: performance.now() - t0 };
      } catch (err) {
        return { step, status: 0, body: String(err), ms: performance.now() - t0 };
      }
    }),
  );
  return { results };
}

/** Observation: a verdict per answer (2xx and a JSON object), kept as facts for Thought. */
function observation(state) {
  const facts = {};
  for (const r of state.results) {
    let value = null;
    try {
      value = r.status >= 200 && r.status < 300 ? JSON.parse(r.body) : null;
    } catch {
      value = null; // an unparsable answer is a failed step: Thought then ends the run
    }
    facts[r.step] = value && typeof value === 'object' ? value : { failed: true, status: r.status };
  }
  return { facts };
}

const checkpointer = SqliteSaver.fromConnString(values.db);
const graph = new StateGraph(State)
  .addNode('thought', thought)
  .addNode('action', action)
  .addNode('observation', observation)
  .addEdge(START, 'thought')
  .addConditionalEdges('thought', (s) => (s.done ? END : 'action'))
  .addEdge('action', 'observation')
  .addEdge('observation', 'thought')
  .compile({ checkpointer });

let n = 0;
async function oneRun() {
  const id = randomUUID();
  const final = await graph.invoke({ email: `user${n++}@example.com` }, { configurable: { thread_id: id } });
  return { id, iterations: final.iteration, ok: Boolean(final.facts.S4 && !final.facts.S4.failed) };
}

/** Keeps `concurrency` runs in flight until `runs` have ended; the end time of each. */
async function closedLoop(runs, concurrency) {
  const ends = [];
  const out = { ends, iterations: 0, ok: 0, latencies: [] };
  let started = 0;
  const worker = async () => {
    while (started < runs) {
      started++;
      const t0 = Date.now();
      const r = await oneRun();
      const t1 = Date.now();
      ends.push(t1);
      out.latencies.push(t1 - t0);
      out.iterations += r.iterations;
      if (r.ok) out.ok++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, runs) }, worker));
  return out;
}

const pct = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : Number.NaN;
};

const runs = int('runs');
const concurrency = int('concurrency');
await closedLoop(int('warmup'), concurrency);
let rssMax = process.memoryUsage.rss();
const sampler = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage.rss())), 1000);
const cpu0 = process.cpuUsage();
const t0 = Date.now();
const m = await closedLoop(runs, concurrency);
const seconds = (Date.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
clearInterval(sampler);
const ends = [...m.ends].sort((a, b) => a - b);
const [from, to] = [ends[Math.floor(0.1 * (ends.length - 1))], ends[Math.floor(0.9 * (ends.length - 1))]];
const runsPerSecond = to > from ? (ends.filter((t) => t > from && t <= to).length / (to - from)) * 1000 : runs / seconds;
process.stdout.write(
  `${JSON.stringify({
    runs,
    concurrency,
    seconds,
    runsPerSecond,
    iterationsPerRun: m.iterations / runs,
    completedRuns: m.ok,
    runMs: { p50: pct(m.latencies, 0.5), p95: pct(m.latencies, 0.95), p99: pct(m.latencies, 0.99) },
    cpuMsPerRun: (cpu.user + cpu.system) / 1000 / runs,
    rssMiB: Math.round(Math.max(rssMax, process.memoryUsage.rss()) / 2 ** 20),
  })}\n`,
);
process.exit(0);
