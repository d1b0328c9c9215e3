/**
 * A configuration that would dead-letter every wave is refused at start-up: with TAO_PLANNER=react
 * or plan-replan every run's first step is a model turn (tool model.chat), which Action can only
 * perform with the model endpoint (TAO_LLM_BASE_URL). Without it, `tao run action` and `tao run all`
 * exit 1 with one line naming the variables, before they start or connect to anything. Runs
 * bin/tao.js as a user would; KAFKA_BROKERS points where nothing listens, so a command that got past
 * the check fails on Kafka instead (TAO_STARTUP_WAIT_MS=0), with another message.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';

const exec = promisify(execFile);
const BASE = { ...process.env, KAFKA_BROKERS: '127.0.0.1:9', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9', TAO_STARTUP_WAIT_MS: '0', TAO_OPS_PORT: '0' };

async function tao(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean: NodeJS.ProcessEnv = { ...BASE, ...env };
  for (const name of ['TAO_LLM_BASE_URL', 'TAO_LLM_MODEL']) if (env[name] === undefined) delete clean[name];
  try {
    const { stdout, stderr } = await exec(process.execPath, [TAO_BIN, ...args], { env: clean, timeout: 60000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; killed?: boolean };
    if (e.killed) throw new Error(`tao ${args.join(' ')} did not exit within 60 s`);
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

for (const planner of ['react', 'plan-replan'])
  for (const command of [
    ['run', 'action'],
    ['run', 'all'],
  ])
    test(`tao ${command.join(' ')} with TAO_PLANNER=${planner} and no model endpoint exits 1 with one line naming TAO_PLANNER and TAO_LLM_BASE_URL`, async () => {
      const r = await tao(command, { TAO_PLANNER: planner });
      assert.equal(r.code, 1, `exit code; stderr: ${r.stderr}`);
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, `one line: ${r.stderr}`);
      assert.match(
        lines[0]!,
        new RegExp(`^tao: TAO_PLANNER=${planner} needs the model tool model\\.chat in Action's catalog, and TAO_LLM_BASE_URL is not set`),
      );
      assert.equal(r.stdout, '', 'nothing was started');
    });

test('with the model endpoint set, tao run action gets past the check (and stops at the unreachable broker instead)', async () => {
  const r = await tao(['run', 'action'], { TAO_PLANNER: 'react', TAO_LLM_BASE_URL: 'http://127.0.0.1:9/v1', TAO_LLM_MODEL: 'm' });
  assert.equal(r.code, 1);
  assert.doesNotMatch(r.stderr + r.stdout, /needs the model tool/);
  assert.match(r.stderr + r.stdout, /Kafka|broker|KAFKA_BROKERS/i);
});

test('a planner without a model (graph) needs no model endpoint', async () => {
  const r = await tao(['run', 'action'], { TAO_PLANNER: 'graph' });
  assert.doesNotMatch(r.stderr + r.stdout, /needs the model tool/);
});
