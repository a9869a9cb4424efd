import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, createTestMerchant } from '../../../test/helpers.ts';
import { checkoutWorld, createRequest, payViaPage } from '../../../test/flows/checkout.fixtures.ts';
import { hook, listeningApp } from '../../../test/support/banks.ts';
import { authorise, consentHarness, execute } from '../../../test/support/consents.ts';
import { createSubscriptionRequest } from '../../../test/support/subscriptions.ts';
import { runPayerAccountJobs } from '../../../test/support/jobs.ts';
import { PAYER_ACCOUNT_JOB } from './payments.service.ts';

// After a successful payment, the payer's account is read from the bank (debtor-account) and kept
// sealed for refunds; it never appears in clear in the store or in the API. Under an enduring
// consent (a recurring consent or a subscription) the bank is asked once, and later payments take
// the account kept for the consent. On both engines (TEST_ENGINE=postgres for PostgreSQL).

test('a successful payment keeps the payer account the bank released, sealed', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '12.50 NZD', reference: 'INV-7' });
  await payViaPage(world, request.id, {});
  const [payment] = (await world.api.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.equal(payment.status, 'successful');
  assert.equal(await runPayerAccountJobs(world.app.deps.worker), 1);

  const row = await world.app.deps.db
    .selectFrom('payments')
    .select(['payer_account_sealed'])
    .where('id', '=', payment.id)
    .executeTakeFirstOrThrow();
  const payer = (await hook('GET', `${world.baseUrl}/sandbox-bank/test/payers/sandbox`)).body.Data;
  assert.ok(row.payer_account_sealed?.startsWith('sealed:v1:'));
  assert.ok(!row.payer_account_sealed!.includes(payer.AccountNumber));
  assert.deepEqual(JSON.parse(world.app.deps.secrets.open(row.payer_account_sealed!)), {
    scheme_name: 'BECSElectronicCredit',
    identification: payer.AccountNumber,
    name: payer.Name,
  });
  const shown = await world.api.get(`/v1/payments/${payment.id}`);
  assert.ok(!shown.text.includes(payer.AccountNumber));
  // once kept, it is not asked for again
  assert.equal(await runPayerAccountJobs(world.app.deps.worker), 0);
});

test('payments under one enduring consent ask the bank once: later ones take the account kept for the consent', async (t) => {
  const h = await consentHarness(t);
  const worker = h.runtime.deps.worker;
  const db = h.runtime.deps.db;
  const queuedFor = async (paymentId: string) =>
    (
      await db
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', PAYER_ACCOUNT_JOB)
        .where('payload', 'like', `%${paymentId}%`)
        .execute()
    ).length;
  const sealedOf = async (paymentId: string) =>
    (
      await db
        .selectFrom('payments')
        .select('payer_account_sealed')
        .where('id', '=', paymentId)
        .executeTakeFirstOrThrow()
    ).payer_account_sealed;

  const { consent, token } = await authorise(h, { period: 'monthly', max_per_period: '500.00 NZD' });
  const first = (await execute(h, token, '10.00 NZD', 'first')).body.payment;
  assert.equal(first.status, 'successful');
  assert.equal(await queuedFor(first.id), 1, 'the first payment asks the bank');
  // Its outcome was recorded under the payment's lock, after a try that needed a kept account
  // failed: nothing of that try is left.
  const events = await db.selectFrom('events').select('type').where('object_id', '=', first.id).execute();
  assert.deepEqual(events.map((e) => e.type).sort(), ['payment.created', 'payment.status_updated']);
  const usage = (await h.api.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent.usage;
  assert.equal(usage.total.count, 1);
  await runPayerAccountJobs(worker);
  const kept = await sealedOf(first.id);
  assert.ok(kept?.startsWith('sealed:v1:'));
  const forConsent = await db.selectFrom('enduring_payer_accounts').selectAll().execute();
  assert.deepEqual(
    forConsent.map((row) => [row.enduring_id, row.payer_account_sealed]),
    [[consent.id, kept]],
  );

  const second = (await execute(h, token, '12.00 NZD', 'second')).body.payment;
  assert.equal(second.status, 'successful');
  assert.equal(await queuedFor(second.id), 0, 'a later payment under the consent does not ask the bank');
  assert.equal(await sealedOf(second.id), kept, 'it keeps the account of the consent');
  const shown = await h.api.get(`/v1/payments/${second.id}`);
  assert.ok(!/payer_account|sealed:v1/.test(shown.text));

  // Another consent (another enduring_id) asks the bank for its own.
  const other = await authorise(h, { period: 'monthly', max_per_period: '500.00 NZD' });
  const third = (await execute(h, other.token, '5.00 NZD', 'third')).body.payment;
  assert.equal(await queuedFor(third.id), 1);
  assert.equal(await sealedOf(third.id), null);
});

test('a payer-account job finds its consent has an account kept by now and does not ask the bank', async (t) => {
  const h = await consentHarness(t);
  const worker = h.runtime.deps.worker;
  const db = h.runtime.deps.db;
  const { token } = await authorise(h, { period: 'monthly', max_per_period: '500.00 NZD' });
  // Two payments succeed before either job has run: both ask.
  const first = (await execute(h, token, '10.00 NZD', 'first')).body.payment;
  const second = (await execute(h, token, '11.00 NZD', 'second')).body.payment;
  const jobs = (await worker.claim(100)).filter((job) => job.kind === PAYER_ACCOUNT_JOB);
  assert.equal(jobs.length, 2);
  // The first job asks the bank; the sandbox bank then stops answering, and the second job still
  // completes from the account kept for the consent.
  await worker.run(jobs.find((job) => job.payload.includes(first.id))!);
  h.runtime.deps.banks.connectorFor = () => null;
  await worker.run(jobs.find((job) => job.payload.includes(second.id))!);
  const rows = await db
    .selectFrom('payments')
    .select(['id', 'payer_account_sealed'])
    .where('id', 'in', [first.id, second.id])
    .execute();
  assert.equal(rows.length, 2);
  assert.ok(rows[0].payer_account_sealed);
  assert.equal(rows[0].payer_account_sealed, rows[1].payer_account_sealed);
  assert.equal((await db.selectFrom('jobs').select('id').where('kind', '=', PAYER_ACCOUNT_JOB).execute()).length, 0);
});

test("a subscription's later charges take the account its first charge's payer-account job kept", async (t) => {
  const app = await listeningApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const db = app.deps.db;
  const clockNow = async () => Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);
  const advanceBy = async (ms: number) =>
    assert.equal(
      (await api.post('/v1/test-helpers/clock/advance', { to: new Date((await clockNow()) + ms).toISOString() }))
        .status,
      200,
    );
  const request = await createSubscriptionRequest(api, merchant.bankAccountId, {
    amount: '15.00 NZD',
    period: 'weekly',
    total_count: 3,
  });
  const subscription = (await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.subscription;
  const charges = async () =>
    db
      .selectFrom('payments')
      .select(['id', 'status', 'payer_account_sealed'])
      .where('subscription_id', '=', subscription.id)
      .orderBy('created_at')
      .execute();
  const payerAccountJobs = async () =>
    db.selectFrom('jobs').select('payload').where('kind', '=', PAYER_ACCOUNT_JOB).execute();

  await advanceBy(1000);
  const [first] = await charges();
  assert.equal(first.status, 'successful');
  assert.equal((await payerAccountJobs()).length, 1);
  await runPayerAccountJobs(app.deps.worker);
  const kept = (await charges())[0].payer_account_sealed;
  assert.ok(kept?.startsWith('sealed:v1:'));

  await advanceBy(7 * 86_400_000);
  const [, second] = await charges();
  assert.equal(second.status, 'successful');
  assert.equal(second.payer_account_sealed, kept);
  assert.deepEqual(await payerAccountJobs(), [], 'the second charge did not ask the bank');
});

test("a payment made on a test clock months ahead has its payer account asked for at once, not at the clock's time", async (t) => {
  const app = await listeningApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const ahead = new Date(Date.now() + 90 * 86_400_000).toISOString();
  assert.equal((await api.post('/v1/test-helpers/clock/advance', { to: ahead })).status, 200);
  const created = await api.post('/v1/requests', {
    amount: '9.00 NZD',
    message: 'Ahead',
    bank_account_id: merchant.bankAccountId,
  });
  assert.equal(created.status, 201, created.text);
  const paid = await api.post(`/v1/test-helpers/requests/${created.body.request.id}/pay`, {});
  assert.equal(paid.status, 200, paid.text);
  const payment = paid.body.payment;
  assert.equal(payment.status, 'successful');

  assert.equal(await runPayerAccountJobs(app.deps.worker), 1, "the job is due now, on the service's own time");
  const row = await app.deps.db
    .selectFrom('payments')
    .select('payer_account_sealed')
    .where('id', '=', payment.id)
    .executeTakeFirstOrThrow();
  assert.ok(row.payer_account_sealed?.startsWith('sealed:v1:'));
});
