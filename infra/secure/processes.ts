/**
 * The secure broker's processes: start a component detached in its own process group (killed when
 * the starting process exits without stopping it), wait for its health check, and pick free ports.
 */
import type { ChildProcess } from 'node:child_process';
import { portFree, spawnDetached } from '../detached.ts';
import { InfraError } from '../local/errors.ts';
import { type Health, logTail, waitUntilHealthy } from '../process.ts';

const HEALTH_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 20_000;

export interface Started {
  child: ChildProcess;
  /** How it ended, once it has. */
  exit(): string | undefined;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Kills what is still running when the process that started it exits without calling stop() (a crashed test). */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) killGroup(child, 'SIGKILL');
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

export async function startDetached(name: string, cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, logFile: string): Promise<Started> {
  installExitHook();
  const { child, exit, exited } = await spawnDetached({ name: `secure broker: ${name}`, by: 'infra/secure.ts', cmd, args, cwd, env, logFile });
  live.add(child);
  void exited.then(() => live.delete(child));
  return {
    child,
    exit,
    stop: async () => {
      if (exit() !== undefined) return;
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function waitHealthy(name: string, s: Started, logFile: string, health: () => Promise<Health>, log: (line: string) => void): Promise<void> {
  const failure = await waitUntilHealthy({ name: `secure broker: ${name}`, health, gone: async () => s.exit(), logFile, timeoutMs: HEALTH_TIMEOUT_MS, log });
  if (!failure) return;
  if (failure.code === 'HEALTH_TIMEOUT') await s.stop();
  throw new InfraError(
    failure.code,
    `${failure.message}${failure.code === 'HEALTH_TIMEOUT' ? '; stopped' : ''}.\nLast lines of ${logFile}:\n${await logTail(logFile)}`,
  );
}

/** A port from 20000-32767 that is free now: below the ephemeral range, so no client socket takes it meanwhile. */
export async function freePort(exclude: number[] = []): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    if (!exclude.includes(port) && (await portFree(port))) return port;
  }
  throw new InfraError('PORT_IN_USE', 'secure broker: found no free port in 20000-32767 after 200 tries');
}
