import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createRuntime } from '../../runtime.ts';
import type { Db } from '../../store/db.ts';
import { openDb } from '../../store/store.ts';
import type { Clock } from '../../shared/time.ts';
import { apiClient, createTestMerchant, freshDb, pgUrl, testConfig } from '../../../test/helpers.ts';

// Real time, not the test clock: a live request's expiry falls due while the service is down, and
// the worker of the next start runs it. The process clock is injected so "down for two minutes"
// takes no real time.

test('an expiry missed while the service was down runs when the worker starts', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  let skewMs = 0;
  const clock: Clock = { now: () => Date.now() + skewMs };
  const reopen = (): Db =>
    testDb.file
      ? openDb({ engine: 'sqlite', file: testDb.file })
      : openDb({ engine: 'postgres', url: pgUrl, schema: testDb.schema });
  const log = pino({ level: 'silent' });

  const first = await createRuntime(testConfig({ workers: true }), { db: testDb.db, log, clock });
  const merchant = await createTestMerchant(first);
  const api = apiClient(first, merchant.liveKey);
  const created = await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '8.00 NZD',
    message: 'Soon gone',
    expires_in: '1m',
  });
  assert.equal(created.status, 201, created.text);
  const request = created.body.request;
  await first.close(); // the service stops before the minute is up

  skewMs = 2 * 60_000; // two minutes pass while it is down
  const second = await createRuntime(testConfig({ workers: true }), { db: reopen(), log, clock });
  t.after(() => second.close());
  const db = second.deps.db;
  const deadline = Date.now() + 10_000;
  let status = '';
  while (Date.now() < deadline) {
    status = (await apiClient(second, merchant.liveKey).get(`/v1/requests/${request.id}`)).body.request.status;
    if (status === 'expired') break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.equal(status, 'expired');
  const events = await db
    .selectFrom('events')
    .select(['type', 'body'])
    .where('object_id', '=', request.id)
    .orderBy('id')
    .execute();
  assert.deepEqual(
    events.map((e) => e.type),
    ['request.created', 'request.expired'],
  );
  const data = JSON.parse(events[1].body).data;
  assert.deepEqual(data, {
    id: request.id,
    user_id: merchant.userId,
    merchant_identifier: null,
    status: 'expired',
    updated_at: data.updated_at,
  });
  assert.ok(Date.parse(data.updated_at) >= Date.parse(request.expires_at));
  assert.deepEqual(
    await db.selectFrom('jobs').select('id').where('kind', '=', 'request.expire').execute(),
    [],
    'the job is done',
  );
});

test('with workers on, an expiry due now is picked up without a test-clock advance', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  let skewMs = 0;
  const clock: Clock = { now: () => Date.now() + skewMs };
  const runtime = await createRuntime(testConfig({ workers: true }), {
    db: testDb.db,
    log: pino({ level: 'silent' }),
    clock,
  });
  t.after(() => runtime.close());
  const merchant = await createTestMerchant(runtime);
  const api = apiClient(runtime, merchant.liveKey);
  const request = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '8.00 NZD',
      message: 'x',
      expires_in: '1m',
    })
  ).body.request;
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal((await api.get(`/v1/requests/${request.id}`)).body.request.status, 'active', 'not before it is due');
  skewMs = 61_000;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && (await api.get(`/v1/requests/${request.id}`)).body.request.status !== 'expired') {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.equal((await api.get(`/v1/requests/${request.id}`)).body.request.status, 'expired');
});
