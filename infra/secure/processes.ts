/**
 * The secure broker's processes: run a command to completion, start a component detached in its own
 * process group (killed when the starting process exits without stopping it), wait for its health
 * check, and the free-port helpers.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { InfraError } from '../local/errors.ts';
import { type Health, logTail, waitUntilHealthy } from '../process.ts';

const HEALTH_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 20_000;

export interface RunResult {
  code: number | null;
  output: string;
}

/** Runs a command to completion with stdout+stderr captured. Rejects only when it cannot start. */
export function runCommand(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-64 * 1024);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', reject);
    child.once('close', (code) => resolvePromise({ code, output }));
  });
}

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
  await appendFile(logFile, `=== infra/secure.ts: starting ${name} at ${new Date().toISOString()}: ${cmd} ${args.join(' ')} ===\n`);
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    // Own process group, so stop() reaches anything the component forks.
    child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  await new Promise<void>((resolvePromise, reject) => {
    child.once('spawn', resolvePromise);
    child.once('error', (err) => reject(new InfraError('PROCESS_FAILED', `secure broker: could not start ${name} (${cmd}): ${err.message}`, { cause: err })));
  });
  live.add(child);
  let exit: string | undefined;
  const exited = new Promise<void>((r) =>
    child.once('exit', (code, signal) => {
      exit = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      live.delete(child);
      r();
    }),
  );
  child.unref();
  return {
    child,
    exit: () => exit,
    stop: async () => {
      if (exit !== undefined) return;
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

export async function kafkaHealth(brokers: string, caPem: string, sasl: { mechanism: 'scram-sha-512'; username: string; password: string }): Promise<Health> {
  const admin = new Kafka({
    clientId: 'tao-secure-health',
    brokers: [brokers],
    ssl: { ca: [caPem] },
    sasl,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 2000,
    requestTimeout: 3000,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 ? { ok: true } : { ok: false, reason: 'describeCluster returned no brokers' };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  } finally {
    await admin.disconnect();
  }
}

export async function registryHealth(url: string, authorization: string): Promise<Health> {
  try {
    const res = await fetch(`${url}/subjects`, { headers: { authorization }, signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status === 200 ? { ok: true } : { ok: false, reason: `GET /subjects answered ${res.status}` };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

export function portFree(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const server = createServer();
    server.once('error', () => resolvePromise(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolvePromise(true)));
  });
}

/** A port from 20000-32767 that is free now: below the ephemeral range, so no client socket takes it meanwhile. */
export async function freePort(exclude: number[] = []): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    if (!exclude.includes(port) && (await portFree(port))) return port;
  }
  throw new InfraError('PORT_IN_USE', 'secure broker: found no free port in 20000-32767 after 200 tries');
}
