// Subscriptions end to end on a listening service: the pay test helper approves at the mounted
// sandbox bank over HTTP, and the test clock drives charges, retries and events.
// listeningApp builds on buildTestApp, so this file runs on SQLite and on PostgreSQL (TEST_ENGINE).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient } from '../../../test/helpers.ts';
import { subscriptionsOverApi } from '../../../test/support/subscriptions.ts';

const DAY = 86_400_000;
const nzTime = (iso: string) => new Date(iso).toLocaleString('en-NZ', { timeZone: 'Pacific/Auckland', hour12: false });

async function setUp(t: TestContext) {
  const { app, merchant, api, clockNow, advanceTo, subscribe, get, payments } = await subscriptionsOverApi(t);
  const events = async (id: string) =>
    (
      await app.deps.db
        .selectFrom('events')
        .select(['type', 'body'])
        .where('object_id', '=', id)
        .orderBy('id')
        .execute()
    ).map((e) => ({ type: e.type, ...JSON.parse(e.body).data }));
  return { app, merchant, api, clockNow, advanceTo, subscribe, events, get, payments };
}

test("a subscription's payments carry what Tono knows of the customer where the approval said nothing", async (t) => {
  const { api, merchant, subscribe, payments, clockNow, advanceTo } = await setUp(t);
  // An earlier payment told Tono the payer's phone and address; the plan's request gives names only.
  const cup = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '4.00 NZD',
    message: 'Cup',
  });
  const paid = await api.post(`/v1/test-helpers/requests/${cup.body.request.id}/pay`, {
    cust_info: {
      email: 'payer@example.com',
      phone: '021 555 0101',
      address1: '1 Queen Street',
      city: 'Auckland',
      postcode: '1010',
    },
  });
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  const { sub } = await subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
  await advanceTo((await clockNow()) + 1000);
  const [first] = await payments(sub.id);
  const { email, first_name, last_name, phone, address1, city, postcode } = first.cust_info;
  assert.deepEqual(
    [email, first_name, last_name, phone, address1, city, postcode],
    ['payer@example.com', 'Pat', 'Payer', '021 555 0101', '1 Queen Street', 'Auckland', '1010'],
  );
});

test('authorisation creates the subscription, the customer and a paid request; the first charge is immediate', async (t) => {
  const { api, subscribe, events, get, payments, clockNow, advanceTo } = await setUp(t);
  const { request, sub } = await subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
  assert.equal((await api.get(`/v1/requests/${request.id}`)).body.request.status, 'paid');
  const customers = await api.get('/v1/customers', { query: { email: 'payer@example.com' } });
  assert.equal(customers.body.customers.length, 1);
  assert.equal((await get(sub.id)).customer_id, customers.body.customers[0].id);

  await advanceTo((await clockNow()) + 1000);
  const [first] = await payments(sub.id);
  assert.equal(first.status, 'successful');
  // Test mode moves 0.01 NZD; the amount asked for is requested_amount (docs/decisions.md).
  assert.deepEqual(first.amount, { value: '0.01 NZD', formatted: '$0.01' });
  assert.deepEqual(first.requested_amount, { value: '15.00 NZD', formatted: '$15.00' });
  assert.equal(first.subscription_id, sub.id);
  assert.equal(first.cust_info.email, 'payer@example.com');
  assert.equal(first.cust_info.first_name, 'Pat');
  assert.equal((await get(sub.id)).successful_charges, 1);

  // Two more weeks complete it (total_count 3).
  await advanceTo((await clockNow()) + 15 * DAY);
  const done = await get(sub.id);
  assert.equal(done.status, 'completed');
  assert.equal(done.successful_charges, 3);
  assert.equal(done.next_charge_at, null);
  assert.deepEqual(
    (await events(sub.id)).map((e) => e.type),
    ['subscription.created', 'subscription.completed'],
  );
  const all = await payments(sub.id);
  assert.equal(all.length, 3);
  assert.ok(all.every((p) => p.status === 'successful' && p.cust_info.email === 'payer@example.com'));
});

test('failures retry at +1, +3, +5 days at the charge time, then the slot is skipped; the next slot keeps the anchor', async (t) => {
  const { api, subscribe, events, get, payments, clockNow, advanceTo } = await setUp(t);
  // The 15th of a month at least 10 days ahead: every month has the anchor day.
  const start = `${new Date((await clockNow()) + 40 * DAY).toISOString().slice(0, 8)}15`;
  const { sub } = await subscribe({ amount: '20.00 NZD', period: 'monthly', start_date: start });
  const declined = await api.post(`/v1/test-helpers/subscriptions/${sub.id}/decline-next`, {
    count: 4,
    reason: 'insufficient_funds',
  });
  assert.equal(declined.status, 200);
  const firstAt = Date.parse((await get(sub.id)).next_charge_at);
  assert.equal(nzTime(new Date(firstAt).toISOString()).split(', ')[1], '10:00:00');

  await advanceTo(firstAt + 10 * DAY);
  const failed = (await events(sub.id)).filter((e) => e.type === 'subscription.charge_failed');
  assert.deepEqual(
    failed.map((e) => [e.attempts, e.next_attempt_at && Math.round((Date.parse(e.next_attempt_at) - firstAt) / DAY)]),
    [
      [1, 1],
      [2, 3],
      [3, 5],
      [4, undefined],
    ],
  );
  for (const e of failed) {
    assert.equal(e.charge_at, new Date(firstAt).toISOString());
    assert.equal(e.last_error, 'insufficient_funds');
    assert.match(e.last_payment_id, /^payment_/);
    if (e.next_attempt_at) assert.equal(nzTime(e.next_attempt_at).split(', ')[1], '10:00:00');
  }
  const skipped = (await events(sub.id)).filter((e) => e.type === 'subscription.charge_skipped');
  assert.equal(skipped.length, 1);
  assert.equal(skipped[0].attempts, 4);
  assert.equal(skipped[0].skipped_charge_at, new Date(firstAt).toISOString());
  const nextAt = skipped[0].next_charge_at;
  assert.equal(nzTime(nextAt).split(', ')[1], '10:00:00');
  assert.equal(
    new Date(nextAt).toLocaleDateString('en-NZ', { timeZone: 'Pacific/Auckland', day: 'numeric' }),
    new Date(firstAt).toLocaleDateString('en-NZ', { timeZone: 'Pacific/Auckland', day: 'numeric' }),
  );
  const state = await get(sub.id);
  assert.equal(state.status, 'active');
  assert.deepEqual([state.successful_charges, state.failed_charges, state.skipped_charges], [0, 4, 1]);
  assert.equal(state.next_charge_at, nextAt);

  // One decline, then the retry a day later succeeds; the following charge stays on the anchor day.
  await api.post(`/v1/test-helpers/subscriptions/${sub.id}/decline-next`, { count: 1 });
  await advanceTo(Date.parse(nextAt) + 2 * DAY);
  const after = await get(sub.id);
  assert.equal(after.successful_charges, 1);
  const anchorDay = (iso: string) =>
    new Date(iso).toLocaleDateString('en-NZ', { timeZone: 'Pacific/Auckland', day: 'numeric' });
  assert.equal(anchorDay(after.next_charge_at), anchorDay(new Date(firstAt).toISOString()));
  assert.deepEqual(
    (await payments(sub.id)).map((p) => p.status),
    ['successful', 'failed', 'failed', 'failed', 'failed', 'failed'],
  );
});

test('pause drops pending retries; resume charges one period after resuming; time travel across years', async (t) => {
  const { api, subscribe, events, get, clockNow, advanceTo } = await setUp(t);
  const { sub } = await subscribe({ amount: '9.99 NZD', period: 'annually' });
  await api.post(`/v1/test-helpers/subscriptions/${sub.id}/decline-next`, { count: 1 });
  await advanceTo((await clockNow()) + 1000);
  assert.equal((await get(sub.id)).failed_charges, 1);
  const paused = await api.post(`/v1/subscriptions/${sub.id}/pause`);
  assert.equal(paused.body.subscription.next_charge_at, null);
  await advanceTo((await clockNow()) + 10 * DAY);
  assert.equal((await get(sub.id)).failed_charges, 1, 'the dropped retry never ran');
  const resumed = await api.post(`/v1/subscriptions/${sub.id}/resume`);
  const resumedAt = await clockNow();
  const next = Date.parse(resumed.body.subscription.next_charge_at);
  assert.ok(next - resumedAt > 364 * DAY && next - resumedAt < 367 * DAY);
  await advanceTo(resumedAt + 3 * 366 * DAY);
  const state = await get(sub.id);
  assert.equal(state.successful_charges, 3);
  assert.deepEqual(
    (await events(sub.id)).map((e) => e.type),
    ['subscription.created', 'subscription.charge_failed', 'subscription.paused', 'subscription.resumed'],
  );
});

test('completion by end date; cancellation by the merchant, by the payer and at the bank', async (t) => {
  const { api, subscribe, events, get, clockNow, advanceTo } = await setUp(t);
  const now = await clockNow();
  const end = new Date(now + 30 * DAY).toISOString().slice(0, 10);
  const dated = await subscribe({ amount: '5.00 NZD', period: 'weekly', end_date: end });
  const merchantCancelled = await subscribe({ amount: '5.00 NZD', period: 'weekly' });
  const payerCancelled = await subscribe({ amount: '5.00 NZD', period: 'weekly' });
  const bankCancelled = await subscribe({ amount: '5.00 NZD', period: 'weekly' });
  // From the clock as it is after the set-up (it moves with real time), so a slow run never goes backwards.
  await advanceTo((await clockNow()) + 1000);

  assert.equal(
    (await api.put(`/v1/subscriptions/${merchantCancelled.sub.id}/cancel`)).body.subscription.cancelled_by,
    'merchant',
  );
  const byPayer = await api.post(`/v1/test-helpers/subscriptions/${payerCancelled.sub.id}/cancel-by-payer`);
  assert.equal(byPayer.body.subscription.status, 'cancelled');
  assert.equal(byPayer.body.subscription.cancelled_by, 'payer');
  const atBank = await api.post(`/v1/test-helpers/subscriptions/${bankCancelled.sub.id}/cancel-at-bank`);
  assert.equal(atBank.body.subscription.status, 'active', 'the service learns at the next charge');

  await advanceTo(now + 35 * DAY);
  const d = await get(dated.sub.id);
  assert.equal(d.status, 'completed');
  assert.ok(d.successful_charges >= 4 && d.successful_charges <= 5);
  assert.deepEqual(
    (await events(dated.sub.id)).map((e) => e.type),
    ['subscription.created', 'subscription.completed'],
  );
  for (const { sub } of [merchantCancelled, payerCancelled]) {
    assert.equal((await get(sub.id)).successful_charges, 1);
    assert.deepEqual(
      (await events(sub.id)).map((e) => e.type),
      ['subscription.created', 'subscription.cancelled'],
    );
  }
  const b = await get(bankCancelled.sub.id);
  assert.equal(b.status, 'cancelled');
  assert.equal(b.cancelled_by, 'bank');
  assert.equal(b.successful_charges, 1);
  assert.deepEqual(
    (await events(bankCancelled.sub.id)).map((e) => e.type),
    ['subscription.created', 'subscription.cancelled'],
  );
});

test('test helpers: bad input is refused whole and changes nothing; a live key sees 404', async (t) => {
  const { app, merchant, api, subscribe, get } = await setUp(t);
  const { sub } = await subscribe({ amount: '5.00 NZD', period: 'weekly' });
  const before = await get(sub.id);
  const bad = await api.post(`/v1/test-helpers/subscriptions/${sub.id}/decline-next`, { count: 0 });
  assert.deepEqual(
    [bad.status, bad.body],
    [400, { code: 'bad_request.invalid_param.count', message: 'count must be at least 1', params: { field: 'count' } }],
  );
  const unknown = await api.post(`/v1/test-helpers/subscriptions/${sub.id}/decline-next`, { count: 1, extra: true });
  assert.deepEqual(
    [unknown.status, unknown.body],
    [
      400,
      {
        code: 'bad_request.unknown_param.extra',
        message: 'extra is not a parameter of this endpoint',
        params: { field: 'extra' },
      },
    ],
  );
  const live = apiClient(app, merchant.liveKey);
  for (const helper of ['decline-next', 'cancel-at-bank', 'cancel-by-payer']) {
    const reply = await live.post(
      `/v1/test-helpers/subscriptions/${sub.id}/${helper}`,
      helper === 'decline-next' ? { count: 1 } : undefined,
    );
    assert.deepEqual(
      [reply.status, reply.body],
      [404, { code: 'not_found.route', message: 'Test helpers exist only for test keys (sk_test_…)', params: {} }],
    );
  }
  const id = 'subscription_01ARZ3NDEKTSV4RRFFQ69G5FAV';
  const missing = await api.post(`/v1/test-helpers/subscriptions/${id}/cancel-by-payer`);
  assert.deepEqual(
    [missing.status, missing.body],
    [404, { code: 'not_found.subscription', message: `No such subscription: ${id}`, params: { id } }],
  );
  assert.deepEqual(await get(sub.id), before);
});
