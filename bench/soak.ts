/**
 * `npm run soak`: Thought's memory over a long stream of runs, with the run store bounded by
 * TAO_RUN_RETENTION, and the time a restarted Thought takes to restore its store.
 *
 *   node --import tsx bench/soak.ts [--runs 100000] [--rate 50] [--max-in-flight 2000]
 *       [--sample-seconds 3] [--window 0.05] [--sample-every 5000] [--retention 30s] [--out soak.json]
 *
 * In a fresh namespace: the demo tool server, one instance of each stage, and the cheapest run
 * there is (a one-step flow: one `crm.find_customer` call), submitted at a fixed pace of `rate`
 * runs per second (open loop, at most `max-in-flight` runs without an outcome). A fixed pace makes
 * the memory readings comparable: the allocation rate and the store's size (the runs ended within
 * the retention) follow the rate, so two readings taken at different rates say little. The
 * retention is short (record time) so that the store sweeps all along. Every `sample-seconds`,
 * Thought's /metrics are read: resident memory (process_resident_memory_bytes), V8 heap used, and
 * the runs in its store (tao_thought_store_runs). The verdict compares the median RSS of the
 * readings taken while the ended runs were within `window` × runs around 20% of the runs (20k of
 * 100k) with the median of those taken over the last `window` × runs: at most +20% (readings taken
 * while the stream was behind its pace are left out). Whether the
 * pace was held is reported (the longest time the stream was behind it, and the rate in each
 * window); a soak that could not hold it says so rather than compare unlike readings silently.
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
import { pathToFileURL } from 'node:url';
import { buildTask, submitTasks } from '../client/tasks.ts';
import { partitionForKey } from '../runtime/partition.ts';
import { formatDuration, parseDuration } from '../runtime/config.ts';
import { TOPICS } from '../topics/catalog.ts';
import { Fleet, freshNamespace, progress, quietOwnLogs, stageSpec, startToolServerProcess, type BenchNamespace, type Instance } from './lib/harness.ts';
import { randomUUID } from 'node:crypto';
import { commandOptions, integerOption, usageError } from './lib/command-line.ts';
import { connectProducer, loopTarget, type LoadTarget } from './lib/load.ts';
import { deleteNamespace } from './lib/phases.ts';

/** Options of one soak. */
export interface SoakOptions {
  runs: number;
  /** Runs submitted per second, held from the first run to the last. */
  rate: number;
  /** Runs without an outcome beyond which submission waits (the pace is then not held). */
  maxInFlight: number;
  sampleSeconds: number;
  /** The share of the runs each verdict window spans (0.05: 5,000 of 100,000). */
  window: number;
  /** Table rows: the first reading past every `sampleEvery` ended runs. */
  sampleEvery: number;
  retentionMs: number;
}

/** One reading of Thought's /metrics. */
export interface SoakSample {
  /** Runs with an outcome when the reading was taken. */
  runs: number;
  submitted: number;
  /** False when the stream was more than a second of submissions behind its pace (runs in flight at the cap). */
  atPace: boolean;
  elapsedSeconds: number;
  rssMiB: number;
  heapUsedMiB: number;
  storeRuns: number;
}

/** The readings of one verdict window. */
export interface SoakWindow {
  fromRuns: number;
  toRuns: number;
  readings: number;
  medianRssMiB: number;
  minRssMiB: number;
  maxRssMiB: number;
  /** Outcomes per second while the window lasted. */
  runsPerSecond: number;
}

export interface SoakReport {
  startedAt: string;
  options: SoakOptions;
  /** Every reading, one per `sampleSeconds`. */
  samples: SoakSample[];
  /**
   * The median RSS around 20% of the runs and over the last window, and the change (the
   * criterion: at most +20%). One reading moves by tens of MiB with the garbage collector, hence
   * medians of many readings taken at the same pace.
   */
  rss: { atFifth: SoakWindow; atEnd: SoakWindow; change: number; pass: boolean };
  /** The pace: asked, achieved over the whole stream, and the longest stretch behind it. */
  pace: { rate: number; achieved: number; longestBehindSeconds: number; held: boolean };
  runsPerSecond: number;
  statuses: Record<string, number>;
  restart: {
    readyLineSeconds: number;
    restoreToReadySeconds: number;
    storeRuns: number;
    changelogRecords: number;
    catchUps: Array<{ partition: number; durationMs: number }>;
  };
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
    const read = async (runs: number, submitted: number, atPace: boolean) => {
      const m = await scrape(thought);
      const sample: SoakSample = {
        runs,
        submitted,
        atPace,
        elapsedSeconds: Math.round((Date.now() - started) / 1000),
        rssMiB: round1(m.process_resident_memory_bytes! / MiB),
        heapUsedMiB: round1(m.nodejs_heap_size_used_bytes! / MiB),
        storeRuns: m.tao_thought_store_runs ?? Number.NaN,
      };
      samples.push(sample);
      return sample;
    };
    const first = await read(0, 0, true);
    log(`0 runs: Thought RSS ${first.rssMiB} MiB, heap ${first.heapUsedMiB} MiB`);
    let nextLog = options.sampleEvery;
    const stream = await pacedStream(target, options, async (ended, submitted, atPace) => {
      const sample = await read(ended, submitted, atPace).catch((err: unknown) =>
        log(`metrics read failed: ${err instanceof Error ? err.message : String(err)}`),
      );
      if (sample && ended >= nextLog) {
        nextLog = (Math.floor(ended / options.sampleEvery) + 1) * options.sampleEvery;
        log(`${ended} runs (${submitted} submitted): Thought RSS ${sample.rssMiB} MiB, heap ${sample.heapUsedMiB} MiB, ${sample.storeRuns} runs in its store`);
      }
    });
    const last = await read(options.runs, options.runs, true);
    log(`${options.runs} runs: Thought RSS ${last.rssMiB} MiB, heap ${last.heapUsedMiB} MiB, ${last.storeRuns} runs in its store`);
    const span = Math.max(1, Math.round(options.runs * options.window));
    const fifthAt = Math.round(options.runs / 5);
    const atFifth = soakWindow(samples, fifthAt - Math.floor(span / 2), fifthAt + Math.ceil(span / 2));
    const atEnd = soakWindow(samples, options.runs - span, options.runs);
    const change = (atEnd.medianRssMiB - atFifth.medianRssMiB) / atFifth.medianRssMiB;
    const achieved = options.runs / stream.submitSeconds;
    const statuses = stream.statuses;
    const loopSeconds = stream.seconds;

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
      rss: { atFifth, atEnd, change: round3(change), pass: change <= 0.2 },
      // Behind by more than 5 s of submissions at any time: the readings were not all taken at the pace.
      pace: {
        rate: options.rate,
        achieved: round1(achieved),
        longestBehindSeconds: round1(stream.longestBehindMs / 1000),
        held: stream.longestBehindMs <= 5000,
      },
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

/**
 * Submits `runs` runs at `rate` per second (checked every 100 ms, so submissions go in small
 * batches), never more than `maxInFlight` without an outcome, and calls `onSample` every
 * `sampleSeconds` with the runs ended and submitted so far (readings never overlap). Resolves once
 * every run has an outcome; rejects if none arrives for 10 minutes.
 */
async function pacedStream(target: LoadTarget, options: SoakOptions, onSample: (ended: number, submitted: number, atPace: boolean) => Promise<void>) {
  const ids = new Set<string>();
  const statuses: Record<string, number> = {};
  let submitted = 0;
  let ended = 0;
  let submitting = false;
  let sampling = false;
  let failed: Error | null = null;
  let behindSince: number | null = null;
  let longestBehindMs = 0;
  let lastOutcomeAt = Date.now();
  let submitEnd = 0;
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  const follower = await target.follow((id, status) => {
    if (!ids.delete(id)) return;
    ended++;
    lastOutcomeAt = Date.now();
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (ended >= options.runs) finish();
  });
  const start = Date.now();
  const tick = async () => {
    const now = Date.now();
    const due = Math.min(options.runs, Math.floor((options.rate * (now - start)) / 1000));
    // More than a second of submissions behind the pace: the stream is not at its rate.
    if (due - submitted > options.rate && submitted < options.runs) behindSince ??= now;
    else if (behindSince !== null) {
      longestBehindMs = Math.max(longestBehindMs, now - behindSince);
      behindSince = null;
    }
    if (now - lastOutcomeAt > 600000) {
      failed = new Error(`soak: no outcome for 10 minutes (${ended} of ${options.runs} runs ended, ${submitted} submitted)`);
      finish();
    }
    if (submitting) return;
    const n = Math.min(due - submitted, options.maxInFlight - (submitted - ended));
    if (n <= 0) return;
    submitting = true;
    try {
      const batch = Array.from({ length: n }, () => randomUUID());
      for (const id of batch) ids.add(id);
      submitted += n;
      await target.submit(batch);
      if (submitted >= options.runs) submitEnd = Date.now();
    } catch (err) {
      failed = err as Error;
      finish();
    } finally {
      submitting = false;
    }
  };
  const pacer = setInterval(() => void tick(), 100);
  const sampler = setInterval(() => {
    if (sampling) return;
    sampling = true;
    void onSample(ended, submitted, behindSince === null).finally(() => (sampling = false));
  }, options.sampleSeconds * 1000);
  try {
    await finished;
  } finally {
    clearInterval(pacer);
    clearInterval(sampler);
    await follower.stop();
  }
  if (failed) throw failed;
  if (behindSince !== null) longestBehindMs = Math.max(longestBehindMs, (submitEnd || Date.now()) - behindSince);
  return { statuses, longestBehindMs, submitSeconds: ((submitEnd || Date.now()) - start) / 1000, seconds: (Date.now() - start) / 1000 };
}

/**
 * The readings taken at the pace while the ended runs were in [from, to), with their median RSS.
 * A reading taken while the stream was behind its pace (a stall with runs piling up in flight) is
 * left out: the store and the allocation rate are then those of a backlog, not of the pace.
 */
export function soakWindow(samples: readonly SoakSample[], from: number, to: number): SoakWindow {
  const inside = samples.filter((s) => s.runs >= from && s.runs < to && s.atPace);
  if (inside.length < 3)
    throw new Error(
      `soak: only ${inside.length} reading(s) at the pace while runs ${from}-${to} ended; lower --sample-seconds or the --rate, or widen --window`,
    );
  const rss = inside.map((s) => s.rssMiB);
  const a = inside[0]!;
  const b = inside[inside.length - 1]!;
  return {
    fromRuns: from,
    toRuns: to,
    readings: inside.length,
    medianRssMiB: median(rss),
    minRssMiB: Math.min(...rss),
    maxRssMiB: Math.max(...rss),
    runsPerSecond: round1((b.runs - a.runs) / Math.max(1, b.elapsedSeconds - a.elapsedSeconds)),
  };
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
  await Promise.race([
    caughtUp,
    new Promise(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error(`Thought's store did not catch up on every partition within 300 s (${catchUps.length} did)`)), 300000)),
    ),
  ]);
  clearTimeout(timer);
  return {
    instance,
    timing: {
      readyLineSeconds: round3((readyAt - t0) / 1000),
      restoreToReadySeconds: round3((Date.now() - t0) / 1000),
      catchUps: catchUps.sort((a, b) => a.partition - b.partition),
    },
  };
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
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : round1((sorted[mid - 1]! + sorted[mid]!) / 2);
};
const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** The report as the table docs/BENCHMARKS.md shows: one row per `sampleEvery` ended runs. */
export function soakTable(r: SoakReport): string {
  const rows: SoakSample[] = [];
  let next = 0;
  for (const sample of r.samples) {
    if (sample.runs < next) continue;
    rows.push(sample);
    next = (Math.floor(sample.runs / r.options.sampleEvery) + 1) * r.options.sampleEvery;
  }
  const w = (x: SoakWindow) =>
    `median ${x.medianRssMiB} MiB of ${x.readings} readings while runs ${x.fromRuns}-${x.toRuns} ended (range ${x.minRssMiB}-${x.maxRssMiB}; ${x.runsPerSecond} runs/s)`;
  return [
    '| runs | submitted | elapsed s | Thought RSS MiB | heap used MiB | runs in store |',
    '|---:|---:|---:|---:|---:|---:|',
    ...rows.map((s) => `| ${s.runs} | ${s.submitted} | ${s.elapsedSeconds} | ${s.rssMiB} | ${s.heapUsedMiB} | ${s.storeRuns} |`),
    '',
    `RSS around 20%: ${w(r.rss.atFifth)}`,
    `RSS at the end: ${w(r.rss.atEnd)}`,
    `change of the medians ${(r.rss.change * 100).toFixed(1)}% (${r.rss.pass ? 'PASS' : 'FAIL'}: at most +20%)`,
    `pace: ${r.pace.rate} runs/s asked, ${r.pace.achieved} submitted on average, longest stretch behind ${r.pace.longestBehindSeconds} s (${r.pace.held ? 'held' : 'NOT held: the readings are not all at the same pace'}); outcomes ${JSON.stringify(r.statuses)}`,
    `restart: "stage started" after ${r.restart.readyLineSeconds} s; every partition's store caught up ${r.restart.restoreToReadySeconds} s after the process start; ${r.restart.storeRuns} runs in the store; thought.runs holds ${r.restart.changelogRecords} records`,
  ].join('\n');
}

const USAGE = `usage: npm run soak -- [options]
  (Thought's memory over a long stream of runs with TAO_RUN_RETENTION, then a restart; on
  KAFKA_BROKERS / SCHEMA_REGISTRY_URL; docs/BENCHMARKS.md)

  --runs N                 one-step runs in all (100000)
  --rate R                 runs submitted per second, held throughout (50)
  --max-in-flight N        runs without an outcome beyond which submission waits (2000)
  --sample-seconds S       how often Thought's /metrics are read (3)
  --window W               the share of the runs each verdict window spans (0.05)
  --sample-every N         a table row per N ended runs (5000)
  --retention D            TAO_RUN_RETENTION of the run store, a duration like 30s or 5m (30s)
  --out FILE               also write the JSON report
  -h, --help               this text`;

async function main(): Promise<void> {
  const values = commandOptions('soak', USAGE, {
    runs: { type: 'string', default: '100000' },
    rate: { type: 'string', default: '50' },
    'max-in-flight': { type: 'string', default: '2000' },
    'sample-seconds': { type: 'string', default: '3' },
    window: { type: 'string', default: '0.05' },
    'sample-every': { type: 'string', default: '5000' },
    retention: { type: 'string', default: '30s' },
    out: { type: 'string' },
  });
  const bad = (message: string) => usageError('soak', USAGE, message);
  const int = (name: string) => integerOption('soak', USAGE, values, name, 1);
  const retentionMs = parseDuration(values.retention, 1);
  if (retentionMs === null || retentionMs < 1000) return bad(`--retention must be a duration of at least 1s (like 30s, 5m), got "${values.retention}"`);
  const positive = (name: string, text: string) => {
    const n = Number(text);
    return text.trim() !== '' && Number.isFinite(n) && n > 0 ? n : bad(`--${name} must be a number > 0, got "${text}"`);
  };
  const window = positive('window', values.window);
  if (window > 0.4) bad(`--window must be at most 0.4 (a share of the runs), got "${values.window}"`);
  const options: SoakOptions = {
    runs: int('runs'),
    rate: positive('rate', values.rate),
    maxInFlight: int('max-in-flight'),
    sampleSeconds: positive('sample-seconds', values['sample-seconds']),
    window,
    sampleEvery: int('sample-every'),
    retentionMs,
  };
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
