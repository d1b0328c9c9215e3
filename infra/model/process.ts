/**
 * Process and file helpers of the local model server (infra/model/): running a command while
 * watching its output, pid files and process groups, a cross-process lock, port probes, log tails.
 * The helpers it shares with infra/local.ts live in infra/process.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { link, mkdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { InfraError, type InfraErrorCode } from '../local/errors.ts';
import { elapsed, errorText, isErrno, probe, readPid, signalable } from '../process.ts';

/** infra/model/'s failures have the local infrastructure's codes (infra/local/errors.ts). */
export type ModelErrorCode = InfraErrorCode;

/** Every failure of infra/model/: the local infrastructure's error, named for the model server; `code` says what went wrong, the message what to do about it. */
export class ModelError extends InfraError {}

export { errorText, isErrno, elapsed, run, probe, lastLines, logTail, readPid, signalable, waitUntilHealthy, type Health, type RunResult } from '../process.ts';

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
      throw new ModelError('PROCESS_FAILED', `cannot send ${signal} to ${target < 0 ? 'process group' : 'pid'} ${Math.abs(target)}: ${errorText(err)}`, {
        cause: err,
      });
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
        throw new ModelError(
          'PROCESS_FAILED',
          `${o.label}: ${lock} has been held by pid ${holder} for over ${Math.round(o.waitMs / 60_000)} min; if no tao model command is running, delete the file`,
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
