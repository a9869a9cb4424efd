// A charge already handed to the bank when the subscription is paused, resumed or cancelled: it is
// followed at the bank to its end whatever the subscription's status, counted once as its slot's
// charge, and the schedule after a resume still charges total_count times in all. The sandbox bank
// holds the charge (the subscription's delay hook) or answers slowly (its latency hook); the test
// clock runs the jobs. On a listening app built on buildTestApp: SQLite and PostgreSQL (TEST_ENGINE).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { subscriptionsOverApi } from '../../../test/support/subscriptions.ts';
import { loseSubmissions, loseThenRefuseOnLimits } from '../../../test/support/banks.ts';
import { subscriptionsModule } from './subscriptions.module.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;

async function setUp(t: TestContext) {
  const { app, api, clockNow, advanceTo, subscribe, get, payments } = await subscriptionsOverApi(t);
  const db = app.deps.db;
  const events = async (id: string) =>
    (await db.selectFrom('events').select('type').where('object_id', '=', id).orderBy('id').execute()).map(
      (e) => e.type,
    );
  const charges = (id: string) =>
    db
      .selectFrom('subscription_charges')
      .select(['slot', 'status', 'last_payment_id'])
      .where('subscription_id', '=', id)
      .orderBy('slot_date')
      .execute();
  /** The payer's debits at the bank under the subscription's consent. */
  const debits = async (id: string) => {
    const { bank_consent_id } = await db
      .selectFrom('subscriptions')
      .select('bank_consent_id')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const rows = await db
      .selectFrom('sandbox_payments')
      .select('id')
      .where('consent_id', '=', bank_consent_id)
      .where('debited', '=', 1)
      .execute();
    return rows.length;
  };
  const receipts = async (paymentId: string) =>
    (
      await db
        .selectFrom('mail_messages')
        .select('template')
        .where('dedupe_key', '=', `charge_receipt:${paymentId}`)
        .execute()
    ).length;
  /** The bank holds the subscription's next charges unconfirmed until released. */
  const holdAtBank = async (id: string) =>
    assert.equal((await api.post(`/v1/test-helpers/subscriptions/${id}/delay`, {})).status, 200);
  /** The bank settles the held payment (the payer was debited when it was made), and holds no more. */
  const settleAtBank = async (subscriptionId: string, paymentId: string) => {
    const { bank_payment_id } = await db
      .selectFrom('payments')
      .select('bank_payment_id')
      .where('id', '=', paymentId)
      .executeTakeFirstOrThrow();
    assert.ok(bank_payment_id, 'the bank named the held payment');
    await app.deps.banks.sandboxTestHook(`/payments/${bank_payment_id}/release`, { outcome: 'completed' });
    const off = await api.post(`/v1/test-helpers/subscriptions/${subscriptionId}/delay`, { off: true });
    // A cancelled subscription's consent is revoked: nothing more is held under it either way.
    assert.ok(off.status === 200 || off.status === 409, JSON.stringify(off.body));
  };
  /** The first charge (at authorisation), held at the bank: its payment, unconfirmed. */
  const firstChargeHeld = async (id: string) => {
    await holdAtBank(id);
    await advanceTo((await clockNow()) + 1000);
    const [held] = await payments(id);
    assert.equal(held.status, 'unconfirmed');
    assert.deepEqual(
      (await charges(id)).map((c) => [c.slot, c.status, c.last_payment_id]),
      [[0, 'in_flight', held.id]],
    );
    return held as { id: string };
  };
  return {
    app,
    api,
    clockNow,
    advanceTo,
    subscribe,
    get,
    payments,
    events,
    charges,
    debits,
    receipts,
    settleAtBank,
    firstChargeHeld,
  };
}

test('a charge the bank holds for two minutes is asked about each minute, and successful once the bank settles it', async (t) => {
  const s = await setUp(t);
  const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
  const held = await s.api.post(`/v1/test-helpers/subscriptions/${sub.id}/delay`, { seconds: 120 });
  assert.equal(held.status, 200, JSON.stringify(held.body));
  await s.advanceTo((await s.clockNow()) + 1000);
  const [pending] = await s.payments(sub.id);
  assert.equal(pending.status, 'unconfirmed');
  const chargedAt = Date.parse(pending.created_at);

  await s.advanceTo((await s.clockNow()) + 5 * MINUTE);
  assert.deepEqual(
    (await s.payments(sub.id)).map((p) => p.status),
    ['successful'],
  );
  const state = await s.get(sub.id);
  assert.deepEqual([state.status, state.successful_charges], ['active', 1]);
  const week = Date.parse(state.next_charge_at) - chargedAt;
  assert.ok(week > 6.9 * DAY && week < 7.1 * DAY, 'the next charge a week after the first');
  assert.equal(await s.receipts(pending.id), 1);
});

test('a charge pending at the bank when the subscription is paused is followed to its end and counted once; after a resume total_count holds', async (t) => {
  const s = await setUp(t);
  const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
  const held = await s.firstChargeHeld(sub.id);

  const paused = await s.api.post(`/v1/subscriptions/${sub.id}/pause`);
  assert.equal(paused.status, 200, JSON.stringify(paused.body));
  await s.settleAtBank(sub.id, held.id);
  await s.advanceTo((await s.clockNow()) + 5 * MINUTE);

  const [settled] = await s.payments(sub.id);
  assert.equal(settled.status, 'successful', 'the payment the bank settled is successful here too');
  const state = await s.get(sub.id);
  assert.deepEqual([state.status, state.successful_charges, state.failed_charges], ['paused', 1, 0]);
  assert.deepEqual(
    (await s.charges(sub.id)).map((c) => [c.slot, c.status]),
    [[0, 'successful']],
  );
  assert.equal(await s.receipts(held.id), 1, 'its receipt');

  // Resumed: the plan of 3 charges takes two more, one and two weeks on, and the payer pays 3 times.
  const resumed = await s.api.post(`/v1/subscriptions/${sub.id}/resume`);
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
  await s.advanceTo((await s.clockNow()) + 30 * DAY);
  const done = await s.get(sub.id);
  assert.deepEqual([done.status, done.successful_charges], ['completed', 3]);
  const all = await s.payments(sub.id);
  assert.deepEqual(
    all.map((p) => p.status),
    ['successful', 'successful', 'successful'],
  );
  assert.equal(await s.debits(sub.id), 3, 'the payer is debited total_count times');
  assert.deepEqual(await s.events(sub.id), [
    'subscription.created',
    'subscription.paused',
    'subscription.resumed',
    'subscription.completed',
  ]);
});

for (const by of ['merchant', 'payer'] as const) {
  test(`a charge pending at the bank when the ${by} cancels is followed to its end and counted once`, async (t) => {
    const s = await setUp(t);
    const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
    const held = await s.firstChargeHeld(sub.id);

    const cancelled =
      by === 'merchant'
        ? await s.api.put(`/v1/subscriptions/${sub.id}/cancel`)
        : await s.api.post(`/v1/test-helpers/subscriptions/${sub.id}/cancel-by-payer`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    await s.settleAtBank(sub.id, held.id);
    await s.advanceTo((await s.clockNow()) + 5 * MINUTE);

    assert.deepEqual(
      (await s.payments(sub.id)).map((p) => p.status),
      ['successful'],
    );
    const state = await s.get(sub.id);
    assert.deepEqual(
      [state.status, state.cancelled_by, state.successful_charges, state.failed_charges],
      ['cancelled', by, 1, 0],
    );
    assert.deepEqual(
      (await s.charges(sub.id)).map((c) => [c.slot, c.status]),
      [[0, 'successful']],
    );
    assert.equal(await s.receipts(held.id), 1, 'its receipt');

    // Nothing more is charged.
    await s.advanceTo((await s.clockNow()) + 30 * DAY);
    assert.equal((await s.payments(sub.id)).length, 1);
    assert.equal(await s.debits(sub.id), 1);
    assert.deepEqual(await s.events(sub.id), ['subscription.created', 'subscription.cancelled']);
  });
}

for (const declined of [false, true]) {
  test(`a pause and a resume while the bank is asked, which ${declined ? 'declines' : 'takes'} the charge: it is recorded and the resumed schedule kept`, async (t) => {
    const s = await setUp(t);
    const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
    await s.advanceTo((await s.clockNow()) + 1000);
    assert.equal((await s.get(sub.id)).successful_charges, 1);

    // The second charge's answer takes 3 seconds; the merchant pauses and resumes meanwhile.
    const due = Date.parse((await s.get(sub.id)).next_charge_at);
    const slow = await s.api.post(`/v1/test-helpers/subscriptions/${sub.id}/latency`, { ms: 3000 });
    assert.equal(slow.status, 200, JSON.stringify(slow.body));
    if (declined) await s.api.post(`/v1/test-helpers/subscriptions/${sub.id}/decline-next`, { count: 1 });
    const advancing = s.advanceTo(due + 1000);
    const deadline = Date.now() + 20_000;
    while (!(await s.charges(sub.id)).some((c) => c.slot === 1 && c.status === 'in_flight')) {
      assert.ok(Date.now() < deadline, 'the second charge was claimed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal((await s.api.post(`/v1/subscriptions/${sub.id}/pause`)).status, 200);
    const resumed = await s.api.post(`/v1/subscriptions/${sub.id}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    const resumedNext = resumed.body.subscription.next_charge_at;
    await advancing;

    // Recorded against its own slot; a decline gives the slot up, as the pause would have.
    const state = await s.get(sub.id);
    assert.deepEqual(
      [state.status, state.successful_charges, state.failed_charges],
      ['active', declined ? 1 : 2, declined ? 1 : 0],
    );
    assert.equal(state.next_charge_at, resumedNext, 'the next charge is the resumed schedule’s first');
    assert.deepEqual(
      (await s.charges(sub.id)).map((c) => [c.slot, c.status]),
      [
        [0, 'successful'],
        [1, declined ? 'dropped' : 'successful'],
      ],
    );

    await s.advanceTo(Date.parse(resumedNext) + 30 * DAY);
    const done = await s.get(sub.id);
    assert.deepEqual([done.status, done.successful_charges], ['completed', 3]);
    assert.equal(await s.debits(sub.id), 3);
  });
}

test('a charge left in flight without its job (a pause in a database from before) is followed once a process starts, and counted once', async (t) => {
  const s = await setUp(t);
  const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
  const held = await s.firstChargeHeld(sub.id);
  assert.equal((await s.api.post(`/v1/subscriptions/${sub.id}/pause`)).status, 200);
  // What a pause did before it kept the job of a charge in flight: the job is gone.
  const db = s.app.deps.db;
  await db.deleteFrom('jobs').where('dedupe_key', '=', `subscription.charge:${sub.id}`).execute();
  await s.settleAtBank(sub.id, held.id);
  await s.advanceTo((await s.clockNow()) + 5 * MINUTE);
  assert.equal((await s.payments(sub.id))[0].status, 'unconfirmed', 'nothing follows it');

  await subscriptionsModule.start!(s.app.deps);
  await subscriptionsModule.start!(s.app.deps);
  const queued = await db.selectFrom('jobs').select('id').where('kind', '=', 'subscription.charge').execute();
  assert.equal(queued.length, 1, 'one job, however many processes start');
  await s.advanceTo((await s.clockNow()) + MINUTE);
  const [settled] = await s.payments(sub.id);
  assert.equal(settled.status, 'successful');
  const state = await s.get(sub.id);
  assert.deepEqual([state.status, state.successful_charges], ['paused', 1]);
  assert.equal(await s.receipts(held.id), 1);
  assert.equal(await s.debits(sub.id), 1);
  assert.deepEqual(
    await db.selectFrom('jobs').select('id').where('kind', '=', 'subscription.charge').execute(),
    [],
    'nothing more is scheduled while it is paused',
  );
});

test('a charge never answered and refused when sent again is not failed: it is asked about again, the payer may have paid', async (t) => {
  const s = await setUp(t);
  const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
  const sent = loseThenRefuseOnLimits(t, s.app);
  await s.advanceTo((await s.clockNow()) + 1000);
  await s.advanceTo((await s.clockNow()) + 5 * MINUTE);
  assert.ok(sent.count >= 2, 'sent again');
  const [payment] = await s.payments(sub.id);
  assert.equal(payment.status, 'awaiting-consent', 'not failed on that word');
  assert.deepEqual(
    (await s.charges(sub.id)).map((c) => [c.slot, c.status]),
    [[0, 'in_flight']],
  );
  const state = await s.get(sub.id);
  assert.deepEqual([state.status, state.failed_charges], ['active', 0]);
});

test('a charge never answered, sent again after the payer revoked at the bank, stays unconfirmed: the subscription ends, the payment is not failed', async (t) => {
  const s = await setUp(t);
  const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
  const bank = loseSubmissions(t, s.app, 1);
  await s.advanceTo((await s.clockNow()) + 1000);
  const [lost] = await s.payments(sub.id);
  assert.equal(lost.status, 'awaiting-consent', 'its answer never came');
  const revoked = await s.api.post(`/v1/test-helpers/subscriptions/${sub.id}/cancel-at-bank`, {});
  assert.equal(revoked.status, 200, JSON.stringify(revoked.body));

  await s.advanceTo((await s.clockNow()) + 5 * MINUTE);
  assert.ok(bank.answered.length >= 1 && bank.answered.every((a) => !a.ok), 'sent again, and refused');
  const [payment] = await s.payments(sub.id);
  assert.equal(payment.status, 'unconfirmed', 'the bank may hold it');
  assert.deepEqual(
    (await s.charges(sub.id)).map((c) => [c.slot, c.status]),
    [[0, 'cancelled']],
  );
  const state = await s.get(sub.id);
  assert.deepEqual([state.status, state.successful_charges], ['cancelled', 0]);
});

test('a charge the bank never answers for 23 hours is not sent again: its payment stays unconfirmed and the schedule moves on', async (t) => {
  const s = await setUp(t);
  const { sub } = await s.subscribe({ amount: '15.00 NZD', period: 'weekly', total_count: 3 });
  const bank = loseSubmissions(t, s.app, Number.POSITIVE_INFINITY);
  await s.advanceTo((await s.clockNow()) + 1000);
  const [lost] = await s.payments(sub.id);
  assert.equal(lost.status, 'awaiting-consent');
  // A day of a bank that never answers, in short: the payment was first sent 23 hours ago.
  await s.app.deps.db
    .updateTable('payments')
    .set((eb) => ({ created_at: eb('created_at', '-', 23 * 60 * MINUTE) }))
    .where('id', '=', lost.id)
    .execute();
  const before = bank.sentAt.length;
  await s.advanceTo((await s.clockNow()) + MINUTE);
  assert.equal(bank.sentAt.length, before, 'not sent again');
  assert.equal((await s.payments(sub.id))[0].status, 'unconfirmed');
  assert.deepEqual(
    (await s.charges(sub.id)).map((c) => [c.slot, c.status]),
    [[0, 'dropped']],
  );
  const state = await s.get(sub.id);
  assert.equal(state.status, 'active');
  const week = Date.parse(state.next_charge_at) - Date.parse(lost.created_at);
  assert.ok(week > 6.9 * DAY && week < 7.1 * DAY, 'the next slot stays a week after the first');
});
