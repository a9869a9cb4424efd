// The round trips a create costs on PostgreSQL (docs/performance.md, "What a call costs on
// PostgreSQL"): the key, then the whole transaction in one write with its COMMIT, the bank account
// checked by the request's insert and the event's fan-out to the merchant's webhook endpoints
// included. SQLite has no round trips: skipped there.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiClient, buildTestApp, createTestMerchant, engine } from '../../../test/helpers.ts';
import { serviceStatements } from '../../../test/support/round-trips.ts';

test('a create on PostgreSQL is two round trips, its event delivered to each endpoint that takes it', {
  skip: engine !== 'postgres',
}, async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const all = await api.post('/v1/webhooks', { url: 'https://hooks.example.com/all' });
  const paymentsOnly = await api.post('/v1/webhooks', {
    url: 'https://hooks.example.com/payments',
    events: ['payment.created', 'payment.status_updated'],
  });
  const created = await api.post('/v1/webhooks', {
    url: 'https://hooks.example.com/created',
    events: ['request.created'],
  });
  for (const hook of [all, paymentsOnly, created]) assert.equal(hook.status, 201, hook.text);
  const body = { bank_account_id: merchant.bankAccountId, amount: '12.50 NZD', message: 'Coffee', reference: 'R-1' };
  assert.equal((await api.post('/v1/requests', body)).status, 201);

  let requestId = '';
  const statements = await serviceStatements(async () => {
    const second = await api.post('/v1/requests', body);
    assert.equal(second.status, 201, second.text);
    requestId = second.body.request.id;
  });
  const awaited = statements.filter((s) => s.awaited).map((s) => s.text.replace(/\s+/g, ' ').slice(0, 60));
  assert.equal(awaited.length, 2, awaited.join('\n'));
  assert.match(awaited[1]!, /^commit/i);

  // With an Idempotency-Key, one more: the key taken, with the BEGIN; its reply is kept with the COMMIT.
  const keyed = await serviceStatements(async () => {
    const response = await api.post('/v1/requests', body, { headers: { 'idempotency-key': 'round-trips-1' } });
    assert.equal(response.status, 201, response.text);
  });
  const keyedAwaited = keyed.filter((s) => s.awaited).map((s) => s.text.replace(/\s+/g, ' ').slice(0, 60));
  assert.equal(keyedAwaited.length, 3, keyedAwaited.join('\n'));
  assert.match(keyedAwaited[1]!, /^insert into "idempotency_keys"/i);
  assert.match(keyedAwaited[2]!, /^commit/i);
  const replay = await api.post('/v1/requests', body, { headers: { 'idempotency-key': 'round-trips-1' } });
  assert.equal(replay.status, 200, replay.text);

  const db = app.deps.db;
  const event = await db
    .selectFrom('events')
    .select('id')
    .where('object_id', '=', requestId)
    .where('type', '=', 'request.created')
    .executeTakeFirstOrThrow();
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'endpoint_id', 'status', 'with_secret'])
    .where('event_id', '=', event.id)
    .execute();
  assert.deepEqual(deliveries.map((d) => d.endpoint_id).sort(), [all.body.webhook.id, created.body.webhook.id].sort());
  assert.equal(new Set(deliveries.map((d) => d.id)).size, 2, 'each delivery an id of its own');
  for (const delivery of deliveries) {
    assert.equal(delivery.status, 'pending');
    assert.equal(delivery.with_secret, 0);
    const jobs = await db.selectFrom('jobs').select('payload').where('kind', '=', 'webhook.deliver').execute();
    assert.equal(jobs.filter((job) => JSON.parse(job.payload).delivery_id === delivery.id).length, 1);
  }
});
