/**
 * Profiles the stages under load: runs the loop (1 instance per stage, tool latency 0 ms) with
 * `node --cpu-prof` in every stage process (a node argument: NODE_OPTIONS refuses it), stops them cleanly so the
 * profiles are written, and prints per stage the costliest functions by self time, our own
 * functions by total time, and self time by origin (our code, each dependency, Node, GC).
 *
 *   node --import tsx bench/profile.ts [--runs 600] [--concurrency 64] [--dir /tmp/tao-prof] [--out profile.json]
 *       [--patch bench/patches/<name>.patch]   profile the code with a patch applied instead
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { STAGES } from '../processors/wiring.ts';
import { patchedTree, removeTrees } from './lib/ab.ts';
import { commandOptions, integerOption } from './lib/command-line.ts';
import { summarizeProfile, type CpuProfile, type ProfileSummary } from './lib/cpuprofile.ts';
import { Fleet, progress, startToolServerProcess } from './lib/harness.ts';
import { loopPhase } from './lib/phases.ts';
import { fmt, table } from './lib/stats.ts';

/** Runs the profile and returns the summary per stage. */
export async function profileStages(options: { runs: number; concurrency: number; dir: string; patch?: string }): Promise<Record<string, ProfileSummary>> {
  const started = Date.now();
  rmSync(options.dir, { recursive: true, force: true });
  const fleet = new Fleet();
  // A snapshot (patched or not) runs the compiled stages, as the bench does (bench/lib/ab.ts).
  progress(started, 'snapshot of the code, compiling it');
  const tree = await patchedTree(options.patch ?? null);
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
        return ['--cpu-prof', `--cpu-prof-dir=${dir}`];
      },
    });
    progress(started, 'profiles written; summarizing');
    return summarizeDir(options.dir, tree.root);
  } finally {
    await fleet.stop();
    removeTrees();
  }
}

/** Summarizes the profiles under `<dir>/<stage>/` (one stage process each). */
export function summarizeDir(dir: string, root: string): Record<string, ProfileSummary> {
  const out: Record<string, ProfileSummary> = {};
  for (const stage of STAGES) {
    // tsx's module hooks run on a loader thread, which writes its own (small) profile: take the main thread's, the largest.
    const files = readdirSync(join(dir, stage)).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, stage, f)).sort((a, b) => statSync(b).size - statSync(a).size);
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
    parts.push(table(['origin', 'self ms', '% busy'], Object.entries(s.byOrigin).filter(([o]) => o !== 'idle').map(([o, v]) => [o, v, (100 * v) / s.busyMs])));
    parts.push(table(['package', 'self ms', '% busy'], Object.entries(s.byPackage).slice(0, 8).map(([p, v]) => [p, v, (100 * v) / s.busyMs])));
    parts.push(`-- top ${top} functions by self time`);
    parts.push(table(['function', 'origin', 'self ms', 'self %', 'total %'], s.functions.filter((f) => f.origin !== 'idle').slice(0, top).map((f) => [f.frame, f.pkg ?? f.origin, f.selfMs, f.selfPct, f.totalPct])));
    parts.push(`-- our functions by total time (callees included)`);
    parts.push(table(['function', 'total ms', 'total %', 'self %'], s.functions.filter((f) => f.origin === 'ours').sort((a, b) => b.totalMs - a.totalMs).slice(0, top).map((f) => [f.frame, f.totalMs, f.totalPct, f.selfPct])));
  }
  return parts.join('\n');
}

const USAGE = `usage: node --import tsx bench/profile.ts [options]
  (the loop with node --cpu-prof in every stage, 1 instance each, 0 ms tools, on KAFKA_BROKERS /
  SCHEMA_REGISTRY_URL; prints each stage's costliest functions and self time by origin)

  --runs N                 measured runs (600), after 50 warm-up runs
  --concurrency N          runs in flight (64)
  --dir DIR                where the .cpuprofile files go (/tmp/tao-prof; emptied first)
  --top N                  functions listed per stage (15)
  --patch FILE             profile the code with this patch applied (bench/patches/)
  --out FILE               also write the summaries as JSON
  -h, --help               this text`;

async function main(): Promise<void> {
  const values = commandOptions('profile', USAGE, { runs: { type: 'string', default: '600' }, concurrency: { type: 'string', default: '64' }, dir: { type: 'string', default: '/tmp/tao-prof' }, out: { type: 'string' }, patch: { type: 'string' }, top: { type: 'string', default: '15' } });
  const [runs, concurrency, top] = (['runs', 'concurrency', 'top'] as const).map((name) => integerOption('profile', USAGE, values, name, 1));
  const summaries = await profileStages({ runs: runs!, concurrency: concurrency!, dir: values.dir, patch: values.patch });
  console.log(renderProfiles(summaries, top!));
  if (values.out) writeFileSync(values.out, JSON.stringify(Object.fromEntries(Object.entries(summaries).map(([k, s]) => [k, { ...s, functions: s.functions.slice(0, 60) }])), null, 2));
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
