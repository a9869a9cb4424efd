import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request as forward } from 'undici';
import { startReceiver } from '../support/webhook-receiver.ts';
import { merchantByCli, openStoreDb, processStore, runCli, startService } from '../process.ts';
import { authoriseAtBank } from '../../src/modules/test-helpers/pay.bank-driver.ts';
import { returnToService, submitPage } from './checkout.fixtures.ts';

// A real `node src/main.ts` SIGKILLed while an execution's bank call is under way: the payment was
// reserved, the bank never answered, and nothing recorded the outcome. After a restart the sweep of
// interrupted executions gives it the settle job, which submits it again with the same
// x-idempotency-key once its two minutes have passed on the test clock (docs/recurring.md).
// Runs on SQLite, and on PostgreSQL when TEST_ENGINE=postgres.

/**
 * The sandbox bank, seen through a forwarder the test controls: SANDBOX_BANK_URL names the
 * forwarder (its pages link by absolute path, so the forwarder keeps the path), which passes
 * everything to the service that runs now, except payment submissions while `holding`, which it
 * keeps unanswered.
 */
async function bankForwarder(t: TestContext) {
  const state = { target: '', holding: false, held: 0, swallowing: false, swallowed: 0 };
  const server = http.createServer(async (incoming, outgoing) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    if (state.holding && incoming.method === 'POST' && incoming.url!.includes('domestic-payments')) {
      state.held++;
      return;
    }
    try {
      const {
        host: _host,
        connection: _connection,
        'keep-alive': _keepAlive,
        'transfer-encoding': _encoding,
        ...headers
      } = incoming.headers;
      const answer = await forward(`${state.target}${incoming.url}`, {
        method: incoming.method as 'GET',
        headers: headers as Record<string, string>,
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      });
      const body = Buffer.from(await answer.body.arrayBuffer());
      // The bank has done it; its answer never reaches the service.
      if (state.swallowing && incoming.method === 'POST' && incoming.url!.includes('domestic-payments')) {
        state.swallowed++;
        return;
      }
      const { connection: _c, 'transfer-encoding': _te, 'keep-alive': _ka, ...answerHeaders } = answer.headers;
      outgoing.writeHead(answer.statusCode, answerHeaders as http.OutgoingHttpHeaders).end(body);
    } catch (error) {
      outgoing.writeHead(502).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, state };
}

/** A call to the API of whichever service `base` names, with `key`. */
function caller(key: string) {
  return async (base: string, method: string, url: string, body?: unknown) => {
    const response = await fetch(`${base}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
}

test("SIGKILL during an execution's bank call: after restart the payment is submitted again with the same key and charged once", async (t) => {
  const store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const merchant = await merchantByCli(store, 'Crash Ltd', 'crash@example.com');
  const bank = await bankForwarder(t);
  const receiver = await startReceiver();
  t.after(() => receiver.close());
  const env = { DEMO_MERCHANT: 'false', SANDBOX_BANK_URL: `${bank.url}/sandbox-bank` };

  const first = await startService(t, store, env);
  bank.state.target = first.baseUrl;
  const call = caller(merchant.test_key);
  assert.equal(
    (await call(first.baseUrl, 'POST', '/v1/webhooks', { url: receiver.url, events: ['recurring_payment.authorised'] }))
      .status,
    201,
  );
  const createdRequest = await call(first.baseUrl, 'POST', '/v1/requests', {
    bank_account_id: merchant.bank_account_id,
    message: 'Weekly veg box',
    recurring_options: { period: 'weekly', max_per_period: '50.00 NZD' },
    cust_info: { email: 'payer@example.com' },
  });
  assert.equal(createdRequest.status, 201, JSON.stringify(createdRequest.body));
  const request = createdRequest.body.request;
  const paid = await call(first.baseUrl, 'POST', `/v1/test-helpers/requests/${request.id}/pay`, {});
  assert.equal(paid.status, 200, JSON.stringify(paid.body) + first.stdout().slice(-3000) + first.stderr().slice(-2000));
  const consentId = paid.body.recurring_consent.id;
  const token = (await receiver.waitFor(1))[0]!.body.data.token as string;

  // The bank takes the submission and never answers; the service dies while it waits.
  bank.state.holding = true;
  const stuck = call(first.baseUrl, 'POST', '/v1/payments', {
    token,
    amount: '7.00 NZD',
    idempotency_key: 'order-7',
  }).catch(() => null);
  const deadline = Date.now() + 20_000;
  while (bank.state.held === 0) {
    assert.ok(Date.now() < deadline, 'the submission reached the bank');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  first.child.kill('SIGKILL');
  assert.equal(await first.exited, null, 'killed, not exited');
  assert.equal(await stuck, null, 'the merchant had no answer');
  bank.state.holding = false;

  const db = openStoreDb(store);
  t.after(() => db.destroy());
  const inFlight = await db
    .selectFrom('payments')
    .select(['id', 'status'])
    .where('recurring_consent_id', '=', consentId)
    .execute();
  assert.deepEqual(
    inFlight.map((p) => p.status),
    ['awaiting-consent'],
    'reserved, never recorded',
  );
  const paymentId = inFlight[0]!.id;

  const second = await startService(t, store, env);
  bank.state.target = second.baseUrl;
  // The sweep runs as the workers start, and queues the settle job.
  const settleKey = `recurring_payment.settle:${paymentId}`;
  while ((await db.selectFrom('jobs').select('id').where('dedupe_key', '=', settleKey).execute()).length === 0) {
    assert.ok(Date.now() < deadline + 30_000, 'the sweep queued the settle job');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(
    (await call(second.baseUrl, 'GET', `/v1/payments/${paymentId}`)).body.payment.status,
    'awaiting-consent',
    'not before its two minutes',
  );

  assert.equal((await call(second.baseUrl, 'POST', '/v1/test-helpers/clock/advance', { seconds: 3 * 60 })).status, 200);
  const payment = (await call(second.baseUrl, 'GET', `/v1/payments/${paymentId}`)).body.payment;
  assert.equal(payment.status, 'successful');
  const { bank_consent_id } = await db
    .selectFrom('recurring_consents')
    .select('bank_consent_id')
    .where('id', '=', consentId)
    .executeTakeFirstOrThrow();
  const atBank = await db
    .selectFrom('sandbox_payments')
    .select(['id', 'amount_cents'])
    .where('consent_id', '=', bank_consent_id)
    .execute();
  assert.equal(atBank.length, 1, 'charged once');

  // The merchant's retry with the same key gets the same payment.
  const retried = await call(second.baseUrl, 'POST', '/v1/payments', {
    token,
    amount: '7.00 NZD',
    idempotency_key: 'order-7',
  });
  assert.equal(retried.status, 200);
  assert.equal(retried.body.payment.id, paymentId);
  assert.equal(retried.body.payment.status, 'successful');
});

/**
 * A one-off payment whose process is SIGKILLed during its submission: `took` when the bank executed
 * it and its answer was lost, else when the submission never reached the bank. Either way the
 * reconciler submits it again under the same key with the token kept for it, and it is paid once.
 */
async function oneOffKilledDuringSubmission(t: TestContext, bankTookIt: boolean) {
  const store = await processStore(t, { migrated: true });
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const merchant = await merchantByCli(store, 'Crash Ltd', 'crash@example.com');
  const bank = await bankForwarder(t);
  const env = { DEMO_MERCHANT: 'false', SANDBOX_BANK_URL: `${bank.url}/sandbox-bank` };
  const first = await startService(t, store, env);
  bank.state.target = first.baseUrl;
  const call = caller(merchant.test_key);
  const created = await call(first.baseUrl, 'POST', '/v1/requests', {
    bank_account_id: merchant.bank_account_id,
    amount: '9.99 NZD',
    message: 'One coffee',
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const request = created.body.request;
  const page = await submitPage(first.baseUrl, request.id, { bank: 'sandbox' });
  assert.equal(page.status, 303, page.body);
  const back = await authoriseAtBank(page.location!, 'approve', `${first.baseUrl}/pay/return`);

  // The bank executes the payment and its answer is lost, or it never gets it; the service dies meanwhile.
  if (bankTookIt) bank.state.swallowing = true;
  else bank.state.holding = true;
  const returned = returnToService(back).catch(() => null);
  const deadline = Date.now() + 20_000;
  while (bank.state.swallowed + bank.state.held === 0) {
    assert.ok(Date.now() < deadline, 'the submission reached the bank');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  first.child.kill('SIGKILL');
  assert.equal(await first.exited, null, 'killed, not exited');
  assert.equal(await returned, null, 'the payer had no answer');
  bank.state.swallowing = false;
  bank.state.holding = false;

  const db = openStoreDb(store);
  t.after(() => db.destroy());
  const [claimed] = await db.selectFrom('payments').selectAll().where('request_id', '=', request.id).execute();
  assert.equal(claimed!.status, 'awaiting-consent', 'claimed, never recorded');
  assert.ok(claimed!.submission_token_sealed, 'the token it was submitted with is kept, sealed');
  assert.doesNotMatch(claimed!.submission_token_sealed!, /^sandbox|^[A-Za-z0-9_-]{20,}$/);

  const second = await startService(t, store, env);
  bank.state.target = second.baseUrl;
  // Past the 30 minutes a payer has at the bank: the sweep finds it claimed, and the reconciler asks.
  assert.equal(
    (await call(second.baseUrl, 'POST', '/v1/test-helpers/clock/advance', { seconds: 31 * 60 })).status,
    200,
  );
  let payment: any;
  for (;;) {
    payment = (await call(second.baseUrl, 'GET', `/v1/payments/${claimed!.id}`)).body.payment;
    if (payment.status === 'successful') break;
    assert.ok(Date.now() < deadline + 30_000, `reconciled (now ${payment.status})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal((await call(second.baseUrl, 'GET', `/v1/requests/${request.id}`)).body.request.status, 'paid');
  const atBank = await db
    .selectFrom('sandbox_payments')
    .select(['id'])
    .where('consent_id', '=', claimed!.bank_consent_id!)
    .execute();
  assert.equal(atBank.length, 1, 'paid once at the bank');
  const [recorded] = await db
    .selectFrom('payments')
    .select(['bank_payment_id', 'submission_token_sealed'])
    .where('id', '=', claimed!.id)
    .execute();
  assert.equal(recorded!.bank_payment_id, atBank[0]!.id);
  assert.equal(recorded!.submission_token_sealed, null, 'the token is dropped once the bank named the payment');
}

test('SIGKILL after the bank took a one-off payment, before its answer was recorded: submitted again under the same key, paid once', (t) =>
  oneOffKilledDuringSubmission(t, true));

test('SIGKILL while a one-off payment was on its way to the bank: submitted again with the kept token, paid once', (t) =>
  oneOffKilledDuringSubmission(t, false));
