// A subscription authorised the way a payer does it: the hosted page (plain form posts), the
// sandbox bank's own sign-in and approval pages, and the return; then the test clock charges it.
// checkoutWorld builds on buildTestApp, so this file runs on SQLite and on PostgreSQL (TEST_ENGINE).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkoutWorld, createRequest, eventsOf, payViaPage } from '../../../test/flows/checkout.fixtures.ts';

test('the hosted page states the plan; approval creates the subscription, the customer and a paid request; the clock charges it', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Coffee club',
    subscription_options: { amount: '15.00 NZD', period: 'fortnightly', start_date: '2027-03-03', total_count: 6 },
    cust_info: { email: 'Pat@Example.com', first_name: 'Pat' },
  });
  const page = await fetch(`${world.baseUrl}/pay/${request.id}`).then((r) => r.text());
  assert.match(page, /\$15\.00 every fortnight from 3 March 2027, 6 payments/);
  assert.match(
    page.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '),
    /Set up with the email pat@example\.com/,
    'the payer sees which email manages the plan',
  );
  assert.match(
    page.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '),
    /Your bank will ask you to allow up to \$30\.00 a fortnight, at most 2 payments, although the plan charges \$15\.00 a fortnight: the room is for a retry when a charge fails/,
    'why the bank asks for more than the plan, with its figures',
  );

  const landed = await payViaPage(world, request.id, {});
  assert.equal(landed, `/pay/${request.id}?outcome=authorised`);
  // the payer reads what was set up, not that a payment was received (no money has moved)
  const textOf = (html: string) =>
    html
      .replace(/<[^>]+>/g, ' ')
      .replace(/&#39;/g, "'")
      .replace(/\s+/g, ' ');
  const setUp = textOf(await fetch(`${world.baseUrl}${landed}`).then((r) => r.text()));
  assert.match(setUp, /Subscription set up/);
  assert.match(
    setUp,
    /Your subscription “[^”]+” with Kōwhai Coffee: \$15\.00 every fortnight from 3 March 2027, 6 payments\./,
  );
  assert.match(setUp, /First charge: Wednesday 3 March 2027 at 10:00am\./);
  assert.match(setUp, /No money has moved yet\./);
  assert.doesNotMatch(setUp, /has been paid|already received/);
  const listed = await world.api.get('/v1/subscriptions', { query: { request_id: request.id } });
  assert.equal(listed.status, 200, listed.text);
  const [sub] = listed.body.subscriptions;
  assert.equal(sub.status, 'active');
  assert.equal(sub.email, 'pat@example.com');
  assert.equal(sub.next_charge_at, '2027-03-02T21:00:00.000Z', '10:00 NZDT on 3 March 2027');
  assert.equal((await world.api.get(`/v1/requests/${request.id}`)).body.request.status, 'paid');
  const customers = await world.api.get('/v1/customers', { query: { email: 'pat@example.com' } });
  assert.equal(customers.body.customers[0].id, sub.customer_id);
  assert.deepEqual(
    (await eventsOf(world, sub.id)).map((e) => e.type),
    ['subscription.created'],
  );

  // The whole plan through the test clock: six fortnightly charges, then subscription.completed.
  const advanced = await world.api.post('/v1/test-helpers/clock/advance', { to: '2027-06-01T00:00:00.000Z' });
  assert.equal(advanced.status, 200, advanced.text);
  const done = (await world.api.get(`/v1/subscriptions/${sub.id}`)).body.subscription;
  assert.equal(done.status, 'completed');
  assert.equal(done.successful_charges, 6);
  const payments = (await world.api.get(`/subscriptions/${sub.id}/payments`)).body.payments as any[];
  assert.equal(payments.length, 6);
  assert.ok(
    payments.every(
      (p) => p.status === 'successful' && p.cust_info.email === 'pat@example.com' && p.subscription_id === sub.id,
    ),
  );
  const nz = (iso: string) =>
    new Date(iso).toLocaleString('en-NZ', {
      timeZone: 'Pacific/Auckland',
      hour12: false,
      day: 'numeric',
      month: 'short',
      hour: '2-digit',
      minute: '2-digit',
    });
  assert.deepEqual(payments.map((p) => nz(p.created_at)).reverse(), [
    '3 Mar, 10:00',
    '17 Mar, 10:00',
    '31 Mar, 10:00',
    '14 Apr, 10:00',
    '28 Apr, 10:00',
    '12 May, 10:00',
  ]);
  assert.deepEqual(
    (await eventsOf(world, sub.id)).map((e) => e.type),
    ['subscription.created', 'subscription.completed'],
  );
  const later = textOf(await fetch(`${world.baseUrl}/pay/${request.id}`).then((r) => r.text()));
  assert.match(later, /Subscription completed.*Every payment has been made; nothing more will be charged\./);
});

test('a plan whose first charge is taken at approval says what was charged, then when the next one is', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, {
    message: 'Veg box',
    subscription_options: { amount: '15.00 NZD', period: 'monthly' },
    cust_info: { email: 'pat@example.com' },
  });
  const landed = await payViaPage(world, request.id, {});
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 5 });
  const text = (await fetch(`${world.baseUrl}${landed}`).then((r) => r.text()))
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ');
  assert.match(
    text,
    /Charged: \$15\.00 on [A-Z][a-z]+day \d{1,2} [A-Z][a-z]+ \d{4} at \d{1,2}:\d{2}[ap]m\. Next charge: /,
  );
});
