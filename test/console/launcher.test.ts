// test-needs: kafka
/**
 * `tao ui` as a user starts it (`node bin/tao.js ui`, no node flags): the console runs in a process
 * with its own V8 flags (bin/console-node-flags.json, which bound its memory), and a SIGTERM to the
 * command stops both the launcher and the console.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { TAO_BIN } from '../../cli/processes.ts';
import { packagePath } from '../../runtime/paths.ts';
import { freshCluster } from '../helpers/cluster.ts';

const FLAGS = JSON.parse(readFileSync(packagePath('bin', 'console-node-flags.json'), 'utf8')) as string[];

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('tao ui runs the console with its node flags, and SIGTERM stops launcher and console', { timeout: 90000 }, async () => {
  const cluster = await freshCluster();
  const ui = spawn(process.execPath, [TAO_BIN, 'ui', '--port', '0'], { env: { ...cluster.env, TAO_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  createInterface({ input: ui.stderr }).on('line', (l) => stderr.push(l));
  const exited = once(ui, 'exit');
  let consolePid = 0;
  for await (const line of createInterface({ input: ui.stdout })) {
    if (line.includes('console listening')) {
      consolePid = (JSON.parse(line) as { pid: number }).pid;
      break;
    }
  }
  ui.stdout.resume(); // the rest of its log is not read
  assert.ok(consolePid > 0, `the console said where it listens:\n${stderr.join('\n')}`);
  assert.notEqual(consolePid, ui.pid, 'the console is a process of its own, started with the flags');
  const argv = readFileSync(`/proc/${consolePid}/cmdline`, 'utf8').split('\0');
  for (const flag of FLAGS) assert.ok(argv.includes(flag), `${flag} in ${argv.join(' ')}`);
  ui.kill('SIGTERM');
  const [code, signal] = await exited;
  assert.ok(code === 0 || code === 143 || signal === 'SIGTERM', `launcher exit ${code} ${signal}`);
  // The launcher exits once the console has: the console is gone by then.
  assert.equal(alive(consolePid), false, 'the console process stopped with the command');
});
