// test-needs: kafka, chromium
/**
 * The console on a non-loopback bind: every page, asset and API answers 401 without an API key
 * with the console scope (a key of the tasks scope is not one); with one, scripts get in with a
 * bearer header and a browser through the login page.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startConsole, type RunningConsole } from '../../console/cli.ts';
import { hashApiKey, newApiKey } from '../../ingress/api-keys.ts';
import { createLogger } from '../../runtime/log.ts';
import { freshCluster, type TestCluster } from '../helpers/cluster.ts';
import { launchChromium } from './browser.ts';

const consoleKey = newApiKey();
const tasksKey = newApiKey();
const deciderKey = newApiKey();
const DECISIONS = /\/(approve|deny|reply)$/;
let cluster: TestCluster;
let ui: RunningConsole;
let base = '';

/** Every route the console has (and one it has not): none may answer without the key. */
const ROUTES: Array<[string, string]> = [
  ['GET', '/'],
  ['GET', '/runs/some-run'],
  ['GET', '/dead-letters'],
  ['GET', '/health'],
  ['GET', '/static/app.js'],
  ['GET', '/static/app.css'],
  ['GET', '/static/vendor/uplot.iife.min.js'],
  ['GET', '/report.css'],
  ['GET', '/api/runs'],
  ['GET', '/api/runs/some-run'],
  ['GET', '/api/runs/some-run/report'],
  ['POST', '/api/runs/some-run/verify'],
  ['POST', '/api/runs/some-run/fork'],
  ['POST', '/api/runs/some-run/approve'],
  ['POST', '/api/runs/some-run/deny'],
  ['POST', '/api/runs/some-run/reply'],
  ['GET', '/api/dead-letters'],
  ['POST', '/api/dead-letters/redrive'],
  ['GET', '/api/health'],
  ['GET', '/api/events'],
  ['GET', '/no-such-page'],
];

before(async () => {
  cluster = await freshCluster();
  const keys = [
    { id: 'ops', sha256: hashApiKey(consoleKey), sources: ['*'], scopes: ['console'], rate_per_minute: 6000 },
    { id: 'helpdesk', sha256: hashApiKey(tasksKey), sources: ['*'], rate_per_minute: 6000 },
    { id: 'supervisor', sha256: hashApiKey(deciderKey), sources: ['*'], scopes: ['console', 'approve'], rate_per_minute: 6000 },
  ];
  ui = await startConsole(
    { ...cluster.env, TAO_INGRESS_API_KEYS: JSON.stringify(keys) },
    { host: '0.0.0.0', port: 0, readTimeoutMs: 30000, logger: createLogger({ test: 'console-access' }, { level: 'error' }) },
  );
  base = `http://127.0.0.1:${new URL(ui.url).port}`;
  await ui.feed.ready;
});

after(async () => {
  await ui?.stop();
});

async function status(method: string, path: string, authorization?: string, headers: Record<string, string> = {}): Promise<number> {
  const json: Record<string, string> = method === 'POST' ? { 'content-type': 'application/json' } : {};
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...json, ...(authorization ? { authorization } : {}), ...headers },
    body: method === 'POST' ? '{}' : undefined,
  });
  await res.body?.cancel();
  return res.status;
}

test('without a console key every page, asset and API of a console on 0.0.0.0 answers 401', async () => {
  for (const [method, path] of ROUTES) {
    assert.equal(await status(method, path), 401, `${method} ${path} without a key`);
    assert.equal(await status(method, path, `Bearer ${tasksKey}`), 401, `${method} ${path} with a key of the tasks scope`);
    assert.equal(await status(method, path, 'Bearer tao_not-a-key'), 401, `${method} ${path} with an unknown key`);
  }
});

test('with the console key the same routes answer (none 401)', async () => {
  for (const [method, path] of ROUTES.filter(([, p]) => p !== '/api/events' && !DECISIONS.test(p))) {
    const code = await status(method, path, `Bearer ${consoleKey}`);
    assert.notEqual(code, 401, `${method} ${path}`);
    assert.ok([200, 400, 404, 409].includes(code), `${method} ${path} answered ${code}`);
  }
  assert.equal(await status('GET', '/api/runs', `Bearer ${consoleKey}`), 200);
});

test('approve, deny and reply need the approve scope as well: 403 with a console-only key, heard with a console and approve key', async () => {
  for (const [method, path] of ROUTES.filter(([, p]) => DECISIONS.test(p))) {
    assert.equal(await status(method, path, `Bearer ${consoleKey}`), 403, `${path} with a console-only key`);
    assert.equal(await status(method, path, `Bearer ${deciderKey}`), 404, `${path} of a run the log has no record of, with a console and approve key`);
  }
});

test('a POST from another site is refused 403 even with the key, and a POST that is not JSON 415', async () => {
  for (const [method, path] of ROUTES.filter(([m]) => m === 'POST')) {
    assert.equal(await status(method, path, `Bearer ${consoleKey}`, { origin: 'https://attacker.example' }), 403, `${path} from another origin`);
    assert.equal(await status(method, path, `Bearer ${consoleKey}`, { 'content-type': 'text/plain' }), 415, `${path} as text/plain`);
  }
});

test('a browser gets the login page with 401, and the runs page once it gives the console key', { timeout: 60000 }, async () => {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const first = await page.goto(`${base}/`);
    assert.equal(first?.status(), 401);
    assert.match((await page.textContent('form'))!, /console/);
    await page.fill('input[name=key]', tasksKey);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    assert.match((await page.textContent('body'))!, /not a console key/);
    await page.fill('input[name=key]', consoleKey);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    await page.waitForSelector('#live.on');
    await page.waitForSelector('#runs-meta:has-text("indexed")');
  } finally {
    await browser.close();
  }
});
