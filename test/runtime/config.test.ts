/**
 * The configuration module: one line per bad value naming the variable and the value, unknown
 * `TAO_*` names refused with the nearest known one, secrets masked by `tao config`, and the settings
 * table of docs/CONFIGURATION.md generated from the declarations. No broker needed.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { configCommand } from '../../cli/config-command.ts';
import { TAO_BIN } from '../../cli/processes.ts';
import { SETTINGS, checkEnvironment, environmentProblems, loadRuntimeConfig, parseDuration, setting, type SettingName } from '../../runtime/config.ts';
import { ConfigError } from '../../runtime/errors.ts';
import { CONFIGURATION_DOC, generate, withGeneratedSection } from '../../scripts/gen-config-docs.ts';

/** The one-line message `checkEnvironment` refuses `env` with. */
function refusal(env: NodeJS.ProcessEnv): string {
  try {
    checkEnvironment(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    assert.equal(err.code, 'CONFIG_INVALID');
    assert.doesNotMatch(err.message, /\n/, 'one line');
    return err.message;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('a bad value is refused with one line naming the variable and the value', () => {
  test('integer', () => {
    assert.equal(refusal({ TAO_INGRESS_MAX_IN_FLIGHT: 'abc' }), 'TAO_INGRESS_MAX_IN_FLIGHT must be an integer >= 1, got "abc"');
    assert.equal(refusal({ TAO_MAX_ITERATIONS: '2.5' }), 'TAO_MAX_ITERATIONS must be an integer from 1 to 1000, got "2.5"');
  });

  test('number', () => {
    assert.equal(refusal({ TAO_INTENT_THRESHOLD: '1.5' }), 'TAO_INTENT_THRESHOLD must be a number from 0 to 1, got "1.5"');
    assert.equal(refusal({ TAO_INTENT_THRESHOLD: 'high' }), 'TAO_INTENT_THRESHOLD must be a number from 0 to 1, got "high"');
  });

  test('port', () => {
    assert.equal(refusal({ TAO_INGRESS_PORT: '70000' }), 'TAO_INGRESS_PORT must be a TCP port from 0 to 65535, got "70000"');
    assert.equal(refusal({ TAO_KAFKA_PORT: '0' }), 'TAO_KAFKA_PORT must be a TCP port from 1 to 65535, got "0"');
  });

  test('enum', () => {
    assert.equal(refusal({ TAO_PLANNER: 'oracle' }), 'TAO_PLANNER must be one of router, graph, react, plan-replan, got "oracle"');
    assert.equal(refusal({ TAO_SEMANTIC_CHECK: 'maybe' }), 'TAO_SEMANTIC_CHECK must be one of on, off, got "maybe"');
  });

  test('a retired planner says it is retired and what to use instead, not "not one of"', () => {
    for (const value of ['llm', 'LLM']) {
      const message = refusal({ TAO_PLANNER: value });
      assert.match(message, /^TAO_PLANNER=llm is retired: use TAO_PLANNER=plan-replan with a skill .* TAO_SKILLS_DIR/);
      assert.match(message, /through Action as recorded steps, with its retries, breaker, fallback model and money budget/);
    }
  });

  test('a retired variable is refused with what replaces it, not as an unknown name', () => {
    assert.match(refusal({ TAO_LLM_MAX_TOKENS: '2048' }), /^TAO_LLM_MAX_TOKENS is retired: .*plan-replan.*generation share/);
  });

  test('URL', () => {
    assert.equal(refusal({ SCHEMA_REGISTRY_URL: 'registry:8081' }), 'SCHEMA_REGISTRY_URL must be an http(s) URL, got "registry:8081"');
    assert.equal(
      refusal({ TAO_STATUS_ENDPOINTS: 'http://127.0.0.1:9401,ftp://x' }),
      'TAO_STATUS_ENDPOINTS must be a comma-separated list of http(s) URLs, got "http://127.0.0.1:9401,ftp://x"',
    );
  });

  test('duration', () => {
    assert.equal(
      refusal({ TAO_SESSION_TIMEOUT_MS: 'soon' }),
      'TAO_SESSION_TIMEOUT_MS must be a duration from 6s to 5m (like 500ms, 30s, 5m, 7d; a plain number is milliseconds), got "soon"',
    );
    assert.equal(
      refusal({ TAO_WEBHOOK_DELIVERY_WINDOW_S: '90d' }),
      'TAO_WEBHOOK_DELIVERY_WINDOW_S must be a duration from 1s to 30d (like 500ms, 30s, 5m, 7d; a plain number is seconds), got "90d"',
    );
  });

  test('unknown TAO_ name, with the nearest known name', () => {
    assert.equal(refusal({ TAO_PLANER: 'x' }), 'TAO_PLANER is not a known setting (did you mean TAO_PLANNER?); `tao config` lists them all');
    assert.equal(refusal({ TAO_COMPLETELY_DIFFERENT_THING: '1' }), 'TAO_COMPLETELY_DIFFERENT_THING is not a known setting; `tao config` lists them all');
  });

  test('several problems stay on one line; a secret value is never repeated', () => {
    assert.equal(
      refusal({ TAO_INGRESS_PORT: 'x', TAO_PLANER: 'router' }),
      'TAO_INGRESS_PORT must be a TCP port from 0 to 65535, got "x"; TAO_PLANER is not a known setting (did you mean TAO_PLANNER?); `tao config` lists them all',
    );
    assert.equal(refusal({ KAFKA_SSL: 'yes' }), 'KAFKA_SSL must be true or false, got "yes"');
  });

  test('the `tao` command refuses before it starts anything (exit 1, the line on stderr)', async () => {
    const run = (env: NodeJS.ProcessEnv) =>
      promisify(execFile)(process.execPath, [TAO_BIN, 'run', 'ingress'], { env: { PATH: process.env.PATH, ...env }, timeout: 30000 });
    await assert.rejects(run({ TAO_INGRESS_MAX_IN_FLIGHT: 'abc' }), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /^tao: TAO_INGRESS_MAX_IN_FLIGHT must be an integer >= 1, got "abc".*\n$/);
      return true;
    });
    const thought = promisify(execFile)(process.execPath, [TAO_BIN, 'run', 'thought'], { env: { PATH: process.env.PATH, TAO_PLANNER: 'llm' }, timeout: 30000 });
    await assert.rejects(thought, (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /^tao: TAO_PLANNER=llm is retired: use TAO_PLANNER=plan-replan with a skill [^\n]*\n$/);
      return true;
    });
  });
});

describe('accepted values', () => {
  test('durations: a unit, or a plain number in the unit the name ends with', () => {
    assert.equal(setting({ TAO_SESSION_TIMEOUT_MS: '30s' }, 'TAO_SESSION_TIMEOUT_MS'), 30000);
    assert.equal(setting({ TAO_SESSION_TIMEOUT_MS: '45000' }, 'TAO_SESSION_TIMEOUT_MS'), 45000);
    assert.equal(setting({ TAO_WEBHOOK_DELIVERY_WINDOW_S: '7d' }, 'TAO_WEBHOOK_DELIVERY_WINDOW_S'), 7 * 86400000);
    assert.equal(setting({ TAO_WEBHOOK_TOLERANCE_S: '120' }, 'TAO_WEBHOOK_TOLERANCE_S'), 120000);
    assert.equal(setting({ TAO_LLM_TIMEOUT_MS: '1.5s' }, 'TAO_LLM_TIMEOUT_MS'), 1500);
    assert.equal(parseDuration('5m', 1), 300000);
    assert.equal(parseDuration('-5s', 1), null);
    assert.equal(parseDuration('0.5ms', 1), null);
  });

  test('an empty value counts as unset; defaults parse by the same rule as set values', () => {
    assert.equal(setting({ TAO_INGRESS_MAX_IN_FLIGHT: '' }, 'TAO_INGRESS_MAX_IN_FLIGHT'), 1000);
    for (const name of Object.keys(SETTINGS) as SettingName[]) assert.doesNotThrow(() => setting({}, name), name);
  });

  test('the default planner is the router (the one the demo uses)', () => {
    assert.equal(setting({}, 'TAO_PLANNER'), 'router');
  });

  test('enums ignore case; the connection settings keep their shape', () => {
    assert.equal(setting({ TAO_LOG_LEVEL: 'DEBUG' }, 'TAO_LOG_LEVEL'), 'debug');
    const config = loadRuntimeConfig({
      KAFKA_BROKERS: 'a:9092, b:9093',
      SCHEMA_REGISTRY_URL: 'https://r.example/',
      KAFKA_SASL_MECHANISM: 'PLAIN',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: 'p',
      TAO_BIND_HOST: '0.0.0.0',
    });
    assert.deepEqual(config.kafka.brokers, ['a:9092', 'b:9093']);
    assert.deepEqual(config.kafka.sasl, { mechanism: 'plain', username: 'u', password: 'p' });
    assert.equal(config.registry.url, 'https://r.example');
    assert.equal(config.bindHost, '0.0.0.0');
    assert.throws(() => loadRuntimeConfig({ KAFKA_SASL_MECHANISM: 'plain' }), /KAFKA_SASL_MECHANISM=plain needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD/);
  });

  test('known beyond the declarations: names the tool catalog references and the one TAO_LLM_API_KEY_ENV names', () => {
    assert.deepEqual(environmentProblems({ TAO_CRM_TOKEN: 's' }, { alsoKnown: ['TAO_CRM_TOKEN'] }), []);
    assert.deepEqual(environmentProblems({ TAO_LLM_API_KEY_ENV: 'TAO_MY_KEY', TAO_MY_KEY: 'k' }), []);
    assert.deepEqual(
      environmentProblems({ TAO_TEST_EVIL_URL: 'http://127.0.0.1:1', TAO_TEST_INTEROP_PYTHON: '/usr/bin/python3', KAFKA_SOMETHING: 'x' }),
      [],
      "the tests' own TAO_TEST_* names are not settings; only TAO_ names are checked",
    );
  });
});

describe('tao config', () => {
  const run = async (argv: string[], env: NodeJS.ProcessEnv) => {
    let stdout = '';
    let stderr = '';
    const code = await configCommand(
      argv,
      env,
      (t) => (stdout += t),
      (t) => (stderr += t),
    );
    return { code, stdout, stderr };
  };

  test('prints every variable with its value and source; secrets are masked', async () => {
    const env = { KAFKA_SASL_PASSWORD: 'hunter2-sasl', TAO_LLM_API_KEY: 'sk-live-123', TAO_WEBHOOK_SECRET_GITHUB: 'gh-secret', TAO_PLANNER: 'graph' };
    const { code, stdout, stderr } = await run([], env);
    assert.equal(code, 0);
    assert.equal(stderr, '');
    for (const secret of Object.values(env).filter((v) => v !== 'graph')) assert.ok(!stdout.includes(secret), `${secret} leaked`);
    assert.match(stdout, /^KAFKA_SASL_PASSWORD +\*\*\* +env$/m);
    assert.match(stdout, /^TAO_LLM_API_KEY +\*\*\* +env$/m);
    assert.match(stdout, /^TAO_PLANNER +graph +env$/m);
    assert.match(stdout, /^TAO_INGRESS_MAX_IN_FLIGHT +1000 +default$/m);
    assert.match(stdout, /^TAO_CALLBACK_SECRET +unset$/m);

    const json = JSON.parse((await run(['--json'], env)).stdout) as {
      settings: Array<{ name: string; value: string | null; source: string }>;
      problems: string[];
    };
    assert.ok(!JSON.stringify(json).includes('hunter2-sasl') && !JSON.stringify(json).includes('sk-live-123'));
    const key = json.settings.find((s) => s.name === 'TAO_LLM_API_KEY')!;
    assert.deepEqual([key.value, key.source], ['***', 'env']);
    assert.equal(json.settings.length, Object.keys(SETTINGS).length);
    assert.deepEqual(json.problems, []);
  });

  test('lists each problem on stderr and exits 1; --help helps', async () => {
    const bad = await run([], { TAO_PLANER: 'graph', TAO_COST_BUDGET: '-1' });
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      'TAO_COST_BUDGET must be an integer from 0 to 1000000, got "-1"\nTAO_PLANER is not a known setting (did you mean TAO_PLANNER?); `tao config` lists them all\n',
    );
    const help = await run(['--help'], {});
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage: tao config \[--json\]/);
  });

  test('a variable the tool catalog references is known', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tao-config-'));
    writeFileSync(
      join(dir, 'crm.json'),
      JSON.stringify({ name: 'crm.x', origin: 'https://crm.example', headers: { Authorization: 'Bearer ${TAO_CRM_TOKEN}' } }),
    );
    assert.equal((await run([], { TAO_TOOL_CATALOG_DIR: dir, TAO_CRM_TOKEN: 't' })).code, 0);
    assert.equal((await run([], { TAO_CRM_TOKEN: 't' })).code, 1);
  });
});

test("TAO_BIND_HOST is the address a server binds (`tao run tools`; the stages' ops servers go the same way)", { timeout: 30000 }, async () => {
  const child = spawn(process.execPath, [TAO_BIN, 'run', 'tools'], {
    env: { PATH: process.env.PATH, TAO_BIND_HOST: '127.0.0.2', TAO_TOOLS_PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
    const url = new URL((JSON.parse(line) as { url: string }).url);
    assert.equal(url.hostname, '127.0.0.2');
    assert.equal((await fetch(new URL('/health', url))).status, 200);
    await assert.rejects(fetch(`http://127.0.0.1:${url.port}/health`), 'not bound to 127.0.0.1');
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
});

test('the settings table of docs/CONFIGURATION.md is generated from the declarations (run scripts/gen-config-docs.ts)', () => {
  const page = readFileSync(CONFIGURATION_DOC, 'utf8');
  assert.equal(withGeneratedSection(page), page, 'docs/CONFIGURATION.md is stale: run `node --import tsx scripts/gen-config-docs.ts`');
  for (const name of Object.keys(SETTINGS)) assert.ok(generate().includes(`| \`${name}\` |`), name);
});
