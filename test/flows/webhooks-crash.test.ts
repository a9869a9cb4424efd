// At-least-once delivery across crashes and processes: the real service is spawned (node
// src/main.ts), killed with SIGKILL, restarted; on PostgreSQL two services share one database.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createMerchant } from '../../src/modules/merchants/merchants.service.ts';
import { emitEvent } from '../../src/modules/events/events.service.ts';
import { startReceiver } from '../support/webhook-receiver.ts';
import { systemClock } from '../../src/shared/time.ts';
import { transact } from '../../src/store/store.ts';
import { engine, freshDb, VALID_ACCOUNT, type TestDb } from '../helpers.ts';
import { startService, stop, storeOfTestDb } from '../process.ts';

/** The service on the test's database, its demo merchant off. */
const startOn = (t: TestContext, testDb: TestDb) =>
  startService(t, storeOfTestDb(t, testDb), { LOG_LEVEL: 'silent', DEMO_MERCHANT: 'false' });

async function setupDb(t: TestContext) {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  return testDb;
}

test('a SIGKILL during an attempt, or between commit and delivery, still delivers after restart', async (t) => {
  const testDb = await setupDb(t);
  const receiver = await startReceiver((_request, index) => (index === 0 ? 'hang' : { status: 204 }));
  t.after(() => receiver.close());

  const first = await startOn(t, testDb);
  const merchant = await createMerchant(testDb.db, systemClock, {
    name: 'Crash',
    email: 'crash@example.com',
    password: 'crash-password',
    bankAccount: VALID_ACCOUNT,
  });
  const call = (url: string, body: unknown) =>
    fetch(`${first.baseUrl}${url}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${merchant.test_key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  assert.equal((await call('/v1/webhooks', { url: receiver.url })).status, 201);
  assert.equal(
    (await call('/v1/requests', { bank_account_id: merchant.bank_account_id, amount: '1.00 NZD', message: 'Crash' }))
      .status,
    201,
  );
  const [inFlight] = await receiver.waitFor(1);
  await stop(first, 'SIGKILL'); // mid-attempt: the receiver has the request and has not answered

  // Committed while no service runs: the event and its delivery wait in the database.
  const waiting = await transact(testDb.db, (trx) =>
    emitEvent(
      trx,
      { userId: merchant.user_id, mode: 'test' },
      'request.expired',
      'request_x',
      {
        id: 'request_x',
        user_id: merchant.user_id,
        merchant_identifier: null,
        status: 'expired',
        updated_at: new Date().toISOString(),
      },
      Date.now(),
    ),
  );

  await startOn(t, testDb);
  await receiver.waitFor(3, 40_000);
  const byEvent = new Map<string, string[]>();
  for (const r of receiver.received)
    byEvent.set(r.body.id, [...(byEvent.get(r.body.id) ?? []), String(r.headers['x-service-delivery-attempt'])]);
  assert.deepEqual(byEvent.get(inFlight.body.id), ['1', '2'], 'the interrupted attempt is made again, as attempt 2');
  assert.deepEqual(byEvent.get(waiting.id), ['1']);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const statuses = await testDb.db.selectFrom('webhook_deliveries').select('status').execute();
    if (statuses.length === 2 && statuses.every((s) => s.status === 'succeeded')) break;
    assert.ok(Date.now() < deadline, `deliveries: ${JSON.stringify(statuses)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});

test('two services on one PostgreSQL make each attempt once', {
  skip: engine !== 'postgres' && 'PostgreSQL only',
}, async (t) => {
  const testDb = await setupDb(t);
  const receiver = await startReceiver(() => ({ status: 204, delayMs: 5 }));
  t.after(() => receiver.close());
  const a = await startOn(t, testDb);
  await startOn(t, testDb);
  const merchant = await createMerchant(testDb.db, systemClock, {
    name: 'Pair',
    email: 'pair@example.com',
    password: 'pair-password',
    bankAccount: VALID_ACCOUNT,
  });
  const created = await fetch(`${a.baseUrl}/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${merchant.test_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url }),
  });
  assert.equal(created.status, 201);
  const total = 300;
  for (let batch = 0; batch < total / 30; batch += 1) {
    await transact(testDb.db, async (trx) => {
      for (let i = 0; i < 30; i += 1) {
        const id = `payment_pair${batch * 30 + i}`;
        await emitEvent(
          trx,
          { userId: merchant.user_id, mode: 'test' },
          'payment.created',
          id,
          {
            id,
            request_id: 'request_pair',
            user_id: merchant.user_id,
            merchant_identifier: null,
            status: 'awaiting-consent',
            updated_at: new Date().toISOString(),
          },
          Date.now(),
        );
      }
    });
  }
  await receiver.waitFor(total, 60_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const ids = receiver.received.map((r) => r.body.id);
  assert.equal(new Set(ids).size, total);
  assert.equal(ids.length, total, 'no event was sent twice');
  assert.ok(receiver.received.every((r) => r.headers['x-service-delivery-attempt'] === '1'));
  const attempts = await testDb.db.selectFrom('webhook_attempts').select('delivery_id').execute();
  assert.equal(attempts.length, total);
});
