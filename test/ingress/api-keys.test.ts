import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { TAO_BIN } from '../../cli/processes.ts';
import { decideIngressAuth, hashApiKey, isLoopback, parseApiKeys, type ApiKeyEntry } from '../../ingress/api-keys.ts';
import { ingressAuthFromEnv } from '../../ingress/config.ts';
import { ApiKeyGuard, TokenBucket } from '../../ingress/auth.ts';
import { ingressCommand } from '../../ingress/cli.ts';
import { ConfigError } from '../../runtime/errors.ts';

const HASH = 'a'.repeat(64);
const entry = (extra: Record<string, unknown> = {}) => ({ id: 'ops', sha256: HASH, sources: ['cli'], rate_per_minute: 60, ...extra });
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    assert.doesNotMatch(err.message, /\n/, 'one line');
    return err.message;
  }
  assert.fail('no error');
};

describe('keys file validation: one line naming the file, the entry and the field', () => {
  const file = (doc: unknown) => refusal(() => parseApiKeys(typeof doc === 'string' ? doc : JSON.stringify(doc), 'keys file /etc/tao/keys.json'));

  test('the shape of the document', () => {
    assert.match(file('{"keys": ['), /^keys file \/etc\/tao\/keys\.json: not JSON \(/);
    assert.equal(file({ key: [] }), 'keys file /etc/tao/keys.json: must be {"keys": [...]} (an array of key entries), nothing else');
    assert.equal(file({ keys: [], extra: 1 }), 'keys file /etc/tao/keys.json: must be {"keys": [...]} (an array of key entries), nothing else');
  });

  test('each field of an entry', () => {
    const at = (e: unknown) => file({ keys: [entry({ id: 'first' }), e] });
    assert.equal(at({ id: 'ci', sources: ['cli'], rate_per_minute: 1 }), 'keys file /etc/tao/keys.json: entry 1 ("ci"): /sha256 is missing');
    assert.equal(
      at(entry({ sha256: 'ABC' })),
      `keys file /etc/tao/keys.json: entry 1 ("ops"): /sha256 must be the 64 lower-case hex digits of the key's SHA-256`,
    );
    assert.equal(at(entry({ key: 'tao_x' })), 'keys file /etc/tao/keys.json: entry 1 ("ops"): /key is not a known field');
    assert.equal(
      at(entry({ sources: [] })),
      'keys file /etc/tao/keys.json: entry 1 ("ops"): /sources must be a non-empty list of distinct source names or "*"',
    );
    assert.equal(
      at(entry({ sources: ['cli', 'Jira'] })),
      'keys file /etc/tao/keys.json: entry 1 ("ops"): /sources/1 must be a source name (lower case letters, digits, _ . -) or "*"',
    );
    assert.equal(at(entry({ rate_per_minute: 0 })), 'keys file /etc/tao/keys.json: entry 1 ("ops"): /rate_per_minute must be > 0');
    assert.equal(at(entry({ burst: 1.5 })), 'keys file /etc/tao/keys.json: entry 1 ("ops"): /burst must be integer');
    assert.equal(at(entry({ revoked: 'yes' })), 'keys file /etc/tao/keys.json: entry 1 ("ops"): /revoked must be boolean');
    assert.equal(at(entry({ id: 'Ops Team' })), 'keys file /etc/tao/keys.json: entry 1 ("Ops Team"): /id must match pattern "^[a-z0-9][a-z0-9_.-]{0,63}$"');
    assert.equal(at('tao_x'), 'keys file /etc/tao/keys.json: entry 1: / must be object');
  });

  test('a valid file, and the bare array inline', () => {
    const e = entry({ burst: 5, revoked: true, note: 'held by the ops team', sources: ['*'] });
    assert.deepEqual(parseApiKeys(JSON.stringify({ keys: [e] }), 'f'), [e]);
    assert.deepEqual(parseApiKeys(JSON.stringify([e]), 'TAO_INGRESS_API_KEYS'), [e]);
  });
});

describe('keys from the environment, and the start-up rule', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tao-keys-'));
  const keysFile = (doc: unknown) => {
    const path = join(dir, `${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(path, JSON.stringify(doc));
    return path;
  };

  test('file and inline entries are merged; ids and digests must be unique across both', () => {
    const path = keysFile({ keys: [entry()] });
    const inline = JSON.stringify([entry({ id: 'ci', sha256: 'b'.repeat(64) })]);
    const auth = ingressAuthFromEnv({ TAO_INGRESS_KEYS_FILE: path, TAO_INGRESS_API_KEYS: inline }, '0.0.0.0');
    assert.deepEqual(auth.mode === 'keys' && auth.keys.map((k) => k.id), ['ops', 'ci']);
    assert.equal(
      refusal(() => ingressAuthFromEnv({ TAO_INGRESS_KEYS_FILE: path, TAO_INGRESS_API_KEYS: JSON.stringify([entry({ sha256: 'b'.repeat(64) })]) }, '::1')),
      `TAO_INGRESS_API_KEYS: key id "ops" is used twice (also in keys file ${path})`,
    );
    assert.equal(
      refusal(() => ingressAuthFromEnv({ TAO_INGRESS_API_KEYS: JSON.stringify([entry(), entry({ id: 'ci' })]) }, '::1')),
      'TAO_INGRESS_API_KEYS: keys "ops" and "ci" have the same sha256 (one key, two entries)',
    );
    assert.equal(
      refusal(() => ingressAuthFromEnv({ TAO_INGRESS_KEYS_FILE: join(dir, 'missing.json') }, '::1')),
      `TAO_INGRESS_KEYS_FILE: cannot read ${join(dir, 'missing.json')} (ENOENT)`,
    );
  });

  test('no keys: open on loopback only (unless TAO_INGRESS_AUTH says otherwise); off next to keys is refused', () => {
    assert.equal(ingressAuthFromEnv({}, '127.0.0.1').mode, 'open');
    assert.equal(ingressAuthFromEnv({}, '::1').mode, 'open');
    assert.match(
      refusal(() => ingressAuthFromEnv({}, '0.0.0.0')),
      /^the ingress needs API keys \(TAO_BIND_HOST=0\.0\.0\.0 is not a loopback address\): set TAO_INGRESS_KEYS_FILE or TAO_INGRESS_API_KEYS/,
    );
    assert.match(
      refusal(() => ingressAuthFromEnv({ TAO_INGRESS_AUTH: 'on' }, '127.0.0.1')),
      /^the ingress needs API keys \(TAO_INGRESS_AUTH=on\)/,
    );
    assert.deepEqual(ingressAuthFromEnv({ TAO_INGRESS_AUTH: 'off' }, '10.1.2.3'), { mode: 'open', reason: 'TAO_INGRESS_AUTH=off' });
    assert.match(
      refusal(() => decideIngressAuth([entry() as ApiKeyEntry], 'off', '127.0.0.1')),
      /^TAO_INGRESS_AUTH=off contradicts the configured API keys/,
    );
    // A keys file whose keys are all revoked still guards the route (everything gets 401).
    assert.equal(ingressAuthFromEnv({ TAO_INGRESS_API_KEYS: JSON.stringify([entry({ revoked: true })]) }, '0.0.0.0').mode, 'keys');
  });

  test('`tao run ingress` on a non-loopback address without keys exits 1 with one line, before it connects to anything', async () => {
    // KAFKA_BROKERS points where nothing listens: a process that tried to connect first would wait instead of refusing.
    const env = {
      PATH: process.env.PATH,
      KAFKA_BROKERS: '127.0.0.1:9',
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9',
      TAO_BIND_HOST: '0.0.0.0',
      TAO_INGRESS_PORT: '0',
    };
    await assert.rejects(
      promisify(execFile)(process.execPath, [TAO_BIN, 'run', 'ingress'], { env, timeout: 30000 }),
      (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 1);
        assert.match(
          err.stderr,
          /^tao: the ingress needs API keys \(TAO_BIND_HOST=0\.0\.0\.0 is not a loopback address\): .*TAO_INGRESS_AUTH=off to run it open on purpose\n$/,
        );
        return true;
      },
    );
  });

  test('loopback is 127.0.0.0/8 and ::1 in any spelling; nothing else', () => {
    assert.deepEqual(['127.0.0.1', '127.9.9.9', '::1', '[::1]', '0:0:0:0:0:0:0:1'].map(isLoopback), [true, true, true, true, true]);
    assert.deepEqual(['0.0.0.0', '::', '10.0.0.1', 'localhost', 'example.com', '128.0.0.1'].map(isLoopback), [false, false, false, false, false, false]);
  });
});

describe('the token bucket and the guard', () => {
  test('refills at the rate, up to the burst; Retry-After is the whole seconds until the next token', () => {
    const bucket = new TokenBucket(30, 3, 0); // one token every 2 s
    assert.deepEqual([bucket.take(0), bucket.take(0), bucket.take(0)], [null, null, null]);
    assert.equal(bucket.take(0), 2);
    assert.equal(bucket.take(500), 2, '1.5 s to go rounds up');
    assert.equal(bucket.take(1999), 1);
    assert.equal(bucket.take(2000), null);
    assert.equal(bucket.take(60_000 * 10), null, 'a long pause refills to the burst, no more');
    assert.deepEqual([bucket.take(600_000), bucket.take(600_000), bucket.take(600_000)], [null, null, 2]);
    assert.equal(bucket.take(1000), 2, 'a clock stepping back gives nothing');
  });

  test('a key is found by its digest only: a prefix, a different case or surrounding junk is unknown', () => {
    const key = 'tao_' + 'k'.repeat(43);
    const guard = new ApiKeyGuard([{ id: 'ops', sha256: hashApiKey(key), sources: ['cli'], rate_per_minute: 60 }], () => 0);
    assert.deepEqual(guard.admit(`Bearer ${key}`), { ok: true, keyId: 'ops' });
    for (const header of [`Bearer ${key.slice(0, -1)}`, `Bearer ${key.toUpperCase()}`, `Bearer ${key}x`, `Bearer ${key} extra`, `Token ${key}`, key]) {
      assert.equal((guard.admit(header) as { reason?: string }).reason !== undefined, true, header);
    }
    assert.deepEqual([guard.allows('ops', 'cli'), guard.allows('ops', 'api'), guard.allows('nobody', 'cli')], [true, false, false]);
  });
});

describe('tao ingress key', () => {
  const run = async (args: string[]) => {
    let out = '';
    let err = '';
    const code = await ingressCommand(args, { stdout: (t) => (out += t), stderr: (t) => (err += t) });
    return { code, out, err };
  };

  test('prints a new 256-bit key once and an entry, holding its SHA-256, that the ingress accepts', async () => {
    const { code, out } = await run(['key', '--id', 'ops', '--sources', 'github,cli', '--rate-per-minute', '120', '--burst', '10', '--json']);
    assert.equal(code, 0);
    const { key, entry: made } = JSON.parse(out) as { key: string; entry: ApiKeyEntry };
    assert.match(key, /^tao_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(made, { id: 'ops', sha256: hashApiKey(key), sources: ['github', 'cli'], rate_per_minute: 120, burst: 10 });
    const guard = new ApiKeyGuard(parseApiKeys(JSON.stringify({ keys: [made] }), 'f'), () => 0);
    assert.deepEqual(guard.admit(`Bearer ${key}`), { ok: true, keyId: 'ops' });
    const again = JSON.parse((await run(['key', '--id', 'ops', '--sources', '*', '--json'])).out) as { key: string };
    assert.notEqual(again.key, key, 'a fresh key every time');

    const text = await run(['key', '--id', 'ops', '--sources', 'cli']);
    const [, keyLine, , , entryLine] = text.out.split('\n');
    assert.match(keyLine!, /^tao_/);
    assert.equal((JSON.parse(entryLine!) as ApiKeyEntry).sha256, hashApiKey(keyLine!));
  });

  test('bad options are a usage error (exit 2) naming the option', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['key', '--sources', 'cli'], /^tao ingress: key needs --id/],
      [['key', '--id', 'Ops', '--sources', 'cli'], /^tao ingress: key needs --id <id>: lower case letters, digits, _ \. - \(up to 64\), got "Ops"/],
      [['key', '--id', 'ops'], /^tao ingress: key needs --sources/],
      [['key', '--id', 'ops', '--sources', 'cli', '--rate-per-minute', '0'], /^tao ingress: --rate-per-minute must be a number > 0/],
      [['key', '--id', 'ops', '--sources', 'cli', '--burst', '0.5'], /^tao ingress: --burst must be an integer/],
      [['keys'], /^tao ingress: unknown ingress command "keys"/],
      [['key', '--id', 'ops', '--sources', 'cli', '--ttl', '1'], /^tao ingress: Unknown option '--ttl'/],
    ];
    for (const [args, message] of cases) {
      const r = await run(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.out, '');
      assert.match(r.err, message);
      assert.match(r.err, /\nusage: tao ingress key/);
    }
  });
});
