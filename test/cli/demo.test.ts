// test-needs: kafka
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';

test('`tao demo` runs the sample tasks through every stage and prints each outcome', { timeout: 180000 }, async () => {
  const env = { ...process.env, TAO_NAMESPACE: `demo${randomUUID().slice(0, 6)}` };
  const { stdout } = await promisify(execFile)(process.execPath, [TAO_BIN, 'demo'], { env, timeout: 170000, maxBuffer: 10 * 1024 * 1024 });
  const outcomes = stdout.split('\n').filter((l) => / (COMPLETED|FAILED|AWAITING_INPUT|ESCALATED|BUDGET_EXHAUSTED) after /.test(l));
  assert.equal(outcomes.length, 9, stdout);
  assert.equal(outcomes.filter((l) => l.includes('COMPLETED')).length, 7, 'one ticket per intent completes');
  assert.equal(
    outcomes.filter((l) => l.includes('AWAITING_INPUT') && l.includes('needs: order_id')).length,
    1,
    'the order ticket without an order id asks for one',
  );
  assert.equal(outcomes.filter((l) => l.includes('ESCALATED')).length, 1, 'the off-domain ticket goes to a person');
  assert.match(stdout, /wave 2: S2 orders\.latest, S3 crm\.tier/, 'steps are printed as they happen');
  assert.match(stdout, /wave 1: S1 billing\.get_invoice/);
});
