/**
 * Every `tao` command answers --help (and -h) with its usage and exit 0, without touching Kafka, a
 * model or the network; an unknown flag is one line plus the usage, exit 2. A few command lines run
 * bin/tao.js as a user would; the rest call the same `main()` in this process (the CLI prints help
 * and usage errors through console.log / console.error, captured here), which keeps the file fast.
 * KAFKA_BROKERS points where nothing listens, so a command that tried to connect instead of
 * printing help would hang or fail.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { main } from '../../cli/main.ts';
import { TAO_BIN } from '../../cli/processes.ts';

const exec = promisify(execFile);
const ENV = { ...process.env, KAFKA_BROKERS: '127.0.0.1:9', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9', TAO_STARTUP_WAIT_MS: '0' };

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function tao(args: string[]): Promise<Result> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [TAO_BIN, ...args], { env: ENV, timeout: 30000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; killed?: boolean };
    if (e.killed) throw new Error(`tao ${args.join(' ')} did not exit within 30 s`);
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** `main(args)` in this process, with what it prints captured (help never starts anything). */
async function taoInProcess(args: string[]): Promise<Result> {
  const saved = { log: console.log, error: console.error, env: process.env };
  let stdout = '';
  let stderr = '';
  console.log = (...a: unknown[]) => void (stdout += `${a.join(' ')}\n`);
  console.error = (...a: unknown[]) => void (stderr += `${a.join(' ')}\n`);
  process.env = ENV;
  try {
    return { code: await main(args), stdout, stderr };
  } finally {
    console.log = saved.log;
    console.error = saved.error;
    process.env = saved.env;
  }
}

/** Each case runs through bin/tao.js when `spawn` is true, in this process otherwise. */
async function taoEither(args: string[], spawn: boolean): Promise<Result> {
  return spawn ? tao(args) : taoInProcess(args);
}

/** Runs `jobs` two at a time (the machine is small; each job starts a Node process). */
async function inPairs<T>(jobs: Array<() => Promise<T>>): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < jobs.length; i += 2) results.push(...(await Promise.all(jobs.slice(i, i + 2).map((j) => j()))));
  return results;
}

/** Each command line with --help, and what its usage must mention. */
const HELP: Array<[string[], RegExp]> = [
  [['--help'], /^usage: tao <command>/m],
  [['help'], /^usage: tao <command>/m],
  [['help', 'replay'], /^usage: tao replay <thought_id>/m],
  [['infra', '--help'], /^usage: tao infra up \[--brokers n \| --docker\] \| down \| status/m],
  [['topics', '--help'], /^usage: tao topics apply/m],
  [['topics', 'apply', '-h'], /^usage: tao topics apply/m],
  [['run', '--help'], /^usage: tao run <thought\|action\|observation\|tools\|ingress\|callbacks\|scheduler\|all> \[--apply-topics\]/m],
  ...['thought', 'action', 'observation', 'tools', 'ingress', 'callbacks', 'scheduler', 'all'].map((s): [string[], RegExp] => [
    ['run', s, '--help'],
    /--apply-topics applies the catalog first/,
  ]),
  [['run', 'source', '-h'], /^ +tao run source <file>/m],
  [['submit', '--help'], /^usage: tao submit --text/m],
  [['approve', '--help'], /^usage: tao approve\|deny <thought_id> \[--interrupt ID\] \[--arguments JSON\]/m],
  [['cancel', '--help'], /^usage: tao cancel <thought_id> \[--reason TEXT\]/m],
  [['deny', '-h'], /^usage: tao approve\|deny <thought_id>/m],
  [['ingress', '--help'], /^usage: tao ingress key --id <id> --sources <list\|\*>/m],
  [['ingress', 'key', '-h'], /^usage: tao ingress key/m],
  [['tail', '--help'], /^usage: tao tail/m],
  [['status', '-h'], /^usage: tao status/m],
  [['replay', '--help'], /^usage: tao replay <thought_id>.*\n[\s\S]*--verify/m],
  [['replay', 'some-id', '--verify', '-h'], /^usage: tao replay <thought_id>/m],
  [['dlq', '--help'], /^usage: tao dlq list/m],
  ...['list', 'show', 'redrive'].map((s): [string[], RegExp] => [['dlq', s, '--help'], new RegExp(`tao dlq ${s}`)]),
  [['classify', '--help'], /^usage: tao classify "<task text>"/m],
  [['classify-error', '-h'], /^usage: tao classify-error <file\|->/m],
  [['demo', '--help'], /^usage: tao demo \[--keep-infra\]/m],
];

test('every command answers --help / -h with its usage on stdout and exit 0', { timeout: 300000 }, async () => {
  // The first two go through the real binary; in-process calls run one after another (they share console).
  const spawned = await inPairs(
    HELP.slice(0, 2).map(
      ([args]) =>
        () =>
          tao(args),
    ),
  );
  const results = [...spawned];
  for (const [args] of HELP.slice(2)) results.push(await taoEither(args, false));
  HELP.forEach(([args, usage], i) => {
    const r = results[i]!;
    assert.equal(r.code, 0, `tao ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    assert.match(r.stdout, usage, `tao ${args.join(' ')}`);
    assert.equal(r.stderr, '', `tao ${args.join(' ')} wrote to stderr`);
  });
});

test('`classify --help` prints the usage instead of classifying the text "--help"; text after -- is classified', { timeout: 60000 }, async () => {
  const help = await tao(['classify', '--help']);
  assert.doesNotMatch(help.stdout, /"intent"/);
  const text = await tao(['classify', '--', '--help where is my order O-12345678']);
  assert.equal(text.code, 0, text.stderr);
  assert.equal((JSON.parse(text.stdout) as { intent: string }).intent, 'order_status');
});

test('an unknown flag or command gives one line naming it, then the usage, and exit 2', { timeout: 120000 }, async () => {
  const cases: Array<[string[], RegExp, RegExp]> = [
    [['classify', '--frobnicate', 'text'], /Unknown option '--frobnicate'/, /^usage: tao classify/m],
    [['run', 'thought', '--aply-topics'], /Unknown option '--aply-topics'/, /^usage: tao run/m],
    [['submit', '--text', 'x', '--wiat'], /Unknown option '--wiat'/, /^usage: tao submit/m],
    [['demo', '--keep'], /Unknown option '--keep'/, /^usage: tao demo/m],
    [['replay', 'id', '--verfiy'], /Unknown option '--verfiy'/, /^usage: tao replay/m],
    [['frobnicate'], /^unknown command "frobnicate"$/m, /^usage: tao <command>/m],
    [['run', 'thinking'], /^unknown process "thinking"/m, /^usage: tao run/m],
  ];
  const results = [await tao(cases[0]![0])];
  // replay reports its own usage errors on process.stderr, so it goes through the binary too.
  for (const [args] of cases.slice(1)) results.push(await taoEither(args, args[0] === 'replay'));
  cases.forEach(([args, problem, usage], i) => {
    const r = results[i]!;
    assert.equal(r.code, 2, `tao ${args.join(' ')} exited ${r.code}`);
    const [first] = r.stderr.split('\n');
    assert.match(first!, problem, `tao ${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, usage);
    assert.equal(r.stdout, '');
  });
});
