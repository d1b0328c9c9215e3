/**
 * Profiles the stages under load: runs the loop (1 instance per stage, tool latency 0 ms) with
 * `node --cpu-prof` in every stage process (a node argument: NODE_OPTIONS refuses it), stops them cleanly so the
 * profiles are written, and prints per stage the costliest functions by self time, our own
 * functions by total time, and self time by origin (our code, each dependency, Node, GC). With
 * `--alloc`, an allocation profile instead (bench/lib/alloc-sampler.mjs in every stage): bytes
 * allocated per function, per origin and per package, and per nearest function of ours.
 *
 *   node --import tsx bench/profile.ts [--runs 600] [--concurrency 64] [--dir /tmp/tao-prof] [--out profile.json]
 *       [--at REV]   profile the code of commit REV instead of the checkout
 *       [--alloc]                               where the stages allocate, not where they spend CPU
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { STAGES } from '../processors/wiring/index.ts';
import { checkoutTree, commitTree, removeTrees } from './lib/ab.ts';
import { commandOptions, integerOption } from './lib/command-line.ts';
import { summarizeProfile, type CpuProfile, type ProfileSummary } from './lib/cpuprofile.ts';
import { summarizeHeapProfile, type AllocationSummary, type HeapProfile } from './lib/heapprofile.ts';
import { Fleet, progress, startToolServerProcess } from './lib/harness.ts';
import { loopPhase } from './lib/phases.ts';
import { fmt, table } from './lib/stats.ts';

const ALLOC_SAMPLER = new URL('./lib/alloc-sampler.mjs', import.meta.url);

/** Runs the loop under the profiler, CPU (`.cpuprofile`) or allocations (`.heapprofile`), into `<dir>/<stage>/`; returns the snapshot's root. */
async function runProfiled(options: { runs: number; concurrency: number; dir: string; at?: string; alloc: boolean }): Promise<string> {
  const started = Date.now();
  rmSync(options.dir, { recursive: true, force: true });
  const fleet = new Fleet();
  // A snapshot (of the checkout or of a commit) runs the compiled stages, as the bench does (bench/lib/ab.ts).
  progress(started, 'snapshot of the code, compiling it');
  const tree = options.at ? await commitTree(options.at) : await checkoutTree();
  try {
    const tools = await startToolServerProcess(fleet, process.env);
    await loopPhase({
      label: 'profile',
      load: { warmupRuns: 50, runs: options.runs, concurrency: options.concurrency, probeRuns: 0, probeConcurrency: 1, timeoutMs: 600000 },
      instances: 1,
      started,
      toolLatencyMs: 0,
      tools,
      baseEnv: process.env,
      bin: tree.bin,
      nodeArgs: (stage) => {
        const dir = join(options.dir, stage);
        mkdirSync(dir, { recursive: true });
        if (!options.alloc) return ['--cpu-prof', `--cpu-prof-dir=${dir}`];
        const sampler = new URL(ALLOC_SAMPLER);
        sampler.searchParams.set('dir', dir);
        return ['--import', sampler.href];
      },
    });
    progress(started, 'profiles written; summarizing');
    return tree.root;
  } finally {
    await fleet.stop();
    removeTrees();
  }
}

/** Runs the loop with `node --cpu-prof` in every stage and returns the summary per stage. */
export async function profileStages(options: { runs: number; concurrency: number; dir: string; at?: string }): Promise<Record<string, ProfileSummary>> {
  return summarizeDir(options.dir, await runProfiled({ ...options, alloc: false }));
}

/** Runs the loop with the allocation sampler in every stage and returns the summary per stage. */
export async function profileAllocations(options: { runs: number; concurrency: number; dir: string; at?: string }): Promise<Record<string, AllocationSummary>> {
  const root = await runProfiled({ ...options, alloc: true });
  const out: Record<string, AllocationSummary> = {};
  for (const stage of STAGES) {
    const files = readdirSync(join(options.dir, stage)).filter((f) => f.endsWith('.heapprofile'));
    if (files.length !== 1)
      throw new Error(`${stage}: ${files.length} .heapprofile files in ${join(options.dir, stage)}, want 1 (did the process exit cleanly?)`);
    out[stage] = summarizeHeapProfile(JSON.parse(readFileSync(join(options.dir, stage, files[0]!), 'utf8')) as HeapProfile, root);
  }
  return out;
}

/** The report printed by `bench/profile.ts --alloc`. */
export function renderAllocations(summaries: Record<string, AllocationSummary>, top = 15): string {
  const mib = (bytes: number) => bytes / 1048576;
  const parts: string[] = [];
  for (const [stage, s] of Object.entries(summaries)) {
    const pct = (bytes: number) => (s.totalBytes > 0 ? (100 * bytes) / s.totalBytes : 0);
    parts.push(`\n=== ${stage}: ${fmt(mib(s.totalBytes))} MiB allocated (freed objects included)`);
    parts.push(
      table(
        ['origin', 'MiB', '%'],
        Object.entries(s.byOrigin)
          .filter(([, v]) => v > 0)
          .map(([o, v]) => [o, mib(v), pct(v)]),
      ),
    );
    parts.push(
      table(
        ['package', 'MiB', '%'],
        Object.entries(s.byPackage)
          .slice(0, 8)
          .map(([p, v]) => [p, mib(v), pct(v)]),
      ),
    );
    parts.push(`-- top ${top} functions by bytes they allocated themselves`);
    parts.push(
      table(
        ['function', 'origin', 'MiB', '%'],
        s.self.slice(0, top).map((f) => [f.frame, f.pkg ?? f.origin, mib(f.bytes), pct(f.bytes)]),
      ),
    );
    parts.push(`-- our functions, with what dependencies and Node allocated for them`);
    parts.push(
      table(
        ['function', 'MiB', '%'],
        s.ours.slice(0, top).map((f) => [f.frame, mib(f.bytes), pct(f.bytes)]),
      ),
    );
  }
  return parts.join('\n');
}

/** Summarizes the profiles under `<dir>/<stage>/` (one stage process each). */
export function summarizeDir(dir: string, root: string): Record<string, ProfileSummary> {
  const out: Record<string, ProfileSummary> = {};
  for (const stage of STAGES) {
    // tsx's module hooks run on a loader thread, which writes its own (small) profile: take the main thread's, the largest.
    const files = readdirSync(join(dir, stage))
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => join(dir, stage, f))
      .sort((a, b) => statSync(b).size - statSync(a).size);
    if (files.length === 0) throw new Error(`${stage}: no .cpuprofile in ${join(dir, stage)} (did the process exit cleanly?)`);
    out[stage] = summarizeProfile(JSON.parse(readFileSync(files[0]!, 'utf8')) as CpuProfile, root);
  }
  return out;
}

/** The report printed by `bench/profile.ts`. */
export function renderProfiles(summaries: Record<string, ProfileSummary>, top = 15): string {
  const parts: string[] = [];
  for (const [stage, s] of Object.entries(summaries)) {
    parts.push(`\n=== ${stage}: ${fmt(s.busyMs)} ms busy of ${fmt(s.wallMs)} ms sampled`);
    parts.push(
      table(
        ['origin', 'self ms', '% busy'],
        Object.entries(s.byOrigin)
          .filter(([o]) => o !== 'idle')
          .map(([o, v]) => [o, v, (100 * v) / s.busyMs]),
      ),
    );
    parts.push(
      table(
        ['package', 'self ms', '% busy'],
        Object.entries(s.byPackage)
          .slice(0, 8)
          .map(([p, v]) => [p, v, (100 * v) / s.busyMs]),
      ),
    );
    parts.push(`-- top ${top} functions by self time`);
    parts.push(
      table(
        ['function', 'origin', 'self ms', 'self %', 'total %'],
        s.functions
          .filter((f) => f.origin !== 'idle')
          .slice(0, top)
          .map((f) => [f.frame, f.pkg ?? f.origin, f.selfMs, f.selfPct, f.totalPct]),
      ),
    );
    parts.push(`-- our functions by total time (callees included)`);
    parts.push(
      table(
        ['function', 'total ms', 'total %', 'self %'],
        s.functions
          .filter((f) => f.origin === 'ours')
          .sort((a, b) => b.totalMs - a.totalMs)
          .slice(0, top)
          .map((f) => [f.frame, f.totalMs, f.totalPct, f.selfPct]),
      ),
    );
  }
  return parts.join('\n');
}

const USAGE = `usage: node --import tsx bench/profile.ts [options]
  (the loop with node --cpu-prof in every stage, 1 instance each, 0 ms tools, on KAFKA_BROKERS /
  SCHEMA_REGISTRY_URL; prints each stage's costliest functions and self time by origin)

  --runs N                 measured runs (600), after 50 warm-up runs
  --concurrency N          runs in flight (64)
  --dir DIR                where the .cpuprofile (.heapprofile) files go (/tmp/tao-prof; emptied first)
  --top N                  functions listed per stage (15)
  --at REV                 profile the code of commit REV (HEAD~1, a sha, a tag) instead of the checkout
  --alloc                  profile allocations instead of CPU (V8's sampling heap profiler, freed
                           objects included): bytes per function, origin, package
  --out FILE               also write the summaries as JSON
  -h, --help               this text`;

async function main(): Promise<void> {
  const values = commandOptions('profile', USAGE, {
    runs: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '64' },
    dir: { type: 'string', default: '/tmp/tao-prof' },
    out: { type: 'string' },
    at: { type: 'string' },
    top: { type: 'string', default: '15' },
    alloc: { type: 'boolean', default: false },
  });
  const [runs, concurrency, top] = (['runs', 'concurrency', 'top'] as const).map((name) => integerOption('profile', USAGE, values, name, 1));
  const options = { runs: runs!, concurrency: concurrency!, dir: values.dir, at: values.at };
  if (values.alloc) {
    const allocations = await profileAllocations(options);
    console.log(renderAllocations(allocations, top!));
    if (values.out)
      writeFileSync(
        values.out,
        JSON.stringify(
          Object.fromEntries(Object.entries(allocations).map(([k, s]) => [k, { ...s, self: s.self.slice(0, 60), ours: s.ours.slice(0, 60) }])),
          null,
          2,
        ),
      );
    return;
  }
  const summaries = await profileStages(options);
  console.log(renderProfiles(summaries, top!));
  if (values.out)
    writeFileSync(
      values.out,
      JSON.stringify(Object.fromEntries(Object.entries(summaries).map(([k, s]) => [k, { ...s, functions: s.functions.slice(0, 60) }])), null, 2),
    );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    () => process.exit(0),
    (err: Error) => {
      console.error(`profile: ${err.stack ?? err.message}`);
      process.exit(1);
    },
  );
}
