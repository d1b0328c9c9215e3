import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../../runtime/errors.ts';
import { SlotExtractor } from '../../../processors/thought/slots.ts';
import { toolContracts } from '../../../processors/wiring/index.ts';
import { loadWorld } from '../fixtures.ts';

test('the value is the named group `value` when the pattern has one, else the whole match; the last mention wins', () => {
  const slots = new SlotExtractor(
    {
      ticket: { pattern: 'ticket (?<value>T\\d+)', description: 'ticket' },
      amount: { pattern: '\\d+(?:\\.\\d{2})? EUR', description: 'amount' },
    },
    'test',
  );
  assert.deepEqual(slots.extract('ticket T1 for 12.50 EUR, no wait, ticket T2 and 13.00 EUR'), { ticket: 'T2', amount: '13.00 EUR' });
  assert.deepEqual(slots.extract('nothing here'), {});
});

test('patterns match case-insensitively on NFKC text; case and the first matching rewrite give the canonical form', () => {
  const slots = new SlotExtractor(
    {
      order_id: {
        pattern: 'O-?\\d{8}|(?<=order )\\d+',
        description: 'order',
        case: 'upper',
        rewrite: [
          { from: 'O-?(\\d{8})', to: 'O-$1' },
          { from: '(\\d{8})', to: 'O-$1' },
          { from: '\\d+', to: 'never' },
        ],
      },
    },
    'test',
  );
  assert.deepEqual(slots.extract('ｏ１２３４５６７８'), { order_id: 'O-12345678' }, 'full-width, lower case, no dash');
  assert.deepEqual(slots.extract('Order 12345678'), { order_id: 'O-12345678' });
  assert.deepEqual(slots.extract('order 123'), { order_id: 'never' }, 'rewrites are anchored to the whole value: 123 is no 8-digit id');
  assert.deepEqual(slots.extract('order 123456789'), { order_id: 'never' });
});

test('a pattern or rewrite that is not a regular expression is a configuration error naming the input', () => {
  assert.throws(
    () => new SlotExtractor({ order_id: { pattern: 'O-(\\d{8}', description: 'x' } }, 'flows/x.v1.json'),
    (err: unknown) => err instanceof ConfigError && /^flows\/x\.v1\.json: inputs\.order_id\.pattern is not a valid regular expression/.test(err.message),
  );
  assert.throws(
    () => new SlotExtractor({ email: { pattern: '@', description: 'x', rewrite: [{ from: '[', to: '' }] } }, 'f'),
    /f: inputs\.email\.rewrite\[0\]\.from is not a valid regular expression/,
  );
});

test('the catalog says why a tool refuses an input value, and nothing for values it accepts or fields it does not describe', () => {
  const tools = toolContracts(loadWorld().catalog);
  assert.equal(tools.refusesInput('orders.get', 'order_id', 'O-12345678'), null);
  assert.equal(tools.refusesInput('orders.get', 'order_id', 'PO-2024-00017-B'), 'must match pattern "^O-[0-9]{8}$"');
  assert.equal(tools.refusesInput('status.service', 'service', 'payments'), null);
  assert.equal(tools.refusesInput('status.service', 'service', 'billing'), 'must be equal to one of the allowed values');
  assert.equal(tools.refusesInput('orders.get', 'no_such_field', 'x'), null);
  assert.equal(tools.refusesInput('no.such_tool', 'order_id', 'x'), null);
});
