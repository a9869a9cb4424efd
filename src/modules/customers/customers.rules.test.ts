import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ADDRESS_FIELDS,
  customerChanges,
  merchantReplacements,
  EMPTY_DETAILS,
  filledFromCustomer,
  PERSON_FIELDS,
  type CustomerFields,
  type PayerDetails,
} from './customers.rules.ts';

const str = fc.string({ maxLength: 8 });
const customer = fc.record<CustomerFields>({
  phone: fc.option(str),
  first_name: fc.option(str),
  last_name: fc.option(str),
  address1: str,
  address2: str,
  address3: str,
  address4: str,
  city: str,
  postcode: str,
});
const details = fc.record<PayerDetails>({
  email: fc.constant('a@b.nz'),
  phone: fc.option(str),
  first_name: fc.option(str),
  last_name: fc.option(str),
  address1: str,
  address2: str,
  address3: str,
  address4: str,
  city: str,
  postcode: str,
  marketing_opt_in: fc.boolean(),
});

const merchantDetails = fc.record<Partial<PayerDetails>>(
  { first_name: fc.option(str), last_name: fc.option(str), phone: fc.option(str) },
  { requiredKeys: [] },
);

const isEmpty = (value: string | null | undefined) => value === undefined || value === null || value === '';

const ann: CustomerFields = {
  phone: '021',
  first_name: 'Ann',
  last_name: 'Lee',
  address1: '1 A St',
  address2: '',
  address3: '',
  address4: '',
  city: 'Akl',
  postcode: '1010',
};

test('applying the changes twice changes nothing more (customer.updated only on change)', () => {
  fc.assert(
    fc.property(customer, details, merchantDetails, (current, typed, given) => {
      const once = { ...current, ...customerChanges(current, typed, given) };
      assert.deepEqual(customerChanges(once, typed, given), {});
    }),
  );
});

test("what a payer typed never replaces a customer's stored field: it only fills empty ones", () => {
  fc.assert(
    fc.property(customer, details, (current, typed) => {
      const changes = customerChanges(current, typed);
      for (const field of PERSON_FIELDS) {
        if (!isEmpty(current[field])) assert.equal(changes[field], undefined, field);
        else if (!isEmpty(typed[field])) assert.equal(changes[field], typed[field], field);
      }
      const storedAddress = ADDRESS_FIELDS.some((field) => current[field] !== '');
      if (storedAddress) for (const field of ADDRESS_FIELDS) assert.equal(changes[field], undefined, field);
    }),
  );
  const typed = {
    ...EMPTY_DETAILS,
    email: 'a@b.nz',
    first_name: 'Mal',
    phone: '022',
    address1: '9 Z St',
    city: 'Wgtn',
  };
  assert.deepEqual(customerChanges(ann, typed), {});
  const lacking = { ...ann, phone: null, address1: '', city: '', postcode: '' };
  assert.deepEqual(customerChanges(lacking, typed), { phone: '022', address1: '9 Z St', city: 'Wgtn' });
});

test('fields the merchant gave replace stored ones; fields not given keep their stored value', () => {
  fc.assert(
    fc.property(customer, (current) => {
      assert.deepEqual(customerChanges(current, EMPTY_DETAILS, {}), {});
    }),
  );
  const typed = { ...EMPTY_DETAILS, email: 'a@b.nz', last_name: 'Mal' };
  assert.deepEqual(customerChanges(ann, typed, { first_name: 'Anne' }), { first_name: 'Anne' });
  assert.deepEqual(merchantReplacements(ann, { address1: '2 B St', city: 'Wgtn', postcode: '6011' }), {
    address1: '2 B St',
    city: 'Wgtn',
    postcode: '6011',
  });
});

test('details filled from the customer keep what they say, take what they lack, and keep an address whole', () => {
  fc.assert(
    fc.property(details, customer, (given, known) => {
      const filled = filledFromCustomer(given, known);
      for (const field of PERSON_FIELDS) {
        const said = given[field] !== null && given[field] !== '';
        assert.equal(filled[field], said ? given[field] : known[field] || given[field]);
      }
      const givenAddress = ADDRESS_FIELDS.some((field) => given[field] !== '');
      for (const field of ADDRESS_FIELDS) assert.equal(filled[field], givenAddress ? given[field] : known[field]);
      assert.equal(filled.email, given.email);
      assert.equal(filled.marketing_opt_in, given.marketing_opt_in);
    }),
  );
});
