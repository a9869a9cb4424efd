// Payments through the hosted page and the sandbox bank, on both engines (buildTestApp via checkoutWorld; TEST_ENGINE picks the store).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authoriseAtBank } from '../../src/modules/test-helpers/pay.bank-driver.ts';
import {
  checkoutWorld,
  createRequest,
  eventsOf,
  payViaPage,
  returnToService,
  submitPage,
  type CheckoutWorld,
} from './checkout.fixtures.ts';

const PARTICULARS = /^V-[A-Z0-9]{6}$/;

async function paymentsOf(world: CheckoutWorld, requestId: string) {
  const listed = await world.api.get(`/v1/requests/${requestId}/payments`);
  assert.equal(listed.status, 200, listed.text);
  return listed.body.payments as any[];
}

test('a fixed single request paid at the sandbox bank: successful, request paid, events in order, payer sent on', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    amount: '12.50 NZD',
    reference: 'INV-42',
    merchant_identifier: 'order-42',
    success_redirect_url: 'https://shop.example/thanks?x=1',
  });
  const next = await payViaPage(world, request.id, {});
  const [payment] = await paymentsOf(world, request.id);
  assert.equal(payment.status, 'successful');
  const onward = new URL(next);
  assert.equal(onward.origin + onward.pathname, 'https://shop.example/thanks');
  assert.deepEqual(Object.fromEntries(onward.searchParams), {
    x: '1',
    request_id: request.id,
    payment_id: payment.id,
    status: 'successful',
  });

  assert.deepEqual(payment.amount, { value: '0.01 NZD', formatted: '$0.01' });
  assert.deepEqual(payment.requested_amount, { value: '12.50 NZD', formatted: '$12.50' });
  assert.match(payment.pcr.particulars, PARTICULARS);
  assert.equal(payment.pcr.code, 'TONO');
  assert.equal(payment.pcr.reference, 'INV-42');
  assert.equal(payment.merchant_identifier, 'order-42');
  assert.equal(payment.provider, 'sandbox');
  assert.equal(payment.is_test_mode, true);
  assert.equal(payment.failure_reason, null);
  assert.ok(payment.completed_at);
  assert.equal(payment.cust_info, undefined);

  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'paid');
  assert.deepEqual((await world.api.get(`/v1/payments/${payment.id}`)).body, { payment });
  assert.deepEqual((await world.api.get(`/payments/${payment.id}`)).body, { payment });
  const byStatus = await world.api.get('/v1/payments', {
    query: { status: 'successful', merchant_identifier: 'order-42' },
  });
  assert.deepEqual(byStatus.body, { payments: [payment], has_more: false });
  assert.deepEqual((await world.api.get('/v1/payments', { query: { status: 'failed' } })).body, {
    payments: [],
    has_more: false,
  });
  const notFound = await world.live.get(`/v1/payments/${payment.id}`);
  assert.equal(notFound.status, 404);
  assert.deepEqual(notFound.body, {
    code: 'not_found.payment',
    message: `No such payment: ${payment.id}`,
    params: { id: payment.id },
  });

  // Events written in one millisecond have no defined order among themselves.
  const events = await eventsOf(world);
  assert.deepEqual(events.map((e) => e.type).sort(), [
    'payment.created',
    'payment.status_updated',
    'request.created',
    'request.status_updated',
  ]);
  const ofType = (type: string) => events.find((e) => e.type === type)!;
  assert.deepEqual(ofType('payment.created').data, {
    id: payment.id,
    request_id: request.id,
    user_id: world.merchant.userId,
    merchant_identifier: 'order-42',
    status: 'awaiting-consent',
    updated_at: payment.created_at,
  });
  assert.deepEqual(ofType('payment.status_updated').data, {
    id: payment.id,
    request_id: request.id,
    user_id: world.merchant.userId,
    merchant_identifier: 'order-42',
    status: 'successful',
    updated_at: payment.updated_at,
  });
  assert.deepEqual(ofType('request.status_updated').data, {
    id: request.id,
    user_id: world.merchant.userId,
    merchant_identifier: 'order-42',
    status: 'paid',
    updated_at: payment.updated_at,
  });

  // The page now says it is paid and takes no new payment.
  const page = await fetch(`${world.baseUrl}/pay/${request.id}`);
  assert.match(await page.text(), /has been paid/);
  const again = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
  assert.equal(again.status, 409);
  const helper = await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {});
  assert.equal(helper.status, 409);
  assert.deepEqual(helper.body, {
    code: 'conflict.invalid_state',
    message: 'Cannot pay a request whose status is paid',
    params: { status: 'paid' },
  });
});

test('declined at the bank: cancelled, request still active, payer sent to the failure URL, and can try again', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    amount: '8.00 NZD',
    failure_redirect_url: 'https://shop.example/sorry',
  });
  const next = await payViaPage(world, request.id, {}, 'decline');
  const [payment] = await paymentsOf(world, request.id);
  assert.equal(payment.status, 'cancelled');
  assert.match(payment.failure_reason, /^declined_at_bank/);
  assert.equal(new URL(next).searchParams.get('status'), 'cancelled');
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
  assert.deepEqual(
    (await eventsOf(world, payment.id)).map((e) => [e.type, e.data.status]),
    [
      ['payment.created', 'awaiting-consent'],
      ['payment.status_updated', 'cancelled'],
    ],
  );
  // Without a redirect URL the result page explains, with a way to try again.
  const plain = await createRequest(world, { amount: '8.00 NZD' });
  const resultPath = await payViaPage(world, plain.id, {}, 'decline');
  const result = await (await fetch(`${world.baseUrl}${resultPath}`)).text();
  assert.match(result, /Payment cancelled/);
  assert.match(result, /declined the payment at your bank/);
  assert.match(result, new RegExp(`href="/pay/${plain.id}"[^>]*>Try again`));
});

test('the pay test helper: approve, decline, dynamic amounts, details and errors', async (t) => {
  const world = await checkoutWorld(t);
  const fixed = await createRequest(world, { amount: '20.00 NZD', type: 'multi' });
  const approved = await world.api.post(`/v1/test-helpers/requests/${fixed.id}/pay`, {});
  assert.equal(approved.status, 200, approved.text);
  assert.equal(approved.body.payment.status, 'successful');
  const declined = await world.api.post(`/v1/test-helpers/requests/${fixed.id}/pay`, { outcome: 'decline' });
  assert.equal(declined.body.payment.status, 'cancelled');
  assert.equal((await world.api.get(`/v1/requests/${fixed.id}`)).body.request.status, 'active', 'multi stays active');

  const dynamic = await createRequest(world, {
    allow_dynamic_amount: true,
    minimum_payment_amount: 500,
    maximum_payment_amount: 5000,
  });
  const missing = await world.api.post(`/v1/test-helpers/requests/${dynamic.id}/pay`, {});
  assert.deepEqual(
    [missing.status, missing.body],
    [
      400,
      {
        code: 'bad_request.missing_param.amount',
        message: 'amount is required: this request lets the payer choose the amount',
        params: { field: 'amount' },
      },
    ],
  );
  const tooMuch = await world.api.post(`/v1/test-helpers/requests/${dynamic.id}/pay`, { amount: '50.01 NZD' });
  assert.deepEqual(
    [tooMuch.status, tooMuch.body],
    [
      400,
      {
        code: 'bad_request.invalid_param.amount',
        message: 'The amount must be at most $50.00',
        params: { field: 'amount' },
      },
    ],
  );
  const badForm = await world.api.post(`/v1/test-helpers/requests/${dynamic.id}/pay`, { amount: '10 NZD' });
  assert.equal(badForm.body.code, 'bad_request.invalid_param.amount');
  const chosen = await world.api.post(`/v1/test-helpers/requests/${dynamic.id}/pay`, { amount: '33.30 NZD' });
  assert.equal(chosen.body.payment.status, 'successful');
  assert.equal(chosen.body.payment.requested_amount.value, '33.30 NZD');
  assert.equal(chosen.body.payment.amount.value, '0.01 NZD');

  const unknownField = await world.api.post(`/v1/test-helpers/requests/${fixed.id}/pay`, {
    outcome: 'approve',
    tip: 1,
  });
  assert.deepEqual(unknownField.body, {
    code: 'bad_request.unknown_param.tip',
    message: 'tip is not a parameter of this endpoint',
    params: { field: 'tip' },
  });
  const live = await world.live.post(`/v1/test-helpers/requests/${fixed.id}/pay`, {});
  assert.equal(live.status, 404);
  const other = await world.api.post('/v1/test-helpers/requests/request_01JD2Q8Z7M3V4K5N6P7R8S9T0V/pay', {});
  assert.deepEqual(other.body, {
    code: 'not_found.request',
    message: 'No such request: request_01JD2Q8Z7M3V4K5N6P7R8S9T0V',
    params: { id: 'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V' },
  });
});

test('test mode: a 67.80 request fails at the callback', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '67.80 NZD' });
  const paid = await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {});
  assert.equal(paid.body.payment.status, 'failed');
  assert.match(paid.body.payment.failure_reason, /^test_amount_67_80/);
  assert.equal(paid.body.payment.amount.value, '0.01 NZD');
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
  assert.deepEqual(
    (await eventsOf(world, paid.body.payment.id)).map((e) => e.data.status),
    ['awaiting-consent', 'failed'],
  );
  const dynamic = await createRequest(world, { allow_dynamic_amount: true });
  const viaPage = await payViaPage(world, dynamic.id, { amount_other: '67.80' });
  const [payment] = await paymentsOf(world, dynamic.id);
  assert.equal(payment.status, 'failed');
  assert.match(await (await fetch(`${world.baseUrl}${viaPage}`)).text(), /Payment failed/);
});

test('two payers approve one single request at the same moment: exactly one successful payment', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '15.00 NZD' });
  const returns = [];
  for (let i = 0; i < 3; i += 1) {
    const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
    assert.equal(submitted.status, 303, submitted.body);
    returns.push(await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`));
  }
  await Promise.all(returns.map((url) => returnToService(url)));
  const payments = await paymentsOf(world, request.id);
  assert.deepEqual(payments.map((p) => p.status).sort(), ['cancelled', 'cancelled', 'successful']);
  for (const p of payments.filter((p) => p.status === 'cancelled'))
    assert.equal(p.failure_reason, 'request_already_paid');
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'paid');
  const requestEvents = (await eventsOf(world, request.id)).map((e) => e.type);
  assert.deepEqual(requestEvents, ['request.created', 'request.status_updated']);
  // A repeated return (the payer reloads) changes nothing.
  await returnToService(returns[0]);
  assert.deepEqual((await paymentsOf(world, request.id)).map((p) => p.status).sort(), [
    'cancelled',
    'cancelled',
    'successful',
  ]);
});

test('a reload of the bank return while the bank is paying: the second return (its code spent) leaves the payment to the first', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '15.00 NZD' });
  const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
  assert.equal(submitted.status, 303, submitted.body);
  const back = await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`);
  // The reload arrives while the first return is between its code exchange and its claim; the
  // reload's exchange of the same code fails, once the first return has claimed the payment and is
  // at the bank, and the reload answers before the bank does.
  const connector = world.app.deps.banks.connectorFor('sandbox', 'test')!;
  const exchange = connector.exchangeCode.bind(connector);
  const submit = connector.submitPayment.bind(connector);
  let reload: Promise<string> | undefined;
  let reloadExchanging = () => {};
  const reloadAtExchange = new Promise<void>((resolve) => {
    reloadExchanging = resolve;
  });
  let firstAtBank = () => {};
  const firstClaimed = new Promise<void>((resolve) => {
    firstAtBank = resolve;
  });
  t.mock.method(connector, 'exchangeCode', async (input: Parameters<typeof exchange>[0]) => {
    if (!reload) {
      const token = await exchange(input);
      reload = returnToService(back);
      await reloadAtExchange;
      return token;
    }
    reloadExchanging();
    await firstClaimed;
    return exchange(input);
  });
  t.mock.method(connector, 'submitPayment', async (input: Parameters<typeof submit>[0]) => {
    firstAtBank();
    await reload;
    return submit(input);
  });

  const first = await returnToService(back);
  const [payment] = await paymentsOf(world, request.id);
  assert.equal(payment.status, 'successful', 'the payment the bank made');
  assert.equal(payment.failure_reason, null);
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'paid');
  assert.deepEqual(
    (await eventsOf(world, payment.id)).map((e) => e.data.status),
    ['awaiting-consent', 'successful'],
  );
  assert.match(first, new RegExp(`/pay/${request.id}`));
  assert.ok(reload, 'the reload ran while the bank was asked');
  assert.doesNotMatch(await (await fetch(new URL(await reload!, world.baseUrl))).text(), /Payment failed/);
});

test('a multi request is paid twice and stays active', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '4.50 NZD', type: 'multi' });
  await payViaPage(world, request.id, {});
  await payViaPage(world, request.id, {});
  const payments = await paymentsOf(world, request.id);
  assert.deepEqual(
    payments.map((p) => p.status),
    ['successful', 'successful'],
  );
  assert.notEqual(payments[0].pcr.particulars, payments[1].pcr.particulars);
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
  assert.deepEqual(
    (await world.api.get('/v1/payments', { query: { request_id: request.id, limit: '1' } })).body.has_more,
    true,
  );
});

test('the sweeper cancels a payment abandoned for 30 minutes; a late return does not execute it', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '9.99 NZD' });
  const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
  assert.equal(submitted.status, 303);
  const late = await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`);
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 29 * 60 });
  assert.equal((await paymentsOf(world, request.id))[0].status, 'awaiting-consent');
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 61 });
  const [payment] = await paymentsOf(world, request.id);
  assert.equal(payment.status, 'cancelled');
  assert.match(payment.failure_reason, /^abandoned/);
  assert.deepEqual(
    (await eventsOf(world, payment.id)).map((e) => e.data.status),
    ['awaiting-consent', 'cancelled'],
  );
  await returnToService(late);
  assert.equal((await paymentsOf(world, request.id))[0].status, 'cancelled');
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
});

test('the reconciler polls an unconfirmed payment until the bank confirms it', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '11.00 NZD' });
  const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
  // the merchant arranges it with its test key while the payer is at the bank
  const held = await world.api.post(`/v1/test-helpers/requests/${request.id}/delay`, { seconds: 120 });
  assert.equal(held.status, 200, held.text);
  assert.equal(held.body.request.id, request.id);
  const back = await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`);
  const resultPath = await returnToService(back);
  assert.equal((await paymentsOf(world, request.id))[0].status, 'unconfirmed');
  assert.match(await (await fetch(`${world.baseUrl}${resultPath}`)).text(), /Waiting for your bank to confirm/);
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 30 });
  assert.equal((await paymentsOf(world, request.id))[0].status, 'unconfirmed');
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 300 });
  const [payment] = await paymentsOf(world, request.id);
  assert.equal(payment.status, 'successful');
  assert.deepEqual(
    (await eventsOf(world, payment.id)).map((e) => e.data.status),
    ['awaiting-consent', 'unconfirmed', 'successful'],
  );
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'paid');
  const status = await (await fetch(`${world.baseUrl}/pay/${request.id}/status?payment_id=${payment.id}`)).json();
  assert.deepEqual(status, {
    request: { id: request.id, status: 'paid' },
    payment: { id: payment.id, status: 'successful' },
  });
});

test('payer details: cust_info on the payment, the customer created then updated only on change', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    amount: '30.00 NZD',
    type: 'multi',
    require_customer_basic_info: true,
    collect_customer_phone: true,
    require_customer_address: true,
    allow_marketing_opt_in: true,
  });
  const refused = await submitPage(world.baseUrl, request.id, { bank: 'sandbox', email: 'ana@example.com' });
  assert.equal(refused.status, 400);
  assert.match(refused.body, /Enter your first name/);
  assert.match(refused.body, /aria-invalid="true"/);
  assert.equal((await paymentsOf(world, request.id)).length, 0, 'an invalid form creates nothing');

  const details = {
    email: 'Ana@Example.com',
    first_name: 'Ana',
    last_name: 'Ngata',
    address1: '1 Queen St',
    city: 'Auckland',
    postcode: '1010',
    marketing_opt_in: 'yes',
  };
  await payViaPage(world, request.id, details);
  const [first] = await paymentsOf(world, request.id);
  assert.equal(first.status, 'successful');
  assert.match(first.cust_info.id, /^custinfo_/);
  assert.deepEqual(
    { ...first.cust_info, id: undefined, created_at: undefined, updated_at: undefined },
    {
      id: undefined,
      payment_id: first.id,
      email: 'ana@example.com',
      phone: '',
      first_name: 'Ana',
      last_name: 'Ngata',
      address1: '1 Queen St',
      address2: '',
      address3: '',
      address4: '',
      city: 'Auckland',
      postcode: '1010',
      marketing_opt_in: true,
      created_at: undefined,
      updated_at: undefined,
    },
  );
  const listed = await world.api.get('/v1/customers', { query: { email: 'ANA@example.com' } });
  assert.equal(listed.body.customers.length, 1);
  const customer = listed.body.customers[0];
  assert.deepEqual(
    { ...customer, id: undefined, created_at: undefined, updated_at: undefined },
    {
      id: undefined,
      business_user_id: world.merchant.userId,
      email: 'ana@example.com',
      phone: '',
      first_name: 'Ana',
      last_name: 'Ngata',
      address: { address1: '1 Queen St', address2: '', address3: '', address4: '', city: 'Auckland', postcode: '1010' },
      created_at: undefined,
      updated_at: undefined,
    },
  );
  assert.deepEqual((await world.api.get(`/customers/${customer.id}`)).body, { customer });
  assert.equal((await world.live.get(`/v1/customers/${customer.id}`)).status, 404, 'customers are per mode');

  await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {
    cust_info: {
      email: 'ana@example.com',
      first_name: 'Ana',
      last_name: 'Ngata',
      phone: '021 555 0100',
      address1: '1 Queen St',
      city: 'Auckland',
      postcode: '1010',
    },
  });
  await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {
    cust_info: {
      email: 'ana@example.com',
      first_name: 'Ana',
      last_name: 'Ngata',
      address1: '1 Queen St',
      city: 'Auckland',
      postcode: '1010',
    },
  });
  const customerEvents = await eventsOf(world, customer.id);
  assert.deepEqual(
    customerEvents.map((e) => e.type),
    ['customer.created', 'customer.updated'],
  );
  assert.equal(customerEvents[1].data.phone, '021 555 0100');
  assert.deepEqual(Object.keys(customerEvents[0].data), [
    'id',
    'user_id',
    'created_at',
    'email',
    'first_name',
    'last_name',
    'phone',
    'address',
  ]);
  const helperMissing = await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {
    cust_info: { email: 'b@example.com' },
  });
  assert.deepEqual(helperMissing.body, {
    code: 'bad_request.missing_param.cust_info.first_name',
    message: 'cust_info.first_name is required by this request',
    params: { field: 'cust_info.first_name' },
  });
});

/** The name, phone and address of a customer or of a payment's cust_info, to compare the two. */
function personOf(details: any) {
  const { first_name, last_name, phone } = details;
  const { address1, address2, address3, address4, city, postcode } = details.address ?? details;
  return { first_name, last_name, phone, address: { address1, address2, address3, address4, city, postcode } };
}

test('payer details typed at checkout create a customer and fill its empty fields, but never replace what it has', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    amount: '30.00 NZD',
    type: 'multi',
    require_customer_basic_info: true,
    collect_customer_phone: true,
    require_customer_address: true,
  });
  const at = (address1: string, city: string, postcode: string) => ({
    address1,
    address2: '',
    address3: '',
    address4: '',
    city,
    postcode,
  });
  const ana = {
    email: 'ana@example.com',
    first_name: 'Ana',
    last_name: 'Ngata',
    ...at('1 Queen St', 'Auckland', '1010'),
  };
  await payViaPage(world, request.id, ana);
  const [customer] = (await world.api.get('/v1/customers', { query: { email: ana.email } })).body.customers;

  // Anyone can type Ana's email: their details reach the payment, and only the phone Ana never
  // gave reaches her customer record.
  const mallory = { first_name: 'Mallory', last_name: 'Smith', phone: '022 555 0199' };
  await payViaPage(world, request.id, {
    email: 'ANA@example.com',
    ...mallory,
    ...at('9 Dark Lane', 'Wellington', '6011'),
  });
  const [typedPayment] = await paymentsOf(world, request.id);
  assert.deepEqual(
    {
      payment: personOf(typedPayment.cust_info),
      customer: personOf((await world.api.get(`/v1/customers/${customer.id}`)).body.customer),
    },
    {
      payment: { ...mallory, address: at('9 Dark Lane', 'Wellington', '6011') },
      customer: {
        first_name: 'Ana',
        last_name: 'Ngata',
        phone: '022 555 0199',
        address: at('1 Queen St', 'Auckland', '1010'),
      },
    },
    'the payment shows what was typed; the customer keeps what it had and gains the phone it lacked',
  );

  // Other details for Ana's email, typed at a one-off checkout and at her recurring consent's.
  const eve = { first_name: 'Eve', last_name: 'Jones', phone: '027 555 0123', ...at('5 High St', 'Dunedin', '9016') };
  await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, { cust_info: { email: ana.email, ...eve } });
  const recurring = await createRequest(world, {
    recurring_options: { period: 'weekly', max_per_period: '50.00 NZD' },
    cust_info: { email: ana.email },
  });
  const consent = (await world.api.post(`/v1/test-helpers/requests/${recurring.id}/pay`, { cust_info: eve })).body
    .recurring_consent;
  assert.deepEqual(
    (await eventsOf(world, consent.customer_id)).map((event) => [event.type, event.data.first_name, event.data.phone]),
    [
      ['customer.created', 'Ana', null],
      ['customer.updated', 'Ana', '022 555 0199'],
    ],
    'customer.updated only for the phone filled in; details that would replace change nothing',
  );

  const nina = {
    email: 'nina@example.com',
    first_name: 'Nina',
    last_name: 'Tane',
    ...at('3 Victoria St', 'Hamilton', '3204'),
  };
  await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, { cust_info: nina });
  assert.deepEqual(
    (await world.api.get('/v1/customers')).body.customers.map((c: any) => ({ email: c.email, ...personOf(c) })),
    [
      {
        email: nina.email,
        first_name: 'Nina',
        last_name: 'Tane',
        phone: '',
        address: at('3 Victoria St', 'Hamilton', '3204'),
      },
      {
        email: ana.email,
        first_name: 'Ana',
        last_name: 'Ngata',
        phone: '022 555 0199',
        address: at('1 Queen St', 'Auckland', '1010'),
      },
    ],
    'a new email creates a customer from what was typed; the existing one is as it was',
  );

  // The merchant's own cust_info on a request is its word: it replaces what the customer has, and
  // what the payer typed beside it still only fills.
  const corrected = await createRequest(world, {
    amount: '5.00 NZD',
    cust_info: { email: ana.email, first_name: 'Anahera', phone: '021 000 0001' },
  });
  const paidCorrected = await world.api.post(`/v1/test-helpers/requests/${corrected.id}/pay`, {
    cust_info: { email: ana.email, first_name: 'Mallory' },
  });
  assert.equal(paidCorrected.status, 200, paidCorrected.text);
  assert.deepEqual(
    personOf((await world.api.get(`/v1/customers/${customer.id}`)).body.customer),
    {
      first_name: 'Anahera',
      last_name: 'Ngata',
      phone: '021 000 0001',
      address: at('1 Queen St', 'Auckland', '1010'),
    },
    'the fields the merchant gave replace the stored ones',
  );
  // Given for another email, they are not about the payer who paid: Ana's record stays as it is.
  const forAlice = await createRequest(world, {
    amount: '5.00 NZD',
    cust_info: { email: 'alice@example.com', first_name: 'Alice', phone: '021 999 9999' },
  });
  const paidByAna = await world.api.post(`/v1/test-helpers/requests/${forAlice.id}/pay`, {
    cust_info: { email: ana.email },
  });
  assert.equal(paidByAna.status, 200, paidByAna.text);
  assert.deepEqual(
    personOf((await world.api.get(`/v1/customers/${customer.id}`)).body.customer),
    {
      first_name: 'Anahera',
      last_name: 'Ngata',
      phone: '021 000 0001',
      address: at('1 Queen St', 'Auckland', '1010'),
    },
    'the merchant’s details for another email change nothing here',
  );
});

test('expired and deleted requests take no new payments', async (t) => {
  const world = await checkoutWorld(t);
  const expiring = await createRequest(world, { amount: '5.00 NZD', expires_in: '5m' });
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 301 });
  const expired = await world.api.post(`/v1/test-helpers/requests/${expiring.id}/pay`, {});
  assert.deepEqual(
    [expired.status, expired.body],
    [
      409,
      {
        code: 'conflict.invalid_state',
        message: 'Cannot pay a request whose status is expired',
        params: { status: 'expired' },
      },
    ],
  );
  const deleted = await createRequest(world, { amount: '5.00 NZD' });
  await world.api.delete(`/v1/requests/${deleted.id}`);
  const refused = await world.api.post(`/v1/test-helpers/requests/${deleted.id}/pay`, {});
  assert.deepEqual(refused.body.params, { status: 'deleted' });
  assert.equal((await submitPage(world.baseUrl, deleted.id, { bank: 'sandbox' })).status, 409);
});

/** One of the test helpers that make the sandbox bank act on a payment, as the merchant calls them. */
async function bankHook(world: CheckoutWorld, paymentId: string, action: string, body: unknown) {
  const response = await world.api.post(`/v1/test-helpers/payments/${paymentId}/${action}`, body);
  assert.equal(response.status, 200, response.text);
  assert.equal(response.body.payment.id, paymentId);
}

test('the bank refuses the payment at execution: failed with its reason, request still payable', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '19.00 NZD' });
  const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
  await bankHook(world, (await paymentsOf(world, request.id))[0].id, 'decline-next', { reason: 'insufficient_funds' });
  await returnToService(await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`));
  const [payment] = await paymentsOf(world, request.id);
  assert.equal(payment.status, 'failed');
  assert.match(payment.failure_reason, /insufficient_funds/);
  assert.deepEqual(
    (await eventsOf(world, payment.id)).map((e) => e.data.status),
    ['awaiting-consent', 'failed'],
  );
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
  assert.equal(
    (await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.payment.status,
    'successful',
    'a failed payment does not block the next',
  );
});

test('an unconfirmed payment the bank later rejects ends failed', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '21.00 NZD' });
  const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
  await bankHook(world, (await paymentsOf(world, request.id))[0].id, 'delay', {});
  await returnToService(await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`));
  assert.equal((await paymentsOf(world, request.id))[0].status, 'unconfirmed');
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 60 });
  assert.equal((await paymentsOf(world, request.id))[0].status, 'unconfirmed', 'held at the bank until released');
  await bankHook(world, (await paymentsOf(world, request.id))[0].id, 'release', {
    outcome: 'rejected',
    reason: 'fraud_check',
  });
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 600 });
  const [payment] = await paymentsOf(world, request.id);
  assert.equal(payment.status, 'failed');
  assert.match(payment.failure_reason, /fraud_check/);
  assert.deepEqual(
    (await eventsOf(world, payment.id)).map((e) => e.data.status),
    ['awaiting-consent', 'unconfirmed', 'failed'],
  );
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
});

test('a single request whose approved payment is at the bank is neither deleted nor expired until it settles: paid, or payable again', async (t) => {
  const world = await checkoutWorld(t);
  const heldAtBank = async (amount: string) => {
    const request = await createRequest(world, { amount, expires_in: '5m' });
    const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
    const [payment] = await paymentsOf(world, request.id);
    await bankHook(world, payment.id, 'delay', {});
    await returnToService(await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`));
    assert.equal((await paymentsOf(world, request.id))[0].status, 'unconfirmed');
    return { request, payment };
  };
  const statusOf = async (id: string) => (await world.api.get(`/v1/requests/${id}`)).body.request.status;
  const paid = await heldAtBank('21.00 NZD');
  const refused = await heldAtBank('22.00 NZD');

  for (const held of [paid, refused]) {
    const deleting = await world.api.delete(`/v1/requests/${held.request.id}`);
    assert.equal(deleting.status, 409, deleting.text);
    assert.equal(deleting.body.code, 'conflict.payment_at_bank');
    assert.deepEqual(deleting.body.params, { payment_id: held.payment.id });
  }
  // Past expires_at: the expiry waits for the bank.
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 6 * 60 });
  assert.deepEqual([await statusOf(paid.request.id), await statusOf(refused.request.id)], ['active', 'active']);

  await bankHook(world, paid.payment.id, 'release', { outcome: 'completed' });
  await bankHook(world, refused.payment.id, 'release', { outcome: 'rejected', reason: 'fraud_check' });
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 10 * 60 });
  assert.equal((await paymentsOf(world, paid.request.id))[0].status, 'successful');
  assert.equal(await statusOf(paid.request.id), 'paid', 'the payment the payer approved makes it paid');
  assert.deepEqual(
    (await eventsOf(world, paid.request.id)).map((e) => e.type),
    ['request.created', 'request.status_updated'],
    'paid, never expired',
  );
  assert.equal((await paymentsOf(world, refused.request.id))[0].status, 'failed');
  assert.equal(await statusOf(refused.request.id), 'expired', 'it expires once its payment failed');
});

test('a bank that cannot be reached: the payment fails and the payer sees the bank error page', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '7.00 NZD' });
  world.app.deps.config.sandboxBankUrl = 'http://127.0.0.1:9/sandbox-bank';
  const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
  assert.equal(submitted.status, 502);
  assert.match(submitted.body, /We could not reach your bank/);
  assert.match(submitted.body, /No money has left your account/);
  const [payment] = await paymentsOf(world, request.id);
  assert.equal(payment.status, 'failed');
  assert.match(payment.failure_reason, /^bank_unavailable/);
});
