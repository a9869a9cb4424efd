import { test } from 'node:test';
import assert from 'node:assert/strict';
import { merchantByCli, openStoreDb, processStore, runCli, startService, stop } from '../process.ts';

// Runs on SQLite, and on PostgreSQL when TEST_ENGINE=postgres (a fresh schema through DATABASE_URL).

test('SIGKILL right after a 201 loses nothing: the request and its event are there after restart', async (t) => {
  const store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const merchant = await merchantByCli(store, 'Durable Ltd', 'durable@example.com');

  // the request's url and QR code are made from PUBLIC_BASE_URL, which stays put across restarts
  const env = { DEMO_MERCHANT: 'false', PUBLIC_BASE_URL: 'https://tono.example.nz' };
  const first = await startService(t, store, env);
  assert.doesNotMatch(first.stdout(), /Demo merchant/);
  const headers = { authorization: `Bearer ${merchant.test_key}`, 'content-type': 'application/json' };
  const response = await fetch(`${first.baseUrl}/v1/requests`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      bank_account_id: merchant.bank_account_id,
      amount: '99.99 NZD',
      message: 'Must survive',
      expires_in: '30d',
    }),
  });
  const body = await response.text();
  first.child.kill('SIGKILL');
  assert.equal(response.status, 201, body);
  assert.equal(await first.exited, null, 'killed, not exited');
  const request = JSON.parse(body).request;

  const second = await startService(t, store, env);
  const got = await fetch(`${second.baseUrl}/v1/requests/${request.id}`, {
    headers: { authorization: headers.authorization },
  });
  assert.equal(got.status, 200);
  assert.deepEqual(await got.json(), { request });
  // and its audit record, chained (on PostgreSQL the killed process may not have chained it yet)
  const trail = await fetch(`${second.baseUrl}/v1/audit-events?object_id=${request.id}`, {
    headers: { authorization: headers.authorization },
  });
  assert.deepEqual(
    ((await trail.json()) as { audit_events: Array<{ action: string }> }).audit_events.map((r) => r.action),
    ['request.create'],
  );
  assert.equal(await stop(second), 0, 'SIGTERM stops cleanly');

  const db = openStoreDb(store);
  t.after(() => db.destroy());
  const events = await db.selectFrom('events').select(['type', 'body']).where('object_id', '=', request.id).execute();
  assert.deepEqual(
    events.map((e) => e.type),
    ['request.created'],
  );
  assert.equal(JSON.parse(events[0].body).data.id, request.id);
  // (besides the recurring jobs every service keeps scheduled: the webhook health check, the sweep
  // of interrupted executions, the hourly prune)
  const jobs = await db
    .selectFrom('jobs')
    .select(['kind', 'payload'])
    .where('kind', 'not in', ['webhooks.health', 'recurring_payment.recover', 'maintenance.prune'])
    .execute();
  assert.deepEqual(
    jobs.map((j) => [j.kind, JSON.parse(j.payload).request_id]),
    [['request.expire', request.id]],
    'its expiry job survived too',
  );
});
