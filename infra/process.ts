/**
 * Process and file helpers shared by the local infrastructure (infra/local.ts: Kafka and the
 * registry) and the local model server (infra/model/): running a command while watching its
 * output, pid files, log tails, error text. No kafkajs here, so `tao model` loads none.
 */
import { spawn } from 'node:child_process';
import { open, readFile } from 'node:fs/promises';
import { setPriority } from 'node:os';

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

