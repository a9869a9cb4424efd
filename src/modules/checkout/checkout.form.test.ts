import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  buyerDetailsNeeded,
  detailFieldsOf,
  parseCheckoutForm,
  quickAmountsBetween,
  suggestionsOf,
} from './checkout.form.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

const base = {
  id: 'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
  amount_cents: null,
  min_payment_cents: 500,
  max_payment_cents: 10_000,
  suggested_amounts: '10.00,25.00',
  require_customer_basic_info: 0,
  require_customer_phone: 0,
  collect_customer_phone: 0,
  require_customer_address: 0,
  allow_marketing_opt_in: 0,
  kind: 'payment',
} as unknown as RequestRow;
const banks = ['sandbox', 'anz'];

test('a suggestion or a typed amount; the typed one wins', () => {
  assert.deepEqual(parseCheckoutForm(base, { amount_choice: '25.00', bank: 'sandbox' }, banks), {
    ok: true,
    amountCents: 2500,
    bankId: 'sandbox',
    details: null,
  });
  assert.deepEqual(parseCheckoutForm(base, { amount_choice: '25.00', amount_other: '$42.5', bank: 'anz' }, banks), {
    ok: true,
    amountCents: 4250,
    bankId: 'anz',
    details: null,
  });
});

test('every problem is reported against its field', () => {
  assert.deepEqual(parseCheckoutForm(base, { amount_other: '200', bank: 'nope' }, banks), {
    ok: false,
    errors: [
      { field: 'amount_other', message: 'The amount must be at most $100.00' },
      { field: 'bank', message: 'Choose your bank' },
    ],
  });
  assert.deepEqual(parseCheckoutForm(base, { amount_other: '4.99', bank: 'anz' }, banks), {
    ok: false,
    errors: [{ field: 'amount_other', message: 'The amount must be at least $5.00' }],
  });
  for (const typed of ['ten', '12,50'])
    assert.deepEqual(parseCheckoutForm(base, { amount_other: typed, bank: 'anz' }, banks), {
      ok: false,
      errors: [
        {
          field: 'amount_other',
          message: 'Enter the amount in dollars and cents, with a full stop before the cents, for example 25.00',
        },
      ],
    });
  assert.deepEqual(parseCheckoutForm(base, { bank: 'anz' }, banks), {
    ok: false,
    errors: [{ field: 'amount_choice', message: 'Choose or enter an amount' }],
  });
});

test('required details, formats and the marketing opt-in', () => {
  const request = {
    ...base,
    amount_cents: 1000,
    require_customer_basic_info: 1,
    require_customer_phone: 1,
    collect_customer_phone: 1,
    require_customer_address: 1,
    allow_marketing_opt_in: 1,
  } as RequestRow;
  assert.deepEqual(detailFieldsOf(request), {
    email: 'required',
    names: 'required',
    phone: 'required',
    address: true,
    marketingOptIn: true,
  });
  const missing = parseCheckoutForm(request, { bank: 'anz', email: 'not-an-email', postcode: '12' }, banks);
  assert.equal(missing.ok, false);
  assert.deepEqual(!missing.ok && missing.errors.map((e) => e.field), [
    'email',
    'first_name',
    'last_name',
    'phone',
    'address1',
    'city',
    'postcode',
  ]);
  const ok = parseCheckoutForm(
    request,
    {
      bank: 'anz',
      email: 'Ana@Example.com',
      first_name: 'Ana',
      last_name: 'Lee',
      phone: '+64 21 555 0100',
      address1: '1 Queen St',
      city: 'Auckland',
      postcode: '1010',
      marketing_opt_in: 'yes',
    },
    banks,
  );
  assert.deepEqual(ok, {
    ok: true,
    amountCents: null,
    bankId: 'anz',
    details: {
      email: 'Ana@Example.com',
      first_name: 'Ana',
      last_name: 'Lee',
      phone: '+64 21 555 0100',
      address1: '1 Queen St',
      address2: '',
      address3: '',
      address4: '',
      city: 'Auckland',
      postcode: '1010',
      marketing_opt_in: true,
    },
  });
});

test('bounds without suggestions give a few round one-tap amounts inside them; suggestions win', () => {
  const bounded = { ...base, suggested_amounts: null } as unknown as RequestRow;
  assert.deepEqual(suggestionsOf(bounded), [500, 2000, 10_000], '$5, $20 and $100 between $5.00 and $100.00');
  assert.deepEqual(suggestionsOf(base), [1000, 2500], "the merchant's own suggestions");
  assert.deepEqual(quickAmountsBetween(750, 1200), [750, 1000, 1200], 'one round amount inside: the bounds too');
  assert.deepEqual(quickAmountsBetween(1, 500_000), [100, 10_000, 500_000]);
  assert.deepEqual(
    suggestionsOf({ ...bounded, max_payment_cents: null } as unknown as RequestRow),
    [],
    'one bound: none',
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 500_000 }), fc.integer({ min: 1, max: 500_000 }), (a, b) => {
      const [min, max] = a <= b ? [a, b] : [b, a];
      const amounts = quickAmountsBetween(min, max);
      assert.ok(amounts.length >= 1 && amounts.length <= 3, `${amounts}`);
      assert.ok(amounts.every((cents) => cents >= min && cents <= max));
      assert.deepEqual(
        amounts,
        [...new Set(amounts)].sort((x, y) => x - y),
      );
    }),
  );
});

test('over $1,000, a merchant issuing tax invoices needs the buyer’s name and address, also for an amount the payer chose', () => {
  const open = { ...base, min_payment_cents: 100, max_payment_cents: 500_000 } as RequestRow;
  const errorsOf = (values: Record<string, string>, issues: boolean) => {
    const parsed = parseCheckoutForm(open, { bank: 'sandbox', ...values }, banks, issues);
    return parsed.ok ? [] : parsed.errors.map((e) => e.field);
  };
  assert.deepEqual(errorsOf({ amount_other: '1000.00' }, true), []);
  assert.deepEqual(errorsOf({ amount_other: '1000.01' }, false), []);
  assert.deepEqual(errorsOf({ amount_other: '1000.01' }, true), [
    'first_name',
    'last_name',
    'address1',
    'city',
    'postcode',
  ]);
  const given = parseCheckoutForm(
    open,
    {
      bank: 'sandbox',
      amount_other: '2300.00',
      first_name: 'Aroha',
      last_name: 'Ngata',
      address1: '12 Tāmaki Drive',
      city: 'Auckland',
      postcode: '1071',
    },
    banks,
    true,
  );
  assert.ok(given.ok);
  assert.equal(given.details?.last_name, 'Ngata');
  assert.equal(given.details?.postcode, '1071');
  // Recurring consents and subscriptions are not asked on the page.
  assert.equal(buyerDetailsNeeded({ ...open, kind: 'subscription' } as RequestRow, 200_000, true), false);
  assert.equal(buyerDetailsNeeded({ ...open, amount_cents: 100_001 } as RequestRow, null, true), true);
  assert.equal(detailFieldsOf(open, true).address, true);
});
