import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';

// GET /v1/events/feed: what `listen` follows.

test('the feed starts from now, waits for the next event, and pages oldest first from a cursor', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const create = (message: string) =>
    api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '1.00 NZD', message });

  const empty = await api.get('/v1/events/feed', { query: { wait: '0' } });
  assert.deepEqual(empty.body, { events: [], cursor: null });
  await create('before');
  const start = await api.get('/v1/events/feed', { query: { wait: '0' } });
  assert.deepEqual(start.body.events, [], 'without a cursor, only events from now on');
  assert.match(start.body.cursor, /^event_/);

  // the call is made before the event exists, and answers once it does
  const waiting = api.get('/v1/events/feed', { query: { after: start.body.cursor, wait: '20' } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const later = await create('after');
  const arrived = await waiting;
  assert.equal(arrived.status, 200, arrived.text);
  assert.deepEqual(
    arrived.body.events.map((e: any) => [e.type, e.data.id]),
    [['request.created', later.body.request.id]],
  );
  assert.equal(arrived.body.cursor, arrived.body.events[0].id);

  for (const message of ['one', 'two', 'three']) await create(message);
  const rest = await api.get('/v1/events/feed', { query: { after: arrived.body.cursor } });
  const ids = rest.body.events.map((e: any) => e.id);
  assert.equal(ids.length, 3);
  assert.deepEqual(ids, [...ids].sort(), 'oldest first');
  const none = await api.get('/v1/events/feed', { query: { after: rest.body.cursor, wait: '0' } });
  assert.deepEqual(none.body, { events: [], cursor: rest.body.cursor }, 'nothing new: the same cursor back');
});

test("the feed filters by type, keeps to the key's merchant and mode, and refuses bad input clearly", async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const other = await createTestMerchant(app, 'Other');
  const api = apiClient(app, merchant.testKey);
  const floor = 'event_00000000000000000000000000';
  await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '1.00 NZD', message: 'mine' });
  await apiClient(app, other.testKey).post('/v1/requests', {
    bank_account_id: other.bankAccountId,
    amount: '1.00 NZD',
    message: 'theirs',
  });
  await apiClient(app, merchant.liveKey).post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '1.00 NZD',
    message: 'live',
  });

  const all = await api.get('/v1/events/feed', { query: { after: floor, wait: '0' } });
  assert.deepEqual(
    all.body.events.map((e: any) => e.type),
    ['request.created'],
  );
  const filtered = await api.get('/v1/events/feed', {
    query: { after: floor, wait: '0', types: 'payment.created,customer.created' },
  });
  assert.deepEqual(filtered.body.events, []);

  const cases: Array<[Record<string, string>, string]> = [
    [{ types: 'payment.teleported' }, 'bad_request.invalid_param.types'],
    [{ types: ',' }, 'bad_request.invalid_param.types'],
    [{ after: 'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V' }, 'bad_request.invalid_param.after'],
    [{ wait: '31' }, 'bad_request.invalid_param.wait'],
    [{ since: 'yesterday' }, 'bad_request.unknown_param.since'],
  ];
  for (const [query, code] of cases) {
    const reply = await api.get('/v1/events/feed', { query });
    assert.deepEqual([reply.status, reply.body.code], [400, code], JSON.stringify(query));
    assert.ok(reply.body.message.length > 0);
  }
  assert.equal((await app.app.inject({ method: 'GET', url: '/v1/events/feed' })).statusCode, 401);
});
