/**
 * The components the infra commands start and stop (the local broker and registry, infra/local/; the
 * model server, infra/model/; the secure test broker, infra/secure/): start one detached in its own
 * process group with its output appended to a log, wait for it to become healthy (killing a start
 * that times out), read a process's command line, stop a process group (SIGTERM, then SIGKILL) and
 * wait for it to go, and check a port is free.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { appendFile, readFile, rename, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { InfraError } from './local/errors.ts';
import { type HealthWatch, elapsed, isErrno, logTail, probe, signalGroup, waitUntilHealthy } from './process.ts';

/** The error class a caller's failures are (infra/model/ throws its `ModelError`). */
export type InfraErrorClass = typeof InfraError;

/** A process {@link spawnDetached} started. */
export interface Detached {
  child: ChildProcess;
  pid: number;
  /** How it ended (`exited with code 1`, `was killed by SIGKILL`) once it has; recorded from the start, so no early exit is missed. */
  exit: () => string | undefined;
  /** Resolves once it has exited. */
  exited: Promise<void>;
}

export interface DetachedStart {
  /** How messages name it: `kafka`, `model`, `secure broker: kafka`. */
  name: string;
  /** Who starts it, for the line written to its log first: `tao infra`, `tao model`, `infra/secure.ts`. */
  by: string;
  cmd: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
  error?: InfraErrorClass;
}

/** Renames `file` to `<file>.1` (replacing an older one), so that a start writes a fresh log. */
export async function rotateLog(file: string): Promise<void> {
  try {
    await rename(file, `${file}.1`);
  } catch (err) {
    if (!isErrno(err, 'ENOENT')) throw err;
  }
}

/**
 * Starts `cmd` detached, leading its own process group (so a stop reaches anything it forks), with
 * stdout and stderr appended to the log, and lets this process exit without waiting for it.
 * @throws InfraError (or `error`) `PROCESS_FAILED` when it cannot start.
 */
export async function spawnDetached(s: DetachedStart): Promise<Detached> {
  const Err = s.error ?? InfraError;
  await appendFile(s.logFile, `=== ${s.by}: starting ${s.name} at ${new Date().toISOString()}: ${s.cmd} ${s.args.join(' ')} ===\n`);
  const fd = openSync(s.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(s.cmd, s.args, { cwd: s.cwd, env: s.env, detached: true, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  let exit: string | undefined;
  const exited = new Promise<void>((resolvePromise) =>
    child.once('exit', (code, signal) => {
      exit = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      resolvePromise();
    }),
  );
  await new Promise<void>((resolvePromise, reject) => {
    child.once('spawn', resolvePromise);
    child.once('error', (err) => reject(new Err('PROCESS_FAILED', `${s.name}: could not start ${s.cmd}: ${err.message}`, { cause: err })));
  });
  child.unref();
  if (child.pid === undefined) throw new Err('PROCESS_FAILED', `${s.name}: ${s.cmd} started without a pid`);
  return { child, pid: child.pid, exit: () => exit, exited };
}

export interface StartWatch extends Omit<HealthWatch, 'gone'> {
  pid: number;
  /** Whether our process still runs (not merely some process with that pid). */
  alive: () => Promise<boolean>;
  /** The process just started (how it ended is known exactly), or undefined for one adopted. */
  spawned?: Detached;
  pidFile: string;
  killWaitMs: number;
  /** How the failure names the process: `process 123`, `llama-server (pid 123)`. */
  what: string;
  error?: InfraErrorClass;
}

/**
 * Waits for a started component to pass its health check ({@link waitUntilHealthy}). One that
 * fails the wait is not left half-started: past its time-out it is killed; either way its pid file
 * is removed.
 * @throws InfraError (or `error`) `PROCESS_FAILED` (it exited) or `HEALTH_TIMEOUT`, with its log's last lines.
 */
export async function waitStarted(w: StartWatch): Promise<void> {
  const failure = await waitUntilHealthy({ ...w, gone: async () => w.spawned?.exit() ?? ((await w.alive()) ? undefined : 'exited') });
  if (!failure) return;
  const killed = failure.code === 'HEALTH_TIMEOUT';
  if (killed) {
    signalGroup(w.pid, 'SIGKILL');
    await waitGone(w.alive, w.killWaitMs);
  }
  await rm(w.pidFile, { force: true });
  const tail = `Last 20 lines of ${w.logFile}:\n${await logTail(w.logFile, 20)}`;
  throw new (w.error ?? InfraError)(failure.code, `${failure.message}; ${w.what} ${killed ? 'was killed' : 'is gone'}\n${tail}`);
}

/** The process's command line (arguments joined by spaces), or undefined when it is gone (zombies have an empty cmdline). */
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
async function waitGone(alive: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await alive())) return true;
    await sleep(100);
  }
  return !(await alive());
}

export interface GroupStop {
  /** How messages name the process: `kafka`, `model`. */
  name: string;
  pid: number;
  /** Whether our process still runs (not merely some process with that pid). */
  alive: () => Promise<boolean>;
  /** `SIGKILL` at once skips the grace period. */
  signal: 'SIGTERM' | 'SIGKILL';
  graceMs: number;
  killWaitMs: number;
  pidFile: string;
  log: (line: string) => void;
  error?: InfraErrorClass;
}

/**
 * Sends `signal` to the process group of `pid` and waits for it to go; one still alive after
 * `graceMs` gets SIGKILL. Logs how long the stop took.
 * @throws InfraError (or `error`) `PROCESS_FAILED` when it outlives SIGKILL (its pid file is kept).
 */
export async function stopGroup(s: GroupStop): Promise<void> {
  const since = Date.now();
  signalGroup(s.pid, s.signal);
  let gone = await waitGone(s.alive, s.signal === 'SIGKILL' ? s.killWaitMs : s.graceMs);
  if (!gone && s.signal !== 'SIGKILL') {
    s.log(`${s.name}: pid ${s.pid} still alive after ${s.graceMs / 1000}s; sending SIGKILL`);
    signalGroup(s.pid, 'SIGKILL');
    gone = await waitGone(s.alive, s.killWaitMs);
  }
  if (!gone) throw new (s.error ?? InfraError)('PROCESS_FAILED', `${s.name}: pid ${s.pid} did not exit after SIGKILL; pid file ${s.pidFile} kept`);
  s.log(`${s.name}: stopped in ${elapsed(since)}`);
}

/**
 * Whether 127.0.0.1:`port` can be bound now.
 * @throws InfraError (or `error`) `CONFIG_INVALID` when binding fails for another reason than the port being in use.
 */
export function portFree(port: number, error: InfraErrorClass = InfraError): Promise<boolean> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', (err) => {
      if (isErrno(err, 'EADDRINUSE')) resolvePromise(false);
      else reject(new error('CONFIG_INVALID', `cannot bind 127.0.0.1:${port}: ${err.message}`, { cause: err }));
    });
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      server.close((err) => (err ? reject(err) : resolvePromise(true)));
    });
  });
}
