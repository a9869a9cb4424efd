import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, storeOfTestDb } from '../../test/process.ts';
import { authorise, consentHarness, execute } from '../../test/support/consents.ts';
import { listeningApp, loseSubmissions } from '../../test/support/banks.ts';
import { subscriptionsOverApi } from '../../test/support/subscriptions.ts';
import { apiClient, createTestMerchant } from '../../test/helpers.ts';
import { settleOneOffByHand } from '../modules/payments/one-off.service.ts';
import { settleChargeByHand } from '../modules/subscriptions/subscriptions.charges.ts';
import type { Runtime } from '../runtime.ts';

// Payments the bank never answered, which the service stops asking about after 23 hours: the CLI
// lists them and records the bank's word (docs/configuration.md, "Payments the bank never answered"). The recurring case runs the CLI as
// a process on the test's database; the one-off and the subscription charge call the functions it
// calls. SQLite and PostgreSQL (TEST_ENGINE).

const HOUR = 60 * 60_000;
const operator = { actor: { kind: 'operator' as const, name: 'ops-on-call' } };

async function auditOf(runtime: Pick<Runtime, 'deps'>, objectId: string) {
  // Records are chained by the audit runner after their commit: the pending ones count too.
  const [chained, pending] = await Promise.all(
    (['audit_events', 'audit_pending'] as const).map((table) =>
      runtime.deps.db
        .selectFrom(table)
        .select(['actor_kind', 'actor_id', 'action', 'summary'])
        .where('object_id', '=', objectId)
        .execute(),
    ),
  );
  return [...chained!, ...pending!].filter((row) => row.actor_kind === 'operator');
}

async function statusEvents(runtime: Pick<Runtime, 'deps'>, paymentId: string) {
  const rows = await runtime.deps.db
    .selectFrom('events')
    .select(['type', 'body'])
    .where('object_id', '=', paymentId)
    .orderBy('id')
    .execute();
  return rows.map((row) => JSON.parse(row.body).data.status as string);
}

test('payments unanswered and payments settle: a recurring payment the bank never answered is listed, then failed on the bank’s word, and stops counting', async (t) => {
  const h = await consentHarness(t);
  const shared = storeOfTestDb(t, h.testDb);
  const store = { ...shared, env: { ...shared.env, TONO_OPERATOR: 'ops-on-call' } };
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '50.00 NZD' });
  const answered = await execute(h, token, '4.00 NZD', 'answered');
  assert.equal(answered.body.payment.status, 'successful');
  loseSubmissions(t, h.runtime, Number.POSITIVE_INFINITY);
  const lost = await execute(h, token, '6.00 NZD', 'lost');
  assert.equal(lost.body.payment.status, 'unconfirmed');
  const id = lost.body.payment.id as string;

  // While the service still sends it again under its key, it is not the operator's to settle.
  const early = await runCli(store, ['payments', 'settle', id, '--outcome', 'failed']);
  assert.equal(early.status, 1);
  assert.match(early.stderr, /^error: payment payment_\w+ is unconfirmed: it does not wait for the bank’s word/);
  const none = await runCli(store, ['payments', 'unanswered', '--json']);
  assert.deepEqual([none.status, JSON.parse(none.stdout)], [0, { payments: [] }]);

  // A day of a bank that never answers: the service gives it up after 23 hours.
  await h.api.post('/v1/test-helpers/clock/advance', { seconds: 26 * 60 * 60 });
  const listed = await runCli(store, ['payments', 'unanswered', '--json']);
  assert.equal(listed.status, 0, listed.stderr);
  const [shown, ...more] = JSON.parse(listed.stdout).payments;
  assert.deepEqual(more, []);
  assert.equal(shown.id, id);
  assert.deepEqual(
    [shown.merchant_id, shown.mode, shown.kind, shown.status],
    [h.merchant.userId, 'test', 'recurring', 'unconfirmed'],
  );
  const text = await runCli(store, ['payments', 'unanswered']);
  assert.match(
    text.stdout,
    new RegExp(`^${id}  ${h.merchant.userId}  test  recurring  0\\.01 NZD  V-[A-Z0-9]{6}  sandbox  sent `),
  );

  // Bad words change nothing.
  for (const [args, message] of [
    [['--outcome', 'maybe'], /--outcome must be successful \(the bank made it\) or failed/],
    [['--outcome', 'failed', '--reason', 'Not Made'], /--reason must be snake_case/],
    [['--outcome', 'failed', '--bank-payment-id', 'p1'], /--bank-payment-id is for a payment the bank made/],
    [['--outcome', 'successful', '--reason', 'x'], /--reason is for a payment the bank did not make/],
  ] as const) {
    const refused = await runCli(store, ['payments', 'settle', id, ...args]);
    assert.equal(refused.status, 1, refused.stdout);
    assert.match(refused.stderr, message);
  }
  const unknown = await runCli(store, ['payments', 'settle', 'payment_nope', '--outcome', 'failed']);
  assert.match(unknown.stderr, /^error: no payment payment_nope\n/);
  const usage = async () => (await h.api.get(`/v1/recurring-consents/${consent.id}`)).body.recurring_consent.usage;
  assert.equal((await usage()).total.count, 2, 'the unanswered one still counts against the limits');

  const settled = await runCli(store, [
    'payments',
    'settle',
    id,
    '--outcome',
    'failed',
    '--reason',
    'not_found_at_bank',
    '--json',
  ]);
  assert.equal(settled.status, 0, settled.stderr);
  assert.deepEqual(
    [JSON.parse(settled.stdout).payment.status, JSON.parse(settled.stdout).payment.failure_reason],
    ['failed', 'not_found_at_bank'],
  );
  const read = (await h.api.get(`/v1/payments/${id}`)).body.payment;
  assert.deepEqual([read.status, read.failure_reason], ['failed', 'not_found_at_bank']);
  assert.deepEqual(await statusEvents(h.runtime, id), ['awaiting-consent', 'unconfirmed', 'failed']);
  assert.equal((await usage()).total.count, 1, 'it no longer counts');
  const [audited, ...again] = await auditOf(h.runtime, id);
  assert.deepEqual(again, []);
  assert.deepEqual([audited!.actor_id, audited!.action], ['ops-on-call', 'payment.settle']);
  assert.deepEqual(JSON.parse(audited!.summary).status, { from: 'unconfirmed', to: 'failed' });

  // Once settled it is nobody's to settle again.
  const twice = await runCli(store, ['payments', 'settle', id, '--outcome', 'successful']);
  assert.equal(twice.status, 1);
  assert.match(twice.stderr, /is failed: it does not wait for the bank’s word[^\n]*nothing was changed/);
  assert.deepEqual(await statusEvents(h.runtime, id), ['awaiting-consent', 'unconfirmed', 'failed']);
  // A successful payment is never the operator's to change.
  const paid = await runCli(store, ['payments', 'settle', answered.body.payment.id, '--outcome', 'failed']);
  assert.equal(paid.status, 1);
});

test('a one-off payment the bank never answered is made successful on the bank’s word: its request is paid', async (t) => {
  const app = await listeningApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const request = (
    await api.post('/v1/requests', { bank_account_id: merchant.bankAccountId, amount: '12.50 NZD', message: 'Beans' })
  ).body.request;
  const { sentAt } = loseSubmissions(t, app, Number.POSITIVE_INFINITY);
  const pay = await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {});
  assert.equal(pay.status, 200, pay.text);
  const [payment] = (await api.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.deepEqual([payment.status, sentAt.length], ['unconfirmed', 1]);
  const clockNow = async () => Date.parse((await api.get('/v1/test-helpers/clock')).body.clock.now);

  assert.equal(
    await settleOneOffByHand(
      app.deps,
      payment.id,
      { status: 'successful', bankPaymentId: null },
      await clockNow(),
      operator,
    ),
    null,
    'not while it is sent again under its key',
  );
  await api.post('/v1/test-helpers/clock/advance', { seconds: 24 * 60 * 60 });
  assert.ok(sentAt.length > 1, 'the reconciler sent it again meanwhile');
  const last = sentAt.at(-1)!;
  assert.ok(last - sentAt[0]! < 23 * HOUR, 'never 23 hours after it was first sent');
  const reconciling = await app.deps.db
    .selectFrom('jobs')
    .select('id')
    .where('kind', '=', 'payment.reconcile')
    .execute();
  assert.deepEqual(reconciling, [], 'and no longer asked about');
  assert.equal((await api.get(`/v1/requests/${request.id}`)).body.request.status, 'active', 'its request waits');
  const settled = await settleOneOffByHand(
    app.deps,
    payment.id,
    { status: 'successful', bankPaymentId: 'BANK-7781' },
    await clockNow(),
    operator,
  );
  assert.equal(settled?.status, 'successful');
  const read = (await api.get(`/v1/payments/${payment.id}`)).body.payment;
  assert.deepEqual(
    [read.status, (await api.get(`/v1/requests/${request.id}`)).body.request.status],
    ['successful', 'paid'],
  );
  assert.deepEqual(await statusEvents(app, payment.id), ['awaiting-consent', 'unconfirmed', 'successful']);
  assert.equal((await auditOf(app, payment.id)).length, 1);
});

test('a subscription charge given up unanswered, made on the bank’s word: counted, and a subscription with all its charges completes', async (t) => {
  const s = await subscriptionsOverApi(t);
  const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 1 });
  const bank = loseSubmissions(t, s.app, Number.POSITIVE_INFINITY);
  await s.advanceTo((await s.clockNow()) + 1000);
  const [lost] = await s.payments(sub.id);
  assert.equal(lost.status, 'awaiting-consent');
  // A day of a bank that never answers, in short: the payment was first sent 23 hours ago.
  await s.app.deps.db
    .updateTable('payments')
    .set((eb) => ({ created_at: eb('created_at', '-', 23 * HOUR) }))
    .where('id', '=', lost.id)
    .execute();
  const word = { status: 'successful' as const, bankPaymentId: null };
  assert.equal(
    await settleChargeByHand(s.app.deps, lost.id, word, await s.clockNow(), operator),
    null,
    'not while its charge is followed',
  );
  await s.advanceTo((await s.clockNow()) + 60_000);
  const sends = bank.sentAt.length;
  assert.equal((await s.payments(sub.id))[0].status, 'unconfirmed');
  const given = await s.get(sub.id);
  assert.deepEqual([given.status, given.successful_charges], ['active', 0], 'the slot was given up, uncounted');

  const settled = await settleChargeByHand(s.app.deps, lost.id, word, await s.clockNow(), operator);
  assert.equal(settled?.status, 'successful');
  const after = await s.get(sub.id);
  assert.deepEqual([after.status, after.successful_charges], ['completed', 1], 'its one charge made: complete');
  const types = (await s.app.deps.db.selectFrom('events').select('type').where('object_id', '=', sub.id).execute()).map(
    (e) => e.type,
  );
  assert.ok(types.includes('subscription.completed'));
  assert.equal((await auditOf(s.app, lost.id)).length, 1);
  // Nothing more is charged, now or next week.
  await s.advanceTo((await s.clockNow()) + 8 * 24 * HOUR);
  assert.equal(bank.sentAt.length, sends);
  assert.equal((await s.payments(sub.id)).length, 1);
  assert.equal(await settleChargeByHand(s.app.deps, lost.id, word, await s.clockNow(), operator), null, 'once');
});
