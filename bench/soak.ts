/**
 * `npm run soak`: Thought's memory over a long stream of runs, with the run store bounded by
 * TAO_RUN_RETENTION, and the time a restarted Thought takes to restore its store.
 *
 *   node --import tsx bench/soak.ts [--runs 100000] [--sample-every 5000] [--concurrency 128]
 *       [--retention 30s] [--out soak.json]
 *
 * In a fresh namespace: the demo tool server, one instance of each stage, and the cheapest run
 * there is (a one-step flow: one `crm.find_customer` call), driven by a closed loop of
 * `concurrency` runs in flight. The retention is short (record time) so that the store sweeps all
 * along. Every `sample-every` runs, Thought's /metrics are read: resident memory
 * (process_resident_memory_bytes), V8 heap used, and the runs in its store
 * (tao_thought_store_runs). The verdict compares RSS at 20% of the runs (20k of 100k) with RSS at
 * the end: at most +20%.
 *
 * Then Thought is stopped (SIGTERM) and started again: restore-to-ready is the time from the
 * process start until every partition's store has caught up (the `state store caught up` lines,
 * one per partition, written when a partition is first claimed; one probe task per partition is
 * submitted at `stage started` so that each is claimed at once), reported with the store's size
 * and the changelog's length.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { buildTask, submitTasks } from '../client/tasks.ts';
import { partitionForKey } from '../replay/partition.ts';
import { formatDuration, parseDuration } from '../runtime/config.ts';
import { TOPICS } from '../topics/catalog.ts';
import { Fleet, freshNamespace, progress, quietOwnLogs, stageSpec, startToolServerProcess, type BenchNamespace, type Instance } from './lib/harness.ts';
import { closedLoop, connectProducer, loopTarget } from './lib/load.ts';
import { deleteNamespace } from './lib/phases.ts';

/** Options of one soak. */
export interface SoakOptions {
  runs: number;
  sampleEvery: number;
  concurrency: number;
  retentionMs: number;
}

/** One reading of Thought's /metrics. */
export interface SoakSample {
  runs: number;
  elapsedSeconds: number;
  rssMiB: number;
  heapUsedMiB: number;
  storeRuns: number;
}

export interface SoakReport {
  startedAt: string;
  options: SoakOptions;
  samples: SoakSample[];
  /**
   * RSS at 20% of the runs and at the end, and the change (the criterion: at most +20%). One
   * reading moves with the garbage collector and the load of the moment, so the medians of the
   * three readings around each point are given beside them.
   */
  rss: { atFifthMiB: number; atEndMiB: number; change: number; pass: boolean; medianAroundFifthMiB: number; medianOfLastThreeMiB: number; medianChange: number };
  runsPerSecond: number;
  statuses: Record<string, number>;
  restart: { readyLineSeconds: number; restoreToReadySeconds: number; storeRuns: number; changelogRecords: number; catchUps: Array<{ partition: number; durationMs: number }> };
  durationSeconds: number;
}

/** The one-step flow the soak's runs follow: the customer by e-mail, and that's the run. */
const SOAK_FLOW = {
  id: 'soak',
  version: 1,
  description: 'Soak: one tool call per run (crm.find_customer by the e-mail in the task).',
  inputs: { email: { pattern: '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}', description: 'Customer e-mail, from the task text.' } },
  nodes: [{ id: 'S1', tool: 'crm.find_customer', input: { email: '{{input.email}}' } }],
  edges: [],
  output: { customer_id: '{{S1.customer_id}}' },
};

const MiB = 1024 * 1024;

export async function runSoak(options: SoakOptions, log: (message: string) => void): Promise<SoakReport> {
  const started = Date.now();
  const flowsDir = mkdtempSync(join(tmpdir(), 'tao-soak-flows-'));
  writeFileSync(join(flowsDir, 'soak.v1.json'), JSON.stringify(SOAK_FLOW, null, 2));
  const fleet = new Fleet();
  let ns: BenchNamespace | null = null;
  try {
    const tools = await startToolServerProcess(fleet, process.env);
    ns = await freshNamespace('soak', process.env, {
      TAO_DEMO_TOOL_ORIGIN: tools.url,
      TAO_FLOWS_DIR: flowsDir,
      TAO_FLOW: 'soak@1',
      TAO_RUN_RETENTION: `${options.retentionMs}ms`,
      TAO_SEMANTIC_CHECK: 'off',
    });
    log(`namespace ${ns.namespace}; retention ${formatDuration(options.retentionMs)} of record time`);
    const thoughtSpec = stageSpec('thought', ns.env);
    let thought = await fleet.start(thoughtSpec);
    await Promise.all([fleet.start(stageSpec('action', ns.env)), fleet.start(stageSpec('observation', ns.env))]);
    const producer = await connectProducer(ns.kafka);
    const namespace = ns;
    const target = loopTarget(namespace, producer, (i) => `Who is soak${i}@example.com?`);

    const samples: SoakSample[] = [];
    const statuses: Record<string, number> = {};
    const read = async (runs: number) => {
      const m = await scrape(thought);
      const s: SoakSample = { runs, elapsedSeconds: Math.round((Date.now() - started) / 1000), rssMiB: round1(m.process_resident_memory_bytes! / MiB), heapUsedMiB: round1(m.nodejs_heap_size_used_bytes! / MiB), storeRuns: m.tao_thought_store_runs ?? Number.NaN };
      samples.push(s);
      log(`${runs} runs: Thought RSS ${s.rssMiB} MiB, heap ${s.heapUsedMiB} MiB, ${s.storeRuns} runs in its store`);
    };
    await read(0);
    let done = 0;
    let loopSeconds = 0;
    while (done < options.runs) {
      const n = Math.min(options.sampleEvery, options.runs - done);
      const result = await closedLoop(target, { runs: n, concurrency: options.concurrency, timeoutMs: Math.max(600000, n * 100) });
      loopSeconds += (result.endMs - result.startMs) / 1000;
      for (const s of result.status.values()) statuses[s] = (statuses[s] ?? 0) + 1;
      done += n;
      await read(done);
    }
    const fifth = samples.find((s) => s.runs >= options.runs / 5)!;
    const last = samples[samples.length - 1]!;
    const change = (last.rssMiB - fifth.rssMiB) / fifth.rssMiB;
    const at = samples.indexOf(fifth);
    const aroundFifth = median(samples.slice(Math.max(1, at - 1), at + 2).map((s) => s.rssMiB));
    const lastThree = median(samples.slice(-3).map((s) => s.rssMiB));

    log('restarting Thought');
    const restart = await restartThought(fleet, thought, thoughtSpec, async () => {
      // One probe per partition, so that every partition is claimed (and its store caught up) at once.
      const probes = Array.from({ length: TOPICS.tasks.partitions }, (_, p) => probeOn(p));
      await submitTasks(producer, namespace.codec, probes);
    });
    thought = restart.instance;
    const admin = ns.kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(ns.codec.topics.name('thoughtRuns'));
    await admin.disconnect();
    const storeRuns = (await scrape(thought)).tao_thought_store_runs ?? Number.NaN;
    await producer.disconnect();
    return {
      startedAt: new Date(started).toISOString(),
      options,
      samples,
      rss: { atFifthMiB: fifth.rssMiB, atEndMiB: last.rssMiB, change: round3(change), pass: change <= 0.2, medianAroundFifthMiB: aroundFifth, medianOfLastThreeMiB: lastThree, medianChange: round3((lastThree - aroundFifth) / aroundFifth) },
      runsPerSecond: round1(options.runs / loopSeconds),
      statuses,
      restart: { ...restart.timing, storeRuns, changelogRecords: offsets.reduce((n, p) => n + Number(BigInt(p.high) - BigInt(p.low)), 0) },
      durationSeconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    await fleet.stop();
    if (ns) await deleteNamespace(ns.kafka, (n) => n.startsWith(`${ns!.namespace}.`)).catch(() => undefined);
    rmSync(flowsDir, { recursive: true, force: true });
  }
}

/** A probe task whose run lands on `partition`. */
function probeOn(partition: number) {
  for (;;) {
    const t = buildTask({ text: 'Who is probe@example.com?', source: 'soak' });
    if (partitionForKey(t.thought_id, TOPICS.tasks.partitions) === partition) return t;
  }
}

/** Stops Thought and starts it again; times the start until every partition's store has caught up. */
async function restartThought(fleet: Fleet, old: Instance, spec: ReturnType<typeof stageSpec>, onReady: () => Promise<void>) {
  await fleet.kill(old, 'SIGTERM');
  const catchUps: Array<{ partition: number; durationMs: number }> = [];
  let allCaughtUp!: () => void;
  const caughtUp = new Promise<void>((r) => (allCaughtUp = r));
  const t0 = Date.now();
  let readyAt = 0;
  const instance = await fleet.start({
    ...spec,
    ready: (line) => {
      if (line.includes('"msg":"state store caught up"')) {
        const { partition, duration_ms } = JSON.parse(line) as { partition: number; duration_ms: number };
        if (!catchUps.some((c) => c.partition === partition)) catchUps.push({ partition, durationMs: duration_ms });
        if (catchUps.length === TOPICS.tasks.partitions) allCaughtUp();
      }
      const port = spec.ready(line);
      if (port !== null) readyAt = Date.now();
      return port;
    },
  });
  await onReady();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([caughtUp, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`Thought's store did not catch up on every partition within 300 s (${catchUps.length} did)`)), 300000)))]);
  clearTimeout(timer);
  return { instance, timing: { readyLineSeconds: round3((readyAt - t0) / 1000), restoreToReadySeconds: round3((Date.now() - t0) / 1000), catchUps: catchUps.sort((a, b) => a.partition - b.partition) } };
}

/** The gauges of a process's /metrics by name (its series carry only the process label). */
async function scrape(instance: Instance): Promise<Record<string, number>> {
  const res = await fetch(`http://127.0.0.1:${instance.opsPort}/metrics`, { signal: AbortSignal.timeout(10000) });
  const out: Record<string, number> = {};
  for (const line of (await res.text()).split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** The report as the table docs/BENCHMARKS.md shows. */
export function soakTable(r: SoakReport): string {
  const rows = r.samples.map((s) => `| ${s.runs} | ${s.elapsedSeconds} | ${s.rssMiB} | ${s.heapUsedMiB} | ${s.storeRuns} |`);
  return [
    '| runs | elapsed s | Thought RSS MiB | heap used MiB | runs in store |',
    '|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `RSS at ${r.samples.find((s) => s.runs >= r.options.runs / 5)!.runs} runs: ${r.rss.atFifthMiB} MiB; at ${r.options.runs}: ${r.rss.atEndMiB} MiB; change ${(r.rss.change * 100).toFixed(1)}% (${r.rss.pass ? 'PASS' : 'FAIL'}: at most +20%)`,
    `medians of three readings: ${r.rss.medianAroundFifthMiB} MiB around that point, ${r.rss.medianOfLastThreeMiB} MiB at the end (${(r.rss.medianChange * 100).toFixed(1)}%)`,
    `${r.runsPerSecond} runs/s; outcomes ${JSON.stringify(r.statuses)}`,
    `restart: "stage started" after ${r.restart.readyLineSeconds} s; every partition's store caught up ${r.restart.restoreToReadySeconds} s after the process start; ${r.restart.storeRuns} runs in the store; thought.runs holds ${r.restart.changelogRecords} records`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '100000' },
      'sample-every': { type: 'string', default: '5000' },
      concurrency: { type: 'string', default: '128' },
      retention: { type: 'string', default: '30s' },
      out: { type: 'string' },
    },
  });
  const int = (name: string, text: string) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be an integer >= 1, got "${text}"`);
    return n;
  };
  const retentionMs = parseDuration(values.retention, 1);
  if (retentionMs === null || retentionMs < 1000) throw new Error(`--retention must be a duration of at least 1s (like 30s, 5m), got "${values.retention}"`);
  const options: SoakOptions = { runs: int('runs', values.runs), sampleEvery: int('sample-every', values['sample-every']), concurrency: int('concurrency', values.concurrency), retentionMs };
  quietOwnLogs();
  const since = Date.now();
  const report = await runSoak(options, (m) => progress(since, m));
  process.stdout.write(`${soakTable(report)}\n`);
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  if (!report.rss.pass) process.exitCode = 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`soak: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
