/**
 * Process and file helpers shared by the local infrastructure (infra/local.ts: Kafka and the
 * registry) and the local model server (infra/model/): running a command while watching its
 * output, pid files, log tails, error text, signals to a process group, and the cross-process lock
 * file each command holds. No kafkajs here, so `tao model` loads none.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { InfraError } from './local/errors.ts';

export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${err.message}${cause}`;
}

export function isErrno(err: unknown, ...codes: string[]): boolean {
  return err instanceof Error && codes.includes((err as NodeJS.ErrnoException).code ?? '');
}

/** `1m05s` style for long waits, `4.2s` for short ones. */
export function elapsed(since: number, now = Date.now()): string {
  const s = (now - since) / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const whole = Math.round(s);
  return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last 256 KiB of stdout+stderr. */
  output: string;
}

/**
 * Runs a command to completion, capturing (the last 256 KiB of) stdout+stderr; `onOutput` sees
 * every chunk as it comes. `nice`: the command (and the processes it starts from then on) runs at
 * that lower priority. Rejects only if the command cannot start (ENOENT: not installed).
 */
export function run(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; onOutput?: (text: string) => void; nice?: number } = {},
): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    if (options.nice !== undefined && child.pid !== undefined) {
      try {
        setPriority(child.pid, options.nice);
      } catch {
        // Not allowed here, or already gone: it runs at normal priority.
      }
    }
    let output = '';
    const collect = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      output += text;
      if (output.length > 256 * 1024) output = output.slice(-256 * 1024);
      options.onOutput?.(text);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', reject);
    child.once('close', (code, signal) => resolvePromise({ code, signal, output }));
  });
}

/** Like {@link run}, but a command that is not installed resolves undefined. */
export async function probe(cmd: string, args: string[]): Promise<RunResult | undefined> {
  try {
    return await run(cmd, args);
  } catch (err) {
    if (isErrno(err, 'ENOENT', 'EACCES')) return undefined;
    throw err;
  }
}

export function lastLines(text: string, n = 20): string {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.slice(-n).join('\n');
}

/** The last `n` lines of a file (its last 64 KiB), or a note that it does not exist. */
export async function logTail(file: string, n = 20): Promise<string> {
  let fh;
  try {
    fh = await open(file, 'r');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return '(the log file does not exist)';
    throw err;
  }
  try {
    const { size } = await fh.stat();
    const length = Math.min(size, 64 * 1024);
    const buf = Buffer.alloc(length);
    await fh.read(buf, 0, length, size - length);
    return lastLines(buf.toString('utf8'), n);
  } finally {
    await fh.close();
  }
}

export async function readPid(file: string): Promise<number | undefined> {
  let raw: string;
  try {
    raw = await readFile(file, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
  const pid = Number(raw.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** True when `pid` exists and we may signal it (EPERM means another user's process: never ours). */
export function signalable(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if (isErrno(err, 'ESRCH', 'EPERM')) return false;
    throw err;
  }
}

export type Health = { ok: true } | { ok: false; reason: string };

/** What {@link waitUntilHealthy} watches: a started process, its health check and its log. */
export interface HealthWatch {
  /** How messages name it: `kafka`, `model`, `secure broker: kafka`. */
  name: string;
  health: () => Promise<Health>;
  /** Why the process is gone (`exited with code 1`), or undefined while it lives. */
  gone: () => Promise<string | undefined>;
  logFile: string;
  timeoutMs: number;
  /** Past `timeoutMs`, wait on while the log grew in the last `quietMs` (default: don't). */
  quietMs?: number;
  /** Never wait longer than this in all (default 15 min). */
  hardLimitMs?: number;
  pollMs?: number;
  /** A progress line every 10 s. */
  log?: (line: string) => void;
}

export interface HealthFailure {
  code: 'PROCESS_FAILED' | 'HEALTH_TIMEOUT';
  /** One line: what happened and the last check's reason; the caller adds the log's tail. */
  message: string;
}

/**
 * Polls `health` until it passes (null) or the process fails (`PROCESS_FAILED`) or the wait runs
 * out (`HEALTH_TIMEOUT`: the caller then stops the process). A component whose log still grows past
 * its time-out is working (a broker restarted on thousands of partitions loads them one by one), so
 * with `quietMs` it gets more time while its log moves, up to `hardLimitMs`.
 */
export async function waitUntilHealthy(w: HealthWatch): Promise<HealthFailure | null> {
  const since = Date.now();
  const hardLimit = w.hardLimitMs ?? 15 * 60_000;
  let nextProgress = since + 10_000;
  let logSize = await fileSize(w.logFile);
  let logMoved = since;
  for (;;) {
    const health = await w.health();
    if (health.ok) {
      w.log?.(`${w.name}: healthy after ${elapsed(since)}`);
      return null;
    }
    const gone = await w.gone();
    if (gone !== undefined) return { code: 'PROCESS_FAILED', message: `${w.name}: ${gone} before becoming healthy (last check: ${health.reason})` };
    const size = await fileSize(w.logFile);
    if (size !== logSize) [logSize, logMoved] = [size, Date.now()];
    const overdue = Date.now() - since > w.timeoutMs;
    const quiet = w.quietMs === undefined || Date.now() - logMoved > w.quietMs;
    if (overdue && (quiet || Date.now() - since > hardLimit)) {
      const log = w.quietMs === undefined ? '' : `; its log quiet for ${elapsed(logMoved)}`;
      return { code: 'HEALTH_TIMEOUT', message: `${w.name}: not healthy after ${elapsed(since)} (last check: ${health.reason}${log})` };
    }
    if (Date.now() >= nextProgress) {
      const working = overdue ? `; past ${w.timeoutMs / 1000}s, waiting on while its log grows` : '';
      w.log?.(`${w.name}: still waiting (${elapsed(since)}; last check: ${health.reason}${working})…`);
      nextProgress += 10_000;
    }
    await new Promise((resolve) => setTimeout(resolve, w.pollMs ?? 500));
  }
}

async function fileSize(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}

/** SIGNAL to the process group of `pid` (a detached component leads its own), else to the process. */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  const send = (target: number): boolean => {
    try {
      process.kill(target, signal);
      return true;
    } catch (err) {
      if (isErrno(err, 'ESRCH')) return false;
      throw new InfraError('PROCESS_FAILED', `cannot send ${signal} to ${target < 0 ? 'process group' : 'pid'} ${Math.abs(target)}: ${errorText(err)}`, {
        cause: err,
      });
    }
  };
  if (!send(-pid)) send(pid);
}

// ---- lock --------------------------------------------------------------------------------------

export interface LockOptions {
  /** Who waits, for the progress lines (`infra`, `model`, `llama.cpp build`). */
  label: string;
  /** The command whose lock it is, for the stale-lock advice (`tao infra`, `tao model`). */
  command: string;
  /** What the holder is doing, for the waiting line. */
  holderDoes: string;
  waitMs: number;
  progressEveryMs: number;
  log: (line: string) => void;
}

/**
 * Runs `work` holding the lock file `lock` (a hard link to a file carrying our pid: link() is
 * atomic and fails when the lock exists). A lock whose holder is gone is removed. Waits up to
 * `waitMs` for a live holder, with a line every `progressEveryMs`.
 */
export async function withFileLock<T>(lock: string, o: LockOptions, work: () => Promise<T>): Promise<T> {
  await mkdir(dirname(lock), { recursive: true });
  const mine = `${lock}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(mine, `${process.pid}\n`);
  const since = Date.now();
  let nextProgress = 0;
  try {
    for (;;) {
      try {
        await link(mine, lock);
        break;
      } catch (err) {
        if (!isErrno(err, 'EEXIST')) throw err;
      }
      const holder = await readPid(lock);
      if (holder === undefined || !signalable(holder)) {
        o.log(`${o.label}: removing stale lock ${lock} (holder ${holder ?? '?'} is gone)`);
        await rm(lock, { force: true });
        continue;
      }
      if (Date.now() - since > o.waitMs) {
        throw new InfraError(
          'PROCESS_FAILED',
          `${o.label}: ${lock} has been held by pid ${holder} for over ${Math.round(o.waitMs / 60_000)} min; if no ${o.command} command is running, delete the file`,
        );
      }
      if (Date.now() >= nextProgress) {
        o.log(`${o.label}: ${nextProgress === 0 ? 'waiting' : `still waiting (${elapsed(since)})`} for pid ${holder}, which ${o.holderDoes}…`);
        nextProgress = Date.now() + o.progressEveryMs;
      }
      await sleep(250);
    }
  } finally {
    await unlink(mine);
  }
  try {
    return await work();
  } finally {
    await rm(lock, { force: true });
  }
}
