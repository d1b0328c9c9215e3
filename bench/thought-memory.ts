/**
 * `npm run bench:thought-memory`: Thought's memory with many parked runs, one instance against
 * several, each holding only its partitions' runs (runtime/state-store.ts).
 *
 *   node --import tsx bench/thought-memory.ts [--runs 100000] [--instances 3] [--sample-seconds 10] [--out file.json]
 *
 * In a fresh namespace: one Thought instance on the empty store (the baseline), then `runs`
 * snapshots of runs parked awaiting input written straight into thought.runs (the snapshot the
 * real Thought core writes for a task without an e-mail, copied under new thought_ids, Avro-encoded
 * with the registry's schema, each in its key's partition), then one instance, stopped once
 * measured, then `instances` instances started together (separate processes, one group). Each
 * instance is measured once its store holds exactly the runs of the partitions it is assigned (and
 * together they own every partition): every 500 ms for `sample-seconds`, a full garbage
 * collection (bench/lib/gc-on-signal.mjs: instances started together go through a few rebalances
 * before they settle, and the runs of the partitions one let go stay as garbage until a major
 * collection), then a read of its /metrics. The table gives the medians of V8's heap used after
 * the collection and of the resident set. "restored" counts the partitions an instance read from
 * thought.runs since it started (more than it holds when the group settled in several steps).
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { buildTask } from '../client/tasks.ts';
import { onTask } from '../processors/thought/core.ts';
import { thoughtConfig } from '../processors/wiring/index.ts';
import { partitionForKey } from '../runtime/partition.ts';
import { createProducer } from '../runtime/kafka.ts';
import type { RunSnapshot } from '../schemas/types.gen.ts';
import { TOPICS } from '../topics/catalog.ts';
import { commandOptions, integerOption } from './lib/command-line.ts';
import { Fleet, freshNamespace, getJson, progress, quietOwnLogs, sleep, stageSpec, type BenchNamespace, type Instance } from './lib/harness.ts';
import { deleteNamespace } from './lib/phases.ts';

const MiB = 1024 * 1024;
/** Preloaded into each Thought instance: a full collection on SIGUSR2. */
const GC_ON_SIGNAL = new URL('./lib/gc-on-signal.mjs', import.meta.url).pathname;
const PARTITIONS = TOPICS.thoughtRuns.partitions;

export interface MemoryOptions {
  runs: number;
  instances: number;
  sampleSeconds: number;
}

/** One instance, measured. */
export interface InstanceReading {
  phase: 'empty store' | 'one instance' | 'together';
  instance: number;
  partitions: number[];
  storeRuns: number;
  /** Partitions it read from thought.runs since it started. */
  restored: number;
  /** From the process start until its store held its partitions' runs. */
  restoreSeconds: number;
  rssMiB: number;
  /** V8 heap used after a full collection. */
  heapUsedMiB: number;
}

export interface MemoryReport {
  startedAt: string;
  options: MemoryOptions;
  /** Bytes of one parked snapshot, Avro-encoded (the registry's 5-byte header included). */
  snapshotBytes: number;
  writeSeconds: number;
  readings: InstanceReading[];
}

export async function runThoughtMemory(options: MemoryOptions, log: (message: string) => void): Promise<MemoryReport> {
  const startedAt = new Date().toISOString();
  const fleet = new Fleet();
  let ns: BenchNamespace | null = null;
  try {
    ns = await freshNamespace('tmem', process.env, { TAO_LOG_LEVEL: 'info' });
    log(`namespace ${ns.namespace}`);
    const readings: InstanceReading[] = [];
    const perPartition = Array.from({ length: PARTITIONS }, () => 0);

    log('one Thought instance on the empty store');
    readings.push(...(await measure(fleet, ns, 1, perPartition, options, 'empty store', log)));

    const template = await parkedSnapshot(ns.env);
    const started = Date.now();
    const snapshotBytes = await writeSnapshots(ns, template, options.runs, perPartition, log);
    const writeSeconds = (Date.now() - started) / 1000;
    log(`${options.runs} parked snapshots of ${snapshotBytes} bytes written in ${writeSeconds.toFixed(1)} s; per partition ${perPartition.join(', ')}`);

    log('one Thought instance');
    readings.push(...(await measure(fleet, ns, 1, perPartition, options, 'one instance', log)));
    log(`${options.instances} Thought instances, started together`);
    readings.push(...(await measure(fleet, ns, options.instances, perPartition, options, 'together', log)));
    return { startedAt, options, snapshotBytes, writeSeconds: round1(writeSeconds), readings };
  } finally {
    await fleet.stop();
    if (ns) await deleteNamespace(ns.kafka, (n) => n.startsWith(`${ns!.namespace}.`)).catch(() => undefined);
  }
}

/** The snapshot Thought's core writes for a task without the customer's e-mail: a run parked awaiting input. */
async function parkedSnapshot(env: NodeJS.ProcessEnv): Promise<RunSnapshot> {
  const config = await thoughtConfig(env);
  const decision = onTask(buildTask({ text: 'Where is my order? It never arrived.', source: 'bench' }), config);
  const snapshot = decision.outputs.find((o) => o.topic === 'thoughtRuns')?.value as RunSnapshot | undefined;
  if (snapshot?.status !== 'awaiting_input') throw new Error(`the template task did not park (${snapshot?.status ?? 'no snapshot'})`);
  return snapshot;
}

/** Writes `runs` copies of `template` under new thought_ids, each to its key's partition; returns one record's size. */
async function writeSnapshots(ns: BenchNamespace, template: RunSnapshot, runs: number, perPartition: number[], log: (m: string) => void): Promise<number> {
  const producer = createProducer(ns.kafka);
  await producer.connect();
  const topic = ns.codec.topics.name('thoughtRuns');
  let bytes = 0;
  try {
    for (let i = 0; i < runs; i += 1000) {
      const messages = [];
      for (let j = i; j < Math.min(runs, i + 1000); j++) {
        const id = randomUUID();
        const snapshot: RunSnapshot = { ...template, thought_id: id, task_id: randomUUID() };
        const value = await ns.codec.encode('thoughtRuns', snapshot);
        bytes = value.length;
        const partition = partitionForKey(id, PARTITIONS);
        perPartition[partition]!++;
        messages.push({ key: id, value, partition, timestamp: String(Date.now()) });
      }
      await producer.send({ topic, acks: -1, messages });
      if ((i + 1000) % 20000 === 0) log(`${i + 1000} snapshots written`);
    }
  } finally {
    await producer.disconnect();
  }
  return bytes;
}

type Health = { assigned?: Record<string, number[]>; store?: { partitions: number[]; entries: number } };

/**
 * Starts `n` Thought instances together, waits until each one's store holds exactly the runs of
 * the partitions it is assigned (and together they own every partition), reads each one's memory,
 * and stops them.
 */
async function measure(
  fleet: Fleet,
  ns: BenchNamespace,
  n: number,
  perPartition: number[],
  options: MemoryOptions,
  phase: InstanceReading['phase'],
  log: (m: string) => void,
): Promise<InstanceReading[]> {
  const restored = new Map<number, Set<number>>();
  const spec = stageSpec('thought', ns.env, undefined, ['--expose-gc', '--import', GC_ON_SIGNAL]);
  const t0 = Date.now();
  let slot = 0;
  const instances = await Promise.all(
    Array.from({ length: n }, () => {
      const mine = new Set<number>();
      const at = slot++;
      return fleet
        .start({
          ...spec,
          ready: (line) => {
            if (line.includes('"msg":"state store restoring partition"')) mine.add((JSON.parse(line) as { partition: number }).partition);
            return spec.ready(line);
          },
        })
        .then((instance) => (restored.set(at, mine), instance));
    }),
  );
  const settledAt = await settled(instances, perPartition, log);
  const readings = await Promise.all(
    instances.map(async (instance, i): Promise<InstanceReading> => {
      const samples: Array<Record<string, number>> = [];
      for (let s = 0; s < options.sampleSeconds * 2; s++) {
        instance.child.kill('SIGUSR2');
        await sleep(500);
        samples.push(await scrape(instance));
      }
      const health = (await getJson<Health>(instance.opsPort, '/health'))!.body;
      return {
        phase,
        instance: i + 1,
        partitions: health.store!.partitions,
        storeRuns: health.store!.entries,
        restored: restored.get(i)!.size,
        restoreSeconds: round1((settledAt - t0) / 1000),
        rssMiB: round1(median(samples.map((m) => m.process_resident_memory_bytes! / MiB))),
        heapUsedMiB: round1(median(samples.map((m) => m.nodejs_heap_size_used_bytes! / MiB))),
      };
    }),
  );
  for (const r of readings)
    log(`${phase} #${r.instance}: partitions ${r.partitions.join(',')}, ${r.storeRuns} runs, RSS ${r.rssMiB} MiB, heap ${r.heapUsedMiB} MiB`);
  await Promise.all(instances.map((i) => fleet.kill(i, 'SIGTERM')));
  return readings;
}

/** Waits until the instances own every partition once and each store holds exactly its assigned partitions' runs; returns when. */
async function settled(instances: Instance[], perPartition: number[], log: (m: string) => void): Promise<number> {
  const deadline = Date.now() + 600000;
  let last = '';
  for (;;) {
    const reports = await Promise.all(instances.map((i) => getJson<Health>(i.opsPort, '/health')));
    const views = reports.map((r) => {
      const assigned = [...new Set(Object.values(r?.body.assigned ?? {}).flat())].sort((a, b) => a - b);
      const held = r?.body.store?.partitions ?? [];
      return { assigned, held, entries: r?.body.store?.entries ?? -1, expected: assigned.reduce((sum, p) => sum + perPartition[p]!, 0) };
    });
    const owned = views.flatMap((v) => v.assigned).sort((a, b) => a - b);
    const ok =
      owned.length === PARTITIONS &&
      owned.every((p, i) => p === i) &&
      views.every((v) => v.held.join(',') === v.assigned.join(',') && v.entries === v.expected);
    if (ok) return Date.now();
    const now = JSON.stringify(views.map((v) => ({ assigned: v.assigned, held: v.held, runs: v.entries, of: v.expected })));
    if (now !== last) log(`waiting: ${now}`);
    last = now;
    if (Date.now() > deadline) throw new Error(`the stores did not settle within 600 s: ${last}`);
    await sleep(500);
  }
}

/** The gauges of a process's /metrics by name. */
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
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** The report as docs/BENCHMARKS.md shows it. */
export function memoryTable(r: MemoryReport): string {
  const one = r.readings.find((x) => x.phase === 'one instance')!;
  const empty = r.readings.find((x) => x.phase === 'empty store')!;
  const pct = (a: number, b: number) => `${Math.round((a / b) * 100)}%`;
  const rows = r.readings.map(
    (x) =>
      `| ${x.phase} | ${x.instance} | ${x.partitions.join(',')} | ${x.restored} | ${x.storeRuns} | ${x.restoreSeconds} | ${x.rssMiB} | ${x.heapUsedMiB} | ` +
      (x.phase === 'empty store'
        ? '- | - | - |'
        : `${pct(x.rssMiB, one.rssMiB)} | ${pct(x.heapUsedMiB, one.heapUsedMiB)} | ${pct(x.heapUsedMiB - empty.heapUsedMiB, one.heapUsedMiB - empty.heapUsedMiB)} |`),
  );
  return [
    `${r.options.runs} parked runs (${r.snapshotBytes} bytes each, Avro), ${PARTITIONS} partitions; ${r.options.instances} instances started together; medians of readings every 500 ms for ${r.options.sampleSeconds} s, each after a full GC`,
    '',
    '| phase | instance | partitions held | restored | runs in store | settled s | RSS MiB | heap MiB | RSS vs one | heap vs one | heap above the empty store vs one |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

const USAGE = `usage: npm run bench:thought-memory -- [options]
  (Thought's memory with many parked runs: one instance holding every partition against several
  holding theirs; on KAFKA_BROKERS / SCHEMA_REGISTRY_URL; docs/BENCHMARKS.md)

  --runs N             parked-run snapshots written into thought.runs (100000)
  --instances N        Thought instances started together after the single one (3)
  --sample-seconds S   how long each instance's /metrics are read, every 500 ms (10)
  --out FILE           also write the JSON report
  -h, --help           this text`;

async function main(): Promise<void> {
  const values = commandOptions('bench:thought-memory', USAGE, {
    runs: { type: 'string', default: '100000' },
    instances: { type: 'string', default: '3' },
    'sample-seconds': { type: 'string', default: '10' },
    out: { type: 'string' },
  });
  const int = (name: string) => integerOption('bench:thought-memory', USAGE, values, name, 1);
  const options: MemoryOptions = { runs: int('runs'), instances: int('instances'), sampleSeconds: int('sample-seconds') };
  quietOwnLogs();
  const since = Date.now();
  const report = await runThoughtMemory(options, (m) => progress(since, m));
  process.stdout.write(`${memoryTable(report)}\n`);
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:thought-memory: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
