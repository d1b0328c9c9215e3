/**
 * Skill policies: the refund skill's shipped policies judged on recorded data, Observation's gate
 * turning a violation into a rejected verdict that names the policy (no call passes), and the
 * loader refusing broken policy files with one line naming the file.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadSkillGuards } from '../../../processors/guardrails/load.ts';
import { firstViolation, policyDocuments, type RecordedStep } from '../../../processors/guardrails/policies.ts';
import { observe } from '../../../processors/observation/core.ts';
import { DEFAULT_RULES_FILE, loadObservationRules } from '../../../processors/observation/rules.ts';
import { DEFAULT_SKILLS_DIR } from '../../../processors/thought/skills.ts';
import { ToolCatalog, DEFAULT_CATALOG_DIR, createContractAjv } from '../../../tools/catalog.ts';
import { modelToolSpecs } from '../../../tools/model-config.ts';
import { runState } from '../../../schemas/records.ts';

const ajv = createContractAjv();
const catalog = ToolCatalog.load(DEFAULT_CATALOG_DIR, {}, ajv, modelToolSpecs({}, 'contracts'));
const guards = loadSkillGuards(DEFAULT_SKILLS_DIR, (t) => catalog.get(t) !== undefined);
const refundPolicies = guards.get('refund-request')!.policies;
const ORDER = { order_id: 'O-12345678', customer_id: 'C-123456', status: 'shipped', total_cents: 38312, placed_at: '2026-01-02T03:04:05Z' };
const looked: RecordedStep[] = [{ id: 'M1_1', tool: 'orders.get', dispatched: true, output: ORDER }];
const refund = (args: Record<string, unknown>) => [{ tool: 'refunds.create', arguments: { order_id: 'O-12345678', amount_cents: 38312, ...args } }];
const broken = (steps: RecordedStep[], calls: ReturnType<typeof refund>) => firstViolation(refundPolicies, policyDocuments(steps, calls));

describe("the refund skill's policies (skills/refund-request/policies.json)", () => {
  test('a refund of the order total, for the order orders.get verified, once: no policy objects', () => {
    assert.equal(broken(looked, refund({})), null);
    assert.equal(broken(looked, refund({ amount_cents: 100 })), null, 'less than the total, as the customer may ask');
  });

  test('the amount is no more than the order total an earlier step returned', () => {
    const v = broken(looked, refund({ amount_cents: 38313 }));
    assert.equal(v?.policy, 'refund_within_order_total');
    assert.match(v!.evidence, /\/call\/args\/amount_cents must be <= 38312 \(actual: 38313\)/);
  });

  test('at most one refunds.create per run: a second one, in a later turn or the same answer, is refused', () => {
    const refunded: RecordedStep[] = [...looked, { id: 'M2_1', tool: 'refunds.create', dispatched: true }];
    assert.equal(broken(refunded, refund({ amount_cents: 1 }))?.policy, 'one_refund_per_run');
    const two = [...refund({ amount_cents: 100 }), ...refund({ amount_cents: 200 })];
    assert.deepEqual([broken(looked, two)?.policy, broken(looked, two)?.call], ['one_refund_per_run', 2]);
  });

  test('an argument equals a value an earlier step verified: the order id orders.get returned', () => {
    const v = broken(looked, refund({ order_id: 'O-87654321' }));
    assert.equal(v?.policy, 'refund_for_the_verified_order');
    assert.match(v!.evidence, /expected: "O-12345678", actual: "O-87654321"/);
  });

  test('a refund before any verified orders.get is refused (an invalid lookup counts as a call, not as a result)', () => {
    assert.equal(broken([], refund({}))?.policy, 'order_looked_up_first');
    assert.equal(broken([{ id: 'M1_1', tool: 'orders.get', dispatched: true }], refund({}))?.policy, 'order_looked_up_first');
  });

  test('policies judge only the tools they name', () => {
    assert.equal(firstViolation(refundPolicies, policyDocuments([], [{ tool: 'orders.get', arguments: { order_id: 'O-12345678' } }])), null);
  });
});

test('observe(): a model answer whose call breaks a policy is a rejected verdict (policy_violation) naming the policy; the same call within policy passes', async () => {
  const config = {
    catalog,
    ajv,
    rules: loadObservationRules(DEFAULT_RULES_FILE, ajv, (t) => catalog.get(t) !== undefined),
    classifier: null,
    policies: (skill: string) => guards.get(skill)?.policies ?? [],
  };
  const request = JSON.stringify({
    messages: [{ role: 'user', content: 'x' }],
    tools: [
      { type: 'function', function: { name: 'orders__get' } },
      { type: 'function', function: { name: 'refunds__create' } },
    ],
  });
  const answer = (amount: number) => ({
    model: 'sim-1',
    choices: [
      {
        message: {
          content: null,
          tool_calls: [
            { id: 'a', type: 'function', function: { name: 'refunds__create', arguments: JSON.stringify({ order_id: 'O-12345678', amount_cents: amount }) } },
          ],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
  const step = (body: unknown) => ({
    step_id: 'M2',
    tool: 'model.chat',
    input_json: request,
    idempotency_key: 't:3:M2',
    attempts: 1,
    status_code: 200,
    response_time_ms: 30,
    response_raw: JSON.stringify(body),
    data_json: JSON.stringify(body),
    error: null,
    fallback_from: null,
    fallback_reason: null,
    attempt_time_ms: null,
  });
  const plan = {
    flow: { id: 'react:refund-request', version: 1 },
    steps: [
      { id: 'M1', tool: 'model.chat', input: {}, depends_on: [] },
      { id: 'M1_1', tool: 'orders.get', input: { order_id: 'O-12345678' }, depends_on: ['M1'] },
      { id: 'M2', tool: 'model.chat', input: {}, depends_on: [] },
    ],
    output: {},
  };
  const run = runState({
    plan_json: JSON.stringify(plan),
    outputs_json: JSON.stringify({ M1_1: ORDER }),
    step_attempts: { M1: 1, M1_1: 1, M2: 1 },
    model_state_json: JSON.stringify({ skill: 'refund-request@1' }),
  });

  const over = (await observe({ thought_id: 't', iteration: 3, run, results: [step(answer(900000))], dead_letter: null }, config)).verdicts[0]!;
  assert.deepEqual([over.valid, over.error_type], [false, 'policy_violation']);
  const check = over.audit_trail.find((c) => c.name === 'policies')!;
  assert.equal(check.passed, false);
  assert.match(check.evidence, /^policy "refund_within_order_total" .*must be <= 38312 \(actual: 900000\)/);
  assert.deepEqual(JSON.parse(over.extracted_data_json!).spent.usage.total_tokens, 15, 'the refused answer is still paid for');

  const within = (await observe({ thought_id: 't', iteration: 3, run, results: [step(answer(38312))], dead_letter: null }, config)).verdicts[0]!;
  assert.equal(within.valid, true);
  assert.ok(within.audit_trail.some((c) => c.name === 'policies' && c.passed));
  // Another skill's run (no policies) is not judged by the refund skill's.
  const other = (
    await observe(
      {
        thought_id: 't',
        iteration: 3,
        run: { ...run, model_state_json: JSON.stringify({ skill: 'order-status@1' }) },
        results: [step(answer(900000))],
        dead_letter: null,
      },
      config,
    )
  ).verdicts[0]!;
  assert.equal(other.valid, true);
});

describe('loadSkillGuards', () => {
  const folder = (policies: unknown): string => {
    const dir = mkdtempSync(join(tmpdir(), 'tao-guards-'));
    mkdirSync(join(dir, 'refunds'));
    writeFileSync(join(dir, 'refunds', 'SKILL.md'), '---\nname: refunds\ndescription: x\n---\nbody\n');
    writeFileSync(join(dir, 'refunds', 'policies.json'), typeof policies === 'string' ? policies : JSON.stringify(policies));
    return dir;
  };
  const known = (t: string) => catalog.get(t) !== undefined;
  const policy = { name: 'p', description: 'd', tools: ['refunds.create'], schema: { type: 'object' } };

  test('broken files stop start-up with one line naming the file and the fault', () => {
    assert.throws(() => loadSkillGuards(folder('{'), known), /refunds[/\\]policies\.json: not JSON/);
    assert.throws(() => loadSkillGuards(folder({ policies: [{ ...policy, name: 'Bad Name' }] }), known), /policies\.json: .*pattern/);
    assert.throws(() => loadSkillGuards(folder({ policies: [policy, policy] }), known), /policy "p" is declared twice/);
    assert.throws(
      () => loadSkillGuards(folder({ policies: [{ ...policy, tools: ['refunds.delete'] }] }), known),
      /names tool "refunds.delete", which is not in the catalog/,
    );
    assert.throws(
      () => loadSkillGuards(folder({ policies: [{ ...policy, schema: { properties: { calls: { maximun: 1 } } } }] }), known),
      /policy "p": its schema does not compile .*maximun/,
    );
  });

  test('a skill folder without guardrail files gets no entry', () => {
    const dir = folder({ policies: [] });
    assert.equal(loadSkillGuards(dir, known).has('refunds'), false);
  });
});
