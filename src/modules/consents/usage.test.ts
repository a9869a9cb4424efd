import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import * as consentUsageMigration from '../../store/migrations/0008-consent-usage.ts';
import { transact } from '../../store/store.ts';
import { createPaymentRow, holdPaymentToRecord, setPaymentStatus } from '../payments/payments.service.ts';
import { findConsentById, insertConsent, lockConsent, type ConsentRow } from './consents.repo.ts';
import { COUNTED_STATUSES, NO_USAGE } from './consents.rules.ts';
import { LimitPeriod, periodWindow, type UsageTotals, type Window } from './limits.ts';
import { countReservation, followStatusChange, usageOf } from './usage.service.ts';
import { advanceTo, authorise, consentHarness, execute, type ConsentHarness } from '../../../test/support/consents.ts';
import { SERVICE_BASIC } from '../../../test/support/banks.ts';

// The usage counters on the consent row against the payments they summarise. Every test here
// would fail if the counters drifted from the sums the limit check used to compute: a failure
// not taken off, a period not reset, a failure in an old period taken off the new one, a backfill
// that counted the wrong statuses. Runs on SQLite and on PostgreSQL (TEST_ENGINE).

const nzd = (cents: number) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')} NZD`;

/** The sums the counters stand for, straight from the payments: in total, or created inside `window`. */
async function summed(h: ConsentHarness, consentId: string, window?: Window): Promise<UsageTotals> {
  let query = h.runtime.deps.db
    .selectFrom('payments')
    .where('recurring_consent_id', '=', consentId)
    .where('status', 'in', COUNTED_STATUSES);
  if (window) query = query.where('created_at', '>=', window.start).where('created_at', '<', window.end);
  const row = await query
    .select([sql<number>`coalesce(sum(amount_cents), 0)`.as('cents'), sql<number>`count(*)`.as('count')])
    .executeTakeFirstOrThrow();
  return { amount_cents: Number(row.cents), count: Number(row.count) };
}

async function storedCounters(h: ConsentHarness, consentId: string) {
  const row = await h.runtime.deps.db
    .selectFrom('recurring_consents')
    .select(['used_count', 'used_cents', 'period_start', 'period_end', 'period_count', 'period_cents'])
    .where('id', '=', consentId)
    .executeTakeFirstOrThrow();
  return {
    total: { amount_cents: Number(row.used_cents), count: Number(row.used_count) },
    window:
      row.period_start === null || row.period_end === null
        ? null
        : { start: Number(row.period_start), end: Number(row.period_end) },
    period: { amount_cents: Number(row.period_cents), count: Number(row.period_count) },
  };
}

/** The stored counters and the API's usage both agree with the payments. */
async function assertUsageExact(h: ConsentHarness, consentId: string, context = ''): Promise<void> {
  const stored = await storedCounters(h, consentId);
  assert.deepEqual(stored.total, await summed(h, consentId), `stored totals ${context}`);
  if (stored.window)
    assert.deepEqual(stored.period, await summed(h, consentId, stored.window), `stored period ${context}`);
  const read = await h.api.get(`/v1/recurring-consents/${consentId}`);
  assert.equal(read.status, 200);
  const usage = read.body.recurring_consent.usage;
  const window = { start: Date.parse(usage.period.start), end: Date.parse(usage.period.end) };
  const period = await summed(h, consentId, window);
  const total = await summed(h, consentId);
  assert.deepEqual(
    { amount: usage.period.amount.value, count: usage.period.count },
    { amount: nzd(period.amount_cents), count: period.count },
    `period read ${context}`,
  );
  assert.deepEqual(
    { amount: usage.total.amount.value, count: usage.total.count },
    { amount: nzd(total.amount_cents), count: total.count },
    `total read ${context}`,
  );
}

async function bankHook(h: ConsentHarness, path: string, body: unknown = {}): Promise<void> {
  const response = await fetch(`${h.baseUrl}/sandbox-bank/test/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: SERVICE_BASIC },
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 200, await response.text());
}

async function bankConsentOf(h: ConsentHarness, consentId: string): Promise<string> {
  const row = await h.runtime.deps.db
    .selectFrom('recurring_consents')
    .select('bank_consent_id')
    .where('id', '=', consentId)
    .executeTakeFirstOrThrow();
  return row.bank_consent_id;
}

/** An execution the bank holds unconfirmed until it is released. */
async function executeHeld(h: ConsentHarness, consentId: string, token: string, amount: string, key: string) {
  const bankConsent = await bankConsentOf(h, consentId);
  await bankHook(h, `consents/${bankConsent}/delay`, {});
  try {
    return await execute(h, token, amount, key);
  } finally {
    await bankHook(h, `consents/${bankConsent}/delay`, { off: true });
  }
}

/** The bank settles a held payment; the settle job records it once the test clock has moved on. */
async function settleHeld(h: ConsentHarness, paymentId: string, outcome: 'completed' | 'rejected'): Promise<string> {
  const payment = await h.runtime.deps.db
    .selectFrom('payments')
    .select('bank_payment_id')
    .where('id', '=', paymentId)
    .executeTakeFirstOrThrow();
  await bankHook(h, `payments/${payment.bank_payment_id}/release`, {
    outcome,
    ...(outcome === 'rejected' && { reason: 'fraud_check' }),
  });
  const moved = await h.api.post('/v1/test-helpers/clock/advance', { seconds: 11 * 60 });
  assert.equal(moved.status, 200, moved.text);
  const after = await h.runtime.deps.db
    .selectFrom('payments')
    .select('status')
    .where('id', '=', paymentId)
    .executeTakeFirstOrThrow();
  return after.status;
}

test('a payment the bank refuses stops counting at once: its amount and its place in total_count are free for the next execution', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, {
    period: 'daily',
    max_per_period: '10.00 NZD',
    total_count: 2,
    total_amount: '15.00 NZD',
  });
  assert.equal((await execute(h, token, '6.00 NZD', 'a')).body.payment.status, 'successful');
  await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/decline-next`, {
    count: 1,
    reason: 'insufficient_funds',
  });
  const failed = await execute(h, token, '4.00 NZD', 'b');
  assert.equal(failed.body.payment.status, 'failed');
  assert.deepEqual(await storedCounters(h, consent.id).then((c) => [c.total, c.period]), [
    { amount_cents: 600, count: 1 },
    { amount_cents: 600, count: 1 },
  ]);
  await assertUsageExact(h, consent.id, 'after the failure');

  assert.equal(
    (await execute(h, token, '4.00 NZD', 'c')).body.payment.status,
    'successful',
    'the failed 4.00 left room in the day',
  );
  assert.deepEqual((await execute(h, token, '0.01 NZD', 'd')).body, {
    code: 'payment_rejected.total_count',
    message: 'The consent allows 2 payments in total and 0 remain',
    params: { limit: 2, remaining: 0 },
  });
  assert.deepEqual(await storedCounters(h, consent.id).then((c) => [c.total, c.period]), [
    { amount_cents: 1000, count: 2 },
    { amount_cents: 1000, count: 2 },
  ]);
  await assertUsageExact(h, consent.id, 'at the end');
});

test('a new day starts from zero; a payment of the old day that fails later is taken off the totals but not off the new day', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '10.00 NZD' });
  await advanceTo(h, '2027-05-10T11:50:00.000Z'); // Monday 10 May 23:50 NZST
  assert.equal((await execute(h, token, '4.00 NZD', 'a')).body.payment.status, 'successful');
  const held = await executeHeld(h, consent.id, token, '6.00 NZD', 'b');
  assert.equal(held.body.payment.status, 'unconfirmed');
  assert.equal(
    (await execute(h, token, '0.01 NZD', 'c')).body.code,
    'payment_rejected.max_per_period',
    'an unconfirmed payment counts',
  );

  await advanceTo(h, '2027-05-10T12:00:00.000Z'); // Tuesday 11 May 00:00 NZST
  const tuesday = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.deepEqual(tuesday.body.recurring_consent.usage.period, {
    start: '2027-05-10T12:00:00.000Z',
    end: '2027-05-11T12:00:00.000Z',
    amount: { value: '0.00 NZD', formatted: '$0.00' },
    count: 0,
    remaining: { value: '10.00 NZD', formatted: '$10.00' },
  });
  assert.equal(tuesday.body.recurring_consent.usage.total.count, 2);
  assert.equal(
    (await storedCounters(h, consent.id)).window?.start,
    Date.parse('2027-05-09T12:00:00.000Z'),
    'a read stores nothing',
  );

  assert.equal(
    (await execute(h, token, '10.00 NZD', 'd')).body.payment.status,
    'successful',
    'the new day has its whole limit',
  );
  assert.deepEqual((await storedCounters(h, consent.id)).window, {
    start: Date.parse('2027-05-10T12:00:00.000Z'),
    end: Date.parse('2027-05-11T12:00:00.000Z'),
  });

  assert.equal(await settleHeld(h, held.body.payment.id, 'rejected'), 'failed');
  const stored = await storedCounters(h, consent.id);
  assert.deepEqual(stored.total, { amount_cents: 1400, count: 2 }, 'the failed 6.00 left the totals');
  assert.deepEqual(stored.period, { amount_cents: 1000, count: 1 }, 'and Tuesday keeps its 10.00');
  assert.equal((await execute(h, token, '0.01 NZD', 'e')).body.code, 'payment_rejected.max_per_period');
  await assertUsageExact(h, consent.id);
});

test('GET /v1/recurring-consents/{id} usage is the sum of the payments after successful, failed, refused and unconfirmed executions', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, {
    period: 'weekly',
    max_per_period: '100.00 NZD',
    max_per_payment: '40.00 NZD',
  });
  await execute(h, token, '12.34 NZD', 'a');
  await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/decline-next`, { count: 2 });
  await execute(h, token, '20.00 NZD', 'b');
  await execute(h, token, '30.00 NZD', 'c');
  await execute(h, token, '40.01 NZD', 'd'); // refused here: creates nothing
  await executeHeld(h, consent.id, token, '7.00 NZD', 'e');
  await execute(h, token, '0.66 NZD', 'f');
  const statuses = (
    await h.runtime.deps.db
      .selectFrom('payments')
      .select('status')
      .where('recurring_consent_id', '=', consent.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  ).map((p) => p.status);
  assert.deepEqual(statuses.toSorted(), ['failed', 'failed', 'successful', 'successful', 'unconfirmed']);
  const read = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.deepEqual(read.body.recurring_consent.usage.total, {
    amount: { value: '20.00 NZD', formatted: '$20.00' },
    count: 3,
    remaining_amount: null,
    remaining_count: null,
  });
  assert.equal(read.body.recurring_consent.usage.period.amount.value, '20.00 NZD');
  const listed = await h.api.get('/v1/recurring-consents');
  assert.deepEqual(listed.body.recurring_consents[0].usage, read.body.recurring_consent.usage);
  await assertUsageExact(h, consent.id);
});

test('migration 0008 sets the totals from the payments that count and leaves the period to be summed on first use', async (t) => {
  const h = await consentHarness(t);
  const db = h.runtime.deps.db;
  const used = await authorise(h, { period: 'daily', max_per_period: '100.00 NZD' });
  const unused = await authorise(h, { period: 'daily', max_per_period: '100.00 NZD' });
  await execute(h, used.token, '5.00 NZD', 'a');
  await h.api.post(`/v1/test-helpers/recurring-consents/${used.consent.id}/decline-next`, { count: 1 });
  await execute(h, used.token, '3.00 NZD', 'b');
  await executeHeld(h, used.consent.id, used.token, '2.50 NZD', 'c');
  await execute(h, used.token, '1.00 NZD', 'd');

  // The database as it was before 0008, with the same payments: then migrate again.
  for (const column of ['used_count', 'used_cents', 'period_start', 'period_end', 'period_count', 'period_cents']) {
    await db.schema.alterTable('recurring_consents').dropColumn(column).execute();
  }
  // Run the migration itself (the migrator would refuse to re-run it before the later ones).
  await consentUsageMigration.up(db);

  assert.deepEqual(await storedCounters(h, used.consent.id), {
    total: { amount_cents: 850, count: 3 },
    window: null,
    period: { amount_cents: 0, count: 0 },
  });
  assert.deepEqual(await storedCounters(h, unused.consent.id), {
    total: { amount_cents: 0, count: 0 },
    window: null,
    period: { amount_cents: 0, count: 0 },
  });
  await assertUsageExact(h, used.consent.id, 'after the migration');
  assert.equal(
    (await execute(h, used.token, '91.50 NZD', 'e')).body.payment.status,
    'successful',
    'the day, summed, had 8.50 used',
  );
  assert.equal((await execute(h, used.token, '0.01 NZD', 'f')).body.code, 'payment_rejected.max_per_period');
  assert.notEqual((await storedCounters(h, used.consent.id)).window, null, 'the first execution stored the window');
  await assertUsageExact(h, used.consent.id, 'after executing again');
});

test('executions and bank refusals racing on one consent leave the counters equal to the sums', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '15.00 NZD' });
  await h.api.post(`/v1/test-helpers/recurring-consents/${consent.id}/decline-next`, { count: 6 });
  const replies = await Promise.all(Array.from({ length: 24 }, (_, i) => execute(h, token, '1.00 NZD', `race-${i}`)));
  const statuses = replies.map((r) => (r.status === 201 ? r.body.payment.status : r.body.code));
  assert.equal(statuses.filter((s) => s === 'failed').length, 6);
  assert.ok(statuses.filter((s) => s === 'successful').length <= 15);
  await assertUsageExact(h, consent.id);
  const left = await summed(h, consent.id);
  // Whatever the interleaving, the day then takes exactly what it has left.
  if (left.amount_cents < 1500)
    assert.equal((await execute(h, token, nzd(1500 - left.amount_cents), 'rest')).status, 201);
  assert.equal((await execute(h, token, '0.01 NZD', 'over')).body.code, 'payment_rejected.max_per_period');
  await assertUsageExact(h, consent.id, 'at the limit');
});

// The counters under the functions an execution uses, in the order it uses them (reserve: lock,
// usageOf, the payment row, countReservation; record: followStatusChange with the status change),
// at random times, forwards and backwards across periods and onto their edges, against the SQL
// sums. No bank and no HTTP, so many cheap runs.

/** How the clock moves before a reservation: by minutes (either way), or onto the edges of the current period. */
type Move = { by: number } | { to: 'next_start' | 'last_moment' | 'this_start' | 'before_this' };
const move: fc.Arbitrary<Move> = fc.oneof(
  fc.integer({ min: 0, max: 180 }).map((minutes) => ({ by: minutes * 60_000 })),
  fc.integer({ min: -36 * 60, max: 36 * 60 }).map((minutes) => ({ by: minutes * 60_000 })),
  fc
    .constantFrom('next_start' as const, 'last_moment' as const, 'this_start' as const, 'before_this' as const)
    .map((to) => ({ to })),
);

function moved(now: number, how: Move, window: Window): number {
  if ('by' in how) return now + how.by;
  return {
    next_start: window.end,
    last_moment: window.end - 1,
    this_start: window.start,
    before_this: window.start - 1,
  }[how.to];
}

type StoreStep =
  | { kind: 'reserve'; cents: number; move: Move }
  | { kind: 'settle'; which: number; to: 'successful' | 'failed' | 'unconfirmed' | 'cancelled' };

const storeStep: fc.Arbitrary<StoreStep> = fc.oneof(
  fc.record({
    kind: fc.constant('reserve' as const),
    cents: fc.integer({ min: 1, max: 5000 }),
    move,
  }),
  fc.record({
    kind: fc.constant('settle' as const),
    which: fc.nat(),
    to: fc.constantFrom('successful' as const, 'failed' as const, 'unconfirmed' as const, 'cancelled' as const),
  }),
);

test('property: reserving and settling at random times, forwards and backwards across periods, keeps the counters equal to the sums', async (t) => {
  const h = await consentHarness(t);
  const db = h.runtime.deps.db;
  const zone = h.runtime.deps.config.serviceTimeZone;
  const template = await db
    .selectFrom('recurring_consents')
    .selectAll()
    .where('id', '=', (await authorise(h, { period: 'daily', max_per_period: '100.00 NZD' })).consent.id)
    .executeTakeFirstOrThrow();
  const request = await db
    .selectFrom('requests')
    .selectAll()
    .where('id', '=', template.request_id)
    .executeTakeFirstOrThrow();
  let copy = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom<LimitPeriod>(...LimitPeriod),
      fc.integer({ min: Date.parse('2026-01-01T00:00:00Z'), max: Date.parse('2028-12-31T00:00:00Z') }),
      fc.array(storeStep, { minLength: 1, maxLength: 25 }),
      async (period, start, steps) => {
        // A fresh consent each run: a copy of the authorised one, on its own copy of the request.
        copy += 1;
        const consent: ConsentRow = {
          ...template,
          id: `${template.id}_${copy}`,
          token_hash: `${template.token_hash}_${copy}`,
          request_id: `${request.id}_${copy}`,
          period,
          ...NO_USAGE,
        };
        await db
          .insertInto('requests')
          .values({ ...request, id: consent.request_id })
          .execute();
        await insertConsent(db, consent);
        const startsAt = Number(consent.starts_at);
        let now = start;
        for (const [i, s] of steps.entries()) {
          if (s.kind === 'reserve') {
            now = moved(now, s.move, periodWindow(period, now, zone, startsAt));
            await transact(db, async (trx) => {
              const locked = (await lockConsent(trx, consent.id))!;
              const window = periodWindow(period, now, zone, startsAt);
              const usage = await usageOf(trx, locked, window);
              await createPaymentRow(
                trx,
                {
                  request: {
                    id: consent.request_id,
                    user_id: consent.user_id,
                    mode: consent.mode,
                    merchant_identifier: null,
                    reference: null,
                  },
                  amountCents: s.cents,
                  bankId: consent.bank_id,
                  channel: 'api',
                  recurringConsentId: consent.id,
                  idempotencyKey: `store-${copy}-${i}`,
                },
                now,
              );
              await countReservation(trx, consent.id, s.cents, window, usage.period);
            });
          } else {
            const open = await db
              .selectFrom('payments')
              .select('id')
              .where('recurring_consent_id', '=', consent.id)
              .where('status', 'in', ['awaiting-consent', 'unconfirmed'])
              .orderBy('id')
              .execute();
            if (open.length === 0) continue;
            await transact(db, async (trx) => {
              const payment = (await holdPaymentToRecord(trx, open[s.which % open.length].id))!;
              await followStatusChange(trx, payment, s.to);
              await setPaymentStatus(trx, payment, s.to, now);
            });
          }
          const row = (await findConsentById(db, consent.id))!;
          assert.deepEqual(
            { amount_cents: Number(row.used_cents), count: Number(row.used_count) },
            await summed(h, consent.id),
            `totals after step ${i}`,
          );
          if (row.period_start !== null) {
            const held = { start: Number(row.period_start), end: Number(row.period_end) };
            assert.deepEqual(
              { amount_cents: Number(row.period_cents), count: Number(row.period_count) },
              await summed(h, consent.id, held),
              `held period after step ${i}`,
            );
          }
          const window = periodWindow(period, now, zone, startsAt);
          assert.deepEqual(
            (await usageOf(db, row, window)).period,
            await summed(h, consent.id, window),
            `period read after step ${i}`,
          );
        }
      },
    ),
    { numRuns: 100 },
  );
});

type Step =
  | { kind: 'pay'; cents: number }
  | { kind: 'decline'; cents: number }
  | { kind: 'hold'; cents: number }
  | { kind: 'settle'; which: number; outcome: 'completed' | 'rejected' }
  | { kind: 'advance'; minutes: number };

const cents = fc.integer({ min: 1, max: 20 }).map((dollars) => dollars * 100 + (dollars % 3) * 25);
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: cents.map((c) => ({ kind: 'pay' as const, cents: c })), weight: 3 },
  { arbitrary: cents.map((c) => ({ kind: 'decline' as const, cents: c })), weight: 2 },
  { arbitrary: cents.map((c) => ({ kind: 'hold' as const, cents: c })), weight: 3 },
  {
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      which: fc.nat(),
      outcome: fc.constantFrom('completed' as const, 'rejected' as const),
    }),
    weight: 3,
  },
  // Minutes within a day, or a day or so: both land on either side of local midnight.
  {
    arbitrary: fc
      .oneof(fc.integer({ min: 1, max: 180 }), fc.integer({ min: 20 * 60, max: 28 * 60 }))
      .map((minutes) => ({ kind: 'advance' as const, minutes })),
    weight: 3,
  },
);

test('property: through the API, any sequence of executions, bank refusals, unconfirmed payments settling either way and days passing keeps the counters equal to the sums', async (t) => {
  const h = await consentHarness(t);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
      run += 1;
      const { consent, token } = await authorise(h, { period: 'daily', max_per_period: '40.00 NZD' });
      const bankConsent = await bankConsentOf(h, consent.id);
      const held: string[] = [];
      /** 201 with the status the bank's answer leads to, or 422 when the limits refuse first. */
      const expect = (reply: { status: number; body: any }, status: string) => {
        if (reply.status === 201) assert.equal(reply.body.payment.status, status);
        else assert.equal(reply.body.code, 'payment_rejected.max_per_period');
      };
      try {
        for (const [i, s] of steps.entries()) {
          const key = `run-${run}-${i}`;
          if (s.kind === 'pay') {
            expect(await execute(h, token, nzd(s.cents), key), 'successful');
          } else if (s.kind === 'decline') {
            await bankHook(h, `consents/${bankConsent}/decline-next`, { count: 1 });
            expect(await execute(h, token, nzd(s.cents), key), 'failed');
            await bankHook(h, `consents/${bankConsent}/decline-next`, { count: 0 });
          } else if (s.kind === 'hold') {
            const reply = await executeHeld(h, consent.id, token, nzd(s.cents), key);
            expect(reply, 'unconfirmed');
            if (reply.status === 201) held.push(reply.body.payment.id);
          } else if (s.kind === 'settle') {
            if (held.length > 0)
              assert.equal(
                await settleHeld(h, held.splice(s.which % held.length, 1)[0], s.outcome),
                s.outcome === 'completed' ? 'successful' : 'failed',
              );
          } else {
            const moved = await h.api.post('/v1/test-helpers/clock/advance', { seconds: s.minutes * 60 });
            assert.equal(moved.status, 200, moved.text);
          }
          await assertUsageExact(h, consent.id, `after step ${i} of ${JSON.stringify(steps)}`);
        }
      } finally {
        // Settled, so their jobs stop retrying through the later runs' clock moves (also while shrinking).
        for (const id of held) await settleHeld(h, id, 'completed').catch(() => undefined);
      }
      await assertUsageExact(h, consent.id, `after settling ${JSON.stringify(steps)}`);
    }),
    { numRuns: 20 },
  );
});
