import { test } from 'node:test';
import assert from 'node:assert/strict';
import { consentHarness, createRecurringRequest, type ConsentHarness } from '../../../test/support/consents.ts';
import { recurringKind } from '../consents/authorise.service.ts';
import { subscriptionKind } from '../subscriptions/subscriptions.checkout.ts';
import { createSubscriptionRequest } from '../../../test/support/subscriptions.ts';
import { bankReturnUrl, banksFor, connectorFor } from '../payments/payments.banks.ts';
import { findRequestById } from '../requests/requests.service.ts';
import { authoriseAtBank } from '../test-helpers/pay.bank-driver.ts';
import {
  completeAuthorisation,
  GIVE_BACK_CONSENT_JOB,
  startAuthorisation,
  type EnduringKind,
} from './authorisations.service.ts';

// One enduring-consent authorisation for recurring consents and subscriptions: the same rules for
// both, through the sandbox bank over HTTP, and a consent the bank gave for a closed request given
// back by a retried job.

const typed = {
  email: 'typed@example.com',
  first_name: 'Typed',
  last_name: 'Payer',
  phone: '021 555 0101',
  address1: '1 Queen St',
  address2: '',
  address3: '',
  address4: '',
  city: 'Auckland',
  postcode: '1010',
  marketing_opt_in: false,
};

async function toBankAndBack(
  h: ConsentHarness,
  kind: EnduringKind,
  requestId: string,
  beforeReturn: () => Promise<void> = async () => {},
  onBack: (back: URL) => void = () => {},
) {
  const { deps } = h.runtime;
  const request = (await findRequestById(deps.db, requestId))!;
  const bank = banksFor(deps, 'test')[0];
  const started = await startAuthorisation(deps, kind, request, {
    amountCents: null,
    bankId: bank.id,
    details: typed,
    channel: 'page',
  });
  assert.ok(started.ok, 'the bank made a consent');
  const back = await authoriseAtBank(started.redirectUrl, 'approve', bankReturnUrl(deps));
  onBack(back);
  await beforeReturn();
  const state = back.searchParams.get('state') ?? '';
  const result = await completeAuthorisation(deps, kind, {
    state,
    code: back.searchParams.get('code'),
    error: back.searchParams.get('error'),
  });
  return { result, state };
}

const authorisationOf = (h: ConsentHarness, state: string) =>
  h.runtime.deps.db
    .selectFrom('enduring_authorisations')
    .selectAll()
    .where('state', '=', state)
    .executeTakeFirstOrThrow();

test("recurring consents and subscriptions take the payer details by one rule: the merchant's win, typed details fill the rest", async (t) => {
  const h = await consentHarness(t);
  const recurring = await createRecurringRequest(h, { period: 'weekly', max_per_period: '50.00 NZD' });
  const subscription = await createSubscriptionRequest(
    h.api,
    h.merchant.bankAccountId,
    { amount: '10.00 NZD', period: 'monthly' },
    { cust_info: { email: 'Payer@Example.com', first_name: 'Aroha' } },
  );

  const customers = [];
  for (const [kind, requestId] of [
    [recurringKind, recurring.id],
    [subscriptionKind, subscription.id],
  ] as const) {
    const { result } = await toBankAndBack(h, kind, requestId);
    assert.equal(result?.outcome, 'authorised');
    assert.equal((await h.api.get(`/v1/requests/${requestId}`)).body.request.status, 'paid');
    const listed = await h.api.get('/v1/customers');
    customers.push(listed.body.customers.find((c: { email: string }) => c.email === 'payer@example.com'));
  }
  for (const customer of customers) {
    assert.equal(customer.email, 'payer@example.com', "the merchant's email, lower-cased");
    assert.equal(customer.first_name, 'Aroha', "the merchant's first name wins");
    assert.equal(customer.last_name, 'Payer', 'a field the merchant left out comes from the payer');
    assert.equal(customer.phone, '021 555 0101');
  }
  assert.equal(customers[0].id, customers[1].id, 'one customer, whichever kind came first');
});

test('a request that closed while the payer was at the bank: nothing is created, and the consent is given back by a job that retries', async (t) => {
  const h = await consentHarness(t);
  const { deps } = h.runtime;
  const request = await createRecurringRequest(h, { period: 'weekly', max_per_period: '50.00 NZD' });
  const { result, state } = await toBankAndBack(h, recurringKind, request.id, async () => {
    assert.equal((await h.api.delete(`/v1/requests/${request.id}`)).status, 200);
  });
  assert.equal(result?.outcome, 'failed');
  assert.equal((await h.api.get('/v1/recurring-consents')).body.recurring_consents.length, 0, 'no consent created');

  const row = await authorisationOf(h, state);
  assert.equal(row.outcome, 'failed');
  const connector = connectorFor(deps, row.bank_id, 'test')!;
  const atBank = async () => {
    const consent = await connector.getConsent({ consentId: row.bank_consent_id!, kind: 'enduring' });
    assert.ok(consent.ok);
    return consent.status;
  };
  assert.equal(await atBank(), 'Authorised', 'still authorised at the bank until the job runs');

  const jobs = () => deps.db.selectFrom('jobs').selectAll().where('kind', '=', GIVE_BACK_CONSENT_JOB).execute();
  assert.equal((await jobs()).length, 1, 'the give-back is a job, written with the failed authorisation');

  // The bank cannot be reached: the job fails, is kept and retried later, never dropped.
  const baseUrl = deps.config.publicBaseUrl;
  deps.config.publicBaseUrl = 'http://127.0.0.1:9';
  for (const job of await deps.worker.claim(10)) await deps.worker.run(job);
  deps.config.publicBaseUrl = baseUrl;
  const [failed] = await jobs();
  assert.equal(Number(failed.attempts), 1);
  assert.ok(failed.last_error, 'the failure is recorded');
  assert.equal(failed.failed_at, null, 'and retried, not given up');
  assert.ok(Number(failed.run_at) > Date.now(), 'after a backoff');
  assert.equal(await atBank(), 'Authorised');

  await deps.db.updateTable('jobs').set({ run_at: 0 }).where('id', '=', failed.id).execute();
  for (const job of await deps.worker.claim(10)) await deps.worker.run(job);
  assert.equal((await jobs()).length, 0, 'done once the bank confirmed');
  assert.equal(await atBank(), 'Revoked');
});

test('a second return with the same state changes nothing', async (t) => {
  const h = await consentHarness(t);
  const request = await createRecurringRequest(h, { period: 'weekly', max_per_period: '50.00 NZD' });
  const { result, state } = await toBankAndBack(h, recurringKind, request.id);
  assert.equal(result?.outcome, 'authorised');
  const again = await completeAuthorisation(h.runtime.deps, recurringKind, {
    state,
    code: 'another-code',
    error: null,
  });
  assert.equal(again?.outcome, 'repeated');
  assert.equal(again?.objectId, result?.objectId);
  assert.equal(
    await completeAuthorisation(h.runtime.deps, subscriptionKind, { state, code: 'x', error: null }),
    null,
    "another kind's state is not its own",
  );
  assert.equal((await h.api.get('/v1/recurring-consents')).body.recurring_consents.length, 1);
});

test('a reload of the bank return that fails on the spent code first: nothing is created, and the approved consent is given back', async (t) => {
  const h = await consentHarness(t);
  const { deps } = h.runtime;
  const request = await createRecurringRequest(h, { period: 'weekly', max_per_period: '50.00 NZD' });
  const connector = connectorFor(deps, banksFor(deps, 'test')[0].id, 'test')!;
  const exchange = connector.exchangeCode.bind(connector);
  let reload: Awaited<ReturnType<typeof completeAuthorisation>> | undefined;
  let reloaded = false;
  let input: { state: string; code: string | null; error: string | null } | undefined;
  // The reload arrives between the first return's code exchange and its creation; the code is
  // single use, so the reload's exchange fails and it records the authorisation failed.
  t.mock.method(connector, 'exchangeCode', async (given: Parameters<typeof exchange>[0]) => {
    const token = await exchange(given);
    if (!reloaded && input) {
      reloaded = true;
      reload = await completeAuthorisation(deps, recurringKind, input);
    }
    return token;
  });
  const { result, state } = await toBankAndBack(
    h,
    recurringKind,
    request.id,
    async () => {},
    (back) => {
      input = { state: back.searchParams.get('state') ?? '', code: back.searchParams.get('code'), error: null };
    },
  );
  assert.equal(reload?.outcome, 'failed');
  assert.equal(result?.outcome, 'repeated', 'the outcome the reload recorded');
  assert.equal((await h.api.get('/v1/recurring-consents')).body.recurring_consents.length, 0, 'no consent created');
  assert.equal((await h.api.get(`/v1/requests/${request.id}`)).body.request.status, 'active', 'payable again');

  const row = await authorisationOf(h, state);
  assert.equal(row.outcome, 'failed');
  const jobs = await deps.db.selectFrom('jobs').selectAll().where('kind', '=', GIVE_BACK_CONSENT_JOB).execute();
  assert.equal(jobs.length, 1, 'the consent the bank approved is to be given back');
  for (const job of await deps.worker.claim(10)) await deps.worker.run(job);
  const atBank = await connector.getConsent({ consentId: row.bank_consent_id!, kind: 'enduring' });
  assert.deepEqual(atBank, { ok: true, status: 'Revoked' });
});
