import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, createTestMerchant } from '../../../test/helpers.ts';
import { checkoutWorld, createRequest, eventsOf, type CheckoutWorld } from '../../../test/flows/checkout.fixtures.ts';
import { hook, sandboxBalanceOf } from '../../../test/support/banks.ts';
import { authorise, consentHarness, execute } from '../../../test/support/consents.ts';
import { ensureTestAuthority, readyAuthority, sandboxHolderOf } from './refunds.authority.ts';
import { runRefundJobs } from '../../../test/support/refunds.ts';
import type { Db } from '../../store/db.ts';
import { renderMail } from '../mail/mail.templates.ts';

// Refunds through the API, carried out by the sandbox bank over HTTP: counted against the payment
// when created, paid under the merchant's test-mode refund authority to the account the payment
// came from, given back when they fail. On both engines (TEST_ENGINE=postgres for PostgreSQL).

/** A queued message about a refund, rendered as it is sent. */
async function renderedMail(db: Db, refundId: string, template: 'refund_sent' | 'refund_arrived') {
  const row = await db
    .selectFrom('mail_messages')
    .select('data')
    .where('related_id', '=', refundId)
    .where('template', '=', template)
    .executeTakeFirstOrThrow();
  return renderMail(template, JSON.parse(row.data), 'https://pay.example/customer');
}

async function paidPayment(world: CheckoutWorld, amount = '12.50 NZD', email = 'aroha@example.com') {
  const request = await createRequest(world, { amount, reference: 'INV-7' });
  const paid = await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, { cust_info: { email } });
  assert.equal(paid.status, 200, paid.text);
  assert.equal(paid.body.payment.status, 'successful');
  return paid.body.payment as { id: string; request_id: string; particulars: string };
}

const balanceOf = (world: CheckoutWorld, username: string) => sandboxBalanceOf(world.baseUrl, username);

const mailsOf = (world: CheckoutWorld, refundId: string) =>
  world.app.deps.db
    .selectFrom('mail_messages')
    .select(['template', 'to_address'])
    .where('related_id', '=', refundId)
    .orderBy('created_at')
    .execute();

test('a full refund is paid from the merchant’s sandbox account to the payer’s, with its events and emails', async (t) => {
  const world = await checkoutWorld(t);
  const payment = await paidPayment(world);
  const payerBefore = await balanceOf(world, 'sandbox');

  const created = await world.api.post('/v1/refunds', { payment_id: payment.id, reason: 'Damaged in transit' });
  assert.equal(created.status, 201, created.text);
  const refund = created.body.refund;
  assert.match(refund.id, /^refund_[0-9A-Z]{26}$/);
  assert.equal(refund.status, 'pending');
  assert.deepEqual(refund.amount, { value: '12.50 NZD', formatted: '$12.50' });
  assert.equal(refund.payment_id, payment.id);
  assert.equal(refund.request_id, payment.request_id);
  assert.equal(refund.reason, 'Damaged in transit');
  assert.equal(refund.is_test_mode, true);
  const shownPayment = (await world.api.get(`/v1/payments/${payment.id}`)).body.payment;
  assert.deepEqual(shownPayment.amount_refunded, { value: '12.50 NZD', formatted: '$12.50' });
  assert.deepEqual(refund.pcr, { particulars: 'Refund', code: shownPayment.pcr.particulars, reference: 'INV-7' });

  await runRefundJobs(world.app.deps.worker);
  const done = (await world.api.get(`/v1/refunds/${refund.id}`)).body.refund;
  assert.equal(done.status, 'successful');
  assert.ok(done.completed_at);
  // test mode moves 0.01, as payments do: out of the merchant's sandbox account, into the payer's
  assert.equal(Math.round(Number(await balanceOf(world, 'sandbox')) * 100) - Math.round(Number(payerBefore) * 100), 1);
  assert.equal(await balanceOf(world, sandboxHolderOf(world.merchant.userId)), '999999.99');

  assert.deepEqual(
    (await eventsOf(world, refund.id)).map((event) => [event.type, event.data.status]),
    [
      ['refund.created', 'pending'],
      ['refund.status_updated', 'successful'],
    ],
  );
  assert.deepEqual(await mailsOf(world, refund.id), [
    { template: 'refund_sent', to_address: 'aroha@example.com' },
    { template: 'refund_arrived', to_address: 'aroha@example.com' },
  ]);
  // A one-off payer has no payer dashboard to sign in to: the message does not offer one.
  const arrived = await renderedMail(world.app.deps.db, refund.id, 'refund_arrived');
  assert.match(arrived.text, /Your refund of \$12\.50 from Kōwhai Coffee arrived in the account you paid from/);
  assert.match(arrived.text, /Particulars {2}Refund\n {2}Code {9}V-/);
  assert.doesNotMatch(arrived.text + arrived.html, /\/customer/);

  const again = await world.api.post('/v1/refunds', { payment_id: payment.id });
  assert.equal(again.status, 422);
  assert.equal(again.body.code, 'refund_rejected.exceeds_refundable');
  assert.deepEqual(again.body.params.refundable, { value: '0.00 NZD', formatted: '$0.00' });
});

test('partial refunds add up to at most the payment; bad input, other modes and other merchants change nothing', async (t) => {
  const world = await checkoutWorld(t);
  const payment = await paidPayment(world);
  const refund = (amount: string) => world.api.post('/v1/refunds', { payment_id: payment.id, amount });

  assert.equal((await refund('5.00 NZD')).status, 201);
  const over = await refund('8.00 NZD');
  assert.equal(over.status, 422);
  assert.deepEqual(over.body.params.refundable, { value: '7.50 NZD', formatted: '$7.50' });
  assert.equal((await refund('7.50 NZD')).status, 201);

  for (const [body, status, code] of [
    [{ payment_id: payment.id, amount: 'five' }, 400, /^bad_request/],
    [{ payment_id: payment.id, amount: '0.00 NZD' }, 400, /^bad_request/],
    [{ payment_id: payment.id, reason: 'x'.repeat(61) }, 400, /^bad_request/],
    [{ payment_id: 'payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V' }, 404, /^not_found.payment/],
    [{ amount: '1.00 NZD' }, 400, /^bad_request/],
  ] as const) {
    const answer = await world.api.post('/v1/refunds', body);
    assert.equal(answer.status, status, JSON.stringify(body));
    assert.match(answer.body.code, code);
  }
  // the live key does not see a test payment; another merchant does not see it at all
  assert.equal((await world.live.post('/v1/refunds', { payment_id: payment.id })).status, 404);
  const other = await createTestMerchant(world.app, 'Other');
  assert.equal((await apiClient(world.app, other.testKey).post('/v1/refunds', { payment_id: payment.id })).status, 404);

  const unpaid = await createRequest(world, { amount: '3.00 NZD' });
  const declined = await world.api.post(`/v1/test-helpers/requests/${unpaid.id}/pay`, { outcome: 'decline' });
  const failedPayment = declined.body.payment;
  const notSuccessful = await world.api.post('/v1/refunds', { payment_id: failedPayment.id });
  assert.equal(notSuccessful.status, 409);
  assert.equal(notSuccessful.body.code, 'conflict.invalid_state');

  const list = (await world.api.get(`/v1/refunds?payment_id=${payment.id}`)).body;
  assert.deepEqual(
    list.refunds.map((r: { amount: { value: string } }) => r.amount.value),
    ['7.50 NZD', '5.00 NZD'],
  );
  assert.equal((await world.api.get('/v1/refunds?status=successful')).body.refunds.length, 0);
  assert.equal((await apiClient(world.app, other.testKey).get('/v1/refunds')).body.refunds.length, 0);
  const shown = (await world.api.get(`/v1/payments/${payment.id}`)).body.payment;
  assert.equal(shown.amount_refunded.value, '12.50 NZD');
});

test('an Idempotency-Key gives one refund: the same body replays it, another body is a conflict', async (t) => {
  const world = await checkoutWorld(t);
  const payment = await paidPayment(world);
  const headers = { headers: { 'idempotency-key': 'refund-order-42' } };
  const body = { payment_id: payment.id, amount: '2.00 NZD' };
  const [first, second] = await Promise.all([
    world.api.post('/v1/refunds', body, headers),
    world.api.post('/v1/refunds', body, headers),
  ]);
  const statuses = [first.status, second.status].sort();
  assert.deepEqual(statuses, [200, 201]);
  assert.equal(first.body.refund.id, second.body.refund.id);
  const clash = await world.api.post('/v1/refunds', { ...body, amount: '3.00 NZD' }, headers);
  assert.equal(clash.status, 409);
  assert.equal(clash.body.code, 'conflict.idempotency_key_reused');
  assert.equal((await world.api.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '2.00 NZD');
});

test('16 concurrent refunds of 2.00 on a 12.50 payment: 6 are taken, 10 refused, 12.00 refunded', async (t) => {
  const world = await checkoutWorld(t);
  const payment = await paidPayment(world);
  const answers = await Promise.all(
    Array.from({ length: 16 }, () => world.api.post('/v1/refunds', { payment_id: payment.id, amount: '2.00 NZD' })),
  );
  assert.equal(answers.filter((answer) => answer.status === 201).length, 6);
  const refused = answers.filter((answer) => answer.status === 422);
  assert.equal(refused.length, 10);
  for (const answer of refused) assert.equal(answer.body.code, 'refund_rejected.exceeds_refundable');
  assert.equal((await world.api.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '12.00 NZD');
});

test('a test-mode refund runs on the merchant’s test clock: an advance carries it out, at the clock’s time, and its credit note is dated then', async (t) => {
  const world = await checkoutWorld(t);
  const saved = await world.live.post('/v1/tax-settings', {
    legal_name: 'Kōwhai Coffee Limited',
    gst_number: '49-091-850',
    prices_include_gst: true,
    issue_tax_invoices: true,
    email_receipts: false,
  });
  assert.equal(saved.status, 200, saved.text);
  const leapDay = Date.parse('2028-02-29T12:00:00+13:00');
  const moved = await world.api.post('/v1/test-helpers/clock/advance', { to: new Date(leapDay).toISOString() });
  assert.equal(moved.status, 200, moved.text);
  const payment = await paidPayment(world, '1.00 NZD');

  const created = await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '0.50 NZD' });
  assert.equal(created.status, 201, created.text);
  const refund = created.body.refund;
  // The advance itself carries the refund out, as it does the clock's other work: no worker runs here.
  const advanced = await world.api.post('/v1/test-helpers/clock/advance', { seconds: 60 });
  assert.equal(advanced.status, 200, advanced.text);
  const done = (await world.api.get(`/v1/refunds/${refund.id}`)).body.refund;
  assert.equal(done.status, 'successful');

  const onTheClock = (at: string | number | null) => {
    const ms = typeof at === 'string' ? Date.parse(at) : Number(at);
    assert.ok(
      ms >= leapDay && ms <= Date.parse(advanced.body.clock.now),
      `${new Date(ms).toISOString()} is not on the test clock`,
    );
  };
  for (const at of [done.created_at, done.updated_at, done.completed_at]) onTheClock(at);
  const row = await world.app.deps.db
    .selectFrom('refunds')
    .select(['submitted_at', 'sent_at'])
    .where('id', '=', refund.id)
    .executeTakeFirstOrThrow();
  onTheClock(row.submitted_at);
  onTheClock(row.sent_at);
  const updated = (await eventsOf(world, refund.id)).find((event) => event.type === 'refund.status_updated');
  onTheClock(updated!.data.updated_at);
  const arrived = await renderedMail(world.app.deps.db, refund.id, 'refund_arrived');
  assert.match(arrived.text, /arrived in the account you paid from on .*29 February 2028/);

  const notes = (await world.api.get(`/v1/receipts?refund_id=${refund.id}`)).body.receipts;
  assert.equal(notes.length, 1);
  assert.equal(notes[0].date, '29 February 2028');
  onTheClock(notes[0].issued_at);
  assert.ok(
    notes[0].lines.some((line: any) => line.label === 'Credits' && line.value === 'R-000001 of 29 February 2028'),
  );
});

test('a test authority first used on a test clock far ahead still pays refunds after the clock is reset to real time', async (t) => {
  const world = await checkoutWorld(t);
  assert.equal((await world.api.post('/v1/test-helpers/clock/advance', { seconds: 30 * 86_400 })).status, 200);
  const ahead = await paidPayment(world);
  const first = (await world.api.post('/v1/refunds', { payment_id: ahead.id, amount: '1.00 NZD' })).body.refund;
  assert.equal((await world.api.post('/v1/test-helpers/clock/advance', { seconds: 60 })).status, 200);
  assert.equal((await world.api.get(`/v1/refunds/${first.id}`)).body.refund.status, 'successful');

  assert.equal((await world.api.post('/v1/test-helpers/clock/reset', {})).status, 200);
  const now = await paidPayment(world);
  const second = (await world.api.post('/v1/refunds', { payment_id: now.id, amount: '1.00 NZD' })).body.refund;
  await runRefundJobs(world.app.deps.worker);
  const after = (await world.api.get(`/v1/refunds/${second.id}`)).body.refund;
  assert.equal(after.status, 'successful', JSON.stringify(after));
});

test('a refund the bank refuses fails, and its amount is refundable again', async (t) => {
  const world = await checkoutWorld(t);
  const payment = await paidPayment(world);
  const declined = await world.api.post('/v1/test-helpers/refunds/decline-next', { reason: 'insufficient_funds' });
  assert.equal(declined.status, 200, declined.text);
  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '4.00 NZD' })).body.refund;
  await runRefundJobs(world.app.deps.worker);
  const failed = (await world.api.get(`/v1/refunds/${refund.id}`)).body.refund;
  assert.equal(failed.status, 'failed');
  assert.equal(failed.failure_reason, 'insufficient_funds');
  assert.equal((await world.api.get(`/v1/payments/${payment.id}`)).body.payment.amount_refunded.value, '0.00 NZD');
  assert.deepEqual(await mailsOf(world, refund.id), []);
  // the next one goes through
  const next = (await world.api.post('/v1/refunds', { payment_id: payment.id })).body.refund;
  assert.equal(next.amount.value, '12.50 NZD');
  await runRefundJobs(world.app.deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${next.id}`)).body.refund.status, 'successful');
});

test('a payment under a recurring consent is refunded the same way, and the consent’s payer is told', async (t) => {
  const h = await consentHarness(t);
  const { token } = await authorise(h, { period: 'weekly', max_per_period: '50.00 NZD' });
  const payment = (await execute(h, token, '20.00 NZD', 'charge-1')).body.payment;
  assert.equal(payment.status, 'successful');
  const refund = (await h.api.post('/v1/refunds', { payment_id: payment.id, amount: '5.00 NZD' })).body.refund;
  assert.equal(refund.status, 'pending');
  await runRefundJobs(h.runtime.deps.worker);
  assert.equal((await h.api.get(`/v1/refunds/${refund.id}`)).body.refund.status, 'successful');
  const mails = await h.runtime.deps.db
    .selectFrom('mail_messages')
    .select(['template', 'to_address'])
    .where('related_id', '=', refund.id)
    .orderBy('created_at')
    .execute();
  assert.deepEqual(
    mails.map((mail) => mail.to_address),
    ['payer@example.com', 'payer@example.com'],
  );
  // The consent's payer sees the refund in the payer dashboard, which the message links to.
  const sent = await renderedMail(h.runtime.deps.db, refund.id, 'refund_sent');
  assert.match(sent.text, /is refunding you \$5\.00 of your payment of \$20\.00 for “Weekly veg box”/);
  assert.match(sent.text, /Your payments: https:\/\/pay\.example\/customer/);
});

test('a refund sent to the bank whose answer was lost is sent again with the same key: one payment at the bank', async (t) => {
  const world = await checkoutWorld(t);
  const payment = await paidPayment(world);
  const { deps } = world.app;
  await runRefundJobs(deps.worker); // the payer's account, read from the payer's bank and kept
  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '3.00 NZD' })).body.refund;
  // What the job does before a crash (or a timeout) loses the bank's answer: the payment is sent,
  // under the authority, with the refund's id as the x-idempotency-key, and nothing is recorded.
  const authority = await deps.db
    .selectFrom('refund_authorities')
    .selectAll()
    .where('user_id', '=', world.merchant.userId)
    .executeTakeFirstOrThrow();
  const ready = await readyAuthority(deps, authority);
  const payer = JSON.parse(
    deps.secrets.open(
      (
        await deps.db
          .selectFrom('payments')
          .select('payer_account_sealed')
          .where('id', '=', payment.id)
          .executeTakeFirstOrThrow()
      ).payer_account_sealed!,
    ),
  ) as { identification: string; name: string | null };
  const merchantHolder = sandboxHolderOf(world.merchant.userId);
  const lost = await deps.banks.connectorFor('sandbox', 'test')!.submitPayment({
    consentId: ready.authority.bank_consent_id!,
    accessToken: ready.accessToken,
    amountCents: 1,
    creditor: { name: payer.name ?? 'Payer', accountNumber: payer.identification },
    remittance: { particulars: refund.pcr.particulars, code: refund.pcr.code, reference: refund.pcr.reference },
    idempotencyKey: refund.id,
  });
  assert.ok(lost.ok);
  const afterLost = await balanceOf(world, merchantHolder);

  await runRefundJobs(deps.worker);
  const done = (await world.api.get(`/v1/refunds/${refund.id}`)).body.refund;
  assert.equal(done.status, 'successful');
  assert.equal(await balanceOf(world, merchantHolder), afterLost, 'the bank took the second send as the first');
  const bankPaymentId = (
    await deps.db.selectFrom('refunds').select('bank_payment_id').where('id', '=', refund.id).executeTakeFirstOrThrow()
  ).bank_payment_id;
  assert.equal(bankPaymentId, lost.ok ? lost.paymentId : null);
});

test('a refund the bank takes but has not settled stays pending, tells the payer it is on its way, and is asked about until it settles', async (t) => {
  const world = await checkoutWorld(t);
  const payment = await paidPayment(world);
  const { deps } = world.app;
  await runRefundJobs(deps.worker);
  const bank = `${world.baseUrl}/sandbox-bank/test`;
  // The test authority, with its sandbox consent made now rather than by the first refund.
  await ensureTestAuthority(deps, { userId: world.merchant.userId, mode: 'test' }, 'Kōwhai Coffee');
  const authority = await deps.db
    .selectFrom('refund_authorities')
    .selectAll()
    .where('user_id', '=', world.merchant.userId)
    .executeTakeFirstOrThrow();
  const ready = await readyAuthority(deps, authority);
  const consentId = ready.authority.bank_consent_id!;
  assert.equal((await hook('POST', `${bank}/consents/${consentId}/delay`, {})).status, 200);

  const refund = (await world.api.post('/v1/refunds', { payment_id: payment.id, amount: '4.00 NZD' })).body.refund;
  await runRefundJobs(deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${refund.id}`)).body.refund.status, 'pending');
  assert.deepEqual(
    (await mailsOf(world, refund.id)).map((mail) => mail.template),
    ['refund_sent'],
  );
  const held = await deps.db
    .selectFrom('refunds')
    .select(['bank_payment_id', 'sent_at'])
    .where('id', '=', refund.id)
    .executeTakeFirstOrThrow();
  assert.ok(held.bank_payment_id && held.sent_at);

  // Due again later; made due now, it asks the bank, which still holds it.
  const makeDue = () => deps.db.updateTable('jobs').set({ run_at: 0 }).where('kind', '=', 'refund.execute').execute();
  await makeDue();
  await runRefundJobs(deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${refund.id}`)).body.refund.status, 'pending');

  assert.equal((await hook('POST', `${bank}/payments/${held.bank_payment_id}/release`, {})).status, 200);
  await makeDue();
  await runRefundJobs(deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${refund.id}`)).body.refund.status, 'successful');
  assert.deepEqual(
    (await mailsOf(world, refund.id)).map((mail) => mail.template),
    ['refund_sent', 'refund_arrived'],
  );
  assert.deepEqual(
    (await eventsOf(world, refund.id)).map((event) => event.data.status),
    ['pending', 'successful'],
  );
});
