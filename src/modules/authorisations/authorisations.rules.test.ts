import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EMPTY_DETAILS, type PayerDetails } from '../customers/customers.rules.ts';
import { mergePayerDetails } from './authorisations.rules.ts';

const text = fc.oneof(fc.constant(''), fc.string({ maxLength: 12 }));
const nullableText = fc.option(fc.string({ minLength: 1, maxLength: 12 }), { nil: null });
const details = fc.record({
  email: fc.option(fc.emailAddress(), { nil: null }),
  first_name: nullableText,
  last_name: nullableText,
  phone: nullableText,
  address1: text,
  address2: text,
  address3: text,
  address4: text,
  city: text,
  postcode: text,
  marketing_opt_in: fc.boolean(),
}) as fc.Arbitrary<PayerDetails>;
const given = fc.option(
  fc.record(
    { email: fc.emailAddress(), first_name: nullableText, last_name: nullableText, phone: nullableText },
    { requiredKeys: [] },
  ),
  { nil: null },
) as fc.Arbitrary<Partial<PayerDetails> | null>;

test("the merchant's details win field by field, what the payer typed fills the rest, the email is lower-cased", () => {
  fc.assert(
    fc.property(given, fc.option(details, { nil: null }), (merchant, typed) => {
      const merged = mergePayerDetails(merchant, typed);
      for (const key of Object.keys(EMPTY_DETAILS) as Array<keyof PayerDetails>) {
        const fromMerchant = merchant?.[key];
        const expected =
          fromMerchant !== undefined && fromMerchant !== null && fromMerchant !== ''
            ? fromMerchant
            : (typed ?? EMPTY_DETAILS)[key];
        if (key === 'email')
          assert.equal(
            merged.email,
            String(expected ?? '')
              .trim()
              .toLowerCase(),
          );
        else assert.deepEqual(merged[key], expected);
      }
    }),
  );
});

test('merging again changes nothing, so details merged once and merged at approval agree', () => {
  fc.assert(
    fc.property(given, fc.option(details, { nil: null }), (merchant, typed) => {
      const once = mergePayerDetails(merchant, typed);
      assert.deepEqual(mergePayerDetails(merchant, once), once);
    }),
  );
});

test('only payer-detail fields are taken from the merchant', () => {
  const merged = mergePayerDetails({ email: 'A@B.nz', ...({ token: 'x' } as object) } as Partial<PayerDetails>, null);
  assert.equal(merged.email, 'a@b.nz');
  assert.equal((merged as Record<string, unknown>).token, undefined);
});
