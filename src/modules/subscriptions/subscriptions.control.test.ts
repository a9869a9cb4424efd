import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { authoriseDirectly, createSubscriptionRequest } from '../../../test/support/subscriptions.ts';

async function setUp(t: import('node:test').TestContext) {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const request = await createSubscriptionRequest(
    api,
    merchant.bankAccountId,
    { amount: '15.00 NZD', period: 'fortnightly', start_date: '2099-03-03', total_count: 6 },
    { merchant_identifier: 'cust-42' },
  );
  const sub = await authoriseDirectly(app, request.id);
  const events = async () =>
    (
      await app.deps.db
        .selectFrom('events')
        .select(['type', 'body'])
        .where('object_id', '=', sub.id)
        .orderBy('id')
        .execute()
    ).map((e) => ({ type: e.type, data: JSON.parse(e.body).data }));
  return { app, merchant, api, request, sub, events };
}

test('a new subscription reads back active with its options, next charge and counts', async (t) => {
  const { api, request, sub, merchant, events } = await setUp(t);
  const got = await api.get(`/v1/subscriptions/${sub.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body.subscription, {
    id: sub.id,
    status: 'active',
    request_id: request.id,
    user_id: merchant.userId,
    merchant_identifier: 'cust-42',
    customer_id: null,
    email: 'payer@example.com',
    description: 'Coffee subscription',
    subscription_options: {
      amount: '15.00 NZD',
      period: 'fortnightly',
      start_date: '2099-03-02T21:00:00.000Z',
      total_count: 6,
    },
    next_charge_at: '2099-03-02T21:00:00.000Z',
    successful_charges: 0,
    failed_charges: 0,
    skipped_charges: 0,
    is_test_mode: true,
    cancelled_by: null,
    created_at: got.body.subscription.created_at,
    updated_at: got.body.subscription.updated_at,
    paused_at: null,
    resumed_at: null,
    cancelled_at: null,
    completed_at: null,
  });
  assert.deepEqual(
    (await events()).map((e) => e.type),
    ['subscription.created'],
  );
  assert.deepEqual(Object.keys((await events())[0].data), [
    'id',
    'request_id',
    'user_id',
    'merchant_identifier',
    'created_at',
  ]);

  const list = await api.get('/v1/subscriptions', { query: { status: 'active', email: 'PAYER@example.com' } });
  assert.deepEqual(
    list.body.subscriptions.map((s: any) => s.id),
    [sub.id],
  );
  assert.equal(list.body.has_more, false);
  assert.deepEqual((await api.get('/v1/subscriptions', { query: { status: 'paused' } })).body, {
    subscriptions: [],
    has_more: false,
  });
});

test('pause, resume and cancel move through the lifecycle with their events; invalid moves are 409, a repeated cancel is 200', async (t) => {
  const { app, api, sub, events } = await setUp(t);
  const paused = await api.post(`/v1/subscriptions/${sub.id}/pause`);
  assert.equal(paused.status, 200);
  assert.equal(paused.body.subscription.status, 'paused');
  assert.equal(paused.body.subscription.next_charge_at, null);
  const jobs = await app.deps.db
    .selectFrom('jobs')
    .select('id')
    .where('dedupe_key', '=', `subscription.charge:${sub.id}`)
    .execute();
  assert.equal(jobs.length, 0, 'no charge is scheduled while paused');

  assert.deepEqual((await api.post(`/v1/subscriptions/${sub.id}/pause`)).body, {
    code: 'conflict.invalid_state',
    message: 'Cannot pause a subscription whose status is paused',
    params: { status: 'paused' },
  });

  const resumed = await api.post(`/v1/subscriptions/${sub.id}/resume`);
  assert.equal(resumed.status, 200);
  assert.equal(resumed.body.subscription.status, 'active');
  // One fortnight after today (on the test clock), at the 10:00 charge time.
  const clock = (await api.get('/v1/test-helpers/clock')).body.clock.now;
  const next = new Date(resumed.body.subscription.next_charge_at);
  const days = (next.getTime() - Date.parse(clock)) / 86_400_000;
  assert.ok(days > 13 && days <= 15, `next charge ${days} days after resuming`);
  assert.equal(next.toLocaleTimeString('en-NZ', { timeZone: 'Pacific/Auckland', hour12: false }), '10:00:00');

  assert.equal((await api.post(`/v1/subscriptions/${sub.id}/resume`)).status, 409);
  const cancelled = await api.put(`/v1/subscriptions/${sub.id}/cancel`);
  assert.equal(cancelled.status, 200);
  assert.equal(cancelled.body.subscription.status, 'cancelled');
  assert.equal(cancelled.body.subscription.cancelled_by, 'merchant');
  const again = await api.put(`/v1/subscriptions/${sub.id}/cancel`);
  assert.equal(again.status, 200, 'a repeated cancel answers with the subscription as it is');
  assert.deepEqual(again.body, cancelled.body);
  for (const [method, action] of [
    ['post', 'pause'],
    ['post', 'resume'],
  ] as const) {
    assert.deepEqual((await api[method](`/v1/subscriptions/${sub.id}/${action}`)).body, {
      code: 'conflict.invalid_state',
      message: `Cannot ${action} a subscription whose status is cancelled`,
      params: { status: 'cancelled' },
    });
  }
  assert.deepEqual(
    (await events()).map((e) => e.type),
    ['subscription.created', 'subscription.paused', 'subscription.resumed', 'subscription.cancelled'],
  );
  assert.deepEqual(Object.keys((await events())[3].data), ['id', 'user_id', 'merchant_identifier', 'updated_at']);
});

test('an Idempotency-Key replays the first result; another merchant or mode sees 404', async (t) => {
  const { app, api, sub, merchant } = await setUp(t);
  const headers = { 'idempotency-key': 'pause-1' };
  const first = await api.post(`/v1/subscriptions/${sub.id}/pause`, {}, { headers });
  const again = await api.post(`/v1/subscriptions/${sub.id}/pause`, {}, { headers });
  assert.equal(again.status, 200);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.deepEqual(again.body, first.body);
  assert.equal(
    (await api.post(`/v1/subscriptions/${sub.id}/resume`, {}, { headers })).body.code,
    'conflict.idempotency_key_reused',
  );

  const other = await createTestMerchant(app);
  const notFound = {
    code: 'not_found.subscription',
    message: `No such subscription: ${sub.id}`,
    params: { id: sub.id },
  };
  assert.deepEqual((await apiClient(app, other.testKey).get(`/v1/subscriptions/${sub.id}`)).body, notFound);
  assert.deepEqual((await apiClient(app, other.testKey).put(`/v1/subscriptions/${sub.id}/cancel`)).body, notFound);
  assert.deepEqual((await apiClient(app, merchant.liveKey).get(`/v1/subscriptions/${sub.id}`)).body, notFound);
});
