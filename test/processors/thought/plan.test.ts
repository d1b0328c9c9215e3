import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PlanValidator, referencesIn, resolveReferences, type Plan } from '../../../processors/plan.ts';
import { flowPlan, loadWorld } from '../fixtures.ts';

const world = loadWorld();
const validator = new PlanValidator(world.ajv, 50);

/** A fresh copy of the real order-status plan, edited by `edit`. */
function planWith(edit: (plan: Plan) => void): Plan {
  const plan = flowPlan(world);
  edit(plan);
  return plan;
}

function step(plan: Plan, id: string) {
  const s = plan.steps.find((x) => x.id === id);
  assert.ok(s, `plan has step ${id}`);
  return s;
}

describe('PlanValidator', () => {
  test('the plan instantiated from the real order-status flow is valid', () => {
    assert.deepEqual(validator.validate(flowPlan(world), world.tools), []);
  });

  test('a step may reference a transitive ancestor (S4 -> S2 -> S1)', () => {
    const plan = planWith((p) => {
      step(p, 'S4').input = { order_id: '{{S2.order_id}}', note: 'for {{S1.customer_id}}' };
    });
    assert.deepEqual(validator.validate(plan, world.tools), []);
  });

  test('a step missing a required field fails the JSON Schema rule, naming where', () => {
    const plan = planWith((p) => {
      delete (p.steps[1] as unknown as Record<string, unknown>).depends_on;
    });
    const problems = validator.validate(plan, world.tools);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /^plan\/steps\/1 /);
    assert.match(problems[0]!, /required property 'depends_on'/);
  });

  test('a plan that is not even an object is rejected by the schema instead of throwing', () => {
    assert.ok(validator.validate(null, world.tools).length > 0);
    assert.ok(
      validator.validate({ flow: { id: 'x', version: 1 }, steps: [], output: {} }, world.tools).some((p) => p.includes('/steps') && p.includes('fewer than 1')),
    );
  });

  test('more steps than the limit fails with the count and the limit', () => {
    const small = new PlanValidator(world.ajv, 3);
    assert.deepEqual(small.validate(flowPlan(world), world.tools), ['plan has 4 steps, more than the limit of 3']);
  });

  test('a duplicate step id fails naming the id', () => {
    const plan = planWith((p) => {
      step(p, 'S3').id = 'S2';
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['step id S2 is used twice']);
  });

  test('a dependency on a step that does not exist fails naming both steps', () => {
    const plan = planWith((p) => {
      step(p, 'S4').depends_on = ['S2', 'S9'];
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['step S4: depends on unknown step S9']);
  });

  test('a cycle fails and the message shows the cycle path', () => {
    const plan = planWith((p) => {
      step(p, 'S1').depends_on = ['S4'];
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['steps form a cycle: S1 -> S4 -> S2 -> S1']);
  });

  test('a step depending on itself is a cycle of one', () => {
    const plan = planWith((p) => {
      step(p, 'S3').depends_on = ['S1', 'S3'];
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['steps form a cycle: S3 -> S3']);
  });

  test('a tool that is not in the catalog fails naming the step and the tool', () => {
    const plan = planWith((p) => {
      step(p, 'S3').tool = 'crm.loyalty_points';
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['step S3: unknown tool crm.loyalty_points']);
  });

  test('a reference to a step that is not an ancestor (a sibling) fails naming both steps', () => {
    const plan = planWith((p) => {
      step(p, 'S3').input = { customer_id: '{{S2.customer_id}}' };
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['step S3: reference {{S2.customer_id}} uses step S2, which it does not depend on']);
  });

  test('a reference to a later step (a descendant) fails: it would never have a value in time', () => {
    const plan = planWith((p) => {
      step(p, 'S2').input = { customer_id: '{{S4.order_id}}' };
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['step S2: reference {{S4.order_id}} uses step S4, which it does not depend on']);
  });

  test('a reference to a step that does not exist fails naming the unknown step', () => {
    const plan = planWith((p) => {
      step(p, 'S2').input = { customer_id: '{{S7.customer_id}}' };
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['step S2: reference {{S7.customer_id}} names unknown step S7']);
  });

  test('a reference to a field the tool response schema does not declare fails listing the declared fields', () => {
    const plan = planWith((p) => {
      step(p, 'S2').input = { customer_id: '{{S1.cust_id}}' };
    });
    assert.deepEqual(validator.validate(plan, world.tools), [
      'step S2: reference {{S1.cust_id}}: crm.find_customer returns no field cust_id (it returns customer_id, email, name)',
    ]);
  });

  test('an output field referencing an unknown step fails naming the output field', () => {
    const plan = planWith((p) => {
      p.output.refund = '{{S9.amount}}';
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['output refund: reference {{S9.amount}} names unknown step S9']);
  });

  test('an output field referencing an undeclared field fails naming the output field', () => {
    const plan = planWith((p) => {
      p.output.shipping_state = '{{S4.status}}';
    });
    assert.deepEqual(validator.validate(plan, world.tools), [
      'output shipping_state: reference {{S4.status}}: shipping.track returns no field status (it returns order_id, carrier, state, eta)',
    ]);
  });

  test('every problem is reported, not only the first', () => {
    const plan = planWith((p) => {
      step(p, 'S2').tool = 'orders.nope';
      step(p, 'S4').depends_on = ['S8'];
    });
    assert.deepEqual(validator.validate(plan, world.tools), ['step S2: unknown tool orders.nope', 'step S4: depends on unknown step S8']);
  });
});

describe('referencesIn', () => {
  test('finds references nested in objects, arrays and embedded text', () => {
    assert.deepEqual(referencesIn({ a: '{{S1.x}}', b: ['id {{S2.y}} and {{S3.z}}'], c: { d: 5, e: null } }), [
      { step: 'S1', field: 'x' },
      { step: 'S2', field: 'y' },
      { step: 'S3', field: 'z' },
    ]);
  });
});

describe('resolveReferences', () => {
  const outputs = { S1: { customer_id: 'C-123456', total_cents: 4200, gift: false, tags: ['a', 'b'] }, S2: { order_id: 'O-12345678' } };

  test('a whole-string reference keeps the referenced type (a number stays a number)', () => {
    assert.deepEqual(resolveReferences({ total: '{{S1.total_cents}}', gift: '{{S1.gift}}', tags: '{{S1.tags}}' }, outputs), {
      value: { total: 4200, gift: false, tags: ['a', 'b'] },
    });
  });

  test('references embedded in longer text are interpolated as text', () => {
    assert.deepEqual(resolveReferences({ note: 'order {{S2.order_id}} of {{S1.customer_id}} costs {{S1.total_cents}}' }, outputs), {
      value: { note: 'order O-12345678 of C-123456 costs 4200' },
    });
  });

  test('references inside arrays and nested objects are resolved, other values are left alone', () => {
    assert.deepEqual(resolveReferences({ ids: ['{{S1.customer_id}}', '{{S2.order_id}}'], n: 3, nested: { x: '{{S2.order_id}}', y: null } }, outputs), {
      value: { ids: ['C-123456', 'O-12345678'], n: 3, nested: { x: 'O-12345678', y: null } },
    });
  });

  test('a reference with no value is reported as missing (whole-string and embedded)', () => {
    assert.deepEqual(resolveReferences({ customer_id: '{{S1.nope}}' }, outputs), { missing: 'S1.nope' });
    assert.deepEqual(resolveReferences({ note: 'order {{S3.order_id}}' }, outputs), { missing: 'S3.order_id' });
  });

  test('the first missing reference is the one reported', () => {
    assert.deepEqual(resolveReferences(['{{S1.customer_id}}', '{{S5.a}}', '{{S6.b}}'], outputs), { missing: 'S5.a' });
  });

  test('resolving does not modify the input value', () => {
    const input = { customer_id: '{{S1.customer_id}}' };
    resolveReferences(input, outputs);
    assert.deepEqual(input, { customer_id: '{{S1.customer_id}}' });
  });
});
