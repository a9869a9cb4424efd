import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiClient, createTestMerchant } from '../../../test/helpers.ts';
import {
  advanceTo,
  authorise,
  consentHarness,
  createRecurringRequest,
  execute,
  sandboxBalance,
  type ConsentHarness,
} from '../../../test/support/consents.ts';

// Recurring consents end to end: the pay test helper authorises at the sandbox bank over HTTP,
// executions go through the connector to the same bank. Runs on SQLite and on PostgreSQL
// (consentHarness uses freshDb, which follows TEST_ENGINE).

const weekly = { period: 'weekly', max_per_period: '100.00 NZD', max_per_payment: '50.00 NZD' } as const;

const pageText = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');

async function paymentsOf(h: ConsentHarness, consentId: string) {
  return h.runtime.deps.db.selectFrom('payments').selectAll().where('recurring_consent_id', '=', consentId).execute();
}

test('authorising a recurring request creates the consent, the customer and a paid request; the token is only in the event', async (t) => {
  const h = await consentHarness(t);
  const { request, consent, token, payResponse } = await authorise(h, { ...weekly, end_date: '2027-12-31' });
  assert.match(consent.id, /^recurring_[0-9A-Z]{26}$/);
  assert.equal(consent.status, 'active');
  assert.equal(consent.email, 'payer@example.com');
  assert.equal(consent.request_id, request.id);
  assert.equal(consent.merchant_identifier, 'sub-42');
  assert.deepEqual(consent.limits, {
    period: 'weekly',
    max_per_period: '100.00 NZD',
    max_per_payment: '50.00 NZD',
    total_count: null,
    total_amount: null,
    end_date: '2027-12-31T10:59:59.999Z',
  });
  assert.match(token, /^rct_[A-Za-z0-9_-]{43}$/);
  assert.ok(!payResponse.includes(token));

  const stored = await h.runtime.deps.db
    .selectFrom('recurring_consents')
    .selectAll()
    .where('id', '=', consent.id)
    .executeTakeFirstOrThrow();
  assert.notEqual(stored.token_hash, token);
  assert.ok(!JSON.stringify(stored).includes(token));

  const again = await h.api.get(`/v1/requests/${request.id}`);
  assert.equal(again.body.request.status, 'paid');
  // the request's page says what the payer set up, not that a payment was received
  const page = pageText(await fetch(`${h.baseUrl}/pay/${request.id}`).then((r) => r.text()));
  assert.match(page, /Regular payments authorised/);
  assert.match(
    page,
    /You have authorised Test Merchant to take payments from your account, up to \$50\.00 a payment, \$100\.00 a week, until 31 December 2027\./,
  );
  assert.match(page, /No money has moved yet\./);
  assert.match(
    page,
    /To stop future payments, revoke this authority on your Tono payer page \(sign in with your email\) or at your bank\./,
  );
  assert.match(await fetch(`${h.baseUrl}/pay/${request.id}`).then((r) => r.text()), /href="\/customer"/);
  assert.doesNotMatch(page, /has been paid|already received/);
  const customer = await h.api.get(`/v1/customers/${consent.customer_id}`);
  assert.equal(customer.status, 200);
  assert.equal(customer.body.customer.email, 'payer@example.com');

  const events = await h.runtime.deps.db
    .selectFrom('events')
    .select(['type', 'body'])
    .where('user_id', '=', h.merchant.userId)
    .execute();
  const types = events.map((e) => e.type);
  for (const type of ['recurring_payment.authorised', 'customer.created', 'request.status_updated'])
    assert.ok(types.includes(type), type);
  const authorised = JSON.parse(events.find((e) => e.type === 'recurring_payment.authorised')!.body);
  // stored masked (rct_… and its last 4 characters); the token itself only sealed beside it
  assert.deepEqual(authorised.data, {
    id: consent.id,
    merchant_identifier: 'sub-42',
    status: 'active',
    token: `rct_…${token.slice(-4)}`,
  });
  assert.equal(authorised.version, 1);
  const listed = (await h.api.get('/v1/events', { query: { type: 'recurring_payment.authorised' } })).body.events[0];
  assert.equal(listed.data.token, `rct_…${token.slice(-4)}`);
});

test('a declined authorisation creates nothing and the request stays active', async (t) => {
  const h = await consentHarness(t);
  const request = await createRecurringRequest(h, weekly);
  const declined = await h.api.post(`/v1/test-helpers/requests/${request.id}/pay`, { outcome: 'decline' });
  assert.equal(declined.status, 200);
  assert.equal(declined.body.recurring_consent, null);
  assert.equal((await h.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active');
  const list = await h.api.get('/v1/recurring-consents');
  assert.deepEqual(list.body, { recurring_consents: [], has_more: false });
  const events = await h.runtime.deps.db
    .selectFrom('events')
    .select('type')
    .where('user_id', '=', h.merchant.userId)
    .execute();
  assert.deepEqual(
    events.map((e) => e.type),
    ['request.created'],
  );
});

test('max_per_payment: exactly at the limit passes, one cent over is refused and creates no payment', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, weekly);
  const ok = await execute(h, token, '50.00 NZD', 'inv-1');
  assert.equal(ok.status, 201);
  assert.equal(ok.body.payment.status, 'successful');
  const over = await execute(h, token, '50.01 NZD', 'inv-2');
  assert.equal(over.status, 422);
  assert.deepEqual(over.body, {
    code: 'payment_rejected.max_per_payment',
    message: '50.01 NZD is more than the consent allows for one payment (50.00 NZD)',
    params: { amount: '50.01 NZD', limit: '50.00 NZD', remaining: '50.00 NZD' },
  });
  assert.equal((await paymentsOf(h, consent.id)).length, 1);
});

test('a payment has every field of the payment object; test mode moves 0.01 NZD while limits use the amount asked for', async (t) => {
  const h = await consentHarness(t);
  const { consent, request, token } = await authorise(h, weekly);
  const before = await sandboxBalance(h);
  const reply = await execute(h, token, '50.00 NZD', 'inv-1', { reference: 'INV-1', merchant_identifier: 'order-1' });
  assert.equal(reply.status, 201);
  const payment = reply.body.payment;
  for (const field of [
    'id',
    'request_id',
    'provider',
    'amount',
    'pcr',
    'is_test_mode',
    'status',
    'completed_at',
    'created_at',
    'updated_at',
    'failure_reason',
  ]) {
    assert.ok(field in payment, field);
  }
  assert.equal(payment.request_id, request.id);
  assert.equal(payment.provider, 'sandbox');
  assert.deepEqual(payment.amount, { value: '0.01 NZD', formatted: '$0.01' });
  assert.deepEqual(payment.requested_amount, { value: '50.00 NZD', formatted: '$50.00' });
  assert.match(payment.pcr.particulars, /^V-[A-Z0-9]{6}$/);
  assert.equal(payment.pcr.code, 'TONO');
  assert.equal(payment.pcr.reference, 'INV-1');
  assert.equal(payment.merchant_identifier, 'order-1');
  assert.equal(payment.is_test_mode, true);
  assert.equal(payment.failure_reason, null);
  assert.ok(payment.completed_at);
  assert.equal(before - (await sandboxBalance(h)), 1);

  const read = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.deepEqual(read.body.recurring_consent.usage.total, {
    amount: { value: '50.00 NZD', formatted: '$50.00' },
    count: 1,
    remaining_amount: null,
    remaining_count: null,
  });
  assert.deepEqual(read.body.recurring_consent.usage.period.remaining, { value: '50.00 NZD', formatted: '$50.00' });
  const events = await h.runtime.deps.db
    .selectFrom('events')
    .select('body')
    .where('object_id', '=', payment.id)
    .where('type', '=', 'payment.status_updated')
    .execute();
  assert.equal(events.length, 1);
  assert.equal(JSON.parse(events[0].body).data.status, 'successful');
});

test('max_per_period over a Monday-to-Sunday week that contains the end of daylight saving', async (t) => {
  const h = await consentHarness(t);
  const { token } = await authorise(h, {
    period: 'weekly',
    max_per_period: '100.00 NZD',
    max_per_payment: '60.00 NZD',
  });
  await advanceTo(h, '2027-03-28T11:00:00.000Z'); // Monday 29 March 00:00 NZDT
  assert.equal((await execute(h, token, '60.00 NZD', 'a')).status, 201);
  assert.equal((await execute(h, token, '40.00 NZD', 'b')).status, 201);
  await advanceTo(h, '2027-04-04T11:59:00.000Z'); // Sunday 4 April 23:59 NZST, after the clocks went back
  const over = await execute(h, token, '0.01 NZD', 'c');
  assert.deepEqual(over.body, {
    code: 'payment_rejected.max_per_period',
    message: "0.01 NZD is more than the 0.00 NZD left of the consent's 100.00 NZD a week",
    params: {
      amount: '0.01 NZD',
      limit: '100.00 NZD',
      remaining: '0.00 NZD',
      period: 'weekly',
      period_start: '2027-03-28T11:00:00.000Z',
      period_end: '2027-04-04T12:00:00.000Z',
    },
  });
  assert.equal(over.status, 422);
  await advanceTo(h, '2027-04-04T12:00:00.000Z'); // Monday 5 April 00:00 NZST
  assert.equal((await execute(h, token, '50.00 NZD', 'd')).status, 201);
});

test('a daily period rolls over at local midnight on the day daylight saving starts (a 23-hour day)', async (t) => {
  const h = await consentHarness(t);
  const { token } = await authorise(h, { period: 'daily', max_per_period: '10.00 NZD' });
  await advanceTo(h, '2027-09-26T10:59:00.000Z'); // Sunday 26 September 23:59 NZDT
  assert.equal((await execute(h, token, '10.00 NZD', 'a')).status, 201);
  const over = await execute(h, token, '0.01 NZD', 'b');
  assert.equal(over.status, 422);
  assert.equal(over.body.params.period_start, '2027-09-25T12:00:00.000Z');
  assert.equal(over.body.params.period_end, '2027-09-26T11:00:00.000Z');
  await advanceTo(h, '2027-09-26T11:00:00.000Z'); // Monday 27 September 00:00 NZDT
  assert.equal((await execute(h, token, '10.00 NZD', 'c')).status, 201);
});

test('a monthly period starts on the 1st at local midnight; April contains the change back to standard time', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'monthly', max_per_period: '20.00 NZD' });
  await advanceTo(h, '2027-03-31T10:59:00.000Z'); // 31 March 23:59 NZDT
  assert.equal((await execute(h, token, '20.00 NZD', 'a')).status, 201);
  assert.equal((await execute(h, token, '0.01 NZD', 'b')).body.params.period_start, '2027-02-28T11:00:00.000Z');
  await advanceTo(h, '2027-03-31T11:00:00.000Z'); // 1 April 00:00 NZDT
  assert.equal((await execute(h, token, '20.00 NZD', 'c')).status, 201);
  const over = await execute(h, token, '0.01 NZD', 'd');
  assert.equal(over.body.params.period_start, '2027-03-31T11:00:00.000Z');
  assert.equal(over.body.params.period_end, '2027-04-30T12:00:00.000Z'); // 1 May 00:00 NZST
  const read = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.deepEqual(read.body.recurring_consent.usage.period, {
    start: '2027-03-31T11:00:00.000Z',
    end: '2027-04-30T12:00:00.000Z',
    amount: { value: '20.00 NZD', formatted: '$20.00' },
    count: 1,
    remaining: { value: '0.00 NZD', formatted: '$0.00' },
  });
});

test('total_count and total_amount: at the limit passes, one more is refused', async (t) => {
  const h = await consentHarness(t);
  const counted = await authorise(h, { period: 'daily', max_per_period: '1000.00 NZD', total_count: 2 });
  assert.equal((await execute(h, counted.token, '1.00 NZD', 'a')).status, 201);
  assert.equal((await execute(h, counted.token, '1.00 NZD', 'b')).status, 201);
  assert.deepEqual((await execute(h, counted.token, '1.00 NZD', 'c')).body, {
    code: 'payment_rejected.total_count',
    message: 'The consent allows 2 payments in total and 0 remain',
    params: { limit: 2, remaining: 0 },
  });

  const capped = await authorise(h, { period: 'daily', max_per_period: '1000.00 NZD', total_amount: '30.00 NZD' });
  assert.equal((await execute(h, capped.token, '20.00 NZD', 'd')).status, 201);
  assert.equal((await execute(h, capped.token, '10.00 NZD', 'e')).status, 201);
  const over = await execute(h, capped.token, '0.01 NZD', 'f');
  assert.equal(over.status, 422);
  assert.deepEqual(over.body, {
    code: 'payment_rejected.total_amount',
    message: "0.01 NZD is more than the 0.00 NZD left of the consent's total of 30.00 NZD",
    params: { amount: '0.01 NZD', limit: '30.00 NZD', remaining: '0.00 NZD' },
  });
});

test('end_date: a payment at the last moment passes; afterwards the consent is expired and executions are refused', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, {
    period: 'daily',
    max_per_period: '100.00 NZD',
    end_date: '2027-01-31',
  });
  await advanceTo(h, '2027-01-31T10:59:59.000Z'); // 23:59:59 NZDT on the end date
  assert.equal((await execute(h, token, '1.00 NZD', 'a')).status, 201);
  await advanceTo(h, '2027-01-31T11:00:00.000Z');
  const read = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.equal(read.body.recurring_consent.status, 'expired');
  const stored = await h.runtime.deps.db
    .selectFrom('recurring_consents')
    .select('status')
    .where('id', '=', consent.id)
    .executeTakeFirstOrThrow();
  assert.equal(stored.status, 'expired', 'the expiry job ran on the test clock');
  const sent = await h.runtime.deps.db
    .selectFrom('events')
    .select(['type', 'body'])
    .where('object_id', '=', consent.id)
    .orderBy('id')
    .execute();
  assert.deepEqual(
    sent.map((e) => e.type),
    ['recurring_payment.authorised', 'recurring_payment.expired'],
  );
  assert.deepEqual(JSON.parse(sent[1]!.body).data, {
    id: consent.id,
    merchant_identifier: consent.merchant_identifier,
    status: 'expired',
  });
  assert.deepEqual((await execute(h, token, '1.00 NZD', 'b')).body, {
    code: 'payment_rejected.end_date',
    message: 'The consent ended at 2027-01-31T10:59:59.999Z; no payments can be taken after its end_date',
    params: { end_date: '2027-01-31T10:59:59.999Z' },
  });
  assert.equal((await h.api.put(`/v1/recurring-consents/${consent.id}/revoke`)).status, 409);
});

test('N parallel executions where only K fit: exactly K succeed', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '10.00 NZD' });
  const replies = await Promise.all(Array.from({ length: 25 }, (_, i) => execute(h, token, '1.00 NZD', `par-${i}`)));
  const created = replies.filter((r) => r.status === 201);
  const refused = replies.filter((r) => r.status === 422);
  assert.equal(created.length, 10);
  assert.equal(refused.length, 15);
  assert.ok(created.every((r) => r.body.payment.status === 'successful'));
  assert.ok(refused.every((r) => r.body.code === 'payment_rejected.max_per_period'));
  assert.equal((await paymentsOf(h, consent.id)).length, 10);
  // A refused execution is rolled back whole: no payment, no payment.created.
  const createdEvents = (await h.api.get('/v1/events?type=payment.created&limit=100')).body.events;
  assert.deepEqual(new Set(createdEvents.map((e: any) => e.data.id)), new Set(created.map((r) => r.body.payment.id)));
});

test('idempotency: replay returns the original with 200, other parameters are a 409, concurrent duplicates charge once', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, weekly);
  const first = await execute(h, token, '10.00 NZD', 'inv-7');
  assert.equal(first.status, 201);
  const replay = await execute(h, token, '10.00 NZD', 'inv-7');
  assert.equal(replay.status, 200);
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.deepEqual(replay.body, first.body);
  const reused = await execute(h, token, '10.01 NZD', 'inv-7');
  assert.equal(reused.status, 409);
  assert.deepEqual(reused.body, {
    code: 'conflict.idempotency_key_reused',
    message: 'This idempotency_key was used for a payment with different parameters',
    params: { idempotency_key: 'inv-7' },
  });

  const before = await sandboxBalance(h);
  const replies = await Promise.all(Array.from({ length: 8 }, () => execute(h, token, '5.00 NZD', 'inv-8')));
  assert.deepEqual(replies.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
  const ids = new Set(replies.map((r) => r.body.payment.id));
  assert.equal(ids.size, 1);
  assert.ok(replies.every((r) => r.body.payment.status === 'successful'));
  assert.equal(before - (await sandboxBalance(h)), 1, 'one charge of 0.01 NZD at the bank');
  assert.equal((await paymentsOf(h, consent.id)).length, 2);
});

test('the bank refuses: 201 with a failed payment and failure_reason, and failed payments do not count', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '10.00 NZD' });
  const declined = await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/decline-next`, {
    count: 1,
    reason: 'insufficient_funds',
  });
  assert.equal(declined.status, 200);
  const failed = await execute(h, token, '10.00 NZD', 'a');
  assert.equal(failed.status, 201);
  assert.equal(failed.body.payment.status, 'failed');
  assert.equal(failed.body.payment.failure_reason, 'insufficient_funds');
  assert.equal(
    (await execute(h, token, '10.00 NZD', 'a')).status,
    200,
    'a retry with the same key returns the failed payment',
  );
  const next = await execute(h, token, '10.00 NZD', 'b');
  assert.equal(next.status, 201);
  assert.equal(next.body.payment.status, 'successful');
});

test('the merchant revokes: here and at the bank; executions are then refused', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, weekly);
  const before = await execute(h, token, '2.00 NZD', 'before-revoking');
  assert.equal(before.status, 201);
  const revoked = await h.api.put(`/v1/recurring-consents/${consent.id}/revoke`);
  assert.equal(revoked.status, 200);
  assert.equal(revoked.body.recurring_consent.status, 'revoked');
  assert.ok(revoked.body.recurring_consent.revoked_at);
  assert.deepEqual((await execute(h, token, '1.00 NZD', 'a')).body, {
    code: 'payment_rejected.consent_revoked',
    message: 'The recurring consent has been revoked; no further payments can be taken with it',
    params: {},
  });
  const repeated = await execute(h, token, '2.00 NZD', 'before-revoking');
  assert.equal(repeated.status, 200, 'a repeat of a call made before the revocation is answered as it was');
  assert.deepEqual(repeated.body, before.body);
  assert.equal((await execute(h, token, '2.01 NZD', 'before-revoking')).status, 409);
  assert.equal(
    (await h.api.put(`/v1/recurring-consents/${consent.id}/revoke`)).status,
    200,
    'revoking again changes nothing',
  );
  const page = pageText(await fetch(`${h.baseUrl}/pay/${consent.request_id}`).then((r) => r.text()));
  assert.match(page, /Payment authority revoked.*no more payments can be taken with it/);
  const stored = await h.runtime.deps.db
    .selectFrom('recurring_consents')
    .selectAll()
    .where('id', '=', consent.id)
    .executeTakeFirstOrThrow();
  const atBank = await h.runtime.deps.banks
    .connectorFor('sandbox', 'test')!
    .getConsent({ consentId: stored.bank_consent_id, kind: 'enduring' });
  assert.ok(atBank.ok && atBank.status === 'Revoked');
  const types = (
    await h.runtime.deps.db.selectFrom('events').select('type').where('user_id', '=', h.merchant.userId).execute()
  ).map((e) => e.type);
  assert.ok(!types.includes('recurring_payment.revoked'));
});

test('the payer revokes in the dashboard: recurring_payment.revoked is sent and executions are refused', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, weekly);
  const revoked = await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/revoke-by-payer`, {});
  assert.equal(revoked.status, 200);
  assert.equal(revoked.body.recurring_consent.status, 'revoked');
  const event = await h.runtime.deps.db
    .selectFrom('events')
    .select('body')
    .where('type', '=', 'recurring_payment.revoked')
    .executeTakeFirstOrThrow();
  assert.deepEqual(JSON.parse(event.body).data, { id: consent.id, merchant_identifier: 'sub-42', status: 'revoked' });
  assert.equal((await execute(h, token, '1.00 NZD', 'a')).body.code, 'payment_rejected.consent_revoked');
});

test('the payer revokes at the bank: no webhook; the next execution fails and marks the consent revoked', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, weekly);
  const atBank = await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/revoke-at-bank`, {});
  assert.equal(atBank.status, 200);
  assert.equal(atBank.body.recurring_consent.status, 'active', 'the service has not heard yet');
  const failed = await execute(h, token, '1.00 NZD', 'a');
  assert.equal(failed.status, 201);
  assert.equal(failed.body.payment.status, 'failed');
  assert.equal(failed.body.payment.failure_reason, 'consent_revoked');
  assert.equal((await h.api.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent.status, 'revoked');
  assert.equal((await execute(h, token, '1.00 NZD', 'b')).body.code, 'payment_rejected.consent_revoked');
  const types = (
    await h.runtime.deps.db.selectFrom('events').select('type').where('user_id', '=', h.merchant.userId).execute()
  ).map((e) => e.type);
  assert.ok(!types.includes('recurring_payment.revoked'));
});

test("unknown tokens, other merchants' tokens and the other mode are all 404, with nothing revealed", async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, weekly);
  const notFound = { code: 'not_found.recurring_consent', message: 'No such recurring consent', params: {} };
  assert.deepEqual((await execute(h, 'rct_nope', '1.00 NZD', 'a')).body, notFound);
  const other = await createTestMerchant(h.runtime, 'Other');
  const otherApi = apiClient(h.runtime, other.testKey);
  const foreign = await otherApi.post('/v1/payments', { token, amount: '1.00 NZD', idempotency_key: 'a' });
  assert.equal(foreign.status, 404);
  assert.deepEqual(foreign.body, notFound);
  assert.equal((await otherApi.get(`/v1/recurring-consents/${consent.id}`)).status, 404);
  // Another merchant's test helpers cannot reach this consent at the sandbox bank either.
  assert.equal(
    (await otherApi.post(`/v1/test-helpers/recurring-consents/${consent.id}/decline-next`, { count: 5 })).status,
    404,
  );
  assert.equal(
    (await otherApi.post(`/v1/test-helpers/recurring-consents/${consent.id}/revoke-by-payer`, {})).status,
    404,
  );
  const live = apiClient(h.runtime, h.merchant.liveKey);
  assert.deepEqual(
    (await live.post('/v1/payments', { token, amount: '1.00 NZD', idempotency_key: 'a' })).body,
    notFound,
  );
  assert.equal((await live.get(`/v1/recurring-consents/${consent.id}`)).status, 404);
  assert.equal((await live.post(`/v1/test-helpers/recurring-consents/${consent.id}/revoke-by-payer`, {})).status, 404);
  assert.equal((await paymentsOf(h, consent.id)).length, 0);
  const own = await execute(h, token, '1.00 NZD', 'after-foreign-hooks');
  assert.equal(own.body.payment?.status, 'successful', own.text);
});

test('bad execution input gets a clear error and changes nothing', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, weekly);
  const unknown = await execute(h, token, '1.00 NZD', 'a', { surprise: 1 });
  assert.equal(unknown.status, 400);
  assert.deepEqual(unknown.body, {
    code: 'bad_request.unknown_param.surprise',
    message: 'surprise is not a parameter of this endpoint',
    params: { field: 'surprise' },
  });
  const badAmount = await execute(h, token, '5 NZD', 'a');
  assert.equal(badAmount.status, 400);
  assert.equal(badAmount.body.code, 'bad_request.invalid_param.amount');
  assert.deepEqual(badAmount.body.params, { field: 'amount' });
  assert.match(badAmount.body.message, /<decimal> NZD/);
  const zero = await execute(h, token, '0.00 NZD', 'a');
  assert.deepEqual(zero.body, {
    code: 'bad_request.invalid_param.amount',
    message: 'amount must be more than 0.00 NZD',
    params: { field: 'amount' },
  });
  const missing = await h.api.post('/v1/payments', { token, amount: '1.00 NZD' });
  assert.deepEqual(missing.body, {
    code: 'bad_request.missing_param.idempotency_key',
    message: 'idempotency_key is required',
    params: { field: 'idempotency_key' },
  });
  assert.equal((await paymentsOf(h, consent.id)).length, 0);
});

test('listing and reading consents: filters, pagination, never the token; the token appears in no response, log line or other event', async (t) => {
  const h = await consentHarness(t);
  const first = await authorise(h, weekly, { merchant_identifier: 'm-1' });
  const second = await authorise(
    h,
    { period: 'daily', max_per_period: '20.00 NZD' },
    { merchant_identifier: 'm-2', cust_info: { email: 'other@example.com' } },
  );
  const responses: string[] = [first.payResponse, second.payResponse];
  const call = async (reply: Promise<{ status: number; text: string; body: any }>) => {
    const r = await reply;
    responses.push(r.text);
    return r;
  };
  await call(execute(h, first.token, '5.00 NZD', 'k1'));
  await call(execute(h, first.token, '5.00 NZD', 'k1'));
  await call(execute(h, first.token, '60.00 NZD', 'k2'));
  const all = await call(h.api.get('/v1/recurring-consents'));
  assert.deepEqual(
    all.body.recurring_consents.map((c: any) => c.id),
    [second.consent.id, first.consent.id],
  );
  const page = await call(h.api.get('/v1/recurring-consents', { query: { limit: '1' } }));
  assert.equal(page.body.has_more, true);
  const next = await call(
    h.api.get('/v1/recurring-consents', { query: { limit: '1', starting_after: page.body.recurring_consents[0].id } }),
  );
  assert.deepEqual(
    next.body.recurring_consents.map((c: any) => c.id),
    [first.consent.id],
  );
  assert.equal(next.body.has_more, false);
  const byEmail = await call(h.api.get('/v1/recurring-consents', { query: { email: 'OTHER@example.com' } }));
  assert.deepEqual(
    byEmail.body.recurring_consents.map((c: any) => c.id),
    [second.consent.id],
  );
  const byRequest = await call(h.api.get('/v1/recurring-consents', { query: { request_id: first.request.id } }));
  assert.deepEqual(
    byRequest.body.recurring_consents.map((c: any) => c.id),
    [first.consent.id],
  );
  await call(h.api.put(`/v1/recurring-consents/${second.consent.id}/revoke`));
  const revoked = await call(h.api.get('/v1/recurring-consents', { query: { status: 'revoked' } }));
  assert.deepEqual(
    revoked.body.recurring_consents.map((c: any) => c.id),
    [second.consent.id],
  );
  const one = await call(h.api.get(`/v1/recurring-consents/${first.consent.id}`));
  assert.equal(one.body.recurring_consent.usage.total.count, 1);
  await call(h.api.get(`/v1/payments?limit=10`));

  for (const token of [first.token, second.token]) {
    for (const text of responses) assert.ok(!text.includes(token), 'no API response carries the token');
    for (const line of h.logs) assert.ok(!line.includes(token), 'no log line carries the token');
    const events = await h.runtime.deps.db.selectFrom('events').select(['type', 'body', 'secret_sealed']).execute();
    assert.deepEqual(
      events.filter((e) => e.body.includes(token) || e.secret_sealed?.includes(token)),
      [],
      'no stored event carries the token in clear',
    );
    const jobs = await h.runtime.deps.db.selectFrom('jobs').select('payload').execute();
    assert.ok(jobs.every((j) => !j.payload.includes(token)));
  }
  assert.ok(h.logs.length > 0, 'logs were captured');
});
