// Exactly once across crashes and processes: real `node src/main.ts` processes on one database,
// SIGKILLed mid-run and restarted; and, on PostgreSQL, two processes charging one due set.
// engine follows TEST_ENGINE, so `npm test` runs this file on PostgreSQL too.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { engine } from '../../../test/helpers.ts';
import { apiCall, openStoreDb, processStore, startService, stop, type Store } from '../../../test/process.ts';
import type { Db } from '../../store/db.ts';

const DAY = 86_400_000;

/** API calls with `key` to one service, through test/process.ts's apiCall. */
const client = (url: string, key: string) => (method: 'GET' | 'POST', route: string, body?: unknown) =>
  apiCall(url, key, method, route, body);

/** The service on the store, its demo merchant off. */
const startOn = (t: TestContext, store: Store) => startService(t, store, { DEMO_MERCHANT: 'false' });

/** A demo merchant's test key and account from the first start, and `count` subscriptions approved (none charged: workers off). */
async function seed(t: TestContext, store: Store, count: number) {
  const service = await startService(t, store, { WORKERS: 'false', DEMO_MERCHANT: 'true' });
  const key = /test key\s+(sk_test_\S+)/.exec(service.stdout())![1];
  const account = /bank account\s+(bankaccount_\S+)/.exec(service.stdout())![1];
  const api = client(service.baseUrl, key);
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const created = await api('POST', '/v1/requests', {
      bank_account_id: account,
      message: `Plan ${i}`,
      subscription_options: { amount: '15.00 NZD', period: 'weekly' },
      cust_info: { email: `payer${i}@example.com` },
    });
    const paid = await api('POST', `/v1/test-helpers/requests/${created.body.request.id}/pay`, {});
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    ids.push(paid.body.subscription.id);
  }
  await stop(service, 'SIGTERM');
  return { key, ids };
}

async function chargesOf(db: Db) {
  const charges = await db
    .selectFrom('subscription_charges')
    .select(['subscription_id', 'slot_date', 'status'])
    .execute();
  const payments = await db
    .selectFrom('payments')
    .select(['subscription_id', 'status'])
    .where('subscription_id', 'is not', null)
    .execute();
  return { charges, payments };
}

async function waitFor(check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function assertExactlyOnce(ids: string[], found: Awaited<ReturnType<typeof chargesOf>>, slots: number) {
  for (const id of ids) {
    const charges = found.charges.filter((c) => c.subscription_id === id);
    assert.equal(charges.length, slots, `${id}: ${slots} slots`);
    assert.ok(
      charges.every((c) => c.status === 'successful'),
      `${id}: every slot charged`,
    );
    const payments = found.payments.filter((p) => p.subscription_id === id);
    assert.equal(
      payments.filter((p) => p.status === 'successful').length,
      slots,
      `${id}: one successful payment per slot`,
    );
  }
}

test('a process killed mid-run and restarted charges every slot exactly once', { timeout: 360_000 }, async (t) => {
  const store = await processStore(t, { migrated: true });
  const { key, ids } = await seed(t, store, 30);
  const db = openStoreDb(store);
  t.after(() => db.destroy());

  // First charges: kill the worker process as soon as charging has started.
  let service = await startOn(t, store);
  await waitFor(async () => (await chargesOf(db)).charges.length > 0);
  await stop(service, 'SIGKILL');
  service = await startOn(t, store);
  // Jobs the killed process held come back when their leases, no longer renewed, run out (10 s).
  await waitFor(
    async () => (await chargesOf(db)).charges.filter((c) => c.status === 'successful').length === ids.length,
    120_000,
  );
  assertExactlyOnce(ids, await chargesOf(db), 1);

  // Two more weeks through the test clock, killed part-way through the advance.
  const api = client(service.baseUrl, key);
  const target = Date.parse((await api('GET', '/v1/test-helpers/clock')).body.clock.now) + 15 * DAY;
  const advancing = api('POST', '/v1/test-helpers/clock/advance', { to: new Date(target).toISOString() }).catch(
    () => null,
  );
  await waitFor(async () => (await chargesOf(db)).charges.length > ids.length);
  await stop(service, 'SIGKILL');
  await advancing;
  service = await startOn(t, store);
  const resumed = await client(service.baseUrl, key)('POST', '/v1/test-helpers/clock/advance', {
    to: new Date(target).toISOString(),
  });
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
  await waitFor(
    async () => (await chargesOf(db)).charges.filter((c) => c.status === 'successful').length === ids.length * 3,
    120_000,
  );
  assertExactlyOnce(ids, await chargesOf(db), 3);
});

test('two processes on PostgreSQL charge one due set without duplicates', {
  skip: engine !== 'postgres',
  timeout: 240_000,
}, async (t) => {
  const store = await processStore(t, { migrated: true });
  const { ids } = await seed(t, store, 60);
  const db = openStoreDb(store);
  t.after(() => db.destroy());
  await Promise.all([startOn(t, store), startOn(t, store)]);
  await waitFor(
    async () => (await chargesOf(db)).charges.filter((c) => c.status === 'successful').length === ids.length,
  );
  assertExactlyOnce(ids, await chargesOf(db), 1);
});
