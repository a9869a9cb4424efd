import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { centsToDecimal, displayAmount, MAX_PAYMENT_CENTS } from '../../shared/money.ts';
import {
  boundsOf,
  effectiveStatus,
  failsAtCallback,
  missingDetails,
  newParticulars,
  PARTICULARS_PATTERN,
  parsePayerAmount,
  paymentAmount,
  settledCents,
} from './payments.rules.ts';

test('particulars are V- and 6 of [A-Z0-9], whatever the random source gives', () => {
  fc.assert(
    fc.property(fc.array(fc.nat(), { minLength: 6, maxLength: 6 }), (draws) => {
      let i = 0;
      const value = newParticulars((max) => draws[i++] % max);
      assert.match(value, PARTICULARS_PATTERN);
    }),
  );
  assert.match(newParticulars(), PARTICULARS_PATTERN);
});

test('test mode moves one cent; 67.80 fails only in test mode', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: MAX_PAYMENT_CENTS }), (cents) => {
      assert.equal(settledCents('test', cents), 1);
      assert.equal(settledCents('live', cents), cents);
    }),
  );
  assert.equal(failsAtCallback('test', 6780), true);
  assert.equal(failsAtCallback('live', 6780), false);
  assert.equal(failsAtCallback('test', 6781), false);
});

test('a dynamic amount is accepted exactly within the bounds and the 5000.00 cap', () => {
  const bounds = fc.tuple(
    fc.option(fc.integer({ min: 1, max: 600_000 })),
    fc.option(fc.integer({ min: 1, max: 600_000 })),
  );
  fc.assert(
    fc.property(bounds, fc.integer({ min: 1, max: 700_000 }), ([minCents, maxCents], chosen) => {
      const rule = { fixedCents: null, minCents, maxCents };
      const { min, max } = boundsOf(rule);
      const result = paymentAmount(rule, chosen);
      assert.equal(result.ok, chosen >= min && chosen <= max && chosen <= MAX_PAYMENT_CENTS);
      if (result.ok) assert.equal(result.cents, chosen);
    }),
  );
  assert.deepEqual(paymentAmount({ fixedCents: 1250, minCents: null, maxCents: null }, 99), { ok: true, cents: 1250 });
  assert.deepEqual(paymentAmount({ fixedCents: null, minCents: 500, maxCents: 2000 }, null), {
    ok: false,
    message: 'Enter an amount',
  });
  assert.deepEqual(paymentAmount({ fixedCents: null, minCents: 500, maxCents: 2000 }, 499), {
    ok: false,
    message: 'The amount must be at least $5.00',
  });
  assert.deepEqual(paymentAmount({ fixedCents: null, minCents: null, maxCents: null }, 500_001), {
    ok: false,
    message: 'The amount must be at most $5,000.00',
  });
});

test('payer-typed amounts', () => {
  assert.equal(parsePayerAmount('12'), 1200);
  assert.equal(parsePayerAmount('12.5'), 1250);
  assert.equal(parsePayerAmount(' $1,234.05 '), 123405);
  assert.equal(parsePayerAmount('7.00 NZD'), 700);
  for (const bad of ['', 'abc', '1.234', '-5', '1e3', '12.', '.5']) assert.equal(parsePayerAmount(bad), null, bad);
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 999_999_999 }), (cents) => {
      assert.equal(parsePayerAmount(`${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`), cents);
    }),
  );
});

test('a comma in a payer-typed amount only ever separates thousands', () => {
  assert.equal(parsePayerAmount('1,250'), 125_000);
  assert.equal(parsePayerAmount('1,250.00'), 125_000);
  assert.equal(parsePayerAmount('$1,234,567.8 NZD'), 123_456_780);
  // A decimal comma is refused, never read as a whole number of dollars 100 times too big.
  for (const bad of [
    '12,50',
    '1,2',
    ',,5',
    ',5',
    '5,',
    '1,,250',
    '1,25.00',
    '1,2500',
    '1234,567',
    '1,250,5',
    '12,500,00',
  ])
    assert.equal(parsePayerAmount(bad), null, bad);
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 999_999_999 }), (cents) => {
      // displayAmount writes "$1,234.50": the same cents with or without the separators.
      assert.equal(parsePayerAmount(displayAmount(cents)), cents);
      assert.equal(parsePayerAmount(displayAmount(cents).replace(/,/g, '')), cents);
    }),
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 9_999_999 }),
      fc.stringMatching(/^\d{0,6}$/).filter((digits) => digits.length !== 3),
      fc.constantFrom('', '.5', '.50'),
      (dollars, afterComma, cents) => {
        const typed = `${dollars},${afterComma}${cents}`;
        assert.equal(parsePayerAmount(typed), null, typed);
      },
    ),
  );
});

test('a payer-typed amount is read exactly or not at all', () => {
  const typed = fc.stringMatching(/^[ $]?[0-9,.]{0,12}( NZD)?$/);
  fc.assert(
    fc.property(typed, (input) => {
      const cents = parsePayerAmount(input);
      if (cents === null) return;
      // Whatever is accepted is the digits as written, separators dropped: never a comma read as a point.
      const digits = input.replace(/[^0-9.]/g, '');
      const [whole, fraction = ''] = digits.split('.');
      assert.equal(centsToDecimal(cents), `${Number(whole)}.${fraction.padEnd(2, '0')}`);
      for (const comma of input.matchAll(/,/g)) assert.match(input.slice(comma.index + 1), /^\d{3}(?!\d)/, input);
    }),
  );
});

test('an active request past its expiry is already expired', () => {
  assert.equal(effectiveStatus({ status: 'active', expires_at: 1000 }, 999), 'active');
  assert.equal(effectiveStatus({ status: 'active', expires_at: 1000 }, 1000), 'expired');
  assert.equal(effectiveStatus({ status: 'paid', expires_at: 1000 }, 2000), 'paid');
  assert.equal(effectiveStatus({ status: 'active', expires_at: null }, 2000), 'active');
});

test('required payer details', () => {
  const all = { require_customer_basic_info: 1, require_customer_phone: 1, require_customer_address: 1 };
  assert.deepEqual(missingDetails(all, null), [
    'email',
    'first_name',
    'last_name',
    'phone',
    'address1',
    'city',
    'postcode',
  ]);
  assert.deepEqual(
    missingDetails({ require_customer_basic_info: 0, require_customer_phone: 0, require_customer_address: 0 }, null),
    [],
  );
  assert.deepEqual(
    missingDetails(all, {
      email: 'a@b.nz',
      first_name: 'A',
      last_name: ' ',
      phone: '021 123',
      address1: '1 Queen St',
      city: 'Auckland',
      postcode: '1010',
    }),
    ['last_name'],
  );
});
