import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { amountValue, displayAmount, formatAmount, MAX_PAYMENT_CENTS, parseAmount } from './money.ts';

// The model: the exact wire form of docs/api-conventions.md, written independently of money.ts.
const wireForm = /^(0|[1-9][0-9]*)\.[0-9][0-9] NZD$/;
const cents = fc.oneof(fc.integer({ min: 0, max: MAX_PAYMENT_CENTS }), fc.integer({ min: 0, max: 10 ** 15 }));

test('formatting then parsing gives back the cents', () => {
  fc.assert(
    fc.property(cents, (value) => {
      const wire = amountValue(value);
      assert.match(wire, wireForm);
      assert.equal(parseAmount(wire), value);
      assert.deepEqual(formatAmount(value), { value: wire, formatted: `$${wire.slice(0, -4)}` });
    }),
  );
});

test('parsing then formatting gives back the exact string', () => {
  const wire = fc
    .tuple(fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9][0-9]{0,12}$/)), fc.stringMatching(/^[0-9]{2}$/))
    .map(([whole, fraction]) => `${whole}.${fraction} NZD`);
  fc.assert(
    fc.property(wire, (input) => {
      const value = parseAmount(input);
      assert.notEqual(value, null, input);
      assert.equal(amountValue(value!), input);
    }),
  );
});

test('anything not in the exact form is refused', () => {
  const near = fc
    .tuple(
      fc.stringMatching(/^-?[0-9]{0,6}([.,][0-9]{0,3})?$/),
      fc.constantFrom(' NZD', 'NZD', ' nzd', ' USD', '', '  NZD', ' NZD ', ' NZ'),
    )
    .map(([number, suffix]) => number + suffix);
  const mutated = fc
    .tuple(
      fc.integer({ min: 0, max: 10 ** 9 }),
      fc.nat(),
      fc.string({ minLength: 1, maxLength: 2, unit: 'binary' }),
      fc.boolean(),
    )
    .map(([value, at, inserted, replace]) => {
      const wire = amountValue(value);
      const index = at % (wire.length + 1);
      return wire.slice(0, index) + inserted + wire.slice(index + (replace ? 1 : 0));
    });
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), near, mutated), (input) => {
      const value = parseAmount(input);
      if (wireForm.test(input) && input.length <= 24) assert.equal(amountValue(value!), input);
      else assert.equal(value, null, JSON.stringify(input));
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.anything(), (input) => {
      if (typeof input !== 'string') assert.equal(parseAmount(input), null);
    }),
  );
});

test('examples at the edges', () => {
  assert.equal(parseAmount('0.00 NZD'), 0); // well-formed; the request rules refuse zero
  assert.equal(parseAmount('0.01 NZD'), 1);
  assert.equal(parseAmount('5000.00 NZD'), 500_000);
  for (const bad of [
    '00.01 NZD',
    '.50 NZD',
    '1. NZD',
    '1.5 NZD',
    '1.005 NZD',
    '+1.00 NZD',
    '-1.00 NZD',
    '1.00 NZD\n',
    '１.00 NZD',
    '1e2.00 NZD',
    '99999999999999999999.00 NZD',
  ]) {
    assert.equal(parseAmount(bad), null, bad);
  }
  assert.equal(amountValue(5), '0.05 NZD');
  assert.deepEqual(formatAmount(123456), { value: '1234.56 NZD', formatted: '$1234.56' });
  assert.equal(displayAmount(123456789), '$1,234,567.89');
  assert.equal(displayAmount(99), '$0.99');
  assert.equal(displayAmount(-123456), '-$1,234.56');
  assert.deepEqual(formatAmount(-250), { value: '-2.50 NZD', formatted: '-$2.50' });
});
