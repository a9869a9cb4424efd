import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as consentStartsAt from '../../store/migrations/0053-consent-starts-at.ts';
import {
  advanceTo,
  authorise,
  consentHarness,
  createRecurringRequest,
  execute,
  type ConsentHarness,
  type RecurringOptions,
} from '../../../test/support/consents.ts';

// Fortnightly and yearly consents end to end, on the test clock: the service's windows are the
// sandbox bank's, so what the service lets through the bank makes, and the service refuses the
// next payment exactly when the bank would. Runs on SQLite and on PostgreSQL (TEST_ENGINE).

const pageText = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');

/** Authorises at a fixed moment, so the consent's start (and so its fortnights) is known. */
async function authoriseAt(h: ConsentHarness, at: string, options: RecurringOptions) {
  await advanceTo(h, at);
  return authorise(h, options);
}

/** An execution the service allows and the bank makes. */
async function paid(h: ConsentHarness, token: string, amount: string, key: string): Promise<void> {
  const reply = await execute(h, token, amount, key);
  assert.equal(reply.status, 201, reply.text);
  assert.equal(reply.body.payment.status, 'successful', `the bank made ${key}: ${reply.text}`);
}

/** An execution refused for the period, with the window it names. */
async function refusedForPeriod(h: ConsentHarness, token: string, key: string) {
  const reply = await execute(h, token, '0.01 NZD', key);
  assert.equal(reply.status, 422, reply.text);
  assert.equal(reply.body.code, 'payment_rejected.max_per_period');
  return reply.body as { message: string; params: Record<string, string> };
}

test("a fortnightly consent's fortnights are the bank's: pairs of weeks from the week it starts in, across the end of DST", async (t) => {
  const h = await consentHarness(t);
  // Thursday 18 March 2027, 10:00 NZDT: the first fortnight is Monday 15 to Sunday 28 March.
  const { consent, token } = await authoriseAt(h, '2027-03-17T21:00:00.000Z', {
    period: 'fortnightly',
    max_per_period: '100.00 NZD',
    max_per_payment: '60.00 NZD',
  });
  const stored = await h.runtime.deps.db
    .selectFrom('recurring_consents')
    .select('starts_at')
    .where('id', '=', consent.id)
    .executeTakeFirstOrThrow();
  const atBank = await h.runtime.deps.db
    .selectFrom('sandbox_consents')
    .select('from_at')
    .where('id', '=', await bankConsentOf(h, consent.id))
    .executeTakeFirstOrThrow();
  assert.equal(Number(stored.starts_at), Number(atBank.from_at), 'the anchor is the FromDateTime the bank was sent');

  await paid(h, token, '60.00 NZD', 'a');
  await paid(h, token, '40.00 NZD', 'b');
  await advanceTo(h, '2027-03-21T23:00:00.000Z'); // Monday 22 March 12:00 NZDT: the same fortnight
  const first = await refusedForPeriod(h, token, 'c');
  assert.deepEqual(first.params, {
    amount: '0.01 NZD',
    limit: '100.00 NZD',
    remaining: '0.00 NZD',
    period: 'fortnightly',
    period_start: '2027-03-14T11:00:00.000Z', // Monday 15 March 00:00 NZDT
    period_end: '2027-03-28T11:00:00.000Z', // Monday 29 March 00:00 NZDT
  });
  assert.equal(first.message, "0.01 NZD is more than the 0.00 NZD left of the consent's 100.00 NZD a fortnight");

  await advanceTo(h, '2027-03-28T11:00:00.000Z'); // Monday 29 March 00:00 NZDT: the next fortnight
  await paid(h, token, '60.00 NZD', 'd');
  await paid(h, token, '40.00 NZD', 'e');
  // Sunday 11 April 23:59 NZST: still the fortnight that began on 29 March, an hour longer for the clocks going back.
  await advanceTo(h, '2027-04-11T11:59:00.000Z');
  const second = await refusedForPeriod(h, token, 'f');
  assert.equal(second.params.period_start, '2027-03-28T11:00:00.000Z');
  assert.equal(second.params.period_end, '2027-04-11T12:00:00.000Z'); // Monday 12 April 00:00 NZST, 337 hours on
  const read = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.equal(read.body.recurring_consent.limits.period, 'fortnightly');
  assert.deepEqual(read.body.recurring_consent.usage.period, {
    start: '2027-03-28T11:00:00.000Z',
    end: '2027-04-11T12:00:00.000Z',
    amount: { value: '100.00 NZD', formatted: '$100.00' },
    count: 2,
    remaining: { value: '0.00 NZD', formatted: '$0.00' },
  });

  await advanceTo(h, '2027-04-11T12:00:00.000Z'); // Monday 12 April 00:00 NZST
  await paid(h, token, '60.00 NZD', 'g');
  await paid(h, token, '40.00 NZD', 'h');
  assert.equal((await refusedForPeriod(h, token, 'i')).params.period_end, '2027-04-25T12:00:00.000Z');
});

test('a yearly consent: the calendar year in the service time zone, a new one at local midnight on 1 January', async (t) => {
  const h = await consentHarness(t);
  const { consent, token } = await authoriseAt(h, '2027-02-01T00:00:00.000Z', {
    period: 'yearly',
    max_per_period: '1000.00 NZD',
    max_per_payment: '600.00 NZD',
  });
  await paid(h, token, '600.00 NZD', 'a');
  await advanceTo(h, '2027-12-31T10:59:00.000Z'); // Friday 31 December 23:59 NZDT
  await paid(h, token, '400.00 NZD', 'b');
  const over = await refusedForPeriod(h, token, 'c');
  assert.deepEqual(over.params, {
    amount: '0.01 NZD',
    limit: '1000.00 NZD',
    remaining: '0.00 NZD',
    period: 'yearly',
    period_start: '2026-12-31T11:00:00.000Z', // 1 January 2027 00:00 NZDT
    period_end: '2027-12-31T11:00:00.000Z', // 1 January 2028 00:00 NZDT
  });
  assert.equal(over.message, "0.01 NZD is more than the 0.00 NZD left of the consent's 1000.00 NZD a year");

  await advanceTo(h, '2027-12-31T11:00:00.000Z'); // 1 January 2028 00:00 NZDT
  await paid(h, token, '600.00 NZD', 'd');
  await paid(h, token, '400.00 NZD', 'e');
  const read = await h.api.get(`/v1/recurring-consents/${consent.id}`);
  assert.equal(read.body.recurring_consent.usage.period.start, '2027-12-31T11:00:00.000Z');
  assert.equal(read.body.recurring_consent.usage.period.end, '2028-12-31T11:00:00.000Z');
  assert.equal(read.body.recurring_consent.usage.total.count, 4);
});

test('the hosted page and the email say the new periods in plain words', async (t) => {
  const h = await consentHarness(t);
  const yearly = await createRecurringRequest(h, { period: 'yearly', max_per_period: '1000.00 NZD' });
  const asked = pageText(await fetch(`${h.baseUrl}/pay/${yearly.id}`).then((r) => r.text()));
  assert.match(asked, /Up to \$1,000\.00 a year/);

  const { request, consent } = await authorise(h, { period: 'fortnightly', max_per_period: '100.00 NZD' });
  const set = pageText(await fetch(`${h.baseUrl}/pay/${request.id}`).then((r) => r.text()));
  assert.match(set, /to take payments from your account, up to \$100\.00 a fortnight\./);
  const mail = await h.runtime.deps.db
    .selectFrom('mail_messages')
    .select('data')
    .where('template', '=', 'consent_authorised')
    .where('related_id', '=', consent.id)
    .executeTakeFirstOrThrow();
  assert.equal(JSON.parse(mail.data).limits, 'up to $100.00 a fortnight');
});

test('migration 0053 gives each consent the start it was asked for at the bank: its authorisation, else its creation', async (t) => {
  const h = await consentHarness(t);
  const db = h.runtime.deps.db;
  const sent = await authorise(h, { period: 'weekly', max_per_period: '100.00 NZD' });
  const orphan = await authorise(h, { period: 'monthly', max_per_period: '100.00 NZD' });
  // The payer of the first spent an hour at the bank; the second's authorisation row is gone.
  const askedAt = Date.parse('2026-01-05T09:00:00.000Z');
  await db
    .updateTable('enduring_authorisations')
    .set({ created_at: askedAt })
    .where('object_id', '=', sent.consent.id)
    .execute();
  await db.deleteFrom('enduring_authorisations').where('object_id', '=', orphan.consent.id).execute();

  // The table as it was before 0053; then the migration itself (the migrator runs each once).
  await db.schema.alterTable('recurring_consents').dropColumn('starts_at').execute();
  await consentStartsAt.up(db);

  const rows = await db
    .selectFrom('recurring_consents')
    .select(['id', 'starts_at', 'created_at'])
    .orderBy('id')
    .execute();
  const startOf = (id: string) => rows.find((row) => row.id === id)!;
  assert.equal(Number(startOf(sent.consent.id).starts_at), askedAt);
  assert.equal(Number(startOf(orphan.consent.id).starts_at), Number(startOf(orphan.consent.id).created_at));
});

async function bankConsentOf(h: ConsentHarness, consentId: string): Promise<string> {
  const row = await h.runtime.deps.db
    .selectFrom('recurring_consents')
    .select('bank_consent_id')
    .where('id', '=', consentId)
    .executeTakeFirstOrThrow();
  return row.bank_consent_id;
}
