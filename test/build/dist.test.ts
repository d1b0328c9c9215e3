// test-needs: kafka
/**
 * The compiled build as a production install runs it: `npm run build`'s output (tsconfig.build.json)
 * in a package folder whose node_modules holds only the production dependency tree (no tsx, no
 * typescript, no testcontainers), with the data files (flows, rules, tools, models, schemas, infra)
 * at the package root. `tao --help`, `tao classify`, `tao topics apply` and one ticket through the
 * three stages and the demo tools, all from dist/.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../runtime/paths.ts';
// @ts-expect-error bin/ is plain JavaScript without type declarations
import { distIsCurrent } from '../../bin/dist-state.js';

const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'tao-dist-'));
const pkg = join(work, 'tao-kafka');
const bin = join(pkg, 'bin', 'tao.js');
const children: ChildProcess[] = [];

before(async () => {
  mkdirSync(pkg);
  cpSync(join(PACKAGE_ROOT, 'package.json'), join(pkg, 'package.json'));
  cpSync(join(PACKAGE_ROOT, 'bin'), join(pkg, 'bin'), { recursive: true });
  for (const dir of ['flows', 'rules', 'tools', 'models', 'schemas', 'infra', 'skills', 'eval']) symlinkSync(join(PACKAGE_ROOT, dir), join(pkg, dir));
  mkdirSync(join(pkg, 'model-sim'));
  symlinkSync(join(PACKAGE_ROOT, 'model-sim', 'scenarios'), join(pkg, 'model-sim', 'scenarios'));
  // Only the production tree: each top-level package `npm ls --omit=dev` lists.
  const listed = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: PACKAGE_ROOT, encoding: 'utf8' });
  assert.equal(listed.status, 0, listed.stderr);
  const tops = new Set<string>();
  for (const line of listed.stdout.split('\n')) {
    const m = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(line.startsWith(PACKAGE_ROOT) ? line.slice(PACKAGE_ROOT.length + 1) : '');
    if (m) tops.add(m[1]!);
  }
  assert.ok(tops.has('kafkajs') && !tops.has('tsx') && !tops.has('testcontainers') && !tops.has('typescript'), [...tops].join(' '));
  for (const name of tops) {
    mkdirSync(dirname(join(pkg, 'node_modules', name)), { recursive: true });
    symlinkSync(join(PACKAGE_ROOT, 'node_modules', name), join(pkg, 'node_modules', name));
  }
  // `npm test` has just built dist/ with the same tsconfig; a checkout whose dist/ is stale is compiled here.
  if (distIsCurrent(PACKAGE_ROOT)) cpSync(join(PACKAGE_ROOT, 'dist'), join(pkg, 'dist'), { recursive: true });
  else
    await run(
      process.execPath,
      [join(PACKAGE_ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(PACKAGE_ROOT, 'tsconfig.build.json'), '--outDir', join(pkg, 'dist')],
      { timeout: 170000 },
    );
});

after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

test('the production package has dist/ and cannot load tsx', () => {
  assert.ok(existsSync(join(pkg, 'dist', 'cli', 'main.js')));
  assert.throws(() => createRequire(bin).resolve('tsx/esm/api'), { code: 'MODULE_NOT_FOUND' });
});

test('`tao --help` and `tao classify` run from dist/ without tsx', async () => {
  const help = await run(process.execPath, [bin, '--help']);
  assert.match(help.stdout, /^usage: tao <command>/);
  const routed = JSON.parse((await run(process.execPath, [bin, 'classify', '我的订单 O-12345678 到哪了'])).stdout) as {
    intent: string;
    slots: Record<string, string>;
  };
  assert.equal(routed.intent, 'order_status');
  assert.equal(routed.slots.order_id, 'O-12345678');
});

test("the skills folder, the model simulator's scenarios and tao eval's regression set are found from dist/ (they sit at the package root)", async () => {
  const skills = await run(process.execPath, [bin, 'skills', 'list']);
  assert.match(skills.stdout, /^order-status@1 /m);
  // tao eval's default regression set is found too: an unknown ticket id is named against it (exit 2, nothing started).
  const unknown = await run(process.execPath, [bin, 'eval', '--release', join(pkg, 'eval'), '--only', 'no-such-ticket']).catch(
    (err: { code: number; stderr: string }) => err,
  );
  assert.equal((unknown as { code?: number }).code, 2);
  assert.match((unknown as { stderr: string }).stderr, /--only: no ticket no-such-ticket in .*eval\/regression-tickets\.json/);
  const sim = await startUntil(['run', 'model-sim', '--port', '0'], process.env, /a scripted SIMULATOR, not a model, listening on/);
  sim.child.kill('SIGTERM');
  await sim.exited;
});

/** Starts `tao <args>` from the package and resolves with the first stdout/stderr line matching `ready`. */
async function startUntil(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  timeoutMs = 90000,
): Promise<{ child: ChildProcess; line: string; exited: Promise<number | string> }> {
  const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines: string[] = [];
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`tao ${args.join(' ')}: no line matching ${ready} within ${timeoutMs} ms:\n${lines.slice(-20).join('\n')}`)),
      timeoutMs,
    );
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (l) => {
        lines.push(l);
        if (ready.test(l)) {
          clearTimeout(timer);
          resolve(l);
        }
      });
    }
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`tao ${args.join(' ')} exited (${code}) before ${ready}:\n${lines.slice(-20).join('\n')}`));
    });
  });
  return { child, line, exited };
}

test('a ticket completes through the three stages and the demo tools, all running from dist/', { timeout: 240000 }, async () => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TAO_NAMESPACE: `t${randomUUID().slice(0, 8)}`,
    TAO_SESSION_TIMEOUT_MS: '6000',
    TAO_OPS_PORT: '0',
    TAO_PLANNER: 'router',
  };
  const applied = await run(process.execPath, [bin, 'topics', 'apply'], { env, timeout: 120000 });
  assert.match(applied.stdout, /schemas registered/);

  const tools = await startUntil(['run', 'tools'], { ...env, TAO_TOOLS_PORT: '0' }, /tool server listening/);
  const stageEnv = { ...env, TAO_DEMO_TOOL_ORIGIN: (JSON.parse(tools.line) as { url: string }).url };
  const stages = await Promise.all(['thought', 'action', 'observation'].map((stage) => startUntil(['run', stage], stageEnv, /"msg":"stage started"/)));

  const submitted = await run(process.execPath, [bin, 'submit', '--text', 'Where is my order O-12345678?', '--wait', '--timeout-s', '90'], {
    env,
    timeout: 120000,
  });
  const outcome = JSON.parse(submitted.stdout.trim().split('\n').pop()!) as { status: string; reason_code: string; output_json: string };
  assert.equal(outcome.status, 'completed', submitted.stdout);
  assert.equal((JSON.parse(outcome.output_json) as { order_id: string }).order_id, 'O-12345678');

  for (const p of [...stages, tools]) p.child.kill('SIGTERM');
  assert.deepEqual(await Promise.all(stages.map((s) => s.exited)), [0, 0, 0]);
});
