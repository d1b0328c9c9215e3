/**
 * The peer phase of `npm run bench -- --peer`: LangGraph.js with its SQLite checkpointer
 * (bench/peer/peer.mjs) on the loop's shape, against the same demo tool server, with the same runs
 * and in-flight count as the loop's phases. Its packages live in bench/peer/ (a package of its own,
 * installed there on first use), never in the project's dependencies.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, progress, type ToolServerProcess } from './harness.ts';
import type { PhaseLoad } from './phases.ts';

export const PEER_DIR = `${REPO_ROOT}bench/peer/`;

/** What the peer measured (bench/peer/peer.mjs prints it). */
export interface PeerResult {
  label: string;
  runs: number;
  concurrency: number;
  seconds: number;
  runsPerSecond: number;
  iterationsPerRun: number;
  /** Runs whose last wave (the shipment) was observed ok. */
  completedRuns: number;
  runMs: { p50: number; p95: number; p99: number };
  /** CPU of the peer's one process per run (it is the whole loop: no broker, no stage processes). */
  cpuMsPerRun: number;
  rssMiB: number;
  loadAverage: number;
}

/**
 * Installs bench/peer/ from its lockfile when its packages are missing. better-sqlite3 is a native
 * module: it is built from source against this Node's headers (its install script would otherwise
 * try to download a prebuilt binary), which package.json's `allowScripts` approves.
 * @throws Error with npm's last lines when the install fails.
 */
export async function ensurePeerInstalled(started: number): Promise<void> {
  if (
    existsSync(`${PEER_DIR}node_modules/better-sqlite3/build/Release/better_sqlite3.node`) &&
    existsSync(`${PEER_DIR}node_modules/@langchain/langgraph-checkpoint-sqlite`)
  )
    return;
  progress(started, 'peer: installing bench/peer/ (LangGraph.js, better-sqlite3 built from source; a few minutes the first time)');
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_build_from_source: 'true' };
  if (!env.npm_config_nodedir && existsSync('/usr/include/node/node.h')) env.npm_config_nodedir = '/usr';
  const out = await run('npm', ['ci', '--no-audit', '--no-fund'], PEER_DIR, env);
  if (out.code !== 0) throw new Error(`peer: npm ci in bench/peer failed (exit ${out.code}):\n${out.output.split('\n').slice(-20).join('\n')}`);
}

/** Runs the peer against `tools` (no faults: 0 ms tools) with `load`'s warm-up, runs and in-flight count. */
export async function peerPhase(setup: { label: string; started: number; load: PhaseLoad; tools: ToolServerProcess }): Promise<PeerResult> {
  const { label, started, load, tools } = setup;
  await ensurePeerInstalled(started);
  await tools.clearFaults();
  const dir = mkdtempSync(join(tmpdir(), 'tao-peer-'));
  try {
    progress(started, `${label}: warm-up ${load.warmupRuns} runs, then ${load.runs} runs with ${load.concurrency} in flight`);
    const args = [
      `${PEER_DIR}peer.mjs`,
      '--tools',
      tools.url,
      '--runs',
      String(load.runs),
      '--warmup',
      String(load.warmupRuns),
      '--concurrency',
      String(load.concurrency),
      '--db',
      join(dir, 'checkpoints.sqlite'),
    ];
    const out = await run(process.execPath, args, PEER_DIR, process.env, load.timeoutMs * 3);
    if (out.code !== 0) throw new Error(`${label}: the peer exited ${out.code}:\n${out.output.split('\n').slice(-20).join('\n')}`);
    const line = out.stdout.trim().split('\n').pop() ?? '';
    const measured = JSON.parse(line) as Omit<PeerResult, 'label' | 'loadAverage'>;
    progress(started, `${label}: ${measured.runsPerSecond.toFixed(1)} runs/s`);
    return { label, ...measured, loadAverage: loadavg()[0]! };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 900000,
): Promise<{ code: number | string; stdout: string; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => ((stdout += d.toString()), (output += d.toString())));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', stdout, output });
    });
  });
}
