import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { apiClient, buildTestApp, createTestMerchant, type TestApp } from '../../../test/helpers.ts';
import { assertError } from '../../../test/assertions.ts';
import { dashWorld, logIn, objectsOf, textOf, type DashMerchant, type DashWorld } from '../../../test/dashboard.ts';
import { Browser } from '../../../test/payer.ts';
import { startReceiver } from '../../../test/support/webhook-receiver.ts';
import { authorise, consentHarness, execute } from '../../../test/support/consents.ts';
import { contributionsOf } from '../index.ts';
import { NO_ORIGIN, type Ctx } from '../context.ts';
import { countTestData, deleteTestData } from './test-data.service.ts';
import { chainCommitted } from '../audit/audit.service.ts';
import { checkoutWorld, createRequest, submitPage } from '../../../test/flows/checkout.fixtures.ts';
import { authoriseAtBank } from './pay.bank-driver.ts';

const DAY = 86_400_000;
const LIVE_ONLY = 'Test helpers exist only for test keys (sk_test_…)';

// Deleting a merchant's test data (DELETE /v1/test-helpers/data and the dashboard's page), and the
// test clock's reset to now.

/** Tables whose rows carry their merchant and mode; each row of the merchant's test mode but the webhook endpoints (settings) is test data. */
const OWNED = [
  'requests',
  'payments',
  'cust_infos',
  'customers',
  'recurring_consents',
  'subscriptions',
  'events',
  'webhook_endpoints',
  'webhook_deliveries',
  'mail_messages',
  'idempotency_keys',
  'refunds',
  'statements',
  'statement_lines',
  'receipts',
  'receipt_counters',
] as const;

type Row = Record<string, unknown>;
type Dump = Map<string, Row[]>;

/** Every row of every table, each table's rows in one order; the time a key was last used left out. */
async function dumpAll(db: Kysely<any>): Promise<Dump> {
  const tables = (await db.introspection.getTables()).map((t) => t.name).filter((name) => !/^kysely_/.test(name));
  const dump: Dump = new Map();
  for (const table of tables.sort()) {
    const rows = (await db.selectFrom(table).selectAll().execute()) as Row[];
    if (table === 'api_keys') for (const row of rows) delete row.last_used_at;
    dump.set(
      table,
      rows.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)),
    );
  }
  return dump;
}

/** What of a dump is the merchant's test data: the rows deleting it must delete, and only those. */
function testDataOf(dump: Dump, userId: string): (table: string, row: Row) => boolean {
  const ids = new Set<unknown>();
  for (const table of OWNED)
    for (const row of dump.get(table) ?? []) if (row.user_id === userId && row.mode === 'test') ids.add(row.id);
  return (table, row) => {
    if (table === 'webhook_endpoints') return false;
    if ((OWNED as readonly string[]).includes(table)) return row.user_id === userId && row.mode === 'test';
    if (table === 'subscription_charges') return ids.has(row.subscription_id);
    if (table === 'webhook_attempts') return ids.has(row.delivery_id);
    if (table === 'enduring_authorisations') return ids.has(row.request_id);
    if (table === 'enduring_payer_accounts') return ids.has(row.enduring_id);
    if (table === 'jobs') return row.clock_id === userId;
    return false;
  };
}

/**
 * A live copy of every test-mode row of the merchant (and of the rows that belong to them), with
 * new ids, so that live mode has rows in every table the deletion touches, shaped as test mode's.
 */
async function mirrorAsLive(db: Kysely<any>, userId: string): Promise<void> {
  const dump = await dumpAll(db);
  const isTest = testDataOf(dump, userId);
  const ids = new Set<unknown>();
  for (const table of OWNED) for (const row of dump.get(table)!) if (isTest(table, row)) ids.add(row.id);
  for (const row of dump.get('webhook_endpoints')!) if (row.user_id === userId && row.mode === 'test') ids.add(row.id);
  const unique = new Set([
    'id',
    'state',
    'particulars',
    'auth_state',
    'token_hash',
    'dedupe_key',
    'enduring_id',
    'key',
  ]);
  const copy = (row: Row): Row =>
    Object.fromEntries(
      Object.entries(row).map(([column, value]) => [
        column,
        column === 'mode'
          ? 'live'
          : typeof value === 'string' && (ids.has(value) || unique.has(column))
            ? `${value}_live`
            : value,
      ]),
    );
  const order = [
    'webhook_endpoints',
    'requests',
    'payments',
    'cust_infos',
    'customers',
    'enduring_authorisations',
    'recurring_consents',
    'subscriptions',
    'subscription_charges',
    'enduring_payer_accounts',
    'events',
    'webhook_deliveries',
    'webhook_attempts',
    'mail_messages',
    'idempotency_keys',
    'refunds',
    'statements',
    'statement_lines',
    'receipts',
    'receipt_counters',
  ];
  for (const table of order) {
    const rows = dump
      .get(table)!
      .filter(
        (row) => isTest(table, row) || (table === 'webhook_endpoints' && row.user_id === userId && row.mode === 'test'),
      );
    assert.ok(rows.length > 0, `the merchant has test rows in ${table}`);
    await db.insertInto(table).values(rows.map(copy)).execute();
  }
}

function ctxOf(app: TestApp, merchant: { userId: string }): Ctx {
  const { deps } = app;
  return {
    deps,
    db: deps.db,
    merchant: { id: merchant.userId, name: 'x' },
    mode: 'test',
    clock: deps.clock,
    log: deps.log,
    actor: { kind: 'operator', name: 'test' },
    origin: NO_ORIGIN,
  };
}

/** More test data than objectsOf makes: a request that expires (a job on the clock), an idempotent create, a delivery with an attempt, a kept payer account. */
async function moreTestData(world: DashWorld, merchant: DashMerchant, subscriptionId: string, paymentId: string) {
  const { db } = world.app.deps;
  const refund = await merchant.test.post('/v1/refunds', { payment_id: paymentId, amount: '0.50 NZD' });
  assert.equal(refund.status, 201, refund.text);
  const statement = await merchant.test.post('/v1/statements', {
    content:
      'Date,Amount,Other Party,Description,Reference,Particulars,Analysis Code\n01/11/2026,5.00,Cash,DEPOSIT,,,\n',
  });
  assert.equal(statement.status, 201, statement.text);
  await merchant.test.post(
    '/v1/requests',
    { bank_account_id: merchant.bankAccountId, amount: '2.00 NZD', message: 'Later', expires_in: '3d' },
    { headers: { 'idempotency-key': 'once-only' } },
  );
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('user_id', '=', merchant.userId)
    .where('mode', '=', 'test')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('webhook_attempts')
    .values({
      id: `attempt_${delivery.id}`,
      delivery_id: delivery.id,
      attempt: 1,
      started_at: Date.now(),
      latency_ms: 5,
      status_code: 500,
      response_body: 'no',
      error: null,
    })
    .execute();
  await db
    .insertInto('enduring_payer_accounts')
    .values({ enduring_id: subscriptionId, payer_account_sealed: 'sealed', created_at: Date.now() })
    .execute();
}

async function twoMerchantsWithData(t: TestContext) {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  for (const merchant of [kowhai, tui]) {
    // Tax settings (not test data, kept by the deletion), so that payments and refunds get documents.
    const settings = await merchant.live.post('/v1/tax-settings', {
      legal_name: 'Test Supplier Limited',
      gst_number: null,
      prices_include_gst: true,
      issue_tax_invoices: false,
      email_receipts: false,
    });
    assert.equal(settings.status, 200, settings.text);
    const objects = await objectsOf(world, merchant);
    // an event after the endpoint was made, so that it has a delivery
    await merchant.test.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      amount: '1.00 NZD',
      message: 'Hook',
    });
    await moreTestData(world, merchant, objects.subscription.id, objects.payment.id);
    // a charge of the fortnightly subscription on the clock
    await merchant.test.post('/v1/test-helpers/clock/advance', { seconds: 15 * 86_400 });
  }
  // live mode's own objects, through the API, and a copy of every test row as live
  assert.equal((await kowhai.live.post('/v1/webhooks', { url: 'https://example.com/live-hooks' })).status, 201);
  const live = await kowhai.live.post(
    '/v1/requests',
    { bank_account_id: kowhai.bankAccountId, amount: '3.00 NZD', message: 'Live', expires_in: '1d' },
    { headers: { 'idempotency-key': 'once-only' } },
  );
  assert.equal(live.status, 201, live.text);
  await mirrorAsLive(world.app.deps.db, kowhai.userId);
  return { world, kowhai, tui };
}

test("DELETE /v1/test-helpers/data deletes the merchant's test data, answers the counts, and changes nothing else: live mode, another merchant, settings", async (t) => {
  const { world, kowhai, tui } = await twoMerchantsWithData(t);
  const { db } = world.app.deps;
  await chainCommitted(db);
  const before = await dumpAll(db);
  const isTest = testDataOf(before, kowhai.userId);
  const gone = (table: string) => before.get(table)!.filter((row) => isTest(table, row)).length;
  for (const table of [
    ...OWNED.filter((name) => name !== 'webhook_endpoints'),
    'subscription_charges',
    'webhook_attempts',
    'enduring_authorisations',
    'enduring_payer_accounts',
    'jobs',
  ])
    assert.ok(gone(table) > 0, `the merchant has test data in ${table}`);
  const expected = {
    requests: gone('requests'),
    payments: gone('payments'),
    customers: gone('customers'),
    recurring_consents: gone('recurring_consents'),
    subscriptions: gone('subscriptions'),
    events: gone('events'),
    webhook_deliveries: gone('webhook_deliveries'),
    emails: gone('mail_messages'),
    scheduled_jobs: gone('jobs'),
    idempotency_keys: gone('idempotency_keys'),
    refunds: gone('refunds'),
    statements: gone('statements'),
    receipts: gone('receipts'),
  };

  const counted = await kowhai.test.get('/v1/test-helpers/data');
  assert.equal(counted.status, 200, counted.text);
  assert.deepEqual(counted.body, { test_data: expected });
  const tuiBefore = (await tui.test.get('/v1/test-helpers/data')).body;

  const deleted = await kowhai.test.delete('/v1/test-helpers/data');
  assert.equal(deleted.status, 200, deleted.text);
  assert.deepEqual(deleted.body, { deleted: expected });

  // exactly the merchant's test data went: every other row of every table is as it was, and none was written (no event)
  await chainCommitted(db);
  const after = await dumpAll(db);
  // The audit trail keeps every record, the test data's included, and gains the deletion's own.
  const audit = ['audit_events', 'audit_heads', 'audit_pending'];
  const added = after
    .get('audit_events')!
    .filter((row) => !before.get('audit_events')!.some((old) => old.id === row.id));
  assert.deepEqual(
    added.map((row) => [row.user_id, row.action, row.mode]),
    [[kowhai.userId, 'test_data.delete', 'test']],
  );
  assert.equal(after.get('audit_events')!.length, before.get('audit_events')!.length + 1);
  for (const [table, rows] of before)
    if (!audit.includes(table))
      assert.deepEqual(
        after.get(table),
        rows.filter((row) => !isTest(table, row)),
        `${table} is as it was, less the test data`,
      );
  for (const table of OWNED.filter((name) => name !== 'webhook_endpoints')) {
    const live = (dump: Dump) =>
      dump.get(table)!.filter((row) => row.user_id === kowhai.userId && row.mode === 'live').length;
    assert.ok(
      live(before) > 0 && live(after) === live(before),
      `live ${table}: ${live(before)} before, ${live(after)} after`,
    );
  }
  assert.deepEqual((await kowhai.test.get('/v1/test-helpers/data')).body, {
    test_data: Object.fromEntries(Object.keys(expected).map((name) => [name, 0])),
  });
  assert.deepEqual(
    (await tui.test.get('/v1/test-helpers/data')).body,
    tuiBefore,
    "another merchant's test data is all there",
  );

  // settings stay: the test key works, the endpoint and the bank account are there; the API shows no test objects
  assert.equal((await kowhai.test.get('/v1/webhooks')).body.webhooks.length, 1);
  assert.equal((await kowhai.test.get('/v1/bank-accounts')).body.bank_accounts.length, 1);
  for (const list of ['requests', 'customers', 'subscriptions', 'recurring-consents', 'events'])
    assert.deepEqual((await kowhai.test.get(`/v1/${list}`)).body[list.replace('-', '_')], [], list);
  assert.ok((await kowhai.live.get('/v1/requests')).body.requests.length > 0);
  // a key used before the deletion names nothing deleted: it makes a new request
  const again = await kowhai.test.post(
    '/v1/requests',
    { bank_account_id: kowhai.bankAccountId, amount: '2.00 NZD', message: 'Later', expires_in: '3d' },
    { headers: { 'idempotency-key': 'once-only' } },
  );
  assert.equal(again.status, 201, again.text);
  assert.equal((await kowhai.test.get(`/v1/requests/${again.body.request.id}`)).status, 200);

  // live keys get the test helpers' 404, and nothing is counted or deleted
  assertError(await kowhai.live.get('/v1/test-helpers/data'), 404, 'not_found.route', LIVE_ONLY);
  assertError(await kowhai.live.delete('/v1/test-helpers/data'), 404, 'not_found.route', LIVE_ONLY);
  assertError(await kowhai.live.post('/v1/test-helpers/clock/reset', {}), 404, 'not_found.route', LIVE_ONLY);
  assert.deepEqual((await tui.test.get('/v1/test-helpers/data')).body, tuiBefore);
});

test('the deletion is one transaction: a failure after every module deleted its rows leaves everything', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  await objectsOf(world, kowhai);
  const ctx = ctxOf(world.app, kowhai);
  const parts = contributionsOf(world.app.deps).testData;
  const counts = await countTestData(ctx, parts);
  assert.ok(counts.requests > 0 && counts.payments > 0 && counts.subscriptions > 0, JSON.stringify(counts));
  const before = await dumpAll(world.app.deps.db);
  const crashing = [
    ...parts,
    {
      module: 'crash',
      kinds: {},
      count: async () => ({}),
      delete: async () => {
        throw new Error('crashed midway');
      },
    },
  ];
  await assert.rejects(deleteTestData(ctx, crashing), /crashed midway/);
  assert.deepEqual(await countTestData(ctx, parts), counts);
  assert.deepEqual(await dumpAll(world.app.deps.db), before, 'nothing was deleted');
});

/** A listening service (the pay helper reaches the sandbox bank over HTTP) and a merchant with a weekly test subscription. */
async function withSubscription(t: TestContext, workers = false) {
  const app = await buildTestApp(t, { workers });
  app.deps.config.publicBaseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace(
    'localhost',
    '127.0.0.1',
  );
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const request = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Weekly beans',
      subscription_options: { amount: '4.00 NZD', period: 'weekly' },
      cust_info: { email: 'pat@example.com' },
    })
  ).body.request;
  const paid = await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {});
  assert.equal(paid.status, 200, paid.text);
  return { app, merchant, api, subscription: paid.body.subscription };
}

const zeroCounts = (counts: Record<string, number>) => Object.entries(counts).filter(([, n]) => n !== 0);

test('jobs for deleted objects finish as no-ops: queued ones, run after the deletion, write nothing and fail nothing', async (t) => {
  const { app, merchant, api } = await withSubscription(t);
  const { db } = app.deps;
  const recurring = (
    await api.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Top-ups',
      recurring_options: { period: 'weekly', max_per_period: '100.00 NZD', end_date: '2099-01-01' },
      cust_info: { email: 'pat@example.com' },
    })
  ).body.request;
  assert.equal((await api.post(`/v1/test-helpers/requests/${recurring.id}/pay`, {})).status, 200);
  // a week on: the second charge, whose payer account is read from the bank on real time
  assert.equal((await api.post('/v1/test-helpers/clock/advance', { seconds: 7 * 86_400 + 60 })).status, 200);
  await api.post('/v1/requests', {
    bank_account_id: merchant.bankAccountId,
    amount: '1.00 NZD',
    message: 'x',
    expires_in: '1h',
  });
  // every job of the merchant's test objects: on their clock, and on real time (the payer accounts' reads)
  const ids = new Set(
    (await db.selectFrom('payments').select('id').where('user_id', '=', merchant.userId).execute()).map((r) => r.id),
  );
  const jobs = (await db.selectFrom('jobs').selectAll().where('lane', 'is', null).execute()).filter(
    (job) =>
      job.clock_id === merchant.userId || Object.values(JSON.parse(job.payload)).some((v) => ids.has(v as string)),
  );
  const kinds = new Set(jobs.map((job) => job.kind));
  for (const kind of ['request.expire', 'subscription.charge', 'recurring_consent.expire', 'payment.payer_account'])
    assert.ok(kinds.has(kind), `a ${kind} job among ${[...kinds]}`);

  assert.equal((await api.delete('/v1/test-helpers/data')).status, 200);
  // as if a worker had claimed them all just before the deletion: run each now, on the merchant's clock
  await db
    .deleteFrom('jobs')
    .where(
      'id',
      'in',
      jobs.map((job) => job.id),
    )
    .execute();
  await db
    .insertInto('jobs')
    .values(
      jobs.map((job) => ({
        ...job,
        clock_id: merchant.userId,
        run_at: 0,
        attempts: 0,
        locked_by: null,
        locked_until: null,
      })),
    )
    .execute();
  assert.equal(await app.deps.worker.drain(merchant.userId), jobs.length);
  assert.deepEqual(
    await db.selectFrom('jobs').select(['kind', 'last_error']).where('clock_id', '=', merchant.userId).execute(),
    [],
    'every one finished',
  );
  assert.deepEqual(zeroCounts((await api.get('/v1/test-helpers/data')).body.test_data), [], 'and wrote nothing back');
});

/** Waits until `found` answers something, for at most 10 s. */
async function until<T>(what: string, found: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await found();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, what);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('a subscription charge under way at the bank while the data is deleted records nothing, and its job ends without an error', async (t) => {
  const { app, merchant, api, subscription } = await withSubscription(t);
  const { db } = app.deps;
  // the first charge is due now, for the worker (no advance of the clock runs it)
  await api.post(`/v1/test-helpers/subscriptions/${subscription.id}/latency`, { ms: 1500 });
  const running = app.deps.worker.drain(merchant.userId);
  await until('the charge was claimed, its payment written', () =>
    db
      .selectFrom('payments')
      .select('id')
      .where('subscription_id', '=', subscription.id)
      .where('status', '=', 'awaiting-consent')
      .executeTakeFirst(),
  );
  const deleted = await api.delete('/v1/test-helpers/data');
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal(deleted.body.deleted.subscriptions, 1);
  assert.equal(deleted.body.deleted.scheduled_jobs, 0, 'the job under way is left to its worker');
  assert.equal(await running, 1);
  assert.deepEqual(
    await db.selectFrom('jobs').select(['kind', 'last_error']).where('clock_id', '=', merchant.userId).execute(),
    [],
    'the charge job finished, without an error',
  );
  assert.deepEqual(zeroCounts((await api.get('/v1/test-helpers/data')).body.test_data), [], 'nothing written back');
});

test('a payment under a recurring consent, under way at the bank while the data is deleted, answers as the bank did and writes nothing back', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'weekly', max_per_period: '100.00 NZD' });
  await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/latency`, { ms: 1500 });
  const executing = execute(h, token, '5.00 NZD', 'invoice-1');
  await until('the payment was reserved', () =>
    h.runtime.deps.db
      .selectFrom('payments')
      .select('id')
      .where('recurring_consent_id', '=', consent.id)
      .where('status', '=', 'awaiting-consent')
      .executeTakeFirst(),
  );
  assert.equal((await h.api.delete('/v1/test-helpers/data')).body.deleted.recurring_consents, 1);
  const executed = await executing;
  assert.equal(executed.status, 201, executed.text);
  assert.equal(executed.body.payment.status, 'successful');
  assert.deepEqual(zeroCounts((await h.api.get('/v1/test-helpers/data')).body.test_data), [], 'nothing written back');
});

test('a webhook delivery under way while the data is deleted records no attempt, and its job ends', async (t) => {
  const receiver = await startReceiver(() => ({ status: 204, delayMs: 1500 }));
  t.after(() => receiver.close());
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const { db } = world.app.deps;
  assert.equal((await kowhai.test.post('/v1/webhooks', { url: receiver.url })).status, 201);
  await kowhai.test.post('/v1/requests', { bank_account_id: kowhai.bankAccountId, amount: '1.00 NZD', message: 'x' });
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('user_id', '=', kowhai.userId)
    .executeTakeFirstOrThrow();
  await receiver.waitFor(1);
  assert.equal((await kowhai.test.delete('/v1/test-helpers/data')).body.deleted.webhook_deliveries, 1);
  // recorded when the answer comes (1.5 s): a record that failed would hold the job until its lease lapsed (10 s)
  const deadline = Date.now() + 5_000;
  const jobOf = async () =>
    (
      await db.selectFrom('jobs').select(['payload', 'last_error']).where('kind', '=', 'webhook.deliver').execute()
    ).filter((job) => JSON.parse(job.payload).delivery_id === delivery.id);
  while ((await jobOf()).length > 0) {
    assert.ok(Date.now() < deadline, `the delivery's job ended: ${JSON.stringify(await jobOf())}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(
    await db.selectFrom('webhook_attempts').select('id').where('delivery_id', '=', delivery.id).execute(),
    [],
  );
  assert.equal(receiver.received.length, 1, 'sent once');
});

test('reset to now: the offset goes to zero, scheduled work keeps its time on the clock and runs there, once', async (t) => {
  const { app, merchant, api, subscription } = await withSubscription(t);
  assert.equal((await api.post('/v1/test-helpers/clock/advance', { seconds: 10 * 86_400 })).status, 200);
  const charged = (await api.get(`/v1/subscriptions/${subscription.id}`)).body.subscription;
  assert.equal(charged.successful_charges, 2, 'at approval and a week on');
  const nextAt = Date.parse(charged.next_charge_at);

  const before = Date.now();
  const reset = await api.post('/v1/test-helpers/clock/reset', {});
  const after = Date.now();
  assert.equal(reset.status, 200, reset.text);
  assert.equal(reset.body.clock.offset_seconds, 0);
  const now = Date.parse(reset.body.clock.now);
  assert.ok(now >= before && now <= after, `${reset.body.clock.now} is real time`);
  const job = await app.deps.db
    .selectFrom('jobs')
    .select('run_at')
    .where('clock_id', '=', merchant.userId)
    .where('kind', '=', 'subscription.charge')
    .executeTakeFirstOrThrow();
  assert.equal(Number(job.run_at), nextAt, 'the charge is due at its time on the clock, now in real time');
  assert.equal(
    (await api.get(`/v1/subscriptions/${subscription.id}`)).body.subscription.next_charge_at,
    charged.next_charge_at,
  );
  // a second reset changes nothing
  assert.equal((await api.post('/v1/test-helpers/clock/reset', {})).body.clock.offset_seconds, 0);

  // not before its time: the charge runs when the clock reaches it again, once
  await api.post('/v1/test-helpers/clock/advance', { to: new Date(nextAt - 1000).toISOString() });
  assert.equal((await api.get(`/v1/subscriptions/${subscription.id}`)).body.subscription.successful_charges, 2);
  await api.post('/v1/test-helpers/clock/advance', { seconds: 2 * 86_400 });
  const later = (await api.get(`/v1/subscriptions/${subscription.id}`)).body.subscription;
  assert.equal(later.successful_charges, 3);
  const payments = (await api.get(`/v1/subscriptions/${subscription.id}/payments`)).body.payments;
  const newest = payments
    .map((p: { created_at: string }) => Date.parse(p.created_at))
    .sort((a: number, b: number) => b - a)[0];
  assert.ok(
    newest >= nextAt && newest < nextAt + 1000,
    `charged at ${new Date(newest).toISOString()}, due ${charged.next_charge_at}`,
  );
  assert.equal(Date.parse(later.next_charge_at), nextAt + 7 * DAY);
});

test('the dashboard: reset to now, and delete all test data after a page that says what goes and what stays; test mode only', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  await objectsOf(world, kowhai);
  await objectsOf(world, tui);
  await kowhai.test.post('/v1/test-helpers/clock/advance', { seconds: 3 * 86_400 });
  const browser = await logIn(world, kowhai);

  const clock = await browser.request('/dashboard/test/clock');
  assert.match(textOf(clock.text), /Start again Reset to now Delete all test data…/);
  const reset = await browser.request('/dashboard/test/clock/reset', { form: { csrf: Browser.csrfOf(clock.text) } });
  assert.equal(reset.status, 303);
  assert.equal(reset.headers.get('location'), '/dashboard/test/clock?done=reset');
  const afterReset = await browser.request('/dashboard/test/clock?done=reset');
  assert.match(textOf(afterReset.text), /The test clock is back at real time\./);
  assert.match(textOf(afterReset.text), /Ahead of real time by 0 hours/);
  assert.equal((await kowhai.test.get('/v1/test-helpers/clock')).body.clock.offset_seconds, 0);

  const counts = (await kowhai.test.get('/v1/test-helpers/data')).body.test_data;
  const confirm = await browser.request('/dashboard/test/clock/test-data');
  assert.equal(confirm.status, 200);
  const shown = textOf(confirm.text);
  for (const [label, name] of [
    ['Payment requests', 'requests'],
    ['Payments', 'payments'],
    ['Customers', 'customers'],
    ['Recurring consents', 'recurring_consents'],
    ['Subscriptions, with their charges', 'subscriptions'],
    ['Events', 'events'],
    ['Webhook deliveries, with their attempts', 'webhook_deliveries'],
    ['Email records', 'emails'],
    ['Work scheduled on the test clock', 'scheduled_jobs'],
    ['Replies kept for Idempotency-Key', 'idempotency_keys'],
  ])
    assert.match(shown, new RegExp(` ${label} ${counts[name]} `), `${label}: ${counts[name]}`);
  assert.match(shown, /Your API keys, live and test Your webhook endpoints, with their secrets Your bank accounts/);
  assert.match(shown, /no event is written for it, so no webhook goes to your endpoints/);

  // a post without the form's token deletes nothing
  const forged = await browser.request('/dashboard/test/clock/test-data', { form: { csrf: 'nope' } });
  assert.equal(forged.status, 403);
  assert.deepEqual((await kowhai.test.get('/v1/test-helpers/data')).body.test_data, counts);

  const tuiBefore = (await tui.test.get('/v1/test-helpers/data')).body;
  const done = await browser.request('/dashboard/test/clock/test-data', {
    form: { csrf: Browser.csrfOf(confirm.text) },
  });
  assert.equal(done.status, 303);
  const total = Object.values(counts as Record<string, number>).reduce((sum, n) => sum + n, 0);
  assert.equal(done.headers.get('location'), `/dashboard/test/clock?done=deleted&count=${total}`);
  const result = await browser.request(done.headers.get('location')!);
  assert.match(
    textOf(result.text),
    new RegExp(
      `Your test data is deleted \\(${total} records\\)\\. Your API keys, webhook endpoints and bank accounts are as they were\\.`,
    ),
  );
  assert.deepEqual(zeroCounts((await kowhai.test.get('/v1/test-helpers/data')).body.test_data), []);
  assert.deepEqual((await tui.test.get('/v1/test-helpers/data')).body, tuiBefore);
  assert.equal((await kowhai.test.get('/v1/webhooks')).body.webhooks.length, 1, 'the endpoint is kept');
  const empty = await browser.request('/dashboard/test/clock/test-data');
  assert.match(textOf(empty.text), /There is no test data to delete\./);
  assert.doesNotMatch(empty.text, /<button type="submit" class="danger">/);

  // live mode has neither page: 404, and a post there changes nothing
  const live = await browser.request('/dashboard/live');
  const page = await browser.request('/dashboard/live/clock/test-data');
  assert.equal(page.status, 404);
  assert.match(textOf(page.text), /The test clock and test data are in test mode only\./);
  for (const path of ['/dashboard/live/clock/test-data', '/dashboard/live/clock/reset']) {
    const posted = await browser.request(path, { form: { csrf: Browser.csrfOf(live.text) } });
    assert.equal(posted.status, 404, path);
    assert.match(textOf(posted.text), /The test clock and test data are in test mode only\./);
  }
});

test('a one-off payment under way at the bank while the data is deleted: the payer is answered, nothing is written back', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '7.00 NZD' });
  const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
  assert.equal(submitted.status, 303, submitted.body);
  const back = await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`);
  // The bank answers slowly, and then only that it holds the payment (unconfirmed).
  await world.api.post(`/v1/test-helpers/requests/${request.id}/latency`, { ms: 1500 });
  await world.api.post(`/v1/test-helpers/requests/${request.id}/delay`, {});
  const returning = fetch(back, { redirect: 'manual' });
  await until('the payment was claimed for the bank', () =>
    world.app.deps.db
      .selectFrom('payments')
      .select('id')
      .where('request_id', '=', request.id)
      .where('submitted_at', 'is not', null)
      .executeTakeFirst(),
  );
  const deleted = await world.api.delete('/v1/test-helpers/data');
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal(deleted.body.deleted.payments, 1);
  const answered = await returning;
  await answered.body?.cancel();
  assert.ok(answered.status < 500, `the payer is answered, not with an error: ${answered.status}`);
  assert.deepEqual(
    zeroCounts((await world.api.get('/v1/test-helpers/data')).body.test_data),
    [],
    'nothing written back',
  );
});
