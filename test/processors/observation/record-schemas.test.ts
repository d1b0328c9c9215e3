/**
 * Schemas that records bring (a plan's `expect`, written by a model in plan-replan runs) are checked
 * by Observation without growing its ajv for ever and without colliding on `$id`: ajv refuses a
 * second schema with an `$id` it has seen ("schema with key or id ... already exists"), and keeps
 * every schema it compiled, so a long-lived stage compiling what models write crept in memory.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Ajv } from 'ajv';
import planSchema from '../../../schemas/json/plan.schema.json' with { type: 'json' };
import { observe } from '../../../processors/observation/core.ts';
import { RECYCLE_AFTER, RecordSchemas, recordSchemas } from '../../../processors/compiled-schemas.ts';
import type { Plan } from '../../../processors/plan.ts';
import type { StepResult, Verdict } from '../../../schemas/types.gen.ts';
import { DATA, flowPlan, loadWorld, observationConfig, runState } from '../fixtures.ts';

const world = loadWorld();
const config = observationConfig(world);

/** orders.latest's answer (step S2 of the order-status flow) with `data`. */
function ordersLatest(data: unknown): StepResult {
  const body = JSON.stringify(data);
  return {
    step_id: 'S2',
    tool: 'orders.latest',
    input_json: '{}',
    idempotency_key: 't-1:S2',
    attempts: 1,
    status_code: 200,
    response_time_ms: 35,
    response_raw: body,
    data_json: body,
    error: null,
    fallback_from: null,
    fallback_reason: null,
  } as StepResult;
}

/** The verdict on S2's `data` when a model's plan expects `expect` of S2. */
async function judged(expect: Record<string, unknown>, data: unknown = DATA.S2): Promise<Verdict> {
  const plan: Plan = flowPlan(world);
  plan.steps.find((s) => s.id === 'S2')!.expect = expect;
  const out = await observe({ thought_id: 't-1', iteration: 1, run: runState(plan), results: [ordersLatest(data)], dead_letter: null }, config);
  return out.verdicts[0]!;
}

const consistency = (v: Verdict) => v.audit_trail.find((c) => c.name === 'consistency')!;
/** How many schemas an ajv instance holds in its own cache (ajv has no public count). */
const ajvHeld = (ajv: Ajv) => (ajv as unknown as { _cache: Map<unknown, unknown> })._cache.size;

describe('schemas that records bring', () => {
  test('two model-written expect schemas with the same $id and different content both compile, each checked by its own content', async () => {
    const shipped = { $id: 'https://example.com/expect.json', type: 'object', properties: { status: { const: 'shipped' } } };
    const delivered = { $id: 'https://example.com/expect.json', type: 'object', properties: { status: { const: 'delivered' } } };

    const first = await judged(shipped);
    assert.equal(consistency(first).passed, true, consistency(first).evidence);
    assert.equal(first.valid, true);

    const second = await judged(delivered);
    assert.equal(consistency(second).passed, false, 'the second schema was checked, not the first one again');
    assert.equal(second.error_type, 'inconsistent');
    assert.match(consistency(second).evidence, /status.*const.*delivered|"delivered"/);

    // And the second passes data that it describes.
    assert.equal(consistency(await judged(delivered, { ...DATA.S2, status: 'delivered' })).passed, true);
  });

  test("a model's $id does not take the place of, or collide with, a schema the stage registered (a contract, the plan schema)", async () => {
    const planSchemaId = planSchema.$id;
    const before = world.ajv.getSchema(planSchemaId) ?? world.ajv.compile(planSchema);
    const v = await judged({ $id: planSchemaId, type: 'object', required: ['order_id'] });
    assert.equal(consistency(v).passed, true, consistency(v).evidence);
    assert.equal(world.ajv.getSchema(planSchemaId), before, 'the registered schema under that id is unchanged');
  });

  test('an expect that is not a usable JSON Schema fails the consistency check with the reason, the stage goes on', async () => {
    const v = await judged({ type: 'object', properties: { status: { type: 'no-such-type' } } });
    assert.equal(v.valid, false);
    assert.equal(v.error_type, 'inconsistent');
    assert.match(consistency(v).evidence, /^the plan's expect is not a usable JSON Schema \(schema is invalid: data\/properties\/status\/type must be/);
  });

  test(`compiling ${RECYCLE_AFTER * 2 + 10} distinct model-written schemas leaves the stage's ajv as it was and holds at most ${RECYCLE_AFTER} of them`, async () => {
    const heldBefore = ajvHeld(world.ajv);
    for (let i = 0; i < RECYCLE_AFTER * 2 + 10; i++) {
      const v = await judged({ type: 'object', properties: { total_cents: { minimum: i } } }, { ...DATA.S2, total_cents: RECYCLE_AFTER });
      assert.equal(consistency(v).passed, i <= RECYCLE_AFTER, `schema ${i} checked by its own content`);
    }
    assert.equal(ajvHeld(world.ajv), heldBefore, "the contracts' ajv kept the model's schemas");
    const stats = recordSchemas(world.ajv).stats();
    assert.ok(stats.cached <= RECYCLE_AFTER, `compiled schemas held: ${stats.cached}`);
    assert.ok(stats.ajvCached <= RECYCLE_AFTER + 5, `schemas held by the record schemas' ajv: ${stats.ajvCached}`);
    assert.ok(stats.generations >= 3, `ajv instances made: ${stats.generations}`);
  });

  test('the same schema with its keys in another order is one compiled entry; a recycled instance still checks it', () => {
    const schemas = new RecordSchemas(world.ajv, 3);
    const a = schemas.compile({ type: 'object', required: ['x'], properties: { x: { type: 'string', format: 'email' } } });
    const b = schemas.compile({ properties: { x: { format: 'email', type: 'string' } }, required: ['x'], type: 'object' });
    assert.ok(a.ok && b.ok);
    assert.equal(a.validate, b.validate);
    assert.equal(schemas.stats().cached, 1);
    for (let i = 0; i < 5; i++) schemas.compile({ const: i });
    const again = schemas.compile({ type: 'object', required: ['x'], properties: { x: { type: 'string', format: 'email' } } });
    assert.ok(again.ok);
    assert.equal(again.validate({ x: 'ada@example.com' }), true);
    assert.equal(again.validate({ x: 'not an e-mail' }), false, "the contracts' formats apply on a recycled instance");
    assert.ok(schemas.stats().cached <= 3);
  });

  test('a property named $id and an $id inside const data are kept: only the keyword is dropped', () => {
    const schemas = new RecordSchemas(world.ajv);
    const c = schemas.compile({ $id: 'urn:x', type: 'object', required: ['$id'], properties: { $id: { const: { $id: 'kept' } } } });
    assert.ok(c.ok);
    assert.equal(c.validate({ $id: { $id: 'kept' } }), true);
    assert.equal(c.validate({ $id: {} }), false);
    assert.equal(c.validate({}), false);
  });
});
