import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { customerChanges, EMPTY_DETAILS, type CustomerFields, type PayerDetails } from './customers.rules.ts';

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

test('applying the changes twice changes nothing more (customer.updated only on change)', () => {
  fc.assert(
    fc.property(customer, details, (current, given) => {
      const once = { ...current, ...customerChanges(current, given) };
      assert.deepEqual(customerChanges(once, given), {});
    }),
  );
});

test('fields not given keep their stored value', () => {
  fc.assert(
    fc.property(customer, (current) => {
      assert.deepEqual(customerChanges(current, { ...EMPTY_DETAILS, email: 'a@b.nz' }), {});
    }),
  );
  const current: CustomerFields = {
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
  assert.deepEqual(customerChanges(current, { ...EMPTY_DETAILS, email: 'a@b.nz', first_name: 'Anne' }), {
    first_name: 'Anne',
  });
  assert.deepEqual(
    customerChanges(current, { ...EMPTY_DETAILS, email: 'a@b.nz', address1: '2 B St', city: 'Wgtn', postcode: '6011' }),
    { address1: '2 B St', city: 'Wgtn', postcode: '6011' },
  );
});
