/**
 * Process helpers of the local model server (infra/model/): its error, a process's command line,
 * waiting for a process to go, and port probes; with the helpers it shares with infra/local.ts
 * (infra/process.ts: commands, pid files, signals, the lock file) re-exported.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { InfraError, type InfraErrorCode } from '../local/errors.ts';
import { isErrno, probe } from '../process.ts';

/** infra/model/'s failures have the local infrastructure's codes (infra/local/errors.ts). */
export type ModelErrorCode = InfraErrorCode;

/** Every failure of infra/model/: the local infrastructure's error, named for the model server; `code` says what went wrong, the message what to do about it. */
export class ModelError extends InfraError {}

export {
  errorText,
  isErrno,
  elapsed,
  run,
  probe,
  lastLines,
  logTail,
  readPid,
  signalable,
  signalGroup,
  waitUntilHealthy,
  withFileLock,
  type Health,
  type LockOptions,
  type RunResult,
} from '../process.ts';

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

/** Polls `alive` until it is false or `timeoutMs` pass; true when gone. */
export async function waitGone(alive: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await alive())) return true;
    await sleep(100);
  }
  return !(await alive());
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
