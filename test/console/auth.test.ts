import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { userInfo } from 'node:os';
import { test } from 'node:test';
import { admit, crossSite, decideConsoleAuth, KEY_COOKIE } from '../../console/auth.ts';
import { hashApiKey, newApiKey, parseApiKeys, type ApiKeyEntry } from '../../ingress/api-keys.ts';
import { ApiKeyGuard } from '../../ingress/auth.ts';
import { ConfigError } from '../../runtime/errors.ts';

const consoleKey = newApiKey();
const tasksKey = newApiKey();
const supervisorKey = newApiKey();
const keys: ApiKeyEntry[] = [
  { id: 'ops', sha256: hashApiKey(consoleKey), sources: ['*'], scopes: ['console'], rate_per_minute: 60 },
  { id: 'helpdesk', sha256: hashApiKey(tasksKey), sources: ['*'], rate_per_minute: 60 },
  { id: 'supervisor', sha256: hashApiKey(supervisorKey), sources: ['*'], scopes: ['console', 'approve'], rate_per_minute: 60 },
];
const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

test('a loopback bind needs no key; any other needs a key of the console scope, or the console does not start', () => {
  assert.equal(decideConsoleAuth('127.0.0.1', null).mode, 'loopback');
  assert.equal(decideConsoleAuth('::1', null).mode, 'loopback');
  assert.equal(decideConsoleAuth('localhost', null).mode, 'loopback');
  assert.throws(
    () => decideConsoleAuth('0.0.0.0', null),
    (e: Error) => e instanceof ConfigError && /needs an API key with the console scope/.test(e.message),
  );
  assert.throws(() => decideConsoleAuth('0.0.0.0', [keys[1]!]), ConfigError, 'a key of the tasks scope is not a console key');
  assert.throws(() => decideConsoleAuth('10.0.0.5', [{ ...keys[0]!, revoked: true }]), ConfigError, 'a revoked console key is none');
  assert.equal(decideConsoleAuth('0.0.0.0', keys).mode, 'keys');
});

test('on a non-loopback bind a request is admitted with the console key, by bearer header or cookie; refused 401 otherwise', () => {
  const auth = decideConsoleAuth('0.0.0.0', keys);
  assert.deepEqual(admit(auth, req({ authorization: `Bearer ${consoleKey}` })), { ok: true, who: 'key:ops', mayDecide: false });
  assert.deepEqual(admit(auth, req({ cookie: `theme=dark; ${KEY_COOKIE}=${encodeURIComponent(consoleKey)}` })), { ok: true, who: 'key:ops', mayDecide: false });
  assert.deepEqual(
    admit(auth, req({ authorization: `Bearer ${supervisorKey}` })),
    { ok: true, who: 'key:supervisor', mayDecide: true },
    'a key with the approve scope as well may approve, deny and reply',
  );
  for (const headers of [
    {} as Record<string, string>,
    { authorization: `Bearer ${tasksKey}` },
    { authorization: 'Basic abc' },
    { cookie: `${KEY_COOKIE}=${tasksKey}` },
  ]) {
    const a = admit(auth, req(headers));
    assert.equal(a.ok, false, JSON.stringify(headers));
    assert.equal(!a.ok && a.status, 401);
  }
});

test('a loopback console answers only to a loopback Host (a rebound name of another site is refused 403)', () => {
  const auth = decideConsoleAuth('127.0.0.1', null);
  // On loopback whoever decides is recorded as the OS user running the console, as with `tao approve`.
  for (const host of ['127.0.0.1:7088', 'localhost:7088', '[::1]:7088', 'localhost'])
    assert.deepEqual(admit(auth, req({ host })), { ok: true, who: `user:${userInfo().username}`, mayDecide: true }, host);
  const refused = admit(auth, req({ host: 'attacker.example:7088' }));
  assert.equal(!refused.ok && refused.status, 403);
});

test('key entries take an optional scopes list; the ingress admits only keys of the tasks scope (its default)', () => {
  const [entry] = parseApiKeys(
    JSON.stringify([{ id: 'ops', sha256: hashApiKey(consoleKey), sources: ['*'], scopes: ['console'], rate_per_minute: 60 }]),
    'test',
  );
  assert.deepEqual(entry!.scopes, ['console']);
  assert.throws(
    () => parseApiKeys(JSON.stringify([{ ...entry, scopes: ['admin'] }]), 'test'),
    /\/scopes.* must be a non-empty list of distinct scopes: tasks, console/,
  );
  const ingress = new ApiKeyGuard(keys, () => 0);
  assert.equal(ingress.admit(`Bearer ${tasksKey}`).ok, true);
  assert.equal(ingress.admit(`Bearer ${consoleKey}`).ok, false, 'a console-only key cannot submit tasks');
});

test("a request another site's page makes the browser send is cross-site; the console's own and scripts' are not", () => {
  assert.equal(crossSite(req({ host: '127.0.0.1:7088', origin: 'http://127.0.0.1:7088' })), false);
  assert.equal(crossSite(req({ host: '127.0.0.1:7088' })), false, 'curl sends no Origin');
  assert.equal(crossSite(req({ host: '127.0.0.1:7088', origin: 'https://attacker.example' })), true);
  assert.equal(crossSite(req({ host: '127.0.0.1:7088', origin: 'null' })), true);
  assert.equal(crossSite(req({ host: '127.0.0.1:7088', 'sec-fetch-site': 'cross-site' })), true);
  assert.equal(crossSite(req({ host: '127.0.0.1:7088', 'sec-fetch-site': 'same-site', origin: 'http://other.localhost:7088' })), true);
  assert.equal(
    crossSite(req({ host: '127.0.0.1:7088', 'sec-fetch-site': 'same-origin', origin: 'null' })),
    false,
    "a form of the console's own page with no referrer",
  );
});
