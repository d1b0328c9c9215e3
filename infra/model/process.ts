/**
 * Process and file helpers of the local model server (infra/model/): running a command while
 * watching its output, pid files and process groups, a cross-process lock, port probes, log tails.
 * The same patterns as infra/local.ts, kept apart so that `tao model` does not load kafkajs.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { link, mkdir, open, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { setPriority } from 'node:os';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export type ModelErrorCode =
  /** A tool the build needs (`python3 -m pip`, `cmake`, `ninja`, a C/C++ compiler) is missing. */
  | 'PREREQUISITE_MISSING'
  /** The server's port is held by a process this tool did not start. */
  | 'PORT_IN_USE'
  /** The server started but did not answer GET /health with 200 in time (it is stopped again). */
  | 'HEALTH_TIMEOUT'
  /** Downloading the wheels or building llama-server failed. */
  | 'BUILD_FAILED'
  /** The options (or TAO_* variables) are invalid, or a server already runs with other ones. */
  | 'CONFIG_INVALID'
  /** The server exited while starting, could not be signalled or stopped, or a lock stayed held. */
  | 'PROCESS_FAILED';

/** Every failure of infra/model/; `code` says what went wrong, the message what to do about it. */
export class ModelError extends Error {
  readonly code: ModelErrorCode;

  constructor(code: ModelErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

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
export function run(cmd: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; onOutput?: (text: string) => void; nice?: number } = {}): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
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

// ---- processes ---------------------------------------------------------------------------------

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

/** The process's command line (arguments joined by spaces), or undefined when it is gone. */
export async function commandLine(pid: number): Promise<string | undefined> {
  if (existsSync('/proc/self/cmdline')) {
    try {
      const raw = await readFile(`/proc/${pid}/cmdline`);
      return raw.length === 0 ? undefined : raw.toString('utf8').split('\0').filter(Boolean).join(' ');
    } catch (err) {
      if (isErrno(err, 'ENOENT', 'ESRCH')) return undefined;
      throw err;
    }
  }
  const r = await probe('ps', ['-o', 'command=', '-p', String(pid)]);
  return r?.code === 0 && r.output.trim() !== '' ? r.output.trim() : undefined;
}

/** SIGNAL to the process group of `pid` (the detached server leads its own), else to the process. */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  const send = (target: number): boolean => {
    try {
      process.kill(target, signal);
      return true;
    } catch (err) {
      if (isErrno(err, 'ESRCH')) return false;
      throw new ModelError('PROCESS_FAILED', `cannot send ${signal} to ${target < 0 ? 'process group' : 'pid'} ${Math.abs(target)}: ${errorText(err)}`, { cause: err });
    }
  };
  if (!send(-pid)) send(pid);
}

/** Polls `alive` until it is false or `timeoutMs` pass; true when gone. */
export async function waitGone(alive: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await alive())) return true;
    await sleep(100);
  }
  return !(await alive());
}

// ---- lock --------------------------------------------------------------------------------------

export interface LockOptions {
  /** Who waits, for the progress lines (`model`, `llama.cpp build`). */
  label: string;
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
        throw new ModelError('PROCESS_FAILED', `${o.label}: ${lock} has been held by pid ${holder} for over ${Math.round(o.waitMs / 60_000)} min; if no tao model command is running, delete the file`);
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

// ---- ports -------------------------------------------------------------------------------------

export function portFree(port: number): Promise<boolean> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', (err) => {
      if (isErrno(err, 'EADDRINUSE')) resolvePromise(false);
      else reject(new ModelError('CONFIG_INVALID', `cannot bind 127.0.0.1:${port}: ${err.message}`, { cause: err }));
    });
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      server.close((err) => (err ? reject(err) : resolvePromise(true)));
    });
  });
}
