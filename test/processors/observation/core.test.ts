import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { observe } from '../../../processors/observation/core.ts';
import { semanticClassifier } from '../../../processors/wiring/index.ts';
import type { Plan } from '../../../processors/plan.ts';
import type { StepResult, ToolError, Verdict } from '../../../schemas/types.gen.ts';
import { latestOrder } from '../../../tool-server/data.ts';
import { DATA, flowPlan, loadWorld, observationConfig, runState } from '../fixtures.ts';

const world = loadWorld();
// The real committed ONNX classifier, as the stage runs it.
const config = { ...observationConfig(world), classifier: await semanticClassifier({}) };
/** hard 0.6 + semantic 0.3 x P(ok) + consistency 0.1: a clean result scores above 0.95. */
const CLEAN = 0.95;
const TOOL = { S1: 'crm.find_customer', S2: 'orders.latest', S3: 'crm.tier', S4: 'shipping.track' } as const;
type StepId = keyof typeof TOOL;

/** A StepResult as Action reports it: 200 with `data` by default. */
function result(stepId: StepId, overrides: Partial<StepResult> & { data?: unknown } = {}): StepResult {
  const { data = DATA[stepId], ...rest } = overrides;
  const body = JSON.stringify(data);
  return {
    step_id: stepId,
    tool: TOOL[stepId],
    input_json: '{}',
    idempotency_key: `t-1:1:${stepId}`,
    attempts: 1,
    status_code: 200,
    response_time_ms: 35,
    response_raw: body,
    data_json: body,
    error: null,
    fallback_from: null,
    fallback_reason: null,
    ...rest,
  } as StepResult;
}

/** An HTTP error status as Action reports it. */
function httpError(stepId: StepId, status: number): StepResult {
  const body = JSON.stringify({ error: 'x' });
  const error: ToolError = { type: 'http_status', message: `HTTP ${status}`, retryable: status === 429 || status >= 500 };
  return result(stepId, { status_code: status, response_raw: body, data_json: null, error });
}

/** A transport-level failure (no usable response) as Action reports it. */
function transportError(stepId: StepId, type: string, status: number | null = null, attempts = 1): StepResult {
  return result(stepId, {
    status_code: status,
    attempts,
    response_raw: null,
    data_json: null,
    error: { type, message: `${type} happened`, retryable: type === 'timeout' || type === 'network' },
  });
}

async function judge(r: StepResult, plan: Plan = flowPlan(world)): Promise<Verdict> {
  const out = await observe({ thought_id: 't-1', iteration: 1, run: runState(plan), results: [r], dead_letter: null }, config);
  assert.equal(out.verdicts.length, 1);
  return out.verdicts[0]!;
}

function check(v: Verdict, name: string) {
  const c = v.audit_trail.find((x) => x.name === name);
  assert.ok(c, `audit trail has a ${name} check: ${JSON.stringify(v.audit_trail)}`);
  return c;
}

describe('observe: valid results', () => {
  test('a 200 matching the response schema is valid with error_type ok, a high confidence and the data extracted', async () => {
    const v = await judge(result('S1'));
    assert.equal(v.valid, true);
    assert.equal(v.error_type, 'ok');
    assert.ok(v.confidence_score > CLEAN && v.confidence_score <= 1, `confidence ${v.confidence_score}`);
    assert.deepEqual(JSON.parse(v.extracted_data_json!), DATA.S1);
    assert.deepEqual([v.step_id, v.tool, v.status_code, v.attempts, v.response_time_ms], ['S1', 'crm.find_customer', 200, 1, 35]);
  });

  test('the audit trail of a valid result names every check that ran, all passed, the classifier with its model id', async () => {
    const v = await judge(result('S1'));
    assert.deepEqual(
      v.audit_trail.map((c) => [c.name, c.passed]),
      [
        ['transport', true],
        ['status_class', true],
        ['latency', true],
        ['response_schema', true],
        ['forbidden_values', true],
        ['semantic', true],
      ],
    );
    assert.match(check(v, 'transport').evidence, /HTTP 200 after 1 attempt/);
    assert.match(check(v, 'latency').evidence, /35 ms, limit 3000 ms/);

    assert.match(check(v, 'semantic').evidence, /^error-classifier@[0-9a-f]{12} says ok \(/);
    assert.match(check(v, 'response_schema').evidence, /crm\.find_customer/);
  });

  test('a step whose plan expectation holds adds a passed consistency check and its weight to the confidence', async () => {
    const v = await judge(result('S2'));
    assert.equal(v.valid, true);
    assert.equal(check(v, 'consistency').passed, true);
    assert.ok(v.confidence_score > CLEAN, `confidence ${v.confidence_score}`);
  });

  test('date-times with a +08:00 offset are valid (orders.latest placed_at from the tool server)', async () => {
    const order = latestOrder('C-123456');
    assert.match(order.placed_at, /\+08:00$/);
    const v = await judge(result('S2', { data: order }));
    assert.equal(v.error_type, 'ok', JSON.stringify(v.audit_trail));
    assert.equal(v.valid, true);
  });

  test('the latency check is on the total time, retries included: 2 attempts taking 5000 ms exceed 1.5x a 2000 ms timeout', async () => {
    const v = await judge(result('S1', { attempts: 2, response_time_ms: 5000 }));
    assert.equal(v.valid, false);
    assert.equal(v.error_type, 'timeout');
    assert.match(check(v, 'latency').evidence, /5000 ms, limit 3000 ms/);
  });

  test('a result exactly at 1.5x the tool timeout passes the latency check (the limit is inclusive)', async () => {
    assert.equal((await judge(result('S1', { response_time_ms: 3000 }))).valid, true);
  });

  test('each verdict of a wave is judged on its own, in order', async () => {
    const out = await observe(
      { thought_id: 't-1', iteration: 2, run: runState(flowPlan(world)), results: [result('S2'), httpError('S3', 503)], dead_letter: null },
      config,
    );
    assert.deepEqual(
      out.verdicts.map((v) => [v.step_id, v.valid, v.error_type]),
      [
        ['S2', true, 'ok'],
        ['S3', false, 'server_error'],
      ],
    );
    assert.equal(out.thought_id, 't-1');
    assert.equal(out.iteration, 2);
  });
});

describe('observe: invalid results', () => {
  test('a 200 that breaks the response schema is schema_mismatch with confidence 0, evidence naming the failing fields', async () => {
    const v = await judge(result('S1', { data: { id: 7, email: 'alice@example.com', name: 42 } }));
    assert.equal(v.valid, false);
    assert.equal(v.error_type, 'schema_mismatch');
    assert.equal(v.confidence_score, 0);
    assert.equal(v.extracted_data_json, null);
    const c = check(v, 'response_schema');
    assert.equal(c.passed, false);
    assert.match(c.evidence, /customer_id/);
    assert.match(c.evidence, /\/name must be string/);
  });

  test('an enum violation names the field and the allowed values', async () => {
    const v = await judge(result('S3', { data: { customer_id: 'C-123456', tier: 'platinum' } }));
    assert.equal(v.error_type, 'schema_mismatch');
    assert.match(check(v, 'response_schema').evidence, /\/tier .*\["gold","silver","bronze"\]/);
  });

  test('a date-time that is not RFC 3339 is schema_mismatch', async () => {
    const v = await judge(result('S4', { data: { ...DATA.S4, eta: 'tomorrow' } }));
    assert.equal(v.error_type, 'schema_mismatch');
    assert.match(check(v, 'response_schema').evidence, /\/eta must match format "date-time"/);
  });

  const statusCases: Array<[number, Verdict['error_type']]> = [
    [429, 'rate_limited'],
    [401, 'auth_failed'],
    [403, 'auth_failed'],
    [404, 'not_found'],
    [400, 'client_error'],
    [503, 'server_error'],
    [500, 'server_error'],
  ];
  for (const [status, errorType] of statusCases) {
    test(`HTTP ${status} is ${errorType}, invalid, confidence 0, with a failed status_class check`, async () => {
      const v = await judge(httpError('S1', status));
      assert.equal(v.valid, false);
      assert.equal(v.error_type, errorType);
      assert.equal(v.confidence_score, 0);
      assert.equal(v.extracted_data_json, null);
      assert.deepEqual([check(v, 'status_class').passed, check(v, 'status_class').evidence], [false, `status ${status}`]);
      assert.equal(
        v.audit_trail.some((c) => c.name === 'response_schema'),
        false,
        'an error body is not judged against the response schema',
      );
    });
  }

  const transportCases: Array<[string, number | null, Verdict['error_type']]> = [
    ['timeout', null, 'timeout'],
    ['network', null, 'network_issue'],
    ['malformed', 200, 'malformed'],
    ['too_large', 200, 'response_too_large'],
  ];
  for (const [type, status, errorType] of transportCases) {
    test(`a ${type} error from Action is ${errorType}, with a failed transport check carrying its message`, async () => {
      const v = await judge(transportError('S1', type, status));
      assert.equal(v.valid, false);
      assert.equal(v.error_type, errorType);
      assert.equal(v.confidence_score, 0);
      assert.deepEqual([check(v, 'transport').passed, check(v, 'transport').evidence], [false, `${type}: ${type} happened`]);
    });
  }

  test('a timeout reports "no status" in the status_class check', async () => {
    assert.equal(check(await judge(transportError('S1', 'timeout')), 'status_class').evidence, 'no status: no response received');
  });

  test('invalid_input (nothing was sent, 0 attempts) is invalid_input and does not fail the latency check', async () => {
    const v = await judge(transportError('S1', 'invalid_input', null, 0));
    assert.equal(v.error_type, 'invalid_input');
    assert.equal(v.valid, false);
    assert.equal(check(v, 'latency').passed, true);
  });

  test('a 200 slower than 1.5x the tool timeout is invalid with a failed latency check (error type timeout)', async () => {
    const v = await judge(result('S1', { response_time_ms: 3500 }));
    assert.equal(v.valid, false);
    assert.equal(v.error_type, 'timeout');
    assert.equal(v.confidence_score, 0);
    const c = check(v, 'latency');
    assert.equal(c.passed, false);
    assert.match(c.evidence, /3500 ms, limit 3000 ms \(1\.5 x timeout 2000 ms\)/);
  });

  test('a result from a tool that is not in the catalog is schema_mismatch: its contract is unknown', async () => {
    const v = await judge({ ...result('S1'), tool: 'crm.unknown' });
    assert.equal(v.valid, false);
    assert.equal(v.error_type, 'schema_mismatch');
    assert.match(check(v, 'response_schema').evidence, /crm\.unknown is not in this catalog/);
  });

  /** The flow plan with S2 expecting a delivered order of at most 100 cents. */
  function expectingDelivered(): Plan {
    const plan = flowPlan(world);
    plan.steps.find((s) => s.id === 'S2')!.expect = { type: 'object', properties: { status: { const: 'delivered' }, total_cents: { maximum: 100 } } };
    return plan;
  }

  test('data that breaks the step expect is inconsistent, confidence 0, with the expectation and failing fields in the evidence', async () => {
    const v = await judge(result('S2'), expectingDelivered());
    assert.equal(v.valid, false);
    assert.equal(v.error_type, 'inconsistent');
    assert.equal(v.confidence_score, 0);
    assert.equal(v.extracted_data_json, null);
    assert.equal(check(v, 'response_schema').passed, true, 'the response itself matches the tool contract');
    const c = check(v, 'consistency');
    assert.equal(c.passed, false);
    assert.match(c.evidence, /expected .*"const":"delivered"/);
    assert.match(c.evidence, /\/status/);
    assert.match(c.evidence, /\/total_cents must be <= 100/);
  });

  test('the consistency evidence shows the actual values that broke the expectation', async () => {
    // DATA.S2 has status "shipped" and total_cents 4200; a reader of the audit trail must see them.
    const c = check(await judge(result('S2'), expectingDelivered()), 'consistency');
    assert.match(c.evidence, /shipped/, `evidence lacks the actual status: ${c.evidence}`);
    assert.match(c.evidence, /4200/, `evidence lacks the actual total_cents: ${c.evidence}`);
  });

  test('the same result judged twice gives deep-equal verdicts (classifier included)', async () => {
    const input = {
      thought_id: 't-1',
      iteration: 1,
      run: runState(flowPlan(world)),
      results: [result('S2'), httpError('S3', 429), result('S1', { data: { nope: true } })],
      dead_letter: null,
    };
    assert.deepEqual(await observe(structuredClone(input), config), await observe(structuredClone(input), config));
  });
});

test('every verdict record names the rules and the classifier that judged it, for replay to tell a configuration change from a code change', async () => {
  const out = await observe({ thought_id: 't-1', iteration: 1, run: runState(flowPlan(world)), results: [result('S1')], dead_letter: null }, config);
  assert.equal(out.rules_version, config.rules.fingerprint);
  assert.match(out.rules_version!, /^1#[0-9a-f]{12}$/);
  assert.equal(out.classifier_model, config.classifier!.model);
  const without = await observe(
    { thought_id: 't-1', iteration: 1, run: runState(flowPlan(world)), results: [result('S1')], dead_letter: null },
    { ...config, classifier: null },
  );
  assert.equal(without.classifier_model, null, 'no classifier: none named');
});
