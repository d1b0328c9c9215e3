/**
 * Log lines: one JSON line per executed step in Action, with the fields an operator filters on, and
 * never a secret, whether it sits in a tool header, in a step input under an innocent key, or in a
 * field whose name gives nothing away.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { actionStage } from '../../processors/action/stage.ts';
import { createToolDispatcher } from '../../processors/action/invoke.ts';
import { createLogger } from '../../runtime/log.ts';
import { realRetryDeps } from '../../runtime/retry.ts';
import type { InputRecord } from '../../runtime/processor.ts';
import type { ThoughtRequest } from '../../schemas/types.gen.ts';
import { ToolCatalog, createContractAjv } from '../../tools/catalog.ts';
import { startToolServer, type ToolServer } from '../../tool-server/server.ts';
import { runState } from '../../schemas/records.ts';
import { envSecrets } from '../../tools/secrets.ts';

const HEADER_SECRET = `hdr-${Math.random().toString(36).slice(2)}`;
const INPUT_SECRET = `xyz-${Math.random().toString(36).slice(2)}`;
let tools: ToolServer;
let catalogDir: string;

before(async () => {
  tools = await startToolServer({ port: 0 });
  catalogDir = mkdtempSync(join(tmpdir(), 'tao-log-catalog-'));
  // A loose contract, so the secret-bearing input is sent (as a query parameter), as a careless plan would.
  writeFileSync(
    join(catalogDir, 'crm.find_customer.json'),
    JSON.stringify({
      name: 'crm.find_customer',
      description: 'find a customer',
      origin: '${TAO_DEMO_TOOL_ORIGIN}',
      method: 'GET',
      path: '/crm/customers/by-email/{email}',
      headers: { Authorization: 'Bearer ${TAO_TEST_LOG_SECRET}' },
      parameters: { type: 'object', required: ['email'], properties: { email: { type: 'string' } } },
      response: { type: 'object' },
      timeoutMs: 2000,
      retry: { maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
      maxResponseBytes: 65536,
    }),
  );
});
after(async () => {
  await tools?.close();
});

test('Action logs one line per step with thought_id, iteration, step, stage, tool, status, duration and error code, and no input or header', async () => {
  const env = { TAO_DEMO_TOOL_ORIGIN: tools.url, TAO_TEST_LOG_SECRET: HEADER_SECRET };
  const lines: string[] = [];
  const logger = createLogger({ stage: 'action' }, { write: (l) => lines.push(l) });
  const stage = actionStage({
    catalog: ToolCatalog.load(catalogDir, env, createContractAjv()),
    http: { dispatcher: createToolDispatcher(), retry: realRetryDeps, now: () => Date.now() },
    secrets: envSecrets(env),
    concurrency: 4,
    logger,
  });
  const request: ThoughtRequest = {
    thought_id: 'run-logs',
    iteration: 2,
    run: runState(),
    steps: [
      {
        step_id: 'S1',
        tool: 'crm.find_customer',
        input_json: JSON.stringify({ email: 'log@example.com', note: `Bearer ${INPUT_SECRET}` }),
        idempotency_key: 'run-logs:2:S1',
        attempt: 1,
      },
      { step_id: 'S2', tool: 'crm.find_customer', input_json: JSON.stringify({ email: 'other@example.com' }), idempotency_key: 'run-logs:2:S2', attempt: 1 },
    ],
  };
  tools.setFault({ route: 'crm.find_customer', mode: 'server_error', match: 'other' });
  const input: InputRecord = { topic: 'thoughtRequests', partition: 0, offset: '0', key: 'run-logs', value: request, headers: {} };
  await stage.handle(input, { get: () => undefined });

  const sent = tools.stats().requests.find((r) => r.path.includes('log%40example.com') || r.path.includes('log@example.com'));
  assert.ok(sent?.path.includes(INPUT_SECRET), 'the secret-bearing input really went out (so its absence from the log means something)');
  const steps = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'step executed');
  assert.deepEqual(steps.map((l) => [l.thought_id, l.iteration, l.step, l.stage, l.tool, l.status, l.error_code, l.http_status]).sort(), [
    ['run-logs', 2, 'S1', 'action', 'crm.find_customer', 'ok', null, 200],
    ['run-logs', 2, 'S2', 'action', 'crm.find_customer', 'error', 'http_status', 503],
  ]);
  for (const l of steps) assert.equal(typeof l.duration_ms, 'number');
  const all = lines.join('\n');
  assert.ok(!all.includes(INPUT_SECRET), 'a Bearer value in a step input is never logged');
  assert.ok(!all.includes(HEADER_SECRET), 'a header secret is never logged');
  assert.ok(!all.includes('log@example.com'), 'step inputs are not logged at all');
});

test('the logger redacts credential-looking values under innocent keys, and values under secret-looking keys', () => {
  const lines: string[] = [];
  const logger = createLogger({}, { write: (l) => lines.push(l) });
  logger.info('careless', {
    context: { note: `Bearer ${INPUT_SECRET}`, header: 'Basic dXNlcjpwYXNzd29yZA==' },
    api_key: 'k-123',
    error: new Error(`upstream said Bearer ${INPUT_SECRET}`),
    text: 'Basic checks passed',
  });
  const line = lines.join('\n');
  assert.ok(!line.includes(INPUT_SECRET));
  assert.ok(!line.includes('dXNlcjpwYXNzd29yZA=='));
  assert.ok(!line.includes('k-123'));
  assert.match(line, /Basic checks passed/, 'prose is left alone');
});

test("a line is one JSON object: ts, level and msg first, then bound fields, then the call's; a call's field replaces a bound one in place, and bound secrets are redacted too", () => {
  const lines: string[] = [];
  const logger = createLogger({ stage: 'action', token: 'tok-bound-secret' }, { write: (l) => lines.push(l) }).child({ pid: 7 });
  logger.info('step executed', { thought_id: 't-1', note: `Bearer ${INPUT_SECRET}`, skipped: undefined });
  logger.warn('rebound', { stage: 'thought', msg: 'not the message' });
  logger.error('bare');
  assert.equal(lines.length, 3);
  assert.deepEqual(Object.keys(JSON.parse(lines[0]!)), ['ts', 'level', 'msg', 'stage', 'token', 'pid', 'thought_id', 'note']);
  assert.ok(!lines.join('\n').includes('tok-bound-secret') && !lines.join('\n').includes(INPUT_SECRET));
  const rebound = JSON.parse(lines[1]!) as Record<string, unknown>;
  assert.deepEqual(Object.keys(rebound), ['ts', 'level', 'msg', 'stage', 'token', 'pid']);
  assert.equal(rebound.stage, 'thought');
  assert.equal(rebound.msg, 'not the message');
  assert.deepEqual(JSON.parse(lines[2]!), { ts: JSON.parse(lines[2]!).ts, level: 'error', msg: 'bare', stage: 'action', token: '[redacted]', pid: 7 });
});
