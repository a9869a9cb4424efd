import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';

// GET /v1/audit-events: the key's merchant only, its mode's records (and for a live key those
// without a mode), filters, and the lists' pagination.

test('GET /v1/audit-events lists own records of the key mode (and, to a live key, modeless ones), filtered and paged', async (t) => {
  const app = await buildTestApp(t);
  const kowhai = await createTestMerchant(app, 'Kōwhai');
  const tui = await createTestMerchant(app, 'Tui');
  const test_ = apiClient(app, kowhai.testKey);
  const live = apiClient(app, kowhai.liveKey);
  const other = apiClient(app, tui.testKey);
  const made: string[] = [];
  for (const n of [1, 2, 3]) {
    const reply = await test_.post('/v1/requests', {
      bank_account_id: kowhai.bankAccountId,
      amount: `${n}.00 NZD`,
      message: `Cup ${n}`,
    });
    assert.equal(reply.status, 201, reply.text);
    made.push(reply.body.request.id);
  }
  const hook = await live.post('/v1/webhooks', { url: 'https://example.com/live' });
  assert.equal(hook.status, 201, hook.text);
  await other.post('/v1/requests', { bank_account_id: tui.bankAccountId, amount: '9.00 NZD', message: 'Other' });

  const all = await test_.get('/v1/audit-events');
  assert.equal(all.status, 200, all.text);
  const actions = all.body.audit_events.map((record: any) => [record.action, record.mode]);
  // newest first: the test key's three requests, then its own making; the merchant's and its bank
  // account's, which have no mode, are live business and never shown to a test key
  assert.deepEqual(actions, [
    ['request.create', 'test'],
    ['request.create', 'test'],
    ['request.create', 'test'],
    ['api_key.create', 'test'],
  ]);
  const first = all.body.audit_events[0];
  assert.deepEqual(first.actor.kind, 'api_key');
  assert.equal(first.object_id, made[2]);
  assert.match(first.hash, /^[0-9a-f]{64}$/);
  assert.equal(first.summary.amount_cents, 300);
  assert.equal(typeof first.request_id, 'string');
  const liveView = (await live.get('/v1/audit-events')).body.audit_events.map((record: any) => record.action);
  assert.deepEqual(liveView, ['webhook_endpoint.create', 'api_key.create', 'bank_account.create', 'merchant.create']);
  assert.ok(
    !(await other.get('/v1/audit-events')).body.audit_events.some((record: any) => made.includes(record.object_id)),
    "another merchant's records are never listed",
  );

  const byObject = await test_.get('/v1/audit-events', { query: { object_id: made[0]! } });
  assert.deepEqual(
    byObject.body.audit_events.map((record: any) => record.object_id),
    [made[0]],
  );
  const byAction = await live.get('/v1/audit-events', { query: { action: 'merchant.create' } });
  assert.equal(byAction.body.audit_events.length, 1);
  assert.deepEqual(
    (await test_.get('/v1/audit-events', { query: { action: 'merchant.create' } })).body.audit_events,
    [],
  );
  const byActor = await live.get('/v1/audit-events', { query: { actor_kind: 'operator' } });
  assert.deepEqual(
    byActor.body.audit_events.map((record: any) => record.action),
    ['api_key.create', 'bank_account.create', 'merchant.create'],
  );
  const key = first.actor.id;
  const byKey = await test_.get('/v1/audit-events', { query: { actor_id: key } });
  assert.equal(byKey.body.audit_events.length, 3);
  const since = all.body.audit_events[2].created_at;
  const window = await test_.get('/v1/audit-events', {
    query: { 'created[gte]': since, 'created[lt]': '2999-01-01T00:00:00.000Z', action: 'request.create' },
  });
  assert.equal(window.body.audit_events.length, 3);
  const none = await test_.get('/v1/audit-events', { query: { 'created[lt]': since, action: 'request.create' } });
  assert.equal(none.body.audit_events.length, 0);

  // pages of two
  const page1 = await test_.get('/v1/audit-events', { query: { limit: '2' } });
  assert.equal(page1.body.has_more, true);
  const page2 = await test_.get('/v1/audit-events', {
    query: { limit: '2', starting_after: page1.body.audit_events[1].id },
  });
  assert.deepEqual(
    [...page1.body.audit_events, ...page2.body.audit_events].map((record: any) => record.id),
    all.body.audit_events.slice(0, 4).map((record: any) => record.id),
  );

  // bad input: the API's error shape, nothing listed
  const bad: Array<Record<string, string>> = [
    { limit: '0' },
    { starting_after: 'aud_01M8PVP9QNM3A9AYNA1W3142AG' },
    { starting_after: 'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V' },
    { actor_kind: 'robot' },
    { action: 'DROP TABLE' },
    { 'created[gte]': 'yesterday' },
    { unknown: '1' },
  ];
  for (const query of bad) {
    const refused = await test_.get('/v1/audit-events', { query });
    assert.equal(refused.status, 400, `${JSON.stringify(query)}: ${refused.text}`);
    assert.match(refused.body.code, /^bad_request/);
  }
  assert.equal((await apiClient(app, 'sk_test_nope').get('/v1/audit-events')).status, 401);
});
