/**
 * The fallback model, on the primary's endpoint or another one (TAO_LLM_FALLBACK_BASE_URL,
 * TAO_LLM_FALLBACK_API_KEY_ENV, TAO_LLM_FALLBACK_MODEL): the tools built from the settings, and
 * Action's executor against two real model SIMULATORs (model-sim/): the fallback is asked on 5xx,
 * time-outs, an open breaker and a 4xx saying the model is unavailable, and not on other 4xx.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { ToolExecutor } from '../../processors/action/executor.ts';
import { createToolDispatcher, type HttpDeps } from '../../processors/action/invoke.ts';
import { answeredModel } from '../../processors/thought/model/state.ts';
import { environmentProblems } from '../../runtime/config.ts';
import { realRetryDeps } from '../../runtime/retry.ts';
import { traceparentFor } from '../../runtime/tracing/ids.ts';
import { DEFAULT_CATALOG_DIR, ToolCatalog } from '../../tools/catalog.ts';
import { MODEL_FALLBACK_TOOL, MODEL_TOOL, modelUnavailable } from '../../tools/model.ts';
import { modelNames, modelToolSpecs } from '../../tools/model-config.ts';
import { envSecrets } from '../../tools/secrets.ts';

const PRIMARY_KEY = `pk-${Math.random().toString(36).slice(2)}`;
const FALLBACK_KEY = `fk-${Math.random().toString(36).slice(2)}`;

describe('the model tools built from the settings', () => {
  const base = { TAO_LLM_BASE_URL: 'http://primary.example:8000/v1', TAO_LLM_MODEL: 'big', TAO_LLM_API_KEY: 'k1' };

  test("TAO_LLM_FALLBACK_MODEL alone: another model at the primary's endpoint, with its key (as before)", () => {
    const [primary, fallback] = modelToolSpecs({ ...base, TAO_LLM_FALLBACK_MODEL: 'small' }).map((t) => t.spec);
    assert.equal(primary!.fallbackTool, MODEL_FALLBACK_TOOL);
    assert.deepEqual(
      [fallback!.name, fallback!.origin, fallback!.path, fallback!.headers, fallback!.fixedBody],
      [MODEL_FALLBACK_TOOL, 'http://primary.example:8000', '/v1/chat/completions', { authorization: 'Bearer ${TAO_LLM_API_KEY}' }, { model: 'small' }],
    );
  });

  test("another endpoint: its origin, path and key reference; the primary's key never goes there", () => {
    const env = {
      ...base,
      TAO_LLM_FALLBACK_BASE_URL: 'https://backup.example/api/v1/',
      TAO_LLM_FALLBACK_MODEL: 'other',
      TAO_LLM_FALLBACK_API_KEY_ENV: 'BACKUP_KEY',
      BACKUP_KEY: 'k2',
    };
    const [primary, fallback] = modelToolSpecs(env).map((t) => t.spec);
    assert.deepEqual([primary!.origin, primary!.headers], ['http://primary.example:8000', { authorization: 'Bearer ${TAO_LLM_API_KEY}' }]);
    assert.deepEqual(
      [fallback!.origin, fallback!.path, fallback!.headers, fallback!.fixedBody],
      ['https://backup.example', '/api/v1/chat/completions', { authorization: 'Bearer ${BACKUP_KEY}' }, { model: 'other' }],
    );
    const noKey = modelToolSpecs({ ...env, TAO_LLM_FALLBACK_API_KEY_ENV: '' }).map((t) => t.spec)[1]!;
    assert.equal(noKey.headers, undefined, 'no fallback key: no Authorization header at the other endpoint');
    assert.deepEqual(environmentProblems(env), [], 'the variable TAO_LLM_FALLBACK_API_KEY_ENV names is known');
    assert.deepEqual(environmentProblems({ TAO_LLM_FALLBACK_API_KEY_ENV: 'TAO_BACKUP_KEY', TAO_BACKUP_KEY: 'x' }), []);
    assert.match(environmentProblems({ TAO_LLM_FALLBACK_BASE_URL: 'ftp://x' }).join(), /TAO_LLM_FALLBACK_BASE_URL must be an http\(s\) URL/);
  });

  test('TAO_LLM_FALLBACK_BASE_URL alone: the same model at the other endpoint', () => {
    const fallback = modelToolSpecs({ ...base, TAO_LLM_FALLBACK_BASE_URL: 'http://backup.example/v1' }).map((t) => t.spec)[1]!;
    assert.deepEqual([fallback.origin, fallback.fixedBody], ['http://backup.example', { model: 'big' }]);
    assert.deepEqual(modelNames({ ...base, TAO_LLM_FALLBACK_BASE_URL: 'http://backup.example/v1' }), {
      primary: 'big',
      fallback: 'big',
      fallbackTool: MODEL_FALLBACK_TOOL,
    });
  });

  test('which 4xx say the model is unavailable', () => {
    const openai = JSON.stringify({
      error: { message: 'The model `x` does not exist or you do not have access to it.', type: 'invalid_request_error', param: null, code: 'model_not_found' },
    });
    const vllm = JSON.stringify({ object: 'error', message: 'The model `x` does not exist.', type: 'NotFoundError', param: null, code: 404 });
    const ollama = JSON.stringify({ error: 'model "x" not found, try pulling it first' });
    assert.equal(modelUnavailable(404, openai), true);
    assert.equal(modelUnavailable(404, vllm), true);
    assert.equal(modelUnavailable(404, ollama), true);
    assert.equal(modelUnavailable(400, openai), true, 'a 400 whose code says model_not_found');
    assert.equal(modelUnavailable(400, JSON.stringify({ error: { code: 'context_length_exceeded', message: 'too long' } })), false);
    assert.equal(modelUnavailable(401, JSON.stringify({ error: { code: 'invalid_api_key' } })), false);
    assert.equal(modelUnavailable(422, 'not json'), false);
    assert.equal(modelUnavailable(503, openai), false, '5xx are upstream failures by status, not by this rule');
  });

  test("the model that answered: the completion's, else the requested one by the tool that answered", () => {
    const loop = { models: { primary: 'big', fallback: 'small', fallbackTool: MODEL_FALLBACK_TOOL } };
    assert.equal(answeredModel({ tool: MODEL_FALLBACK_TOOL, fallback_from: MODEL_TOOL }, { model: 'small-2025' }, {}, loop), 'small-2025');
    assert.equal(answeredModel({ tool: MODEL_FALLBACK_TOOL, fallback_from: MODEL_TOOL }, { model: null }, {}, loop), 'small');
    assert.equal(answeredModel({ tool: MODEL_TOOL, fallback_from: null }, {}, { model: 'skill-model' }, loop), 'skill-model');
    assert.equal(answeredModel({ tool: MODEL_TOOL, fallback_from: null }, {}, {}, loop), 'big');
  });
});

describe('Action asks the fallback model at another endpoint', () => {
  let primary: ModelSim;
  let backup: ModelSim;
  let deps: HttpDeps;
  const sleeps: number[] = [];
  const request = {
    messages: [
      { role: 'system', content: 'Skill: order-status@1' },
      { role: 'user', content: 'Where is my order O-12345678?' },
    ],
    max_tokens: 64,
  };

  before(async () => {
    primary = await startModelSim({ port: 0, apiKey: PRIMARY_KEY });
    backup = await startModelSim({ port: 0, apiKey: FALLBACK_KEY });
    deps = { dispatcher: createToolDispatcher(), retry: { ...realRetryDeps, sleep: async (ms) => void sleeps.push(ms) }, now: () => Date.now() };
  });
  after(async () => {
    await deps?.dispatcher.close();
    await primary?.close();
    await backup?.close();
  });
  beforeEach(() => {
    primary.clearFaults();
    backup.clearFaults();
    primary.resetStats();
    backup.resetStats();
  });

  const env = () => ({
    TAO_LLM_BASE_URL: `${primary.url}/v1`,
    TAO_LLM_MODEL: 'sim-primary',
    TAO_LLM_API_KEY: PRIMARY_KEY,
    TAO_LLM_FALLBACK_BASE_URL: `${backup.url}/v1`,
    TAO_LLM_FALLBACK_MODEL: 'sim-fallback',
    TAO_LLM_FALLBACK_API_KEY_ENV: 'TAO_TEST_FALLBACK_KEY',
    TAO_TEST_FALLBACK_KEY: FALLBACK_KEY,
    TAO_LLM_TIMEOUT_MS: '500',
  });
  const executor = () => {
    const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, env(), undefined, modelToolSpecs(env()));
    return { catalog, executor: new ToolExecutor(catalog, deps) };
  };
  const call = async (x: ReturnType<typeof executor>, key: string) =>
    x.executor.execute(x.catalog.get(MODEL_TOOL)!, 'M1', request, {
      idempotencyKey: key,
      traceparent: traceparentFor('t', 'action:1'),
      secrets: envSecrets(env()),
    });
  const modelOf = (r: { data_json: string | null }) => (JSON.parse(r.data_json!) as { model: string }).model;

  test('503 from the primary (after its retries): the fallback answers, with its own key, and says which model answered', async () => {
    primary.setFault({ kind: 'server_error', status: 503 });
    const r = await call(executor(), 'k1');
    assert.equal(r.error, null, JSON.stringify(r.error));
    assert.deepEqual([r.tool, r.fallback_from, modelOf(r)], [MODEL_FALLBACK_TOOL, MODEL_TOOL, 'sim-fallback']);
    assert.match(r.fallback_reason!, /^model\.chat: http_status: HTTP 503/);
    assert.equal(primary.stats().byFault.server_error, 3, 'the primary was tried 3 times (its retries)');
    assert.equal(primary.stats().byOutcome.unauthorized ?? 0, 0);
    assert.equal(backup.stats().byOutcome.unauthorized ?? 0, 0, "the fallback got its own key, not the primary's");
  });

  test('404 model_not_found from the primary: the fallback answers; other 4xx do not fall back', async () => {
    primary.setFault({ kind: 'model_not_found', times: 1 });
    const r = await call(executor(), 'k2');
    assert.deepEqual([r.error, r.tool, r.fallback_from, r.attempts], [null, MODEL_FALLBACK_TOOL, MODEL_TOOL, 1]);
    // A 401 (the primary's key is wrong) is about the request: no fallback.
    const wrongKey = executor();
    const refused = await wrongKey.executor.execute(wrongKey.catalog.get(MODEL_TOOL)!, 'M1', request, {
      idempotencyKey: 'k3',
      traceparent: traceparentFor('t', 'action:1'),
      secrets: envSecrets({ ...env(), TAO_LLM_API_KEY: 'wrong' }),
    });
    assert.deepEqual([refused.tool, refused.status_code, refused.fallback_from], [MODEL_TOOL, 401, null]);
    assert.equal(backup.stats().total, 1, 'the fallback was asked only for the model_not_found');
  });

  test("a time-out falls back; after 5 failed calls the primary's breaker is open and the fallback is asked at once", async () => {
    primary.setFault({ kind: 'timeout' });
    const x = executor();
    for (let i = 0; i < 5; i++) {
      const r = await call(x, `t${i}`);
      assert.deepEqual([r.error, r.fallback_from], [null, MODEL_TOOL]);
      assert.match(r.fallback_reason!, /timeout/);
    }
    assert.equal(x.executor.states()[MODEL_TOOL], 'open');
    const before = primary.stats().total;
    const r = await call(x, 't-open');
    assert.deepEqual([r.error, r.tool, modelOf(r)], [null, MODEL_FALLBACK_TOOL, 'sim-fallback']);
    assert.match(r.fallback_reason!, /circuit_open/);
    assert.equal(primary.stats().total, before, 'no request to the primary while its breaker is open');
  });
});
