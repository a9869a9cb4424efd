import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createRuntime } from '../../src/runtime.ts';
import { STANDALONE_CLIENT_SECRET } from '../../src/sandbox-bank/sandbox-bank.app.ts';
import { authoriseAtBank } from '../../src/modules/test-helpers/pay.bank-driver.ts';
import { apiClient, createTestMerchant, freshDb, testConfig } from '../helpers.ts';
import { checkoutWorld, createRequest, returnToService, submitPage } from './checkout.fixtures.ts';
import { authorise, consentHarness, execute } from '../support/consents.ts';
import { createSubscriptionRequest } from '../support/subscriptions.ts';

// The sandbox bank the service mounts: its client secret is made at the first start and shown
// nowhere, so only the service acts at the bank; merchants make the bank decline, hold, answer
// slowly and release through the test helpers, with their test key, on their own objects only
// (docs/banks.md, "Test hooks").

test('the mounted sandbox bank accepts only the secret made at first start, which is sealed, kept across restarts and never logged', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  const config = { ...testConfig({ workers: false }), sandboxClientSecret: null };
  const first = await createRuntime(config, { db: testDb.db, log });
  const secret = first.deps.banks.sandboxCredentials.clientSecret;
  assert.notEqual(secret, STANDALONE_CLIENT_SECRET);
  assert.ok(secret.length >= 40);
  const rows = await testDb.db.selectFrom('bank_client_secrets').selectAll().execute();
  assert.equal(rows.length, 1);
  assert.ok(rows[0]!.secret_sealed.startsWith('sealed:') && !rows[0]!.secret_sealed.includes(secret), 'sealed at rest');

  const address = await first.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = address.replace('localhost', '127.0.0.1');
  first.deps.config.publicBaseUrl = baseUrl;
  const basic = (password: string) => `Basic ${Buffer.from(`tono:${password}`).toString('base64')}`;
  const hook = (password: string) =>
    fetch(`${baseUrl}/sandbox-bank/test/payers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(password) },
      body: JSON.stringify({ username: 'rich', balance: '99999999.99' }),
    });
  assert.equal((await hook(STANDALONE_CLIENT_SECRET)).status, 401, 'the documented standalone secret is refused');
  const token = await fetch(`${baseUrl}/sandbox-bank/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: 'tono',
      client_secret: STANDALONE_CLIENT_SECRET,
    }),
  });
  assert.equal(token.status, 401);
  // the service itself pays through it
  const merchant = await createTestMerchant(first, 'Kōwhai Coffee');
  const api = apiClient(first, merchant.testKey);
  const request = (
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '4.00 NZD', message: 'Cup' })
  ).body.request;
  assert.equal((await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.payment.status, 'successful');
  await first.app.close();

  const second = await createRuntime(config, { db: testDb.db, log });
  t.after(() => second.app.close());
  assert.equal(second.deps.banks.sandboxCredentials.clientSecret, secret, 'the same secret after a restart');
  assert.ok(!lines.some((line) => line.includes(secret)), 'never in the log');
});

test('merchants drive the bank through test helpers: a payment awaiting approval declined, held then released, a slow bank; a subscription being approved declined at its first charge', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '12.00 NZD', type: 'multi' });
  // before the payer has chosen a bank there is nothing to act on
  const early = await world.api.post(`/v1/test-helpers/requests/${request.id}/decline-next`, {});
  assert.deepEqual([early.status, early.body.code], [409, 'conflict.invalid_state']);

  const pay = async (arrange: (paymentId: string) => Promise<void>) => {
    const submitted = await submitPage(world.baseUrl, request.id, { bank: 'sandbox' });
    const payment = (await world.api.get(`/v1/requests/${request.id}/payments`)).body.payments[0];
    assert.equal(payment.status, 'awaiting-consent');
    await arrange(payment.id);
    await returnToService(await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`));
    return payment.id as string;
  };
  const status = async (id: string) => (await world.api.get(`/v1/payments/${id}`)).body.payment;

  const declined = await pay(async (id) => {
    const release = await world.api.post(`/v1/test-helpers/payments/${id}/release`, {});
    assert.deepEqual([release.status, release.body.code], [409, 'conflict.invalid_state'], 'nothing executed yet');
    const reply = await world.api.post(`/v1/test-helpers/payments/${id}/decline-next`, {
      reason: 'insufficient_funds',
    });
    assert.deepEqual([reply.status, reply.body.payment.id, reply.body.payment.status], [200, id, 'awaiting-consent']);
  });
  assert.deepEqual(
    [(await status(declined)).status, (await status(declined)).failure_reason],
    ['failed', 'insufficient_funds'],
  );

  const held = await pay(async (id) =>
    assert.equal((await world.api.post(`/v1/test-helpers/payments/${id}/delay`, {})).status, 200),
  );
  assert.equal((await status(held)).status, 'unconfirmed');
  assert.equal(
    (await world.api.post(`/v1/test-helpers/payments/${held}/release`, { outcome: 'completed' })).status,
    200,
  );
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 600 });
  assert.equal((await status(held)).status, 'successful');

  const slow = await pay(async (id) =>
    assert.equal((await world.api.post(`/v1/test-helpers/payments/${id}/latency`, { ms: 300 })).status, 200),
  );
  assert.equal((await status(slow)).status, 'successful', 'a slow answer within the timeout is still an answer');

  // a subscription whose payer is at the bank: its first charge is declined once they approve
  const plan = await createRequest(world, {
    subscription_options: { amount: '15.00 NZD', period: 'monthly' },
    cust_info: { email: 'pat@example.com' },
  });
  const submitted = await submitPage(world.baseUrl, plan.id, { bank: 'sandbox' });
  assert.equal(
    (await world.api.post(`/v1/test-helpers/requests/${plan.id}/decline-next`, { reason: 'insufficient_funds' }))
      .status,
    200,
  );
  await returnToService(await authoriseAtBank(submitted.location!, 'approve', `${world.baseUrl}/pay/return`));
  await world.api.post('/v1/test-helpers/clock/advance', { seconds: 60 });
  const subscription = (await world.api.get('/v1/subscriptions', { query: { request_id: plan.id } })).body
    .subscriptions[0];
  const charges = (await world.api.get(`/v1/subscriptions/${subscription.id}/payments`)).body.payments;
  assert.deepEqual(
    charges.map((p: any) => [p.status, p.failure_reason]),
    [['failed', 'insufficient_funds']],
  );
  for (const action of ['delay', 'latency'] as const) {
    const reply = await world.api.post(
      `/v1/test-helpers/subscriptions/${subscription.id}/${action}`,
      action === 'latency' ? { ms: 10 } : { off: true },
    );
    assert.deepEqual([reply.status, reply.body.subscription.id], [200, subscription.id]);
  }

  // a live key, another merchant, and bad input: refused, the bank untouched
  assert.equal((await world.live.post(`/v1/test-helpers/payments/${held}/delay`, {})).status, 404);
  const other = await createTestMerchant(world.app, 'Tui Books');
  const stranger = apiClient(world.app, other.testKey);
  assert.deepEqual((await stranger.post(`/v1/test-helpers/payments/${held}/delay`, {})).body.code, 'not_found.payment');
  assert.deepEqual(
    (await stranger.post(`/v1/test-helpers/subscriptions/${subscription.id}/latency`, { ms: 1 })).body.code,
    'not_found.subscription',
  );
  assert.deepEqual(
    (await stranger.post(`/v1/test-helpers/requests/${plan.id}/delay`, {})).body.code,
    'not_found.request',
  );
  const bad = await world.api.post(`/v1/test-helpers/payments/${held}/latency`, { ms: -1 });
  assert.deepEqual([bad.status, bad.body.code], [400, 'bad_request.invalid_param.ms']);
});

test("a payment under a recurring consent or a subscription is driven by the payment's own hooks: held, then released either way, and declined", async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'monthly', max_per_period: '500.00 NZD' });
  const status = async (id: string) => (await h.api.get(`/v1/payments/${id}`)).body.payment;
  const hook = (id: string, action: string, body: Record<string, unknown> = {}) =>
    h.api.post(`/v1/test-helpers/payments/${id}/${action}`, body);

  assert.equal((await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/delay`, {})).status, 200);
  const held = (await execute(h, token, '10.00 NZD', 'held-1')).body.payment;
  assert.equal(held.status, 'unconfirmed');
  const released = await hook(held.id, 'release', { outcome: 'rejected', reason: 'insufficient_funds' });
  assert.equal(released.status, 200, released.text);
  await h.api.post('/v1/test-helpers/clock/advance', { seconds: 600 });
  assert.deepEqual(
    [(await status(held.id)).status, (await status(held.id)).failure_reason],
    ['failed', 'insufficient_funds'],
  );

  // the payment's hooks act on the consent it was made under
  assert.equal((await hook(held.id, 'delay', { off: true })).status, 200);
  assert.equal((await hook(held.id, 'decline-next', { reason: 'account_closed' })).status, 200);
  const declined = (await execute(h, token, '11.00 NZD', 'declined-1')).body.payment;
  assert.deepEqual([declined.status, declined.failure_reason], ['failed', 'account_closed']);
  assert.equal((await hook(held.id, 'latency', { ms: 50 })).status, 200);
  assert.equal((await execute(h, token, '12.00 NZD', 'slow-1')).body.payment.status, 'successful');

  // a subscription's charge, held by the subscription's hook and released by the charge's
  const request = await createSubscriptionRequest(h.api, h.merchant.bankAccountId, {
    amount: '15.00 NZD',
    period: 'weekly',
  });
  const subscription = (await h.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.subscription;
  assert.equal((await h.api.post(`/v1/test-helpers/subscriptions/${subscription.id}/delay`, {})).status, 200);
  await h.api.post('/v1/test-helpers/clock/advance', { seconds: 60 });
  const [charge] = (await h.api.get(`/v1/subscriptions/${subscription.id}/payments`)).body.payments;
  assert.equal(charge.status, 'unconfirmed');
  assert.equal((await hook(charge.id, 'release', {})).status, 200);
  await h.api.post('/v1/test-helpers/clock/advance', { seconds: 600 });
  assert.equal((await status(charge.id)).status, 'successful');
});
