/**
 * Start-up time and memory of a stage run from the TypeScript sources through tsx against the
 * same stage run from the compiled dist/ (`npm run build`), interleaved in one run so that the
 * ratio compares like with like on a shared machine.
 *
 *   npm run bench:startup [-- --reps 5 --stages thought,action,observation --settle-ms 3000 --idle-ms 5000 --no-build]
 *
 * For each repetition, each stage and each of the two codes (TAO_RUN_FROM=source|dist, the order
 * alternating between repetitions): `node bin/tao.js run <stage>` is spawned in a fresh namespace
 * on KAFKA_BROKERS; start-up is the time from the spawn to its "stage started" log line (code
 * loading, config, model loading, the group join and the partition claim); RSS is the process's
 * VmRSS `--settle-ms` after that line, idle, and idle CPU is the CPU time it uses over the next
 * `--idle-ms`, per second (a stage with nothing to do: fetch long-polls, heartbeats, timers). The stage is then stopped with SIGTERM before the
 * next one starts. `tao --help` (code loading alone) is timed the same way. Prints a table; the
 * sources are compiled first (as `npm run build`) unless --no-build.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { commandOptions, integerOption, usageError } from './lib/command-line.ts';
import { Fleet, REPO_ROOT, freshNamespace, stageSpec } from './lib/harness.ts';
import { deleteNamespace, processCpuMs } from './lib/phases.ts';
import { percentile } from './lib/stats.ts';

const CODES = ['source', 'dist'] as const;
type Code = (typeof CODES)[number];
const run = promisify(execFile);

/** Resident set size of a live process in MiB (Linux /proc). */
function rssMiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

interface Sample {
  code: Code;
  what: string;
  ms: number;
  rssMiB?: number;
  /** CPU the idle stage used over `--idle-ms`, per second of it. */
  idleCpuMsPerS?: number;
}

const USAGE = `usage: npm run bench:startup -- [options]
  (start-up time, idle RSS and idle CPU of each stage from the sources through tsx against dist/,
  interleaved; on KAFKA_BROKERS / SCHEMA_REGISTRY_URL)

  --reps N                 repetitions (5), each stage and code once per repetition
  --stages LIST            comma-separated, of thought, action, observation (all three)
  --settle-ms N            idle time after "stage started" before RSS is read (3000)
  --idle-ms N              then the CPU the idle stage uses over this long is read, per second (5000)
  --no-build               use dist/ as it is (default: npm run build first)
  -h, --help               this text`;

async function main(): Promise<void> {
  const values = commandOptions('bench/startup', USAGE, {
    reps: { type: 'string', default: '5' },
    stages: { type: 'string', default: 'thought,action,observation' },
    'settle-ms': { type: 'string', default: '3000' },
    'idle-ms': { type: 'string', default: '5000' },
    'no-build': { type: 'boolean', default: false },
  });
  const reps = integerOption('bench/startup', USAGE, values, 'reps', 1);
  const idleMs = integerOption('bench/startup', USAGE, values, 'idle-ms', 1000);
  const settleMs = Number(values['settle-ms']);
  const stages = values.stages.split(',');
  if (!Number.isFinite(settleMs) || settleMs < 0) usageError('bench/startup', USAGE, `--settle-ms must be a number of ms >= 0, not "${values['settle-ms']}"`);
  const unknown = stages.filter((s) => !['thought', 'action', 'observation'].includes(s));
  if (unknown.length) usageError('bench/startup', USAGE, `--stages takes thought, action and observation, not "${unknown.join(',')}"`);

  if (!values['no-build']) {
    process.stderr.write('compiling (npm run build)…\n');
    await run('npm', ['run', 'build'], { cwd: REPO_ROOT });
  }
  const bin = `${REPO_ROOT}bin/tao.js`;
  const ns = await freshNamespace('startup', process.env);
  const samples: Sample[] = [];
  const loads: number[] = [];
  try {
    for (let rep = 0; rep < reps; rep++) {
      const order = rep % 2 === 0 ? CODES : [...CODES].reverse();
      for (const code of order) {
        const env = { ...ns.env, TAO_RUN_FROM: code, TAO_PLANNER: 'router' };
        const t0 = performance.now();
        await run(process.execPath, [bin, '--help'], { env });
        samples.push({ code, what: '--help', ms: performance.now() - t0 });
        for (const stage of stages) {
          loads.push(loadavg()[0]!);
          const fleet = new Fleet();
          const started = performance.now();
          const instance = await fleet.start(stageSpec(stage, env, bin));
          const ms = performance.now() - started;
          await sleep(settleMs);
          const rss = rssMiB(instance.child.pid!);
          const cpuBefore = processCpuMs(instance.child.pid!);
          await sleep(idleMs);
          const idleCpuMsPerS = ((processCpuMs(instance.child.pid!) - cpuBefore) / idleMs) * 1000;
          samples.push({ code, what: stage, ms, rssMiB: rss, idleCpuMsPerS });
          await fleet.stop();
          process.stderr.write(
            `rep ${rep + 1}/${reps} ${code.padEnd(6)} ${stage.padEnd(11)} ${ms.toFixed(0)} ms  ${rss.toFixed(0)} MiB  idle ${idleCpuMsPerS.toFixed(0)} CPU ms/s  load ${loads.at(-1)!.toFixed(1)}\n`,
          );
        }
      }
    }
  } finally {
    await deleteNamespace(ns.kafka, (name) => name.startsWith(`${ns.namespace}.`));
  }

  const median = (xs: number[]) => percentile(xs, 50);
  const rows: string[] = [];
  rows.push(
    '| what | source (tsx): start-up ms, median [min-max] | dist: start-up ms, median [min-max] | dist/source | source RSS MiB | dist RSS MiB | dist/source | source idle CPU ms/s | dist idle CPU ms/s |',
  );
  rows.push('|---|---|---|---|---|---|---|---|---|');
  for (const what of ['--help', ...stages]) {
    const of = (code: Code) => samples.filter((s) => s.code === code && s.what === what);
    const ms = (code: Code) => of(code).map((s) => s.ms);
    const rss = (code: Code) => of(code).map((s) => s.rssMiB ?? NaN);
    const cell = (xs: number[]) => `${median(xs).toFixed(0)} [${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}]`;
    const idle = (code: Code) => median(of(code).map((s) => s.idleCpuMsPerS ?? NaN)).toFixed(0);
    const rssCells =
      what === '--help'
        ? '| | | | | |'
        : `| ${median(rss('source')).toFixed(0)} | ${median(rss('dist')).toFixed(0)} | ${(median(rss('dist')) / median(rss('source'))).toFixed(2)} | ${idle('source')} | ${idle('dist')} |`;
    rows.push(`| ${what} | ${cell(ms('source'))} | ${cell(ms('dist'))} | ${(median(ms('dist')) / median(ms('source'))).toFixed(2)} ${rssCells}`);
  }
  console.log(`${reps} repetitions, node ${process.version}, 1-min load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}\n`);
  console.log(rows.join('\n'));
}

main().catch((err: unknown) => {
  console.error(`bench/startup: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
