/**
 * The bench commands other than `npm run bench` (test/bench/options.test.ts): chaos, soak,
 * profile, bad-inputs, startup, thought-memory, models:bench, models:eval-loop and models:patterns answer --help with their usage and exit 0, and a mistake on the
 * command line with a message naming it, then the usage, and exit 2: no stack trace, and nothing
 * started (KAFKA_BROKERS points where nothing listens, and the chaos command would otherwise start
 * its private broker).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const ENV = { ...process.env, KAFKA_BROKERS: '127.0.0.1:9', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9' };

async function bench(script: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', script, ...args], { env: ENV, timeout: 30000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; killed?: boolean };
    if (e.killed) throw new Error(`${script} ${args.join(' ')} did not exit within 30 s`);
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const COMMANDS = [
  { script: 'bench/chaos.ts', usage: 'usage: npm run chaos', badValue: ['--kills', 'many'], says: /^chaos: --kills must be an integer >= 0, got "many"$/m },
  { script: 'bench/soak.ts', usage: 'usage: npm run soak', badValue: ['--retention', '10ms'], says: /^soak: --retention must be a duration of at least 1s/m },
  {
    script: 'bench/profile.ts',
    usage: 'usage: node --import tsx bench/profile.ts',
    badValue: ['--top', 'x'],
    says: /^profile: --top must be an integer >= 1, got "x"$/m,
  },
  {
    script: 'bench/bad-inputs.ts',
    usage: 'usage: node --import tsx bench/bad-inputs.ts',
    badValue: ['--out'],
    says: /^bad-inputs: Option '--out <value>' argument missing$/m,
  },
  {
    script: 'bench/models-latency.ts',
    usage: 'usage: npm run models:bench',
    badValue: ['--warmup', 'lots'],
    says: /^models:bench: --warmup must be an integer >= 0, got "lots"$/m,
  },
  {
    script: 'bench/startup.ts',
    usage: 'usage: npm run bench:startup',
    badValue: ['--stages', 'thought,planner'],
    says: /^bench\/startup: --stages takes thought, action and observation, not "planner"$/m,
  },
  {
    script: 'bench/thought-memory.ts',
    usage: 'usage: npm run bench:thought-memory',
    badValue: ['--instances', '0'],
    says: /^bench:thought-memory: --instances must be an integer >= 1, got "0"$/m,
  },
  {
    script: 'bench/eval-loop.ts',
    usage: 'usage: npm run models:eval-loop',
    badValue: ['--tool-calls', 'xml'],
    says: /^models:eval-loop: --tool-calls must be native or json_schema, got "xml"$/m,
  },
  {
    script: 'bench/model-patterns.ts',
    usage: 'usage: npm run models:patterns',
    badValue: ['--only', 'react,tree-of-thought'],
    says: /^models:patterns: --only: no pattern tree-of-thought \(there are react, plan-replan, reflexion\)$/m,
  },
];

for (const c of COMMANDS) {
  test(`${c.script}: --help prints the usage; an unknown option or a bad value is named, then the usage, exit 2`, async () => {
    const [help, unknown, bad] = await Promise.all([bench(c.script, ['--help']), bench(c.script, ['--frobnicate']), bench(c.script, c.badValue)]);
    assert.equal(help.code, 0, help.stderr);
    assert.ok(help.stdout.startsWith(c.usage), help.stdout);
    assert.match(help.stdout, /-h, --help/);
    for (const r of [unknown, bad]) {
      assert.equal(r.code, 2, r.stderr);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
      assert.ok(r.stderr.includes(`\n${c.usage}`), r.stderr);
    }
    assert.match(unknown.stderr, /Unknown option '--frobnicate'/);
    assert.match(bad.stderr, c.says);
  });
}
