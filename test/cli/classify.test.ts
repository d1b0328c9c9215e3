import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';

const run = promisify(execFile);

test('`tao classify-error -` prints the label, confidence, model and whether Observation would adopt it', async () => {
  const child = run(process.execPath, [TAO_BIN, 'classify-error', '-']);
  child.child.stdin!.end('<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>');
  const out = JSON.parse((await child).stdout) as { label: string; confidence: number; model: string; adopted: boolean };
  assert.equal(out.label, 'network_issue');
  assert.match(out.model, /^error-classifier@[0-9a-f]{12}$/);
  assert.equal(out.adopted, out.confidence >= 0.95);
});

test('`tao classify` routes English and Chinese tickets and refuses to guess off-domain', async () => {
  const route = async (text: string) =>
    JSON.parse((await run(process.execPath, [TAO_BIN, 'classify', text])).stdout) as { intent: string; slots: Record<string, string> };
  const zh = await route('我要退款，订单 O-12345678');
  assert.equal(zh.intent, 'refund_request');
  assert.equal(zh.slots.order_id, 'O-12345678');
  assert.equal((await route('Please send me a copy of invoice INV-2024-0042')).intent, 'invoice_copy');
  assert.equal((await route('tell me a joke about penguins')).intent, 'unknown');
});
