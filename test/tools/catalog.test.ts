import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { ConfigError } from '../../runtime/errors.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog } from '../../tools/catalog.ts';
import { interpolateEnv } from '../../tools/secrets.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A valid tool spec, with overrides. */
function spec(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'crm.lookup',
    description: 'Look a customer up.',
    origin: 'http://127.0.0.1:7070',
    method: 'GET',
    path: '/crm/{id}',
    parameters: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
    response: { type: 'object', properties: { id: { type: 'string' } } },
    timeoutMs: 1000,
    retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 100 },
    maxResponseBytes: 1024,
    ...overrides,
  };
}

/** A fresh catalog folder holding `files` (name -> JSON value, or raw text). */
function catalogDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'tao-catalog-test-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return dir;
}

/** Runs `fn`, asserts it throws a ConfigError, returns its message. */
function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    assert.equal(err.code, 'CONFIG_INVALID');
    return err.message;
  }
  assert.fail('expected a ConfigError, nothing was thrown');
}

describe('ToolCatalog.load', () => {
  test('the shipped catalog loads every tool file, each at the default demo origin', () => {
    const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, {});
    const files = readdirSync(DEFAULT_CATALOG_DIR)
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace(/\.json$/, ''));
    assert.deepEqual(catalog.names().sort(), files.sort(), 'one tool per file, named like its file');
    for (const name of catalog.names()) assert.equal(catalog.get(name)!.origin.href, 'http://127.0.0.1:7070/', name);
    assert.equal(catalog.get('crm.tier')!.origin.href, 'http://127.0.0.1:7070/');
    assert.equal(catalog.get('nope.tool'), undefined);
  });

  test('a valid spec loads with its source file, resolved origin and compiled contracts', () => {
    const dir = catalogDir({ 'lookup.json': spec() });
    const t = ToolCatalog.load(dir, {}).get('crm.lookup')!;
    assert.equal(t.source, join(dir, 'lookup.json'));
    assert.equal(t.origin.href, 'http://127.0.0.1:7070/');
    assert.equal(t.validateInput({ id: 'x' }), true);
    assert.equal(t.validateInput({}), false);
    assert.equal(t.validateResponse({ id: 3 }), false);
  });

  test('two files defining the same tool name fail with a message naming both files', () => {
    const dir = catalogDir({ 'a.json': spec(), 'b.json': spec({ description: 'A copy.' }) });
    const message = configError(() => ToolCatalog.load(dir, {}));
    assert.match(message, /crm\.lookup/);
    assert.ok(message.includes(join(dir, 'a.json')), message);
    assert.ok(message.includes(join(dir, 'b.json')), message);
  });

  test('an unknown key in a spec is rejected naming the file', () => {
    const dir = catalogDir({ 'typo.json': spec({ retries: 3 }) });
    const message = configError(() => ToolCatalog.load(dir, {}));
    assert.ok(message.startsWith(join(dir, 'typo.json')), message);
    assert.match(message, /unknown key "retries"/);
  });

  test('identity_parameters must name parameters of the tool: a typo is refused naming the file and the name', () => {
    const dir = catalogDir({ 'ids.json': spec({ identity_parameters: ['order'] }) });
    const message = configError(() => ToolCatalog.load(dir, {}));
    assert.ok(message.startsWith(join(dir, 'ids.json')), message);
    assert.match(message, /identity_parameters names order, which is not one of its parameters/);
    assert.deepEqual(ToolCatalog.load(catalogDir({ 'ok.json': spec({ identity_parameters: ['id'] }) }), {}).get('crm.lookup')!.spec.identity_parameters, [
      'id',
    ]);
  });

  test('an unknown key inside retry is rejected naming the file', () => {
    const dir = catalogDir({ 'retry.json': spec({ retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 100, jitter: true } }) });
    assert.ok(configError(() => ToolCatalog.load(dir, {})).startsWith(join(dir, 'retry.json')));
  });

  test('a file that is not JSON is rejected naming the file', () => {
    const dir = catalogDir({ 'broken.json': '{ "name": ' });
    const message = configError(() => ToolCatalog.load(dir, {}));
    assert.ok(message.startsWith(join(dir, 'broken.json')), message);
    assert.match(message, /not valid JSON/);
  });

  test('a spec whose contract is not a valid JSON Schema is rejected naming the file', () => {
    const dir = catalogDir({ 'schema.json': spec({ parameters: { type: 'no-such-type' } }) });
    const message = configError(() => ToolCatalog.load(dir, {}));
    assert.ok(message.startsWith(join(dir, 'schema.json')), message);
    assert.match(message, /invalid JSON Schema/);
  });

  test('${VAR:-default} in the origin takes the default when VAR is unset', () => {
    const dir = catalogDir({ 'lookup.json': spec({ origin: '${TAO_TEST_ORIGIN:-http://127.0.0.1:9999}' }) });
    assert.equal(ToolCatalog.load(dir, {}).get('crm.lookup')!.origin.href, 'http://127.0.0.1:9999/');
  });

  test('${VAR:-default} in the origin takes the value of VAR when it is set', () => {
    const dir = catalogDir({ 'lookup.json': spec({ origin: '${TAO_TEST_ORIGIN:-http://127.0.0.1:9999}' }) });
    assert.equal(ToolCatalog.load(dir, { TAO_TEST_ORIGIN: 'https://tools.internal:8443' }).get('crm.lookup')!.origin.href, 'https://tools.internal:8443/');
  });

  test('${VAR:-default} takes the default when VAR is set but empty (shell semantics of ":-")', () => {
    const dir = catalogDir({ 'lookup.json': spec({ origin: '${TAO_TEST_ORIGIN:-http://127.0.0.1:9999}' }) });
    assert.equal(ToolCatalog.load(dir, { TAO_TEST_ORIGIN: '' }).get('crm.lookup')!.origin.href, 'http://127.0.0.1:9999/');
  });

  test('an unset ${VAR} without default fails naming the variable and the file', () => {
    const dir = catalogDir({ 'lookup.json': spec({ origin: 'http://${TAO_TEST_HOST}:7070' }) });
    const message = configError(() => ToolCatalog.load(dir, {}));
    assert.match(message, /environment variable TAO_TEST_HOST is not set/);
    assert.ok(message.startsWith(join(dir, 'lookup.json')), message);
  });

  for (const origin of ['http://127.0.0.1:7070/api', 'http://127.0.0.1:7070/?x=1', 'ftp://127.0.0.1:21', 'file:///etc']) {
    test(`an origin that is not scheme://host[:port] (${origin}) is rejected naming the file`, () => {
      const dir = catalogDir({ 'lookup.json': spec({ origin }) });
      const message = configError(() => ToolCatalog.load(dir, {}));
      assert.ok(message.startsWith(join(dir, 'lookup.json')), message);
      assert.match(message, /origin must be scheme:\/\/host\[:port\] only/);
    });
  }

  test('an origin that is not a URL is rejected naming the file', () => {
    const dir = catalogDir({ 'lookup.json': spec({ origin: 'tools.internal' }) });
    assert.match(
      configError(() => ToolCatalog.load(dir, {})),
      /origin "tools\.internal" \(from "tools\.internal"\) is not a URL/,
    );
  });

  test('header values referencing the environment are not resolved at load time (a token may be set later)', () => {
    const dir = catalogDir({ 'lookup.json': spec({ headers: { Authorization: 'Bearer ${TAO_TEST_TOKEN}' } }) });
    assert.equal(ToolCatalog.load(dir, {}).get('crm.lookup')!.spec.headers!.Authorization, 'Bearer ${TAO_TEST_TOKEN}');
  });
});

describe('interpolateEnv', () => {
  test('replaces several references and leaves other text alone', () => {
    assert.equal(interpolateEnv('${A}://${B:-h}:${C:-80}/x', { A: 'https', C: '8443' }, 'here'), 'https://h:8443/x');
  });

  test('an unset variable without default names where it was used', () => {
    assert.throws(
      () => interpolateEnv('Bearer ${TOKEN}', {}, 'tool x header Authorization'),
      (err: unknown) => err instanceof ConfigError && err.message === 'tool x header Authorization: environment variable TOKEN is not set',
    );
  });
});
