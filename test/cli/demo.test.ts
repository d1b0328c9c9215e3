import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';

test('`tao demo` runs the sample tasks through every stage and prints each outcome', { timeout: 180000 }, async () => {
  const env = { ...process.env, TAO_NAMESPACE: `demo${randomUUID().slice(0, 6)}` };
  const { stdout } = await promisify(execFile)(process.execPath, [TAO_BIN, 'demo'], { env, timeout: 170000, maxBuffer: 10 * 1024 * 1024 });
  const outcomes = stdout.split('\n').filter((l) => / (COMPLETED|FAILED|AWAITING_INPUT) after /.test(l));
  assert.equal(outcomes.filter((l) => l.includes('COMPLETED')).length, 3, stdout);
  const asking = outcomes.filter((l) => l.includes('AWAITING_INPUT') && l.includes('needs: email'));
  assert.equal(asking.length, 2, 'the task without an e-mail, and the one whose e-mail is unknown, ask a person for it');
  assert.ok(asking.some((l) => l.includes('found nothing')), 'the unknown customer is asked about after reflecting on not_found');
  assert.match(stdout, /wave 2: S2 orders\.latest, S3 crm\.tier/, 'steps are printed as they happen');
});
