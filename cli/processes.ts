import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setting } from '../runtime/config.ts';
import { packagePath } from '../runtime/paths.ts';
import stageNodeFlags from '../runtime/stage-node-flags.json' with { type: 'json' };

/** Default ports of the demo tool server and the HTTP ingress (override with TAO_TOOLS_PORT / TAO_INGRESS_PORT). */
export const DEFAULT_PORTS = { tools: setting({}, 'TAO_TOOLS_PORT'), ingress: setting({}, 'TAO_INGRESS_PORT') };

export const TAO_BIN = packagePath('bin', 'tao.js');

/** A child process running one `tao run <name>`, with its output prefixed and forwarded. */
export interface StageProcess {
  name: string;
  child: ChildProcess;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
}

/**
 * Node flags of every process {@link spawnStage} starts, stages and servers alike
 * (runtime/stage-node-flags.json): an 8 MiB young-generation semi-space instead of V8's 16 MiB.
 * A stage's allocations live for one transaction at most; the bench's A/B measured
 * 10-25 MiB less peak RSS per stage under load and no CPU cost, where 4 MiB cost 16-26% more CPU
 * per run (docs/BENCHMARKS.md). V8 reads it only at start: a deployment that starts `tao run <stage>`
 * itself puts it on node's command line or in NODE_OPTIONS (docs/DEPLOYMENT.md, "Build, and the stages' node flags").
 */
export const STAGE_NODE_FLAGS: readonly string[] = stageNodeFlags;

/**
 * Starts `tao run <name>` as a separate OS process (each stage is its own process and consumer
 * group member, as in production). Output lines go to `onLine` prefixed by the name.
 */
export function spawnStage(name: string, env: NodeJS.ProcessEnv, onLine: (name: string, line: string) => void, args: string[] = []): StageProcess {
  const child = spawn(process.execPath, [...STAGE_NODE_FLAGS, TAO_BIN, 'run', name, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', (line) => onLine(name, line));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return { name, child, exited };
}

/** Sends SIGTERM to each process and waits for it; SIGKILL after `graceMs`. */
export async function stopAll(processes: StageProcess[], graceMs = 15000): Promise<void> {
  await Promise.all(
    processes.map(async (p) => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) return;
      p.child.kill('SIGTERM');
      const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
      await p.exited;
      clearTimeout(timer);
    }),
  );
}

/** Polls `GET url` until it answers 200 or `timeoutMs` passes. */
export async function waitForHttpOk(url: string, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      if (res.ok) return;
      last = `HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} not healthy at ${url} after ${timeoutMs} ms (last: ${last})`);
}
