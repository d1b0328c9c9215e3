import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeliveryLedger } from '../../ingress/deliveries.ts';
import { InFlightRuns } from '../../ingress/in-flight.ts';
import { writeWithin } from '../../ingress/server.ts';
import { signGithub, signTao, verifyGithub, verifyTao } from '../../runtime/signature.ts';
import { jiraPlainText } from '../../ingress/webhooks.ts';
import { webhookOptionsFromEnv } from '../../ingress/config.ts';
import { TaoError } from '../../runtime/errors.ts';

const body = Buffer.from('{"a":1}');

test('X-Tao-Signature: signs "<t>.<body>", accepts within the tolerance either way, names why it refuses', () => {
  const now = 1_700_000_000_000;
  const header = signTao('s3cret', body, now / 1000);
  assert.match(header, /^t=1700000000,v1=[0-9a-f]{64}$/);
  assert.deepEqual(verifyTao(header, body, 's3cret', 300, now + 299_000).ok, true);
  assert.deepEqual(verifyTao(header, body, 's3cret', 300, now - 299_000).ok, true);
  assert.deepEqual(verifyTao(header, body, 's3cret', 300, now + 301_000), { ok: false, reason: 'stale' });
  assert.deepEqual(verifyTao(header, Buffer.from('{"a":2}'), 's3cret', 300, now), { ok: false, reason: 'mismatch' });
  assert.deepEqual(verifyTao(header, body, 'other', 300, now), { ok: false, reason: 'mismatch' });
  assert.deepEqual(verifyTao(undefined, body, 's3cret', 300, now), { ok: false, reason: 'missing' });
  assert.deepEqual(verifyTao('v1=abc', body, 's3cret', 300, now), { ok: false, reason: 'malformed' });
  assert.deepEqual(verifyTao('t=abc,v1=00', body, 's3cret', 300, now), { ok: false, reason: 'malformed' });
  assert.deepEqual(verifyTao(`t=${now / 1000},v1=zz`, body, 's3cret', 300, now), { ok: false, reason: 'mismatch' });
  // Rotation: any one matching v1 entry is enough.
  const rotated = `${header.split(',')[0]},v1=${'0'.repeat(64)},${header.split(',')[1]}`;
  assert.equal(verifyTao(rotated, body, 's3cret', 300, now).ok, true);
});

test('X-Hub-Signature-256 is the HMAC of the raw body', () => {
  const header = signGithub('gh', body);
  assert.equal(verifyGithub(header, body, 'gh').ok, true);
  assert.deepEqual(verifyGithub(header, Buffer.from(' {"a":1}'), 'gh'), { ok: false, reason: 'mismatch' });
  assert.deepEqual(verifyGithub(header.replace('sha256=', 'sha1='), body, 'gh'), { ok: false, reason: 'malformed' });
  assert.deepEqual(verifyGithub('sha256=1234', body, 'gh'), { ok: false, reason: 'malformed' });
});

test('the delivery ledger remembers written deliveries for its window, forgets failed ones, and stays bounded', async () => {
  let now = 0;
  const ledger = new DeliveryLedger(1000, 3, () => now);
  const first = await ledger.claim('a');
  assert.equal(first.state, 'claimed');
  const waiting = ledger.claim('a'); // concurrent: waits for the first
  if (first.state === 'claimed') first.settle({ thought_id: 't', task_id: 'k' });
  assert.deepEqual(await waiting, { state: 'duplicate', result: { thought_id: 't', task_id: 'k' } });

  const failing = await ledger.claim('b');
  const retry = ledger.claim('b');
  if (failing.state === 'claimed') failing.settle(null);
  assert.equal((await retry).state, 'claimed', 'a failed write leaves the id free');

  now = 1001;
  assert.equal((await ledger.claim('a')).state, 'claimed', 'forgotten after the window');
  for (const k of ['c', 'd', 'e', 'f']) {
    const claim = await ledger.claim(k);
    if (claim.state === 'claimed') claim.settle({ thought_id: k, task_id: k });
  }
  assert.equal(ledger.size, 3, 'never more than maxEntries');
  assert.equal((await ledger.claim('f')).state, 'duplicate', 'the newest are kept');
});

test('in-flight runs: a run takes one slot, settles on its outcome, and expires after the ttl', () => {
  let now = 0;
  const runs = new InFlightRuns(2, 1000, () => now);
  const releaseA = runs.reserve('a');
  assert.ok(runs.reserve('b'));
  assert.ok(runs.reserve('a'), 'the same run again takes no new slot');
  assert.equal(runs.reserve('c'), null);
  runs.settle('b');
  assert.ok(runs.reserve('c'));
  releaseA!();
  assert.equal(runs.size, 1);
  now = 1001;
  assert.equal(runs.size, 0);
});

test('writeWithin turns a write that never answers into a retriable TaoError', async () => {
  const started = Date.now();
  await assert.rejects(writeWithin(100, new Promise(() => undefined)), (err: unknown) => err instanceof TaoError && err.code === 'TRANSIENT' && err.retriable);
  assert.ok(Date.now() - started < 1000);
  await assert.rejects(writeWithin(1000, Promise.reject(new Error('broker says no'))), (err: unknown) => err instanceof TaoError && err.retriable);
});

test('Jira rich text: strings as is, Atlassian Document Format flattened to lines', () => {
  assert.equal(jiraPlainText('plain *wiki*'), 'plain *wiki*');
  assert.equal(jiraPlainText(null), '');
  const adf = {
    type: 'doc',
    content: [
      { type: 'heading', content: [{ type: 'text', text: 'Title' }] },
      { type: 'paragraph', content: [{ type: 'text', text: 'a' }, { type: 'hardBreak' }, { type: 'text', text: 'b' }] },
    ],
  };
  assert.equal(jiraPlainText(adf), 'Title\na\nb');
});

test('webhook options from the environment: empty secrets count as unset', () => {
  const options = webhookOptionsFromEnv({ TAO_WEBHOOK_SECRET_GITHUB: 'x', TAO_WEBHOOK_SECRET_JIRA: '', TAO_WEBHOOK_JIRA_IGNORE_ACCOUNTS: 'bot1, bot2' });
  assert.deepEqual(options.secrets, { github: 'x' });
  assert.deepEqual(options.jiraIgnoreAccountIds, ['bot1', 'bot2']);
});
